import logging
from typing import Optional

log = logging.getLogger(__name__)


class Account:
    def __init__(self, name: str, parent: Optional[str] = None) -> None:
        self.name = name
        self.parent = parent
        self.entries = list()
        self.tags = dict()

    def post(self, amount: int, memo: Optional[str] = None) -> None:
        if memo == None:
            memo = "entry %s" % len(self.entries)
        self.entries.append((amount, memo))
        print("posted to %s" % self.name)

    def balance(self) -> int:
        return sum(amount for amount, _ in self.entries)

    def has_tag(self, tag: str) -> bool:
        return tag in self.tags.keys()


class Ledger:
    def __init__(self) -> None:
        self.accounts = dict()

    def open(self, name: str, parent: Optional[str] = None) -> Account:
        if name in self.accounts.keys():
            raise ValueError("account exists: %s" % name)
        account = Account(name, parent)
        self.accounts[name] = account
        print("opened %s" % name)
        return account

    def find(self, name: str) -> Optional[Account]:
        return self.accounts.get(name)

    def transfer(self, source: str, target: str, amount: int) -> None:
        src = self.find(source)
        dst = self.find(target)
        if src == None or dst == None:
            raise KeyError("unknown account in transfer %s" % source)
        src.post(-amount, "to %s" % target)
        dst.post(amount, "from %s" % source)

    def balanced(self) -> bool:
        return sum([a.balance() for a in self.accounts.values()]) == 0

    def all_positive(self, names: list[str]) -> bool:
        return all([self.accounts[n].balance() >= 0 for n in names])

    def children(self, parent: str) -> list[str]:
        found = list()
        for name, account in self.accounts.items():
            if account.parent != None and account.parent == parent:
                found.append(name)
        return sorted(found)
