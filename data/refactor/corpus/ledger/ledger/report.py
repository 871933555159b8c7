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


def totals_by_parent(ledger: Ledger) -> dict:
    totals = dict()
    for account in ledger.accounts.values():
        key = account.parent if account.parent != None else account.name
        totals[key] = totals.get(key, 0) + account.balance()
    return totals


def trial_balance(ledger: Ledger, width: int = 12) -> list:
    """One line per account, debits (positive) left of credits (negative)."""
    lines = list()
    for name in sorted(ledger.accounts):
        amount = ledger.accounts[name].balance()
        debit = "%d" % amount if amount > 0 else ""
        credit = "%d" % -amount if amount < 0 else ""
        lines.append(name.ljust(width) + debit.rjust(8) + credit.rjust(8))
    total = sum([a.balance() for a in ledger.accounts.values() if a.balance() > 0])
    lines.append("total".ljust(width) + str(total).rjust(8) + str(total).rjust(8))
    return lines

