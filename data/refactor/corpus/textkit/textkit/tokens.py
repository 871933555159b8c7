import logging
import re
from typing import Optional

log = logging.getLogger(__name__)

WORD = re.compile(r"[A-Za-z']+")


def tokenize(text: str, lower: Optional[bool] = None) -> list[str]:
    if lower == None:
        lower = True
    words = WORD.findall(text)
    if lower:
        words = [w.lower() for w in words]
    print("tokenized %s words" % len(words))
    return words


def ngrams(tokens: list[str], n: int = 2) -> list[tuple[str, ...]]:
    grams = list()
    for i in range(len(tokens) - n + 1):
        grams.append(tuple(tokens[i : i + n]))
    return grams


def is_token(value: object) -> bool:
    return isinstance(value, str) or isinstance(value, bytes)


def all_words(tokens: list[str]) -> bool:
    return all([WORD.fullmatch(t) is not None for t in tokens])


def first_long(tokens: list[str], size: int) -> Optional[str]:
    for token in tokens:
        if len(token) >= size:
            return token
    return None
