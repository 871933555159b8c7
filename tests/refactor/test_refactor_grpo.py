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
            _answer(pair.reference_actions[0]),  # first of two steps: capped partial credit
            _answer({"kind": "run", "pattern": "print($A)", "rewrite": "print($A)"}),  # no-op
        ]
        scores = scorer.score(ids, completions)
    finally:
        scorer.close()
    assert scores[0] == {"outcome": 1.0, "partial": 1.0}
    assert scores[1] == scores[2] == {"outcome": 0.0, "partial": 0.0}
    assert scores[3]["outcome"] == 0.0 and 0.0 < scores[3]["partial"] <= 0.5
    assert scores[4] == {"outcome": 0.0, "partial": 0.0}
    with pytest.raises(ValueError, match="only role"):
        grpo.prompts(tmp_path, tasks, "writer")
