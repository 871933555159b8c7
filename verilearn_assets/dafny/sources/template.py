"""Template tasks from examples: writer and annotator pairings, each validated by the real
verifier before it is accepted. The acceptance rules here are shared with the mutant
repairs of `procedural.py`.

A pairing is accepted when the gold annotated program verifies, the target carries no
anti-cheat construct, the input program parses and resolves (writer: the hint-free body;
annotator: the same), and the spec is strong: it rejects every generated wrong body
(`mutants.wrong_bodies`: the empty body, constant outputs, a dropped statement, an
off-by-one loop bound, swapped call arguments; `weak_spec: …` otherwise, naming the
wrong body it accepts). Task quality on top:

- an annotator task whose input already verifies without hints is no annotator task
  (`nothing_to_annotate`): the answer would be a copy of the input;
- a procedural repair only solvable by changing code (`weaken_guard`) is no annotator task
  (`code_repair`): the annotator may only add annotations (`same_code`);
- every writer gold target scores 1.0 under the writer's reward by its contract
  (`evaluate.score_writer`: the gold code is judged with the gold annotations).

Rejected tasks stay in the lake with their reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from verilearn_assets.dafny.lang.syntax import lemma_names
from verilearn_assets.dafny.records import DafnyExample, DafnyTask
from verilearn_assets.dafny.sources.mutants import wrong_bodies
from verilearn_assets.dafny.verify.anticheat import forbidden_constructs, screen
from verilearn_assets.dafny.verify.verifier import DafnyVerifier

PARSES = ("verified", "verification_error", "timeout")
NOTHING_TO_ANNOTATE = "nothing_to_annotate: the input already verifies without hints"


def spec_strength(
    examples: Sequence[DafnyExample], verifier: DafnyVerifier
) -> dict[str, str | None]:
    """Per example id: why its spec is weak (the first generated wrong body that verifies
    against it, e.g. `weak_spec: accepts the wrong body constant_0`), or None. Wrong bodies
    the anti-cheat screen refuses (`{ while true }`) never reach the verifier."""
    jobs = []
    for ex in examples:
        lemmas = lemma_names(ex.gold_program)
        for wrong in wrong_bodies(ex.spec, ex.annotated_body, lemmas):
            if not screen(wrong.body, "body"):
                jobs.append((ex, wrong))
    verdicts = verifier.verify_many([ex.assemble(w.body) for ex, w in jobs])
    weak: dict[str, str | None] = {ex.id: None for ex in examples}
    for (ex, wrong), verdict in zip(jobs, verdicts, strict=True):
        if verdict.status == "verified" and weak[ex.id] is None:
            weak[ex.id] = f"weak_spec: accepts the wrong body {wrong.kind}"
    return weak


def task_fields(ex: DafnyExample, source: str, split: str, role: str, variant: str = "") -> dict:
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


def rejection(gold_status: str, input_status: str, target: str) -> str | None:
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
    weak = spec_strength(examples, verifier)
    tasks = []
    for i, ex in enumerate(examples):
        gold, plain = verdicts[2 * i], verdicts[2 * i + 1]
        for role, body, target in (
            ("writer", ex.body, ex.body),
            ("annotator", ex.body, ex.annotated_body),
        ):
            reason = rejection(gold.status, plain.status, target) or weak[ex.id]
            if reason is None and role == "annotator" and plain.status == "verified":
                reason = NOTHING_TO_ANNOTATE
            tasks.append(
                DafnyTask(
                    **task_fields(ex, "template", splits[ex.id], role),
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
