import unittest

import pytest

from textkit.tokens import all_words, first_long, is_token, ngrams, tokenize


class TokenTest(unittest.TestCase):
    def setUp(self):
        self.tokens = tokenize("The cat sat on the mat")

    def test_tokenize(self):
        self.assertEqual(self.tokens, ["the", "cat", "sat", "on", "the", "mat"])
        self.assertEqual(tokenize("A b", lower=False), ["A", "b"])
        with pytest.raises(TypeError):
            tokenize(None)

    def test_ngrams(self):
        self.assertEqual(ngrams(["a", "b", "c"]), [("a", "b"), ("b", "c")])
        self.assertEqual(ngrams(["a"], 2), [])

    def test_kinds(self):
        self.assertTrue(is_token("x"))
        self.assertTrue(is_token(b"x"))
        self.assertFalse(is_token(3))
        self.assertTrue(all_words(self.tokens))

    def test_first_long(self):
        self.assertEqual(first_long(self.tokens, 3), "the")
        self.assertEqual(first_long(self.tokens, 9), None)
