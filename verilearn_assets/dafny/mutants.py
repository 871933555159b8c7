"""Procedural mutants of a verified method: one proof hint or spec clause broken at a time.

Each mutant is an annotator *repair* task: the model sees the broken annotated body and
must give back one that verifies. The verdict of every mutant is computed by the verifier
(some mutants still verify: a redundant invariant), never assumed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


def pick(example: DafnyExample, limit: int) -> list[Mutant]:
    """Up to `limit` mutants of distinct kinds first, deterministic."""
    chosen: list[Mutant] = []
    seen: set[str] = set()
    every = mutants(example)
    for m in every:
        if m.kind not in seen:
            chosen.append(m)
            seen.add(m.kind)
    for m in every:
        if m not in chosen:
            chosen.append(m)
    return chosen[:limit]
