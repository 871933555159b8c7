"""Verifier rewards: plain functions the GRPO trainer calls.

- `binary_reward`: 1.0 when the program verifies, else 0.0 (the primary reward).
- `partial_reward`: 1.0 when verified; 0.0 for a cheat, a parse/resolution error, a crash
  and a **timeout**; otherwise (it parses, and the verifier reports errors) `PARSE_CREDIT`
  plus a per-method share of `METHOD_CREDIT` for the target methods without an error.
  Capped at `PARTIAL_CAP` < 1, so no partial credit ever equals or beats a verified program.
  A timeout earns nothing: a hard nonlinear `assert` that makes z3 give up would otherwise
  farm more credit than an honest wrong answer (a timeout reports no error, so every
  method would count as error-free).
- `cascade_reward`: joint credit of writer + annotator: 1.0 when the cascade verifies;
  when it fails with verification errors (not a timeout), `WRITER_ONLY_CREDIT` (< `PARSE_CREDIT` +
  `METHOD_CREDIT`): the writer did its part, the annotator did not.

Anti-cheat runs before the verifier: a cheating candidate gets 0 whatever the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from verilearn_assets.dafny.lang.syntax import callables, strip_comments
from verilearn_assets.dafny.verify.anticheat import CheatFinding, check_candidate
from verilearn_assets.dafny.verify.results import VerifyResult
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

PARSE_CREDIT = 0.1
METHOD_CREDIT = 0.4
PARTIAL_CAP = 0.5
WRITER_ONLY_CREDIT = 0.2
PARSED = ("verification_error",)  # the statuses partial credit is paid on (not timeout)


@dataclass(frozen=True)
class Scored:
    reward: float
    partial: float
    status: str  # verifier status, or "cheat"
    cheats: tuple[CheatFinding, ...]
    result: VerifyResult | None


def binary_reward(result: VerifyResult) -> float:
    return 1.0 if result.status == "verified" else 0.0


def method_share(program: str, result: VerifyResult) -> float:
    """Fraction of the program's methods (with bodies) that hold no reported error."""
    text = strip_comments(program)
    methods = [d for d in callables(text) if d.kind == "method" and d.body is not None]
    if not methods:
        return 0.0

    def line_of(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    spans = [(line_of(d.start), line_of(d.end)) for d in methods]
    bad = {i for e in result.errors for i, (a, b) in enumerate(spans) if a <= e.line <= b}
    return (len(methods) - len(bad)) / len(methods)


def partial_reward(program: str, result: VerifyResult) -> float:
    if result.status == "verified":
        return 1.0
    if result.status not in PARSED:
        return 0.0
    return min(PARTIAL_CAP, PARSE_CREDIT + METHOD_CREDIT * method_share(program, result))


def score_candidate(reference: str, candidate: str, verifier: DafnyVerifier) -> Scored:
    """Anti-cheat, then verify; both rewards."""
    cheats = tuple(check_candidate(reference, candidate))
    if cheats:
        return Scored(0.0, 0.0, "cheat", cheats, None)
    result = verifier.verify(candidate)
    return Scored(
        binary_reward(result), partial_reward(candidate, result), result.status, (), result
    )


def cascade_reward(final: Scored) -> float:
    """The writer's reward through the cascade (the annotator only adds hints, so a final
    program that resolves means the writer's body resolved)."""
    if final.reward == 1.0:
        return 1.0
    return WRITER_ONLY_CREDIT if final.status in PARSED else 0.0
