import os.path
import unittest

import pytest

from pathconf.convert import as_bool, as_int, as_list, as_path, is_number


class ConvertTest(unittest.TestCase):
    def setUp(self):
        self.values = {
            "debug": "Yes",
            "quiet": "off",
            "port": "8080",
            "mask": "0o755",
            "hosts": "a, b,,c ",
            "data": "data/cache",
            "home": "~/conf",
        }

    def test_bool(self):
        self.assertTrue(as_bool(self.values, "debug"))
        self.assertFalse(as_bool(self.values, "quiet"))
        self.assertTrue(as_bool(self.values, "missing", fallback=True))
        with pytest.raises(ValueError):
            as_bool(self.values, "port")

    def test_int(self):
        self.assertEqual(as_int(self.values, "port"), 8080)
        self.assertEqual(as_int(self.values, "mask"), 0o755)
        self.assertEqual(as_int(self.values, "missing"), None)
        self.assertEqual(as_int(self.values, "missing", 3), 3)
        with pytest.raises(ValueError, match="hosts"):
            as_int(self.values, "hosts")

    def test_list(self):
        self.assertEqual(as_list(self.values, "hosts"), ["a", "b", "c"])
        self.assertEqual(as_list(self.values, "missing"), [])
        self.assertEqual(as_list({"p": "x:y"}, "p", sep=":"), ["x", "y"])

    def test_path(self):
        self.assertEqual(as_path(self.values, "data", base="/srv"), "/srv/data/cache")
        self.assertEqual(as_path(self.values, "data"), "data/cache")
        self.assertEqual(as_path(self.values, "home"), os.path.expanduser("~/conf"))
        self.assertEqual(as_path(self.values, "missing"), None)

    def test_number(self):
        self.assertTrue(is_number(1) and is_number(2.5))
        self.assertFalse(is_number("1"))
