import unittest

from ledger import Ledger
from ledger.report import any_negative, format_amount, is_amount, largest, lookup, summary


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

    def test_lookup(self):
        self.assertEqual(lookup({"a": "b"}, "a"), "b")
        self.assertEqual(lookup({"a": "b"}, "z"), None)
