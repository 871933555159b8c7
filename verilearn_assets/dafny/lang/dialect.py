"""Dafny 4 → Dafny 2.3, where a mechanical rewrite exists.

DafnyBench is mostly Dafny 4: `function` is compiled by default (`ghost function` is the
spec-only kind), and `for i := lo to hi` loops exist. A file whose only Dafny 4 feature is a
plain `function`/`predicate` called from compiled code (a non-ghost method's statements,
proof hints and ghost statements aside) is Dafny 4 too: in 2.3 that function is ghost and
the call a resolution error. Dafny 2.3 has `function method` for
compiled functions, plain `function` for ghost ones, and only `while`. We rewrite those and
name every rewrite applied; a feature without a rewrite raises `DialectError` with the
reason the loader counts.

**A rewrite never weakens what is proved.** Every rewrite here keeps every spec clause
(`requires`, `ensures`, `invariant`, `decreases`, `reads`, `modifies`) and every statement;
it only renames a declaration's kind or spells a loop the 2.3 way (adding the invariant the
Dafny 4 loop carries implicitly, which makes the proof obligation stronger, never weaker).
A construct whose only 2.3 spelling would drop something that is proved today (`by method`
bodies, whose equality with the function is a proof obligation; `for` loops whose bound the
body changes, which Dafny 4 evaluates once) is refused with `DialectError`, never rewritten.
`tests/dafny/test_dafny_dialect.py` holds every rewrite to that: each rewritten program
that verifies still rejects a wrong body.
"""

from __future__ import annotations

import difflib
import re

from verilearn_assets.dafny.lang.syntax import (
    declarations,
    match_brace,
    remove_hints,
    strip_comments,
)


class DialectError(ValueError):
    """A Dafny 4 feature we cannot rewrite: the file is skipped with this reason."""


_FOUR_MARKERS = {
    "ghost function": re.compile(r"\bghost\s+(function|predicate)\b"),
    "for loop": re.compile(r"(?m)^\s*for\s+\w+\s*:=.*\b(to|downto)\b"),
    "least/greatest": re.compile(r"\b(least|greatest)\s+(predicate|lemma)\b"),
    "by method": re.compile(r"\}\s*by\s+method\b"),
    # newer than 2.3 and not rewritten: marked so the file is refused by name (below)
    # instead of reaching the verifier as a parse error
    ":-": re.compile(r":-"),
    "old@": re.compile(r"\bold@"),
    "unicode char": re.compile(r"'\\U\{"),
}
_NO_REWRITE = {
    "downto loop": re.compile(r"(?m)^\s*for\s+\w+\s*:=.*\bdownto\b"),
    ":- (elephant operator)": re.compile(r":-"),
    "opaque": re.compile(r"\bopaque\b"),
    "old@label": re.compile(r"\bold@"),
    "include": re.compile(r"(?m)^\s*include\s+\""),
    "import": re.compile(r"(?m)^\s*import\b"),
    "unicode char literal": re.compile(r"'\\U\{"),
    # `function F() { spec } by method { code }`: the method body must be proved equal to
    # the function. Dropping it (the only 2.3 spelling) would drop that proof: refused.
    "by method": re.compile(r"\}\s*by\s+method\b"),
}
# Dafny 4's names of the (co)inductive kinds, and their Dafny 2.3 names: the same
# declarations with the same meaning, so the rewrite keeps every proof obligation.
_FIXPOINT_KINDS = {
    "least predicate": "inductive predicate",
    "least lemma": "inductive lemma",
    "greatest predicate": "copredicate",
    "greatest lemma": "colemma",
}
_FIXPOINT = re.compile(r"\b(least|greatest)\s+(predicate|lemma)\b")
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


_DATATYPE = re.compile(r"(?m)^[ \t]*(?:co)?datatype\b")
_NEXT_DECL = re.compile(
    r"(?m)^[ \t]*(?:(?:ghost|static|least|greatest|inductive)\s+)*(?:method|lemma|function|"
    r"predicate|class|datatype|codatatype|const|type|newtype|module|trait|iterator)\b"
)


def datatype_members(code: str) -> bool:
    """A datatype with a member block (`datatype T = A | B { function F() … }`): Dafny 2.3
    cannot parse one, and moving the members out changes every call site."""
    for m in _DATATYPE.finditer(code):
        nxt = _NEXT_DECL.search(code, m.end())
        segment = code[m.end() : nxt.start() if nxt else len(code)]
        if re.search(r"\{(?!:)", segment):
            return True
    return False


