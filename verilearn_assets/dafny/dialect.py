"""Dafny 4 → Dafny 2.3, where a mechanical rewrite exists.

DafnyBench is mostly Dafny 4: `function` is compiled by default (`ghost function` is the
spec-only kind), and `for i := lo to hi` loops exist. A file whose only Dafny 4 feature is a
plain `function`/`predicate` called from compiled code (a non-ghost method's statements,
proof hints and ghost statements aside) is Dafny 4 too: in 2.3 that function is ghost and
the call a resolution error. Dafny 2.3 has `function method` for
compiled functions, plain `function` for ghost ones, and only `while`. We rewrite those and
name every rewrite applied; a feature without a rewrite raises `DialectError` with the
reason the loader counts.
"""

from __future__ import annotations

import re

from verilearn_assets.dafny.syntax import declarations, match_brace, remove_hints, strip_comments


class DialectError(ValueError):
    """A Dafny 4 feature we cannot rewrite: the file is skipped with this reason."""


_FOUR_MARKERS = {
    "ghost function": re.compile(r"\bghost\s+(function|predicate)\b"),
    "for loop": re.compile(r"(?m)^\s*for\s+\w+\s*:=.*\b(to|downto)\b"),
}
_NO_REWRITE = {
    "downto loop": re.compile(r"(?m)^\s*for\s+\w+\s*:=.*\bdownto\b"),
    ":- (elephant operator)": re.compile(r":-"),
    "opaque": re.compile(r"\bopaque\b"),
    "old@label": re.compile(r"\bold@"),
    "include": re.compile(r"(?m)^\s*include\s+\""),
    "import": re.compile(r"(?m)^\s*import\b"),
    "unicode char literal": re.compile(r"'\\U\{"),
}
_FUNCTION = re.compile(
    r"(?m)^(?P<indent>[ \t]*)(?P<mods>(?:static\s+)?)(?P<kind>function|predicate)\b(?!\s+method)"
)
_GHOST = re.compile(r"\bghost\s+(?=(?:function|predicate)\b)")
_FOR = re.compile(
    r"(?m)^(?P<indent>[ \t]*)for\s+(?P<var>\w+)\s*:=\s*(?P<lo>.+?)\s+to\s+(?P<hi>.+?)\s*$"
)


_GHOST_STATEMENT = re.compile(r"^\s*ghost\b")


def compiled_function_calls(text: str) -> list[str]:
    """Plain (2.3: ghost) functions and predicates called from compiled code: the statements
    of a non-ghost method or constructor, hints and `ghost` statements removed."""
    try:
        decls = declarations(strip_comments(text))
    except ValueError:  # unbalanced braces: the verifier will say what is wrong
        return []
    plain = {
        d.name
        for d in decls
        if d.kind in ("function", "predicate") and not d.function_method and not d.ghost
    }
    called: set[str] = set()
    for d in decls:
        if d.kind not in ("method", "constructor") or d.ghost or d.body is None or not plain:
            continue
        code = "\n".join(
            ln for ln in remove_hints(d.body).split("\n") if not _GHOST_STATEMENT.match(ln)
        )
        called |= {f for f in plain if re.search(rf"(?<![\w']){re.escape(f)}\s*\(", code)}
    return sorted(called)


def detect(text: str) -> str:
    """'4' when a Dafny-4-only construct appears (ghost functions, `for` loops, a plain
    function called from compiled code)."""
    if any(p.search(text) for p in _FOUR_MARKERS.values()) or compiled_function_calls(text):
        return "4"
    return "2"


def to_dafny2(text: str) -> tuple[str, list[str]]:
    """The text in Dafny 2.3 form and the names of the rewrites applied."""
    if detect(text) == "2":
        return text, []
    for reason, pattern in _NO_REWRITE.items():
        if pattern.search(text):
            raise DialectError(f"dafny4: {reason} has no mechanical rewrite")
    applied: list[str] = []
    n_ghost = len(_GHOST.findall(text))
    # Ghost functions are marked so the compiled-function rewrite skips them, then they
    # become plain (ghost by default in 2.3) functions.
    text, n_compiled = _FUNCTION.subn(
        r"\g<indent>\g<mods>\g<kind> method", _GHOST.sub("__GHOST__", text)
    )
    text = text.replace("__GHOST__", "")
    if n_compiled:
        applied.append(f"function → function method ({n_compiled})")
    if n_ghost:
        applied.append(f"ghost function → function ({n_ghost})")
    text, loops = _rewrite_for_loops(text)
    if loops:
        applied.append(f"for loop → while ({loops})")
    return text, applied


def _rewrite_for_loops(text: str) -> tuple[str, int]:
    count = 0
    while True:
        m = _FOR.search(text)
        if not m:
            return text, count
        brace = text.find("{", m.end())
        if brace < 0:
            raise DialectError("dafny4: for loop without a body")
        end = match_brace(text, brace)
        body = text[brace + 1 : end - 1]
        if re.search(r"\b(continue|break)\b", body):
            raise DialectError("dafny4: for loop with break/continue has no mechanical rewrite")
        ind, var, lo, hi = m["indent"], m["var"], m["lo"], m["hi"]
        clauses = text[m.end() : brace]
        head = (
            f"{ind}var {var} := {lo};\n{ind}while {var} < {hi}\n"
            f"{ind}  invariant {lo} <= {var} <= {hi}"
        )
        new_body = body.rstrip() + f"\n{ind}  {var} := {var} + 1;\n{ind}"
        text = text[: m.start()] + head + clauses + "{" + new_body + "}" + text[end:]
        count += 1
