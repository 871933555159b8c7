"""One tokenizer of Dafny source, used by everything that reads Dafny text.

Why a lexer and not regexes: the anti-cheat screen, brace matching, declaration splitting
and hint removal must agree with Dafny on what is code. A regex that does not know char
literals (`'"'`) or verbatim strings (`@"…"` with `""` escapes) can be made to see a
comment or a string where Dafny sees code (and the reverse), which hides an `assume` or
closes a method early.

Every character of the input belongs to exactly one token, so `"".join(t.text for t in
tokenize(s)) == s` always holds (bad input becomes `error` tokens, never an exception):
callers cut the source at token offsets and keep everything else byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Kind = Literal[
    "ws",  # spaces, tabs, newlines
    "line_comment",  # `// …` up to (not including) the newline
    "block_comment",  # `/* … */`, nesting
    "string",  # `"…"` with backslash escapes
    "verbatim",  # `@"…"` with `""` for a quote, may span lines
    "char",  # `'a'`, `'\''`, `'"'`, `'\u0041'`
    "ident",  # identifiers and keywords (`x'`, `Cons?`, `_t`)
    "number",  # `12`, `1_000`, `0xFF`, `1.5`
    "attr",  # `{:` opening an attribute (closed by a plain `}`)
    "punct",  # operators and brackets, longest match
    "error",  # unterminated string/char/comment, or a character Dafny does not lex
]
TRIVIA = frozenset({"ws", "line_comment", "block_comment"})
WORDLIKE = frozenset({"ident", "number", "string", "verbatim", "char"})


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str
    start: int  # offset of the first character in the source

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def is_code(self) -> bool:
        return self.kind not in TRIVIA


# Longest first: the first operator that matches at a position wins.
_OPERATORS = sorted(
    """
    <==> ==> <== !in !! :: := :| == != <= >= && || .. => -> ~> --> <- >> << ** #[ ++
    ( ) [ ] { } < > = ! + - * / % , ; : . | & ^ ~ ? @ # $ \\ `
    """.split(),
    key=len,
    reverse=True,
)
# Every token but block comments and strings (which nest or escape) in one regex; the
# alternatives are tried in order, operators longest first.
_SIMPLE = re.compile(
    r"(?P<ws>\s+)"
    r"|(?P<line_comment>//[^\n]*)"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_'?]*)"
    r"|(?P<number>0x[0-9A-Fa-f_]+|[0-9][0-9_]*(?:\.[0-9][0-9_]*)?)"
    r"|(?P<char>'(?:\\u[0-9A-Fa-f]{4}|\\U\{[0-9A-Fa-f_]{1,8}\}|\\.|[^'\\\r\n])')"
    r"|(?P<attr>\{:)"
    r"|(?P<punct>" + "|".join(map(re.escape, _OPERATORS)) + ")"
)


def _string_end(text: str, i: int) -> tuple[int, bool]:
    """End of the `"…"` string starting at `i` (the quote), and whether it was closed.
    Dafny strings cannot hold a raw newline: an unclosed one ends at the line's end."""
    n, j = len(text), i + 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
        elif c == '"':
            return j + 1, True
        elif c in "\r\n":
            return j, False
        else:
            j += 1
    return n, False


def _verbatim_end(text: str, i: int) -> tuple[int, bool]:
    """End of the verbatim string `@"…"` starting at `i` (the `@`); `""` is one quote."""
    n, j = len(text), i + 2
    while j < n:
        if text[j] == '"':
            if text.startswith('""', j):
                j += 2
                continue
            return j + 1, True
        j += 1
    return n, False


def _block_comment_end(text: str, i: int) -> tuple[int, bool]:
    """End of the (nesting) block comment starting at `i`."""
    n, j, depth = len(text), i + 2, 1
    while j < n:
        if text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j, True
        else:
            j += 1
    return n, False


def iter_tokens(text: str, pos: int = 0) -> Iterator[Token]:
    """Tokens of `text` from offset `pos` on, lazily (brace matching stops early)."""
    n, i = len(text), pos
    while i < n:
        c = text[i]
        kind: Kind
        if c == "/" and text.startswith("/*", i):
            j, closed = _block_comment_end(text, i)
            kind = "block_comment" if closed else "error"
        elif c == '"':
            j, closed = _string_end(text, i)
            kind = "string" if closed else "error"
        elif c == "@" and text.startswith('@"', i):
            j, closed = _verbatim_end(text, i)
            kind = "verbatim" if closed else "error"
        else:
            m = _SIMPLE.match(text, i)
            if m is None:  # a lone `'`, or a character Dafny does not lex (a Cyrillic `а`)
                kind, j = "error", i + 1
            else:
                kind, j = m.lastgroup, m.end()  # type: ignore[assignment]
        yield Token(kind, text[i:j], i)
        i = j


@lru_cache(maxsize=256)
def _tokenize(text: str) -> tuple[Token, ...]:
    return tuple(iter_tokens(text))


def tokenize(text: str) -> tuple[Token, ...]:
    """Every token of `text` (cached: the screen, matcher and splitter share one pass)."""
    return _tokenize(text)


def code_tokens(text: str) -> list[Token]:
    """The tokens Dafny reads: no whitespace, no comments."""
    return [t for t in tokenize(text) if t.is_code]


def untokenize(tokens: tuple[Token, ...] | list[Token]) -> str:
    return "".join(t.text for t in tokens)


def joined(tokens: list[Token] | tuple[Token, ...]) -> str:
    """Code tokens as one canonical string: a space only where two tokens would otherwise
    lex as one (two words, or two operators such as `=` `=`), so the text is stable
    under any change of whitespace or comments and never merges distinct token streams."""
    out: list[str] = []
    prev: Token | None = None
    for t in tokens:
        if prev is not None and _glue_needed(prev, t):
            out.append(" ")
        out.append(t.text)
        prev = t
    return "".join(out)


def _glue_needed(a: Token, b: Token) -> bool:
    if a.kind in WORDLIKE and b.kind in WORDLIKE:
        return True
    if a.kind in ("punct", "attr") and b.kind in ("punct", "attr"):
        return len(tokenize(a.text + b.text)) != 2
    if a.kind == "punct" and b.kind in WORDLIKE:  # `@` `"x"` would become a verbatim string
        return a.text == "@" or (a.text == "." and b.kind == "number")
    if a.kind == "number" and b.text == ".":
        return True
    return False
