"""Just enough of Dafny's surface syntax to cut programs into declarations.

We do not parse Dafny fully (the verifier is the authority on validity); we find top-level
and class-member declarations, split each into its signature+spec and its body by brace
matching, and strip comments so two texts can be compared whitespace- and
comment-insensitively. Strings and chars are skipped so braces inside them do not count.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache

from verilearn_assets.dafny.lang.lexer import Token, code_tokens, iter_tokens, joined, tokenize

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
    """Remove `//` and (nested) `/* */` comments, keeping strings and line structure (a
    block comment leaves its newlines). Comment tokens come from the lexer, so `"/*"` in a
    string or `'"'` as a char literal never starts or ends a comment."""
    out: list[str] = []
    for t in tokenize(text):
        if t.kind in ("line_comment", "block_comment") or (
            t.kind == "error" and t.text.startswith("/*")
        ):
            out.append("\n" * t.text.count("\n"))
        else:
            out.append(t.text)
    return "".join(out)


def normalize(text: str) -> str:
    """Comment- and whitespace-insensitive form: the code tokens, spaced only where two
    tokens would otherwise read as one (see `lexer.joined`)."""
    return joined(code_tokens(text))


def mask(text: str) -> str:
    """`text` with the insides of strings, chars and comments blanked (same length, same
    newlines): character-level scans (declaration regexes, brace and paren counting) then
    see only code, and slices of the original text stay aligned."""
    out: list[str] = []
    for t in tokenize(text):
        if t.kind in ("string", "verbatim", "char", "error") and len(t.text) > 1:
            head = 2 if t.kind == "verbatim" else 1
            inner = re.sub(r"[^\n]", "x", t.text[head:-1])
            tail = t.text[-1] if t.text[-1] in "\"'" and t.kind != "error" else "x"
            out.append(t.text[:head] + inner + tail)
        elif t.kind in ("line_comment", "block_comment"):
            out.append(re.sub(r"[^\n]", " ", t.text))
        else:
            out.append(t.text)
    return "".join(out)


def match_brace(text: str, open_at: int) -> int:
    """Index just past the `}` closing the `{` at `open_at` (ValueError if unbalanced).
    Counts brace *tokens* (`{:` opens an attribute that a `}` closes); braces in strings,
    char literals and comments do not count."""
    depth = 0
    for t in iter_tokens(text, open_at):
        if t.text in ("{", "{:"):
            depth += 1
        elif t.text == "}":
            depth -= 1
            if depth == 0:
                return t.end
        elif depth == 0 and t.is_code:
            break
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
    """Declarations of comment-free `text`, members of classes/modules flattened in.
    Keywords, braces and parens are looked for in the lexer's `mask` of the text, so a
    `method` or a `}` inside a string or char literal is never taken for code."""
    return _declarations(text, mask(text), container, offset)


def _declarations(text: str, masked: str, container: str | None, offset: int) -> list[Decl]:
    decls: list[Decl] = []
    pos = 0
    while True:
        m = _DECL.search(masked, pos)
        if not m:
            break
        kind, name = m["kind"], m["name"] or ""
        next_decl = _DECL.search(masked, m.end())
        stop = next_decl.start() if next_decl else len(text)
        if kind in CONTAINERS:
            brace = masked.find("{", m.end())
            if brace < 0:
                raise ValueError(f"{kind} {name}: no body")
            end = match_brace(masked, brace)
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
            decls.extend(
                _declarations(
                    text[brace + 1 : end - 1], masked[brace + 1 : end - 1], name, offset + brace + 1
                )
            )
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
        opening = _body_open(masked, m.end(), stop if next_decl else len(text))
        if opening is None:
            end, body = stop, None
            sig = text[m.start() : stop]
        else:
            end = match_brace(masked, opening)
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


@lru_cache(maxsize=1024)
def lemma_names(program: str) -> frozenset[str]:
    """Names of the lemmas (and ghost methods) of `program`: calls of them in a body are
    proof annotations (`same_code` ignores them), not code."""
    try:
        decls = callables(program)
    except ValueError:
        return frozenset()
    return frozenset(d.name for d in decls if d.kind == "lemma" or (d.kind == "method" and d.ghost))


# --- proof hints ---------------------------------------------------------------------------
LOOP_CLAUSES = frozenset({"invariant", "decreases", "modifies", "reads"})
_CLAUSE_STOP = LOOP_CLAUSES | {"requires", "ensures"}
# After these tokens an expression is still expected, so a `{` there opens a set display;
# after anything else (an identifier, a literal, `)`, `]`, `}`, the closing `|` of `|s|`)
# a `{` opens a block.
_EXPECTS_EXPR = frozenset(
    """:= == != < > <= >= + - * / % && || ==> <== <==> ! !in in ( [ { {: , :: : .. =>
    := :| invariant decreases modifies reads requires ensures if then else while forall
    exists var assert assume return returns match case calc old fresh set seq map multiset
    not""".split()
)


@dataclass(frozen=True)
class Hint:
    """One proof annotation in a body: tokens `first`..`last` (code-token indexes)."""

    kind: str  # invariant, decreases, modifies, reads, assert, ghost_var, calc, forall, call
    first: int
    last: int


def closing(toks: Sequence[Token], i: int) -> int:
    """Index of the token closing the bracket at `i` (`len(toks)` when it never closes)."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text
        if t in ("(", "[", "{", "{:"):
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


def opens_block(toks: Sequence[Token], i: int) -> bool:
    """Whether the `{` at `i` opens a block (a loop/forall body) rather than a set display:
    the token before it ends an expression. `decreases *` and `while *` end with `*`."""
    if i == 0:
        return True
    prev = toks[i - 1].text
    if prev == "*":
        return i >= 2 and toks[i - 2].text in ("decreases", "while", ",", "(")
    return prev not in _EXPECTS_EXPR


def _statement_end(toks: Sequence[Token], i: int) -> int:
    """Index of the `;` ending the statement at `i` (through an `assert … by { … }` or a
    `forall`/`calc` block), or the index before an unbalanced `}`."""
    j = i
    while j < len(toks):
        t = toks[j].text
        if t in ("(", "[", "{:") or (t == "{" and not opens_block(toks, j)):
            j = closing(toks, j) + 1
            continue
        if t == ";":
            return j
        if t == "{":  # `by {`, a forall/calc body: the statement ends with its block
            return min(closing(toks, j), len(toks) - 1)
        if t == "}":
            return j - 1
        j += 1
    return len(toks) - 1


def _clause_end(toks: Sequence[Token], i: int) -> int:
    """Index of the last token of the loop clause starting at `i`."""
    j = i + 1
    while j < len(toks):
        t = toks[j].text
        if t in _CLAUSE_STOP or t in (";", "}") or (t == "{" and opens_block(toks, j)):
            return j - 1
        if t in ("(", "[", "{", "{:"):
            j = closing(toks, j) + 1
            continue
        j += 1
    return len(toks) - 1


def statement_head(toks: Sequence[Token], i: int) -> tuple[bool, set[str]]:
    """From the keyword at `i` (`while`, `forall`) to where its statement's head ends:
    whether a block follows (else the statement ended at `;` or `}` bodiless), and the
    tokens seen outside brackets on the way (`::` marks a quantifier expression)."""
    j, seen = i + 1, set()
    while j < len(toks):
        t = toks[j].text
        if t == "{" and opens_block(toks, j):
            return True, seen
        if t in (";", "}"):
            return False, seen
        if t in ("(", "[", "{", "{:"):
            j = closing(toks, j) + 1
            continue
        seen.add(t)
        j += 1
    return False, seen


def _forall_is_proof(toks: Sequence[Token], i: int) -> bool:
    """A `forall` statement (no `::`) that has an `ensures` clause: a proof, all ghost."""
    _, seen = statement_head(toks, i)
    return "::" not in seen and "ensures" in seen


def hints(toks: Sequence[Token], lemmas: Collection[str] = ()) -> list[Hint]:
    """The proof annotations an annotator may add to a body: loop `invariant`/`decreases`/
    `modifies`/`reads` clauses, `assert` statements (with `by` blocks), `ghost var`
    statements, `calc` blocks, proof `forall … ensures` statements and calls of `lemmas`."""
    out: list[Hint] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        prev = toks[i - 1].text if i else ";"
        at_statement = prev in (";", "{", "}")
        last = None
        kind = t.text
        if t.kind == "ident" and prev != ".":
            if kind in LOOP_CLAUSES:
                last = _clause_end(toks, i)
            elif at_statement and kind == "assert":
                last = _statement_end(toks, i)
            elif at_statement and kind == "ghost" and i + 1 < len(toks):
                if toks[i + 1].text == "var":
                    kind, last = "ghost_var", _statement_end(toks, i)
            elif at_statement and kind == "calc":
                last = _statement_end(toks, i)
            elif at_statement and kind == "forall" and _forall_is_proof(toks, i):
                last = _statement_end(toks, i)
            elif at_statement and kind in lemmas and i + 1 < len(toks):
                if toks[i + 1].text == "(":
                    kind, last = "call", _statement_end(toks, i)
        if last is not None and last >= i:
            out.append(Hint(kind, i, last))
            i = last + 1
        else:
            i += 1
    return out


def code_of(text: str, lemmas: Collection[str] = ()) -> list[str]:
    """The code tokens of `text` with every proof annotation (`hints`) taken out."""
    toks = code_tokens(text)
    drop: set[int] = set()
    for h in hints(toks, lemmas):
        drop.update(range(h.first, h.last + 1))
    return [t.text for k, t in enumerate(toks) if k not in drop]


def same_code(shown: str, answer: str, lemmas: Collection[str] = ()) -> bool:
    """Whether `answer` is `shown` plus (or minus) proof annotations only: equal code
    tokens once invariants, decreases, loop modifies/reads, asserts, ghost variables,
    calc and proof-forall blocks and calls of `lemmas` are removed. Token-level, so
    `assert true; while true` on one line keeps its `while true`."""
    return code_of(shown, lemmas) == code_of(answer, lemmas)


def remove_hints(body: str, lemmas: Collection[str] = ()) -> str:
    """The body without its proof annotations (see `hints`). Other code is kept byte for
    byte; a line left blank by a removal goes with it."""
    toks = code_tokens(body)
    cuts = [(toks[h.first].start, toks[h.last].end) for h in hints(toks, lemmas)]
    out: list[str] = []
    pos = 0
    for start, end in cuts:
        line_start = body.rfind("\n", 0, start) + 1
        line_end = body.find("\n", end)
        line_end = len(body) if line_end < 0 else line_end
        if (
            line_start >= pos
            and not body[line_start:start].strip()
            and not body[end:line_end].strip()
        ):
            start, end = line_start, min(line_end + 1, len(body))  # the whole line goes
        elif not body[end:line_end].strip():
            while start > pos and body[start - 1] in " \t":
                start -= 1  # no trailing blanks left on the kept line
        out.append(body[pos:start])
        pos = end
    out.append(body[pos:])
    return "".join(out)


def hint_count(body: str) -> int:
    return len(hints(code_tokens(body)))
