"""The llm source with a scripted model (what a model says is the one allowed double):
proven programs become tasks; cheats, failures and garbage are kept as rejections."""

from __future__ import annotations

from collections import Counter

import dafny_programs as P

from verilearn_assets.dafny import prompts
from verilearn_assets.dafny.sources.llm import llm_tasks
from verilearn_assets.dafny.sources.template import NOTHING_TO_ANNOTATE
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

ANSWERS = [
    "Sure!\n" + prompts.fenced(P.VERIFIED),
    prompts.fenced(P.VERIFIED.replace("  if a > b", "  assume false;\n  if a > b")),
    prompts.fenced(P.VERIFIED + "lemma Free() ensures false\n"),
    prompts.fenced(P.VERIFICATION_ERROR),
    "I cannot write Dafny.",
]


def test_llm_proposals_accepted_only_when_proven_and_clean(verifier: DafnyVerifier) -> None:
    said = iter(ANSWERS)
    seen: list[list[dict]] = []

    def scripted(messages: list[dict]) -> str:
        seen.append(messages)
        return next(said)

    shots = [P.VERIFIED]
    tasks = llm_tasks(scripted, len(ANSWERS), "dev", verifier, shots=shots)
    assert all(t.source == "llm" and t.split == "dev" for t in tasks)
    accepted = [t for t in tasks if t.status == "accepted"]
    # Max needs no hints: its annotator task would ask to copy the input
    assert Counter(t.role for t in accepted) == {"writer": 1}
    assert accepted[0].gold_status == "verified" and accepted[0].name.endswith(".Max")
    reasons = sorted(t.rejection_reason or "" for t in tasks if t.status == "rejected")
    assert reasons == [
        "anti-cheat: assume (assume)",
        "anti-cheat: bodiless_decl (no body: ['Free'])",
        "no fenced dafny block",
        NOTHING_TO_ANNOTATE,
        "proposal does not verify: verification_error",
    ]
    assert len(seen) == len(ANSWERS)
    assert seen[0][2]["content"] == prompts.fenced(P.VERIFIED)  # the shot, as an answer
