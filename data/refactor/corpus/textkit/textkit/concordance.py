"""Keyword in context: each occurrence of a word with its neighbours."""
import logging
from typing import Optional

from textkit.tokens import tokenize

log = logging.getLogger(__name__)


def kwic(text: str, word: str, width: int = 2) -> list[str]:
    tokens = tokenize(text)
    lines = list()
    for i, token in enumerate(tokens):
        if token != word:
            continue
        left = " ".join(tokens[max(0, i - width) : i])
        right = " ".join(tokens[i + 1 : i + 1 + width])
        lines.append("%s [%s] %s" % (left, token, right))
    return [line.strip() for line in lines]


def first_context(text: str, word: str) -> Optional[str]:
    found = kwic(text, word, width=1)
    if found:
        return found[0]
    return None


def positions(text: str) -> dict:
    where = dict()
    for i, token in enumerate(tokenize(text)):
        where.setdefault(token, []).append(i)
    return where


def banner(word: str) -> str:
    return "== %s ==" % word.upper()
