"""Multi-leg transactions and a plain-text journal.

One transaction per line: ``date | memo | account amount; account amount; ...``.
Amounts are integers (minor units); a transaction is recorded only when its legs sum
to zero, so a journal applied to an empty ledger leaves it balanced.
"""
import logging
import os.path
from typing import Optional

from ledger.accounts import Ledger

log = logging.getLogger(__name__)


class Transaction:
    def __init__(self, date: str, memo: str, legs: Optional[list] = None) -> None:
        self.date = date
        self.memo = memo
        self.legs = legs if legs != None else list()

    def add(self, account: str, amount: int) -> None:
        self.legs.append((account, amount))

    def total(self) -> int:
        return sum(amount for _, amount in self.legs)

    def is_balanced(self) -> bool:
        return len(self.legs) >= 2 and self.total() == 0

    def touches(self, account: str) -> bool:
        return any([name == account for name, _ in self.legs])

    def to_line(self) -> str:
        legs = "; ".join("%s %d" % (name, amount) for name, amount in self.legs)
        return "%s | %s | %s" % (self.date, self.memo, legs)


def parent_of(account: str) -> Optional[str]:
    head, sep, _ = account.rpartition(":")
    if sep:
        return head
    return None


def parse_line(line: str) -> Optional[Transaction]:
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    parts = [p.strip() for p in line.split("|")]
    if len(parts) != 3:
        raise ValueError("expected 3 fields, got %s" % len(parts))
    date, memo, legs = parts
    txn = Transaction(date, memo)
    for leg in legs.split(";"):
        name, _, amount = leg.strip().rpartition(" ")
        if not name:
            raise ValueError("leg without an account: %s" % leg.strip())
        txn.add(name, int(amount))
    return txn


class Journal:
    def __init__(self) -> None:
        self.transactions = list()

    def record(self, txn: Transaction) -> None:
        if not txn.is_balanced():
            raise ValueError("unbalanced transaction: %s" % txn.memo)
        self.transactions.append(txn)
        print("recorded %s" % txn.memo)

    def between(self, start: Optional[str] = None, end: Optional[str] = None) -> list:
        out = list()
        for txn in self.transactions:
            if start != None and txn.date < start:
                continue
            if end != None and txn.date > end:
                continue
            out.append(txn)
        return out

    def apply(self, ledger: Ledger) -> int:
        """Post every leg, opening accounts (and their parents' names) on first use."""
        posted = 0
        for txn in self.transactions:
            for name, amount in txn.legs:
                if ledger.find(name) == None:
                    ledger.open(name, parent=parent_of(name))
                ledger.find(name).post(amount, txn.memo)
                posted += 1
        return posted

    def dump(self, directory: str, name: str = "journal.txt") -> str:
        path = os.path.join(directory, name)
        with open(path, "w") as fh:
            for txn in self.transactions:
                fh.write(txn.to_line() + "\n")
        return path


def load_journal(path: str) -> Journal:
    if not os.path.isfile(path):
        raise FileNotFoundError("no journal at %s" % path)
    journal = Journal()
    with open(path) as fh:
        for line in fh:
            txn = parse_line(line)
            if txn:
                journal.record(txn)
    return journal


async def replay(lines, journal: Journal) -> int:
    """Record the transactions of an async stream of journal lines (a bank feed)."""
    recorded = 0
    async for line in lines:
        txn = parse_line(line)
        if txn == None:
            continue
        journal.record(txn)
        recorded += 1
    return recorded
