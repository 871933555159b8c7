"""The `program` teacher reaches the ground truth on real verified questions.

Questions come from the real generators (templates and the procedural search) on a real
table and are verified by clean re-execution in the sandbox, exactly as the `questions`
asset does; the teacher then replays each reference program cell by cell in a fresh slot
of the default (`auto`) backend.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from teacher_harness import Sandbox, started_sandbox

from verilearn_assets.analysis.config import load_questions_config
from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.analysis.rollout.config import TeacherConfig
from verilearn_assets.analysis.rollout.loop import run_episode
from verilearn_assets.analysis.rollout.policy import ProgramPolicy
from verilearn_assets.analysis.sources.generate import generate
from verilearn_assets.analysis.verify.verifier import Verifier
from verilearn_assets.core.records import TableRecord

N_TEMPLATE, N_PROCEDURAL = 8, 4


@pytest.fixture(scope="module")
def auto_sandbox() -> Iterator[Sandbox]:
    with started_sandbox("auto") as sb:
        yield sb


def verified_questions(
    sandbox: Sandbox, table: TableRecord, source: str, n: int
) -> list[QuestionRecord]:
    cfg = load_questions_config()
    cands = generate(table, source, cfg).candidates
    # spread the picks over distinct templates / operator families
    seen: set[str] = set()
    picked = []
    for c in cands:
        key = c.template or ",".join(c.op_families)
        if key not in seen:
            seen.add(key)
            picked.append(c)
    verifier = Verifier(sandbox.pool, cfg)
    records = sandbox.run(verifier.verify_all([(table, c) for c in picked[: 2 * n]]), 600)
    accepted = [r for r in records if r.status == "accepted"]
    assert len(accepted) >= n, [r.rejection_reason for r in records if r.status != "accepted"]
    return accepted[:n]


@pytest.mark.parametrize(("source", "n"), [("template", N_TEMPLATE), ("procedural", N_PROCEDURAL)])
def test_program_teacher_reaches_ground_truth(
    auto_sandbox: Sandbox, table: TableRecord, source: str, n: int
) -> None:
    questions = verified_questions(auto_sandbox, table, source, n)
    cfg = TeacherConfig()
    for q in questions:
        policy = ProgramPolicy(q.code, max_cells=cfg.max_turns)
        ep = auto_sandbox.run(run_episode(q, table, policy, auto_sandbox.pool, cfg))
        where = f"{q.template or q.program_ops} ({q.id})"
        assert ep.verified, (
            where,
            ep.answer,
            q.answer,
            [(c.status, c.stderr[-300:]) for c in ep.cells],
        )
        assert ep.failure_class is None and ep.teacher == "program"
        assert len(ep.cells) == len(policy.cells) and all(c.status == "ok" for c in ep.cells)
        assert ep.messages[-1].role == "tool" and ep.messages[-1].content.count("submitted:")
        # every hook the reference program records grounds against the replayed cells
        assert ep.hooks_malformed == 0
        assert ep.hooks_grounded == ep.hooks_total == len(q.hooks), where
        assert [h.value_hash for h in ep.hooks] == [h.value_hash for h in q.hooks], where
    if source == "template":  # template programs have several steps: replayed as several cells
        assert max(len(ProgramPolicy(q.code).cells) for q in questions) >= 3
