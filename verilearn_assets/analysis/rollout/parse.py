"""Reading an assistant reply: exactly one python block, or a named format error."""

from __future__ import annotations

import re
from dataclasses import dataclass

# An opening fence at the start of a line (``` or longer), optional language tag.
_FENCE = re.compile(r"^(?P<fence>`{3,})[ \t]*(?P<lang>[A-Za-z0-9_+.-]*)[ \t]*$", re.M)
PYTHON_TAGS = frozenset({"python", "py", "python3"})


@dataclass(frozen=True)
class Block:
    lang: str
    code: str


@dataclass(frozen=True)
class ParsedReply:
    """A well-formed reply: the prose before the block and the code to run."""

    reasoning: str
    code: str


@dataclass(frozen=True)
class FormatError:
    """Why a reply was rejected; the text is shown to the model in the re-prompt."""

    reason: str


def fenced_blocks(text: str) -> tuple[list[Block], bool]:
    """All fenced blocks in `text`, and whether a fence was left open at the end."""
    blocks: list[Block] = []
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            return blocks, False
        fence = m.group("fence")
        close = re.compile(rf"^{fence}`*[ \t]*$", re.M)
        end = close.search(text, m.end())
        if end is None:
            return blocks, True
        body = text[m.end() : end.start()]
        blocks.append(Block(m.group("lang").lower(), body.strip("\n")))
        pos = end.end()


def parse_reply(text: str) -> ParsedReply | FormatError:
    """Accept a reply with exactly one non-empty ```python block; anything else is an error.

    Being strict keeps the trace unambiguous: the executed cell is exactly the one block
    the model wrote, never a guess among several.
    """
    blocks, unclosed = fenced_blocks(text)
    if unclosed:
        return FormatError("a code fence was opened but never closed")
    python = [b for b in blocks if b.lang in PYTHON_TAGS]
    if not python:
        if blocks:
            return FormatError("the code block is not tagged as python (use ```python)")
        return FormatError("no ```python code block found")
    if len(python) > 1:
        return FormatError(f"{len(python)} python code blocks found; write exactly one")
    code = python[0].code
    if not code.strip():
        return FormatError("the python code block is empty")
    first = _FENCE.search(text)
    reasoning = text[: first.start()].strip() if first else ""
    return ParsedReply(reasoning=reasoning, code=code)


def format_reply(reasoning: str, code: str) -> str:
    """The reply shape the loop accepts: a reasoning line, then one python block."""
    return f"{reasoning.strip()}\n\n```python\n{code.rstrip()}\n```"
