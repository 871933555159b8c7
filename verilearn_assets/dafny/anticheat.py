"""Rejecting candidates that could verify without doing the work.

A writer or annotator candidate is a whole program (header + spec + the model's body or
annotations) compared with the reference program it must keep. Each way to fool the
verifier has its own failure class, so reports show which trick a model tried:

- `assume`: an `assume` statement the reference does not have;
- `axiom`: an `{:axiom}` attribute; `verify_false`: `{:verify false}`; `extern`: `{:extern}`;
- `bodiless_decl`: a function/lemma/method without a body that the reference lacks (an
  unproved lemma is an axiom in disguise), or one whose reference body the candidate left
  out (Dafny 2.3 accepts a bodiless method without proving its ensures: an empty or
  comment-only answer spliced in as the body would verify);
- `spec_changed`: a signature, requires/ensures/modifies/reads/decreases clause of a
  callable, or any other declaration (the header) differs from the reference, compared
  after removing comments and whitespace; a removed or renamed one counts too. New
  declarations *with* bodies (helper lemmas, functions) are allowed: Dafny checks them.

Checked on the comment-free text, so a trick cannot hide in, or be faked by, a comment.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from verilearn_assets.dafny.syntax import Decl, declarations, normalize, strip_comments

CheatClass = Literal["assume", "axiom", "verify_false", "extern", "bodiless_decl", "spec_changed"]
CHEAT_CLASSES: tuple[str, ...] = (
    "assume",
    "axiom",
    "verify_false",
    "extern",
    "bodiless_decl",
    "spec_changed",
)
_CALLABLES = ("function", "predicate", "lemma", "method", "constructor")
_PATTERNS: dict[str, re.Pattern[str]] = {
    "assume": re.compile(r"\bassume\b"),
    "axiom": re.compile(r"\{\s*:\s*axiom\b"),
    "verify_false": re.compile(r"\{\s*:\s*verify\s+false\s*\}"),
    "extern": re.compile(r"\{\s*:\s*extern\b"),
}


class CheatFinding(BaseModel):
    cheat: CheatClass
    detail: str


def _count(pattern: re.Pattern[str], text: str) -> int:
    return len(pattern.findall(text))


def forbidden_constructs(program: str) -> list[CheatFinding]:
    """Anti-cheat constructs present at all (the gate's check on accepted targets)."""
    text = strip_comments(program)
    return [
        CheatFinding(cheat=name, detail=f"{_count(p, text)} occurrence(s)")  # type: ignore[arg-type]
        for name, p in _PATTERNS.items()
        if p.search(text)
    ]


def _by_name(decls: list[Decl]) -> dict[str, Decl]:
    return {f"{d.kind}:{d.qualified}": d for d in decls}


def check_candidate(reference: str, candidate: str) -> list[CheatFinding]:
    """Every cheat in `candidate` relative to `reference` (empty: clean)."""
    ref_text, cand_text = strip_comments(reference), strip_comments(candidate)
    findings: list[CheatFinding] = []
    for name, pattern in _PATTERNS.items():
        added = _count(pattern, cand_text) - _count(pattern, ref_text)
        if added > 0:
            findings.append(CheatFinding(cheat=name, detail=f"{added} added"))  # type: ignore[arg-type]
    try:
        ref_decls, cand_decls = declarations(ref_text), declarations(cand_text)
    except ValueError as exc:  # unbalanced braces: the verifier will reject it anyway
        findings.append(CheatFinding(cheat="spec_changed", detail=f"unreadable: {exc}"))
        return findings
    ref, cand = _by_name(ref_decls), _by_name(cand_decls)
    for key, decl in cand.items():
        if key not in ref and decl.body is None and decl.kind in _CALLABLES:
            findings.append(CheatFinding(cheat="bodiless_decl", detail=f"new bodiless {key}"))
    changed = sorted(set(ref) - set(cand))  # added helpers with bodies are verified too
    for key in sorted(set(ref) & set(cand)):
        r, c = ref[key], cand[key]
        if r.kind in ("class", "module", "trait"):
            continue  # members are compared one by one
        if r.kind in _CALLABLES and r.body is not None and c.body is None:
            findings.append(CheatFinding(cheat="bodiless_decl", detail=f"body left out of {key}"))
            continue
        if r.body is None or r.kind in ("function", "predicate") and not _is_target(r):
            same = normalize(r.text) == normalize(c.text)
        else:
            same = normalize(r.signature) == normalize(c.signature)
        if not same:
            changed.append(key)
    if changed:
        findings.append(CheatFinding(cheat="spec_changed", detail=", ".join(sorted(changed))))
    return findings


def _is_target(decl: Decl) -> bool:
    """Function bodies are specifications unless compiled (`function method`) code."""
    return decl.function_method
