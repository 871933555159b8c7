import unittest

import pytest

from ledger import Ledger
from ledger.report import (
    any_negative,
    format_amount,
    is_amount,
    largest,
    lookup,
    summary,
    totals_by_parent,
    trial_balance,
)


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.ledger = Ledger()
        self.ledger.open("cash")
        self.ledger.open("bank")
        self.ledger.transfer("bank", "cash", 5)

    def test_format(self):
        self.assertEqual(format_amount(5), "5 EUR")
        self.assertEqual(format_amount(5, "USD"), "5 USD")

    def test_summary(self):
        self.assertEqual(summary(self.ledger), {"cash": "5 EUR", "bank": "-5 EUR"})

    def test_kinds(self):
        self.assertTrue(is_amount(3))
        self.assertTrue(is_amount(2.5))
        self.assertFalse(is_amount("3"))
        self.assertTrue(any_negative(self.ledger))

    def test_largest(self):
        self.assertEqual(largest(self.ledger), "cash")
        self.assertEqual(largest(Ledger()), None)
        with pytest.raises(KeyError):
            self.ledger.transfer("cash", "card", 1)

    def test_lookup(self):
        self.assertEqual(lookup({"a": "b"}, "a"), "b")
        self.assertEqual(lookup({"a": "b"}, "z"), None)

    def test_totals_by_parent(self):
        self.ledger.open("card", parent="bank")
        self.ledger.transfer("card", "cash", 2)
        self.assertEqual(totals_by_parent(self.ledger), {"cash": 7, "bank": -7})

    def test_trial_balance(self):
        lines = trial_balance(self.ledger, width=6)
        self.assertEqual(lines[0], "bank  " + " " * 8 + "5".rjust(8))
        self.assertEqual(lines[1], "cash  " + "5".rjust(8) + " " * 8)
        self.assertEqual(lines[-1], "total " + "5".rjust(8) + "5".rjust(8))
        self.assertTrue(all(len(line) == 22 for line in lines))

