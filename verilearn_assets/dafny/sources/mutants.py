"""Procedural mutants of a verified method: one proof hint or spec clause broken at a time.

Each mutant is an annotator *repair* task: the model sees the broken annotated body and
must give back one that verifies. The verdict of every mutant is computed by the verifier
(some mutants still verify: a redundant invariant), never assumed.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from verilearn_assets.dafny.lang.lexer import Token, code_tokens
from verilearn_assets.dafny.lang.syntax import hints
from verilearn_assets.dafny.records import DafnyExample

_CLAUSE = re.compile(r"^\s*(invariant|assert|decreases)\b")
_GUARD = re.compile(r"^(\s*while\s+.*?)(<|>)(?!=)(.*)$")


@dataclass(frozen=True)
class Mutant:
    kind: str  # drop_invariant, drop_assert, drop_decreases, weaken_guard, drop_requires
    line: int  # 1-based line in the annotated body (or spec for drop_requires)
    spec: str
    annotated_body: str

    @property
    def label(self) -> str:
        return f"{self.kind}@{self.line}"


def mutants(example: DafnyExample) -> list[Mutant]:
    """Every single-edit mutant, in a fixed order (body lines, then requires lines)."""
    out: list[Mutant] = []
    lines = example.annotated_body.split("\n")
    for i, line in enumerate(lines):
        m = _CLAUSE.match(line)
        if m and (m.group(1) != "assert" or line.rstrip().endswith(";")):
            body = "\n".join(lines[:i] + lines[i + 1 :])
            out.append(Mutant(f"drop_{m.group(1)}", i + 1, example.spec, body))
        g = _GUARD.match(line)
        if g:
            weaker = g.group(1) + g.group(2) + "=" + g.group(3)
            body = "\n".join(lines[:i] + [weaker] + lines[i + 1 :])
            out.append(Mutant("weaken_guard", i + 1, example.spec, body))
    spec_lines = example.spec.split("\n")
    for i, line in enumerate(spec_lines):
        if re.match(r"^\s*requires\b", line):
            spec = "\n".join(spec_lines[:i] + spec_lines[i + 1 :])
            out.append(Mutant("drop_requires", i + 1, spec, example.annotated_body))
    return out


CODE_KINDS = ("weaken_guard",)  # mutants of code: repairing one changes code, not hints


def pick(example: DafnyExample, limit: int) -> list[Mutant]:
    """Up to `limit` mutants, distinct kinds first and hint mutants before code mutants
    (a code mutant is no annotator task), deterministic."""
    chosen: list[Mutant] = []
    seen: set[str] = set()
    every = sorted(mutants(example), key=lambda m: m.kind in CODE_KINDS)  # stable
    for m in every:
        if m.kind not in seen:
            chosen.append(m)
            seen.add(m.kind)
    for m in every:
        if m not in chosen:
            chosen.append(m)
    return chosen[:limit]


# --- wrong bodies: what a spec must reject ------------------------------------------------
@dataclass(frozen=True)
class WrongBody:
    """A body that does not implement the method; a spec that lets one verify is weak."""

    kind: str  # empty, constant, constant_values, drop_statement, off_by_one, swap_args, …
    body: str

    @property
    def label(self) -> str:
        return self.kind


_DEFAULTS: dict[str, tuple[str, str]] = {
    "int": ("0", "1"),
    "nat": ("0", "1"),
    "real": ("0.0", "1.0"),
    "bool": ("false", "true"),
    "char": ("'a'", "'b'"),
    "string": ('""', '"a"'),
    "seq": ("[]", "[]"),
    "set": ("{}", "{}"),
    "multiset": ("multiset{}", "multiset{}"),
    "map": ("map[]", "map[]"),
}


def outputs(spec: str) -> list[tuple[str, str]]:
    """(name, type head) of the method's out-parameters (`returns (m: int, s: seq<int>)`)."""
    toks = [t.text for t in code_tokens(spec)]
    if "returns" not in toks:
        return []
    out: list[tuple[str, str]] = []
    depth = 0
    for i in range(toks.index("returns") + 2, len(toks) - 2):
        if depth == 0 and toks[i] == ")":
            break
        if depth == 0 and toks[i + 1] == ":":
            out.append((toks[i], toks[i + 2]))
        depth += _DEPTH.get(toks[i], 0)
    return out


_DEPTH = {"<": 1, "(": 1, "[": 1, "{": 1, ">": -1, ")": -1, "]": -1, "}": -1}


