"""Procedural tasks: annotator repairs of mutants (`mutants.pick`: one proof hint or spec
clause broken at a time), accepted by the same rules as the template pairings
(`template.rejection`, `template.spec_strength`), plus: a repair only solvable by changing
code (`weaken_guard`) is no annotator task (`code_repair`), and a mutant that leaves the body
unchanged is no repair (`trivial_repair`). Rejected tasks stay in the lake with their reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from verilearn_assets.dafny.records import DafnyExample, DafnyTask
from verilearn_assets.dafny.sources.mutants import CODE_KINDS, pick
from verilearn_assets.dafny.sources.template import (
    NOTHING_TO_ANNOTATE,
    rejection,
    spec_strength,
    task_fields,
)
from verilearn_assets.dafny.verify.verifier import DafnyVerifier


def procedural_tasks(
    examples: Sequence[DafnyExample],
    splits: dict[str, str],
    verifier: DafnyVerifier,
    per_example: int = 2,
) -> list[DafnyTask]:
    """Annotator repairs of up to `per_example` mutants per example; verdicts recorded."""
    jobs = [(ex, m) for ex in examples for m in pick(ex, per_example)]
    inputs = [ex.prefix + m.spec + m.annotated_body + ex.suffix for ex, m in jobs]
    golds = verifier.verify_many([ex.gold_program for ex in examples])
    gold_of = {ex.id: g for ex, g in zip(examples, golds, strict=True)}
    verdicts = verifier.verify_many(inputs)
    weak = spec_strength(examples, verifier)
    tasks = []
    for (ex, m), verdict, program in zip(jobs, verdicts, inputs, strict=True):
        gold = gold_of[ex.id]
        reason = rejection(gold.status, verdict.status, ex.annotated_body) or weak[ex.id]
        if reason is None and m.kind in CODE_KINDS:
            reason = f"code_repair: {m.kind} changes code; an annotator only adds annotations"
        elif reason is None and verdict.status == "verified":
            reason = NOTHING_TO_ANNOTATE
        if reason is None and m.annotated_body == ex.annotated_body:
            # A spec mutant (drop_requires) leaves the body as it was: the "repair" would be
            # to copy the input, and the annotator may not touch the spec. Its verdict is
            # kept on the rejected record; it never becomes a training target.
            reason = f"trivial_repair: {m.kind} leaves the body unchanged (target equals input)"
        tasks.append(
            DafnyTask(
                **task_fields(ex, "procedural", splits[ex.id], "annotator", m.label),
                status="rejected" if reason else "accepted",
                rejection_reason=reason,
                body=m.annotated_body,
                target=ex.annotated_body,
                gold_status=gold.status,
                gold_ms=gold.duration_ms,
                input_program=program,
                input_status=verdict.status,
                easy=verdict.status == "verified",
                mutation=m.label,
                verifier=gold.verifier,
            )
        )
    return tasks
