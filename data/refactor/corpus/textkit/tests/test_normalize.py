import unittest

import pytest

from textkit.normalize import STOPWORDS, clean, is_blank, replace_all, sentences, squeeze


class NormalizeTest(unittest.TestCase):
    def setUp(self):
        self.text = "  Café   au   LAIT\tand crème brûlée "

    def test_clean(self):
        self.assertEqual(clean(self.text), "cafe au lait and creme brulee")
        self.assertEqual(clean(self.text, keep_accents=True), "café au lait and crème brûlée")
        self.assertEqual(clean(self.text, STOPWORDS), "cafe au lait creme brulee")

    def test_squeeze(self):
        self.assertEqual(squeeze(self.text), "Café au LAIT and crème brûlée")

    def test_blank(self):
        self.assertTrue(is_blank(None))
        self.assertTrue(is_blank("  \n"))
        self.assertTrue(is_blank(b" "))
        self.assertFalse(is_blank(self.text))
        self.assertFalse(is_blank(0))


def test_replace_all_longest_first():
    assert replace_all("I can't, I can", {"can": "may", "can't": "cannot"}) == "I cannot, I may"
    assert replace_all("same", {}) == "same"


def test_sentences():
    assert sentences("One. Two!  Three?\nFour") == ["One.", "Two!", "Three?", "Four"]
    assert sentences("   ") == []
    with pytest.raises(TypeError):
        sentences(None)
