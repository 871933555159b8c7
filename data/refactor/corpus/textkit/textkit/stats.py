import logging
from typing import Optional

from textkit.tokens import tokenize

log = logging.getLogger(__name__)


def counts(text: str) -> dict:
    table = dict()
    for word in tokenize(text):
        if word in table.keys():
            table[word] += 1
        else:
            table[word] = 1
    return table


def most_common(text: str, default: Optional[str] = None) -> Optional[str]:
    table = counts(text)
    if not table:
        return default
    best = max(sorted(table), key=lambda w: table[w])
    print("most common word: %s" % best)
    return best


def describe(text: str) -> str:
    table = counts(text)
    return "%s distinct words" % len(table)


def has_repeats(text: str) -> bool:
    return any([n > 1 for n in counts(text).values()])


def ratio(text: str, word: str) -> Optional[float]:
    table = counts(text)
    total = sum(table.values())
    if total == 0 or table.get(word) == None:
        return None
    return table[word] / total
