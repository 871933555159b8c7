"""The refactor family's GRPO hook: step-1 prompts and rewards from the jailed runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verilearn_assets.refactor.family import FAMILY


def _answer(action: dict) -> str:
    update = {"history": ["step 1: one rewrite"]}
    return (
        f"<think>one structural rewrite</think>\n<action>{json.dumps(action)}</action>\n"
        f"<state_update>{json.dumps(update)}</state_update>"
    )


def test_grpo_prompts_and_scores(small_tasks, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path))
    grpo = FAMILY.grpo
    assert grpo is not None and set(grpo.rewards) >= {"outcome", "partial"}
    tasks = small_tasks["template"] + small_tasks["procedural"]
    single = next(t for t in small_tasks["template"] if t.status == "accepted")
    pair = next(t for t in small_tasks["procedural"] if len(t.rules) == 2)
    rows = grpo.prompts(tmp_path, tasks, "default")
    assert {r["task_id"] for r in rows} == {t.id for t in tasks if t.status == "accepted"}
    row = next(r for r in rows if r["task_id"] == single.id)
    assert (
        row["prompt"][-1]["role"] == "user" and single.instruction in row["prompt"][-1]["content"]
    )
    assert row["group"] == single.rules[0]
    assert next(r for r in rows if r["task_id"] == pair.id)["difficulty"] > row["difficulty"]
    scorer = grpo.scorer(tmp_path, tasks, "default")
    try:
        ids = [single.id, single.id, single.id, pair.id, pair.id]
        completions = [
            _answer(single.reference_actions[0]),  # the reference rewrite: solved
            "no blocks at all",  # parse failure
            _answer({"kind": "command", "argv": ["sh", "-c", "true"]}),  # disallowed
            # first of two steps: capped partial credit, verified (the reference tree reached)
            _answer(pair.reference_actions[0]),
            _answer({"kind": "run", "pattern": "print($A)", "rewrite": "print($A)"}),  # no-op
        ]
        scores = scorer.score(ids, completions)
        detail = scorer.evaluate(ids, completions)  # what `verilearn eval` records
    finally:
        scorer.close()
    assert [d["status"] for d in detail] == [
        "verified", "parse", "disallowed", "verified", "no_change"
    ]  # fmt: skip
    assert [{k: d[k] for k in ("outcome", "partial")} for d in detail] == scores
    assert scores[0] == {"outcome": 1.0, "partial": 1.0}
    assert scores[1] == scores[2] == {"outcome": 0.0, "partial": 0.0}
    assert scores[3]["outcome"] == 0.0 and 0.0 < scores[3]["partial"] <= 0.5
    assert scores[4] == {"outcome": 0.0, "partial": 0.0}
    with pytest.raises(ValueError, match="only role"):
        grpo.prompts(tmp_path, tasks, "writer")


def test_multi_turn_environment_runs_a_trajectory(small_tasks, tmp_path: Path, monkeypatch) -> None:
    """A scripted policy (the reference actions) solves a two-step task over two turns; the
    environment answers the first with the actor's next-step prompt, state updated."""
    from verilearn_assets.core.family import GrpoEnvOptions

    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path))
    grpo = FAMILY.grpo
    assert grpo is not None and grpo.environment is not None
    tasks = small_tasks["template"] + small_tasks["procedural"]
    pair = next(t for t in small_tasks["procedural"] if len(t.rules) == 2)
    env = grpo.environment(tmp_path, tasks, "default", GrpoEnvOptions(4, 2))
    try:
        solved, cut = env.reset(pair.id), env.reset(pair.id)  # a group: two open episodes
        assert solved.opening[-1]["role"] == "user"
        assert pair.instruction in solved.opening[-1]["content"]
        feedback, done = solved.step(_answer(pair.reference_actions[0]))
        assert not done and [m["role"] for m in feedback] == ["user"]
        assert "Step 2 of at most" in feedback[0]["content"]
        assert "step 1: one rewrite" in feedback[0]["content"]  # the merged state update
        assert "tests passed" in feedback[0]["content"]  # the last result, from the jail
        feedback, done = solved.step(_answer(pair.reference_actions[1]))
        assert done and feedback == []
        assert solved.score() == {"outcome": 1.0, "partial": 1.0}
        assert solved.record()["end"] == "solved" and solved.record()["assistant_turns"] == 2

        feedback, done = cut.step("no blocks at all")  # a parse failure is a step too
        assert not done and "failure: parse" in feedback[0]["content"]
        cut.stop("completion budget spent")
        assert cut.score() == {"outcome": 0.0, "partial": 0.0}
        assert cut.record()["stopped"] == "completion budget spent"
    finally:
        env.close()
    assert not env.scratch.exists()
