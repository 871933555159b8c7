import logging
from typing import Optional

from ledger.accounts import Ledger

log = logging.getLogger(__name__)


def format_amount(amount: int, currency: Optional[str] = None) -> str:
    if currency == None:
        currency = "EUR"
    text = "%s" % amount
    return text + " " + currency


def summary(ledger: Ledger, currency: Optional[str] = None) -> dict:
    out = dict()
    for name, account in ledger.accounts.items():
        out[name] = format_amount(account.balance(), currency)
    print("summary of %s accounts" % len(out))
    return out


def is_amount(value: object) -> bool:
    return isinstance(value, int) or isinstance(value, float)


def any_negative(ledger: Ledger) -> bool:
    return any([a.balance() < 0 for a in ledger.accounts.values()])


def largest(ledger: Ledger) -> Optional[str]:
    names = sorted(ledger.accounts.keys())
    if names:
        return max(names, key=lambda n: ledger.accounts[n].balance())
    return None


def lookup(table: dict, key: str) -> Optional[str]:
    if key in table.keys():
        return table[key]
    return None
