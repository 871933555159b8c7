"""pass@k and pass^k: the estimator against exhaustive enumeration and hand-worked values,
and `mart_model_pass_rate` (SQL) against the Python estimator on records in a real lake."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest

from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import ModelEvalRecord
from verilearn_assets.core.warehouse import build_all, reader, warehouse_path, writer
from verilearn_assets.training.eval.pass_at_k import aggregate, pass_at_k, pass_hat_k, record_counts
from verilearn_assets.training.eval.result import EvalResult, write_eval_records


def _enumerated(n: int, c: int, k: int) -> tuple[float, float]:
    """Share of the k-subsets of n samples (c correct) with any / all correct."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(combinations(samples, k))
    return sum(map(any, subsets)) / len(subsets), sum(map(all, subsets)) / len(subsets)


def test_estimator_equals_enumeration_and_known_values() -> None:
    for n in range(1, 7):
        for c in range(n + 1):
            for k in range(1, n + 1):
                at, hat = _enumerated(n, c, k)
                assert pass_at_k(n, c, k) == pytest.approx(at)
                assert pass_hat_k(n, c, k) == pytest.approx(hat)
    # worked by hand: n=5, c=2
    assert [pass_at_k(5, 2, k) for k in (1, 2, 3, 4)] == pytest.approx([0.4, 0.7, 0.9, 1.0])
    assert [pass_hat_k(5, 2, k) for k in (1, 2, 3)] == pytest.approx([0.4, 0.1, 0.0])
    # the naive 1 - (1 - c/n)^k is biased low; the estimator is not it
    assert pass_at_k(5, 2, 2) > 1 - (1 - 0.4) ** 2 + 0.05
    for bad in ((0, 0, 1), (3, 4, 1), (3, 1, 4), (3, 1, 0)):
        with pytest.raises(ValueError, match="pass@k needs"):
            pass_at_k(*bad)
    with pytest.raises(ValueError, match="record q7: extra n_best/n_best_passed unreadable"):
        record_counts({"n_best": 3}, False, "record q7")


def _record(model: str, task: str, template: str, n: int | None, c: int) -> ModelEvalRecord:
    extra = {} if n is None else {"n_best": n, "n_best_passed": c, "pass_at_n": c > 0}
    return ModelEvalRecord(
        id=ModelEvalRecord.make_id(model, task, "dafny", "writer"),
        model=model,
        family="dafny",
        role="writer",
        question_id=task,
        source="template",
        split="test",
        dataset="dafny",
        template_family=template,
        difficulty="1.0",
        passed=c > 0,
        extra=extra,
    )


def test_mart_reports_the_estimator_per_group(home: Path) -> None:
    counts = {"t1": ("rule", 4, 1), "t2": ("rule", 4, 4), "t3": ("other", 2, 0)}
    records = [_record("m", t, g, n, c) for t, (g, n, c) in counts.items()]
    legacy = _record("old", "t1", "rule", None, 1)  # no n-best: one sample, its verdict
    write_eval_records(home, "test", [*records, legacy])
    db = warehouse_path(home)
    with writer(db, 60) as con:
        build_all(con, lake.lake_root(home))
    with reader(db, 60) as con:
        rows = con.execute(
            "SELECT model, template_family, n_samples, n_samples_passed, pass_at_k, pass_hat_k "
            "FROM mart_model_pass_rate WHERE split = 'test' AND family = 'dafny' "
            "AND role = 'writer' AND (source = '(all)' OR template_family = 'rule') "
            "ORDER BY model, template_family"
        ).fetchall()
    got = {(m, t): (n, c, at, hat) for m, t, n, c, at, hat in rows}
    assert set(got) == {("m", "(all)"), ("m", "rule"), ("old", "(all)"), ("old", "rule")}

    def expect(pairs: list[tuple[int, int]]) -> tuple[int, int, list[float], list[float]]:
        a = aggregate(pairs)
        return a["n"], a["correct"], list(a["pass_at_k"].values()), list(a["pass_hat_k"].values())

    for key, pairs in {
        ("m", "(all)"): [(4, 1), (4, 4), (2, 0)],  # smallest n = 2: k = 1, 2
        ("m", "rule"): [(4, 1), (4, 4)],  # k = 1 .. 4
        ("old", "(all)"): [(1, 1)],
    }.items():
        n, c, at, hat = got[key]
        en, ec, eat, ehat = expect(pairs)
        assert (n, c) == (en, ec) and len(at) == len(eat) == n
        assert at == pytest.approx(eat) and hat == pytest.approx(ehat)
    assert got[("m", "rule")][2] == pytest.approx([0.625, 0.75, 0.875, 1.0])  # by hand
    # the CLI's figures are the mart's
    result = EvalResult("m", "test", records, family="dafny", role="writer")
    assert result.pass_k()["pass_at_k"] == {
        k: round(v, 4) for k, v in enumerate(got[("m", "(all)")][2], 1)
    }
    assert result.pass_k_line().startswith("n=2 samples per task: pass@1 0.417, pass@2")
