"""Just enough of Dafny's surface syntax to cut programs into declarations.

We do not parse Dafny fully (the verifier is the authority on validity); we find top-level
and class-member declarations, split each into its signature+spec and its body by brace
matching, and strip comments so two texts can be compared whitespace- and
comment-insensitively. Strings and chars are skipped so braces inside them do not count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DECL_KINDS = (
    "method",
    "lemma",
    "function",
    "predicate",
    "constructor",
    "class",
    "datatype",
    "codatatype",
    "const",
    "type",
    "newtype",
    "module",
    "trait",
    "iterator",
)
CALLABLE = {"method", "lemma", "function", "predicate", "constructor"}
CONTAINERS = {"class", "module", "trait"}

_DECL = re.compile(
    r"(?m)^[ \t]*(?P<mods>(?:(?:ghost|static|twostate|abstract|protected|inductive|"
    r"least|greatest|copredicate)\s+)*)"
    r"(?P<kind>method|lemma|function|predicate|constructor|class|datatype|codatatype|const|"
    r"type|newtype|module|trait|iterator)\b(?P<method>\s+method\b)?"
    r"(?P<attrs>(?:\s*\{:[^}]*\})*)\s*(?P<name>[A-Za-z_][\w'?]*)?"
)


def strip_comments(text: str) -> str:
    """Remove `//` and (nested) `/* */` comments, keeping strings and line structure."""
    out: list[str] = []
    i, n, depth = 0, len(text), 0
    while i < n:
        c = text[i]
        two = text[i : i + 2]
        if depth:
            if two == "/*":
                depth, i = depth + 1, i + 2
            elif two == "*/":
                depth, i = depth - 1, i + 2
            else:
                if c == "\n":
                    out.append(c)
                i += 1
            continue
        if two == "/*":
            depth, i = 1, i + 2
        elif two == "//":
            while i < n and text[i] != "\n":
                i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def normalize(text: str) -> str:
    """Comment- and whitespace-insensitive form (spaces kept only between word chars)."""
    flat = re.sub(r"\s+", " ", strip_comments(text)).strip()
    return re.sub(r" ?([^\w' ]) ?", r"\1", flat)


def match_brace(text: str, open_at: int) -> int:
    """Index just past the `}` closing the `{` at `open_at` (ValueError if unbalanced)."""
    depth = 0
    i = open_at
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced braces from offset {open_at}")


@dataclass
class Decl:
    kind: str  # method, lemma, function, predicate, class, ...
    name: str
    start: int  # offsets in the comment-free text
    end: int
    signature: str  # keyword up to the body (spec clauses included)
    body: str | None  # with its braces; None for bodiless declarations
    ghost: bool
    function_method: bool
    container: str | None = None  # enclosing class/module name

    @property
    def text(self) -> str:
        return self.signature + (self.body or "")

    @property
    def qualified(self) -> str:
        return f"{self.container}.{self.name}" if self.container else self.name


def _body_open(text: str, start: int, stop: int) -> int | None:
    """The `{` opening a declaration's body: the first `{` outside parens that is not an
    attribute and starts or ends its line (set displays in specs do neither); else the
    first such `{` at all."""
    depth, first = 0, None
    i = start
    while i < stop:
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            if text.startswith("{:", i):
                i = match_brace(text, i)
                continue
            line_start = text.rfind("\n", 0, i) + 1
            line_end = text.find("\n", i)
            line_end = len(text) if line_end < 0 else line_end
            if not text[line_start:i].strip() or not text[i + 1 : line_end].strip():
                return i
            if first is None:
                first = i
            i = match_brace(text, i)
            continue
        elif c == "}" and depth == 0:
            break
        i += 1
    return first


def declarations(text: str, container: str | None = None, offset: int = 0) -> list[Decl]:
    """Declarations of comment-free `text`, members of classes/modules flattened in."""
    decls: list[Decl] = []
    pos = 0
    while True:
        m = _DECL.search(text, pos)
        if not m:
            break
        kind, name = m["kind"], m["name"] or ""
        next_decl = _DECL.search(text, m.end())
        stop = next_decl.start() if next_decl else len(text)
        if kind in CONTAINERS:
            brace = text.find("{", m.end())
            if brace < 0:
                raise ValueError(f"{kind} {name}: no body")
            end = match_brace(text, brace)
            inner = text[brace + 1 : end - 1]
            decls.append(
                Decl(
                    kind,
                    name,
                    offset + m.start(),
                    offset + end,
                    text[m.start() : brace],
                    text[brace:end],
                    False,
                    False,
                    container,
                )
            )
            decls.extend(declarations(inner, name, offset + brace + 1))
            pos = end
            continue
        if kind in ("datatype", "codatatype", "const", "type", "newtype"):
            decls.append(
                Decl(
                    kind,
                    name,
                    offset + m.start(),
                    offset + stop,
                    text[m.start() : stop],
                    None,
                    False,
                    False,
                    container,
                )
            )
            pos = max(stop, m.end())
            continue
        opening = _body_open(text, m.end(), stop if next_decl else len(text))
        if opening is None:
            end, body = stop, None
            sig = text[m.start() : stop]
        else:
            end = match_brace(text, opening)
            body = text[opening:end]
            sig = text[m.start() : opening]
        decls.append(
            Decl(
                kind,
                name,
                offset + m.start(),
                offset + end,
                sig.rstrip() + "\n" if body else sig,
                body,
                "ghost" in m["mods"] or kind == "lemma",
                bool(m["method"]),
                container,
            )
        )
        pos = end
    return decls


def callables(text: str) -> list[Decl]:
    return [d for d in declarations(strip_comments(text)) if d.kind in CALLABLE]


# --- proof hints ---------------------------------------------------------------------------
_HINT_START = re.compile(r"^\s*(invariant|decreases|assert)\b")


def remove_hints(body: str) -> str:
    """The body without loop invariants, decreases clauses and assert statements.

    A clause runs to the end of its line, or on to the `;` for asserts; an `assert … by
    { … }` block goes with its braces. Lines of other code are kept byte for byte.
    """
    lines = body.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _HINT_START.match(line)
        if not m:
            out.append(line)
            i += 1
            continue
        if m.group(1) == "assert":
            chunk = line
            while ";" not in chunk and "{" not in chunk and i + 1 < len(lines):
                i += 1
                chunk += "\n" + lines[i]
            if re.search(r"\bby\s*\{", chunk):
                depth = chunk.count("{") - chunk.count("}")
                while depth > 0 and i + 1 < len(lines):
                    i += 1
                    depth += lines[i].count("{") - lines[i].count("}")
        i += 1
    return "\n".join(out)


def hint_count(body: str) -> int:
    return sum(1 for ln in body.split("\n") if _HINT_START.match(ln))
