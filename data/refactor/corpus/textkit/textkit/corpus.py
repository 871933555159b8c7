"""A folder of .txt documents read as one corpus."""
import asyncio
import logging
import os
import os.path
from typing import Optional

from textkit.stats import counts
from textkit.tokens import tokenize

log = logging.getLogger(__name__)


def list_documents(directory: str, suffix: str = ".txt") -> list[str]:
    paths = list()
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.path.splitext(name)[1] == suffix:
            paths.append(path)
    return paths


class Corpus:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.texts = dict()

    def load(self, suffix: str = ".txt") -> int:
        for path in list_documents(self.directory, suffix):
            with open(path, encoding="utf-8") as fh:
                self.texts[os.path.basename(path)] = fh.read()
        print("loaded %s documents" % len(self.texts))
        return len(self.texts)

    def document(self, name: str) -> Optional[str]:
        if name in self.texts.keys():
            return self.texts[name]
        return None

    def frequencies(self) -> dict:
        total = dict()
        for text in self.texts.values():
            for word, n in counts(text).items():
                total[word] = total.get(word, 0) + n
        return total

    def containing(self, word: str) -> list[str]:
        return sorted(name for name, text in self.texts.items() if word in tokenize(text))

    def longest(self) -> Optional[str]:
        names = sorted(self.texts)
        if names:
            return max(names, key=lambda n: len(self.texts[n]))
        return None

    def all_nonempty(self) -> bool:
        return all([text.strip() for text in self.texts.values()])


async def word_totals(texts: dict, batch: int = 2) -> dict:
    """Words per document, yielding to the event loop between batches so a large corpus
    does not starve the other tasks."""
    out = dict()
    for i, name in enumerate(sorted(texts)):
        out[name] = len(tokenize(texts[name]))
        if (i + 1) % batch == 0:
            await asyncio.sleep(0)
    return out


async def totals_of(corpora: list) -> list:
    return await asyncio.gather(*[word_totals(c.texts) for c in corpora])
