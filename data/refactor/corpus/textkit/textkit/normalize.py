"""Clean-up before tokenizing: accents, whitespace, stop words, replacements."""
import logging
import re
import unicodedata
from typing import Optional

log = logging.getLogger(__name__)

SPACES = re.compile(r"\s+")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
STOPWORDS = frozenset("a an and the of on in to is it".split())


def strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join([c for c in decomposed if not unicodedata.combining(c)])


def squeeze(text: str) -> str:
    return SPACES.sub(" ", text).strip()


def clean(text: str, stopwords: Optional[frozenset] = None, keep_accents: bool = False) -> str:
    if not keep_accents:
        text = strip_accents(text)
    words = squeeze(text).lower().split(" ")
    if stopwords != None:
        words = [w for w in words if w not in stopwords]
    return " ".join(words)


def is_blank(value: object) -> bool:
    if value == None:
        return True
    return (isinstance(value, str) or isinstance(value, bytes)) and not value.strip()


def replace_all(text: str, table: dict) -> str:
    """One pass, longest keys first: `can't` wins over `can`, and a replacement is never
    replaced again."""
    if not table:
        return text
    keys = sorted(table.keys(), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(k) for k in keys))
    return pattern.sub(lambda m: table[m.group(0)], text)


def sentences(text: str) -> list[str]:
    parts = SENTENCE_END.split(squeeze(text))
    return [p for p in parts if p]