def _replace_tokens(body: str, toks: list[Token], first: int, last: int, new: str) -> str:
    return body[: toks[first].start] + new + body[toks[last].end :]


def _ghost(toks: list[Token], lemmas: Collection[str]) -> set[int]:
    return {k for h in hints(toks, lemmas) for k in range(h.first, h.last + 1)}


def _statements(body: str, lemmas: Collection[str]) -> list[tuple[int, int]]:
    """(first, last) code-token indexes of the body's code statements that end with `;`:
    assignments and calls (never proof annotations, lemma calls included)."""
    toks = code_tokens(body)
    ghost = _ghost(toks, lemmas)
    out, start = [], None
    for k, t in enumerate(toks):
        if k in ghost:
            start = None
            continue
        if t.text in ("{", "}", ";") or (t.kind == "ident" and t.text in ("else", "then")):
            if t.text == ";" and start is not None:
                words = {x.text for x in toks[start:k]}
                if words & {":=", "("} and not words & {"return", "var"}:
                    out.append((start, k))
            start = None
        elif start is None:
            start = k
    return out


def _calls(body: str, lemmas: Collection[str]) -> list[tuple[int, int, int]]:
    """(name, comma, close) token indexes of two-argument calls `F(x, y)` in code."""
    toks = code_tokens(body)
    ghost = _ghost(toks, lemmas)
    out = []
    for k in range(1, len(toks) - 1):
        if k in ghost or toks[k].text != "(" or toks[k - 1].kind != "ident":
            continue
        depth, commas, close = 0, [], None
        for j in range(k, len(toks)):
            t = toks[j].text
            depth += 0 if t in "<>" else _DEPTH.get(t, 0)
            if t == "," and depth == 1:
                commas.append(j)
            if depth == 0:
                close = j
                break
        if close is not None and len(commas) == 1:
            out.append((k - 1, commas[0], close))
    return out


def wrong_bodies(
    spec: str, annotated_body: str, lemmas: Collection[str] = (), limit: int = 8
) -> list[WrongBody]:
    """Wrong implementations of the method whose `spec` and gold `annotated_body` are given,
    deterministic, at most `limit`: the empty body; constant outputs (every out-parameter
    a fixed value of its type); a map output's values all reset to 0; one code statement
    dropped; a loop bound off by one; the two arguments of a call swapped (everywhere the
    call occurs, proof included); and `{ while true }`. Mutants keep the gold proof
    annotations, so a wrong body that verifies is accepted by the *spec*."""
    out = [WrongBody("empty", "{\n}"), WrongBody("while_true", "{ while true }")]
    outs = outputs(spec)
    if outs and all(t in _DEFAULTS for _, t in outs):
        for pick_ in (0, 1):
            assigns = " ".join(f"{n} := {_DEFAULTS[t][pick_]};" for n, t in outs)
            out.append(WrongBody(f"constant_{pick_}", "{ " + assigns + " }"))
    close = annotated_body.rstrip().rfind("}")
    for name, typ in outs:
        if typ == "map":
            reset = f"\n  {name} := map k | k in {name} :: 0;\n"
            out.append(WrongBody("constant_values", annotated_body[:close] + reset + "}"))
    toks = code_tokens(annotated_body)
    for first, last in _statements(annotated_body, lemmas):
        out.append(
            WrongBody(
                f"drop_statement@{first}", _replace_tokens(annotated_body, toks, first, last, "")
            )
        )
    for k, t in enumerate(toks):
        if t.text in ("<", ">") and any(x.text == "while" for x in toks[max(0, k - 8) : k]):
            flipped = _replace_tokens(annotated_body, toks, k, k, t.text + "=")
            out.append(WrongBody(f"off_by_one@{k}", flipped))
            break
    for name, comma, close_ in _calls(annotated_body, lemmas):
        left = annotated_body[toks[name + 2].start : toks[comma - 1].end].strip()
        right = annotated_body[toks[comma + 1].start : toks[close_ - 1].end].strip()
        if left == right:
            continue
        # the pair swapped wherever it is passed together, lemma calls included, so the
        # gold proof still fits the wrong code
        pair = re.compile(rf"(\w+)\(\s*{re.escape(left)}\s*,\s*{re.escape(right)}\s*\)")
        swapped = pair.sub(lambda m, a=left, b=right: f"{m[1]}({b}, {a})", annotated_body)
        out.append(WrongBody(f"swap_args@{name}", swapped))
    seen: set[str] = set()
    unique = [w for w in out if not (w.body in seen or seen.add(w.body))]  # type: ignore[func-returns-value]
    return unique[:limit]
