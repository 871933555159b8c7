import pytest

from ledger import Ledger


def test_transfer_keeps_ledger_balanced():
    ledger = Ledger()
    ledger.open("cash")
    ledger.open("bank")
    ledger.transfer("bank", "cash", 30)
    assert ledger.find("cash").balance() == 30
    assert ledger.find("bank").balance() == -30
    assert ledger.balanced()


def test_open_twice_fails():
    ledger = Ledger()
    ledger.open("cash")
    with pytest.raises(ValueError):
        ledger.open("cash")


def test_children_and_tags():
    ledger = Ledger()
    ledger.open("assets")
    ledger.open("cash", parent="assets")
    ledger.open("bank", parent="assets")
    assert ledger.children("assets") == ["bank", "cash"]
    account = ledger.find("cash")
    account.tags["liquid"] = True
    assert account.has_tag("liquid")
    assert not account.has_tag("frozen")


def test_unknown_account():
    ledger = Ledger()
    ledger.open("cash")
    with pytest.raises(KeyError):
        ledger.transfer("cash", "nowhere", 1)
    assert ledger.find("nowhere") is None
    assert ledger.all_positive(["cash"])
