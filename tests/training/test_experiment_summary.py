"""Known answers of the experiment summary: per-task pass@k, bootstrap intervals over tasks,
the verdict on the success criterion, and the cheats a verdict must not fall for."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from verilearn_assets.core.eval_records import ModelEvalRecord
from verilearn_assets.training.experiments.card import ExperimentCard, SuccessCriterion
from verilearn_assets.training.experiments.summary import (
    bootstrap_interval,
    difference_interval,
    summarize,
    task_counts,
    verdict,
    write_summary,
)


def rec(arm: str, task: str, c: int, n: int = 1, split: str = "test", source: str = "template"):
    return ModelEvalRecord(
        id=ModelEvalRecord.make_id(arm, task, "analysis"),
        model=arm,
        family="analysis",
        question_id=task,
        source=source,
        split=split,
        dataset="toy",
        template_family=f"tpl_{task[-1]}",
        difficulty="easy",
        passed=c > 0,
        extra={"n_best": n, "n_best_passed": c},
    )


def card(**success) -> ExperimentCard:
    crit = {"treatment": {"arm": "b"}, "control": {"arm": "a"}, "min_points": 5, **success}
    return ExperimentCard.model_validate(
        {
            "name": "t",
            "hypothesis": "b beats a",
            "arms": {"a": {}, "b": {}},
            "evaluation": {"splits": ["test", "train"], "n": 4},
            "metrics": ["pass@1", "pass@2", "pass^2"],
            "success": crit,
        }
    )


def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_bootstrap_interval_known_answers() -> None:
    assert bootstrap_interval([0.25] * 7, rng(), 500, 0.95) == (0.25, 0.25)
    # two tasks, values 0 and 1: resampled means are 0, .5, 1 with chances 1/4, 1/2, 1/4,
    # so the 2.5th and 97.5th percentiles are the extremes
    assert bootstrap_interval([0.0, 1.0], rng(), 4000, 0.95) == (0.0, 1.0)
    # a 50% interval of the same lies at the middle value
    assert bootstrap_interval([0.0, 1.0], rng(), 4000, 0.5) == (0.5, 0.5)


def test_paired_difference_is_per_task() -> None:
    t = {"q1": 1.0, "q2": 1.0, "q3": 0.0}
    c = {"q1": 0.0, "q2": 0.0, "q3": 1.0}
    diff, (lo, hi) = difference_interval(t, c, rng(), 2000, 0.95, paired=True)
    assert diff == pytest.approx(1 / 3)
    assert lo == pytest.approx(-1.0) and hi == pytest.approx(1.0)  # diffs 1, 1, -1
    # unpaired (two splits): each side resampled alone; constant sides give a point
    assert difference_interval(
        {"x": 1.0, "y": 1.0}, {"z": 0.0}, rng(), 100, 0.95, paired=False
    ) == (1.0, (1.0, 1.0))


def test_table_rows_hold_pass_at_k_and_pass_hat_k_per_task() -> None:
    c = card()
    # q1: 1 of 4 passed -> pass@1 .25, pass@2 = 1 - C(3,2)/C(4,2) = .5, pass^2 = 0
    # q2: 4 of 4 -> 1, 1, 1
    evals = {"a": {"test": [rec("a", "q1", 1, 4), rec("a", "q2", 4, 4)]}, "b": {"test": []}}
    s = summarize(c, evals, {"a": {}, "b": {}})
    (overall,) = [r for r in s["table"] if r["by"] == "all"]
    assert overall["tasks"] == 2 and overall["n"] == 4 and overall["correct"] == 5
    assert overall["pass_at_k"][1] == pytest.approx((0.25 + 1) / 2)
    assert overall["pass_at_k"][2] == pytest.approx((0.5 + 1) / 2)
    assert overall["pass_hat_k"][2] == pytest.approx((0 + 1) / 2)
    lo, hi = overall["intervals"]["pass@1"]
    assert lo == pytest.approx(0.25) and hi == pytest.approx(1.0)
    by_template = {r["group"]: r for r in s["table"] if r["by"] == "template"}
    assert by_template["tpl_1"]["pass_at_k"][2] == pytest.approx(0.5)
    assert s["verdict"]["verdict"] == "no data"  # arm b evaluated nothing
    assert "b on test" in s["verdict"]["reasons"][0]


def cells(t: list[int], c: list[int], split_c: str = "test") -> dict:
    return {
        ("b", "test"): task_counts([rec("b", f"q{i}", v) for i, v in enumerate(t)]),
        ("a", split_c): task_counts([rec("a", f"q{i}", v, split=split_c) for i, v in enumerate(c)]),
    }


def test_verdict_met_when_difference_and_interval_clear() -> None:
    v = verdict(card().success, cells([1] * 20, [0] * 20), "test", rng(), 2000)
    assert v["met"] is True and v["verdict"] == "met"
    assert v["difference_points"] == 100 and v["interval_points"] == [100, 100]
    assert v["paired"] and v["treatment"]["tasks"] == v["control"]["tasks"] == 20


def test_verdict_not_met_on_equal_arms_or_an_interval_touching_zero() -> None:
    same = verdict(card().success, cells([1, 0, 1, 0], [1, 0, 1, 0]), "test", rng(), 2000)
    assert same["met"] is False and same["difference_points"] == 0
    assert any("< 5" in r for r in same["reasons"])
    # +50 points on two tasks: large, but the paired interval is [0, 100]
    two = verdict(card().success, cells([1, 1], [0, 1]), "test", rng(), 4000)
    assert two["difference_points"] == 50 and two["interval_points"][0] == 0
    assert two["met"] is False and any("above 0" in r for r in two["reasons"])
    lax = card(interval_excludes_zero=False).success
    assert verdict(lax, cells([1, 1], [0, 1]), "test", rng(), 4000)["met"] is True


def test_verdict_across_splits_is_unpaired() -> None:
    crit = SuccessCriterion.model_validate(
        {"treatment": {"arm": "b", "split": "test"}, "control": {"arm": "a", "split": "train"}}
    )
    v = verdict(crit, cells([1] * 10, [0] * 10, split_c="train"), "test", rng(), 1000)
    assert v["paired"] is False and v["met"] is True


def test_cheat_the_treatment_on_its_easy_tasks_only_is_refused() -> None:
    """The cheapest way to 'win': evaluate the treatment on the tasks it passes and the
    control on all of them. The verdict needs the same tasks on one split."""
    c = cells([1, 1], [0, 0, 0, 0])
    with pytest.raises(ValueError, match="different tasks of split test"):
        verdict(card().success, c, "test", rng(), 500)


def test_cheat_duplicated_or_impossible_records_are_refused() -> None:
    with pytest.raises(ValueError, match="task q1 has two model_eval records"):
        task_counts([rec("b", "q1", 1), rec("b", "q1", 1)], "arm b [test]")
    with pytest.raises(ValueError, match="arm b \\[test\\]: model_eval record"):
        task_counts([rec("b", "q1", 5, n=4)], "arm b [test]")


def test_summary_files(tmp_path: Path) -> None:
    c = card()
    evals = {
        "a": {"test": [rec("a", f"q{i}", 0, 4) for i in range(6)]},
        "b": {"test": [rec("b", f"q{i}", 3, 4) for i in range(6)]},
    }
    s = summarize(c, evals, {"a": {"train": []}, "b": {"train": []}})
    paths = write_summary(s, tmp_path)
    saved = json.loads(paths["json"].read_text())
    assert saved["verdict"]["met"] is True and saved["verdict"]["difference_points"] == 75
    md = paths["md"].read_text()
    assert "**Verdict: met.**" in md and "| b | test | (all) | 6 | 4 | 0.750" in md
    assert paths["plot"].is_file() and saved["plot"] == str(paths["plot"])
    # the same records give the same intervals (seeded by the card)
    again = summarize(c, evals, {"a": {}, "b": {}})
    assert again["table"] == s["table"] and again["verdict"] == s["verdict"]