def detect(text: str) -> str:
    """'4' when a construct the installed 2.3 cannot read appears (ghost functions, `for`
    loops, least/greatest fixpoints, `by method`, datatype members, a plain function called
    from compiled code)."""
    code = strip_comments(text)
    if (
        any(p.search(code) for p in _FOUR_MARKERS.values())
        or datatype_members(code)
        or compiled_function_calls(code)
    ):
        return "4"
    return "2"


def to_dafny2(text: str) -> tuple[str, list[str]]:
    """The text in Dafny 2.3 form and the names of the rewrites applied.

    A Dafny 2 text comes back unchanged. A Dafny 4 text comes back comment-free (comments
    are dropped before rewriting so a rewrite never fires inside one; line numbers are
    kept, `for` loops aside, which add lines)."""
    if detect(text) == "2":
        return text, []
    text = strip_comments(text)
    for reason, pattern in _NO_REWRITE.items():
        if pattern.search(text):
            raise DialectError(f"dafny4: {reason} has no mechanical rewrite")
    if datatype_members(text):
        raise DialectError("dafny4: datatype members has no mechanical rewrite")
    applied: list[str] = []
    text, n_fix = _FIXPOINT.subn(lambda m: _FIXPOINT_KINDS[f"{m[1]} {m[2]}"], text)
    if n_fix:
        applied.append(f"least/greatest → inductive/co ({n_fix})")
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


def _assigned(body: str, names: set[str]) -> set[str]:
    """Which of `names` the body assigns (`x :=`, `x, y :=`, `x[i] :=` aside: those
    assign an element, not the variable)."""
    out = set()
    for m in re.finditer(r"((?:[A-Za-z_][\w']*\s*,\s*)*[A-Za-z_][\w']*)\s*(?::=|:\|)", body):
        out |= {n.strip() for n in m[1].split(",")} & names
    return out


def _rewrite_for_loops(text: str) -> tuple[str, int]:
    """`for i := lo to hi invariant … { body }` → `var i := lo; while i < hi invariant (lo)
    <= i <= (hi) invariant … { body i := i + 1; }`: Dafny 4's own desugaring, with the
    bound invariant it carries implicitly. Dafny 4 evaluates `hi` once; a body that assigns
    a variable of `lo` or `hi` would make the `while` mean something else: refused."""
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
        if _assigned(body, set(re.findall(r"[A-Za-z_][\w']*", f"{lo} {hi}"))):
            raise DialectError("dafny4: for loop whose body assigns its bounds has no rewrite")
        clauses = text[m.end() : brace]
        head = (
            f"{ind}var {var} := {lo};\n{ind}while {var} < ({hi})\n"
            f"{ind}  invariant ({lo}) <= {var} <= ({hi})"
        )
        new_body = body.rstrip() + f"\n{ind}  {var} := {var} + 1;\n{ind}"
        text = text[: m.start()] + head + clauses + "{" + new_body + "}" + text[end:]
        count += 1


def apply(text: str, mode: str) -> tuple[str, str, list[str]]:
    """What `verilearn dafny verify` and the loader verify: `(text, dialect, rewrites)`.
    `mode` `auto` rewrites Dafny 4 (raising `DialectError` for a construct without a
    rewrite); `as-is` leaves the text alone (its dialect still detected)."""
    if mode == "as-is":
        return text, detect(text), []
    if mode != "auto":
        raise ValueError(f"unknown dialect mode {mode!r} (auto or as-is)")
    out, applied = to_dafny2(text)
    return out, "4" if applied else "2", applied


def line_map(original: str, rewritten: str) -> list[int]:
    """For each line of `rewritten` (index 0 = line 1), the line of `original` (1-based) it
    stands for, so the verifier's errors on a rewritten file point into the file the user
    wrote: kept lines map to themselves, the lines a `for` header became map to the header,
    the added increment to the loop's closing brace. (Comments are stripped before
    rewriting but line structure is kept, so lines are matched on the comment-free text.)"""
    a = [ln.strip() for ln in strip_comments(original).split("\n")]
    b = [ln.strip() for ln in rewritten.split("\n")]
    out = [1] * len(b)
    for tag, i1, _i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        for k, j in enumerate(range(j1, j2)):
            i = i1 + k if tag == "equal" else min(i1, len(a) - 1)
            out[j] = i + 1
    return out
