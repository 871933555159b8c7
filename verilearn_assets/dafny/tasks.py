"""Tasks from examples: writer and annotator pairings (template) and mutant repairs
(procedural), each validated by the real verifier before it is accepted.

A pairing is accepted when the gold annotated program verifies, the target carries no
anti-cheat construct, and the input program parses and resolves (writer: the hint-free
body; annotator: the same). Whether the hint-free program verifies anyway is recorded as
`easy`. Rejected tasks stay in the lake with their reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from verilearn_assets.dafny.anticheat import forbidden_constructs
from verilearn_assets.dafny.mutants import pick
from verilearn_assets.dafny.records import DafnyExample, DafnyTask
from verilearn_assets.dafny.verifier import DafnyVerifier

PARSES = ("verified", "verification_error", "timeout")


def _base(ex: DafnyExample, source: str, split: str, role: str, variant: str = "") -> dict:
    return {
        "id": DafnyTask.make_id(source, role, ex.id, variant),
        "source": source,
        "split": split,
        "role": role,
        "example_id": ex.id,
        "name": ex.name,
        "program": ex.program,
        "constructs": ex.constructs,
        "n_lines": ex.n_lines,
        "prefix": ex.prefix,
        "suffix": ex.suffix,
        "spec": ex.spec,
        "gold_program": ex.gold_program,
        "annotated_body": ex.annotated_body,
        "dialect": ex.dialect,
        "rewrites": ex.rewrites,
    }


def _decide(gold_status: str, input_status: str, target: str) -> str | None:
    if gold_status != "verified":
        return f"gold program does not verify: {gold_status}"
    cheats = forbidden_constructs(target)
    if cheats:
        return "target has anti-cheat construct(s): " + ", ".join(c.cheat for c in cheats)
    if input_status not in PARSES:
        return f"input program does not parse/resolve: {input_status}"
    return None


def template_tasks(
    examples: Sequence[DafnyExample], splits: dict[str, str], verifier: DafnyVerifier
) -> list[DafnyTask]:
    """A writer and an annotator task per example."""
    programs: list[str] = []
    for ex in examples:
        programs += [ex.gold_program, ex.assemble(ex.body)]
    verdicts = verifier.verify_many(programs)
    tasks = []
    for i, ex in enumerate(examples):
        gold, plain = verdicts[2 * i], verdicts[2 * i + 1]
        for role, body, target in (
            ("writer", ex.body, ex.body),
            ("annotator", ex.body, ex.annotated_body),
        ):
            reason = _decide(gold.status, plain.status, target)
            tasks.append(
                DafnyTask(
                    **_base(ex, "template", splits[ex.id], role),
                    status="rejected" if reason else "accepted",
                    rejection_reason=reason,
                    body=body,
                    target=target,
                    gold_status=gold.status,
                    gold_ms=gold.duration_ms,
                    input_program=ex.assemble(ex.body),
                    input_status=plain.status,
                    easy=plain.status == "verified",
                    verifier=gold.verifier,
                )
            )
    return tasks


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
    tasks = []
    for (ex, m), verdict, program in zip(jobs, verdicts, inputs, strict=True):
        gold = gold_of[ex.id]
        reason = _decide(gold.status, verdict.status, ex.annotated_body)
        if reason is None and m.annotated_body == ex.annotated_body:
            # A spec mutant (drop_requires) leaves the body as it was: the "repair" would be
            # to copy the input, and the annotator may not touch the spec. Its verdict is
            # kept on the rejected record; it never becomes a training target.
            reason = f"trivial_repair: {m.kind} leaves the body unchanged (target equals input)"
        tasks.append(
            DafnyTask(
                **_base(ex, "procedural", splits[ex.id], "annotator", m.label),
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
