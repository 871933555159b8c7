"""Verification through the real sandbox: golden answers, multi-path selection,
rejections kept with their reason, determinism."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from question_helpers import make_table, small_cfg

from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.generate import generate
from verilearn_assets.core.answers import answer_hash, parse_answer
from verilearn_assets.core.records import AnswerSchema

GOLDEN = ["mean_median_gap", "iqr_outlier_count", "duplicate_rows", "most_missing_column"]


def golden_frame() -> pd.DataFrame:
    """x sorted is 1,2,3,4,5,6,6,100; rows 6 and 7 are identical; m and k miss 3 each."""
    nan = np.nan
    return pd.DataFrame(
        {
            "x": [1.0, 2.0, 3.0, 4.0, 100.0, 5.0, 6.0, 6.0],
            "m": [nan, 1.0, nan, 2.0, 3.0, nan, 5.0, 5.0],
            "k": [1.0, nan, 2.0, nan, 3.0, nan, 4.0, 4.0],
            "g": ["a", "b", "a", "b", "a", "b", "a", "a"],
        }
    )


@pytest.fixture(scope="module")
def golden(tmp_path_factory, pool_runner):
    table = make_table(golden_frame(), tmp_path_factory.mktemp("golden"), "golden")
    cfg = small_cfg(enabled=GOLDEN)
    cands = generate(table, "template", cfg).candidates
    records, stats = pool_runner.verify([(table, c) for c in cands], cfg)
    return table, cfg, cands, {r.template: r for r in records}, stats


def test_golden_answers_hand_computed(golden):
    _, _, _, by_tpl, stats = golden
    assert stats.rejected == 0 and stats.accepted == len(GOLDEN)
    # mean 127/8 = 15.875, median (4 + 5) / 2 = 4.5
    assert parse_answer(by_tpl["mean_median_gap"].answer) == pytest.approx(11.375)
    # Q1 = 2.75, Q3 = 6.0, IQR 3.25: the upper fence 10.875 leaves only 100 outside
    assert parse_answer(by_tpl["iqr_outlier_count"].answer) == 1
    assert parse_answer(by_tpl["duplicate_rows"].answer) == {"duplicates": 1, "unique_rows": 7}
    assert parse_answer(by_tpl["most_missing_column"].answer) == {"column": "m", "missing": 3}


def test_records_carry_hooks_and_second_run(golden):
    _, _, _, by_tpl, stats = golden
    rec = by_tpl["iqr_outlier_count"]
    assert [h.name for h in rec.hooks][:2] == ["values", "quartiles"]
    for hook in rec.hooks:
        assert hook.code_line in rec.code.splitlines()
    # each question ran twice, each alternative once
    assert stats.runs == 2 * len(GOLDEN) + sum(len(r.alternatives) for r in by_tpl.values())


def test_tie_is_accepted_with_multi_path_but_not_first_match(golden, pool_runner):
    table, _, _, by_tpl, _ = golden
    tied_answer = answer_hash(
        {"column": "k", "missing": 3}, by_tpl["most_missing_column"].answer_schema
    )
    multi = by_tpl["most_missing_column"]
    assert tied_answer in multi.answer_hashes
    assert [a.description for a in multi.alternatives] == ["tie: 'k' has as many missing values"]
    # a record that could not list the tie would hide a tie-break: the template does not
    # ask the question at all (issue 24: no silent cap), and says why
    first_only = small_cfg(enabled=["most_missing_column"], max_column_choices=1)
    gen = generate(table, "template", first_only)
    assert gen.candidates == []
    assert gen.rejected == []
    assert "labels tie for the top" in gen.not_applicable["most_missing_column"]


def test_same_input_gives_same_ids_and_hashes(golden, pool_runner):
    table, cfg, cands, by_tpl, _ = golden
    again = generate(table, "template", cfg).candidates
    assert [c.code for c in again] == [c.code for c in cands]
    records, _ = pool_runner.verify([(table, c) for c in again], cfg)
    assert {r.template: (r.id, r.answer_hashes) for r in records} == {
        t: (r.id, r.answer_hashes) for t, r in by_tpl.items()
    }


def _cand(code: str, kind: str = "number") -> Candidate:
    return Candidate(
        source="template",
        template="probe",
        question=code,
        question_mechanical=code,
        answer_schema=AnswerSchema(kind=kind),
        code=code,
        n_steps=1,
        difficulty="easy",
    )


def test_bad_programs_are_rejected_and_kept(golden, pool_runner):
    table, cfg, *_ = golden
    probes = {
        "nondeterministic": "submit(float(np.random.default_rng().random()))\n",
        "two_submissions": "submit(1.0)\nsubmit(2.0)\n",
        "no_submission": "x = 1\n",
        "nan": "submit(float(df['x'].iloc[:0].mean()))\n",
        "error": "submit(df['no_such_column'].mean())\n",
        "wrong_type": "submit({'a': 1.0})\n",
    }
    records, stats = pool_runner.verify([(table, _cand(c)) for c in probes.values()], cfg)
    assert stats.rejected == len(probes) and stats.accepted == 0
    reasons = [r.rejection_reason for r in records]
    assert reasons[0].startswith("nondeterministic: run 1 hash")
    assert "exactly one submit" in reasons[1] and "got 2" in reasons[1]
    assert "got 0" in reasons[2]
    assert "null" in reasons[3]
    assert "status error" in reasons[4] and "no_such_column" in reasons[4]
    assert "expected a number" in reasons[5]
    assert all(r.status == "rejected" and r.answer_hashes == [] for r in records)


def test_plain_string_answer_is_accepted(golden, pool_runner):
    table, cfg, *_ = golden
    records, _ = pool_runner.verify(
        [(table, _cand("submit(str(df['g'].mode()[0]))\n", "string"))], cfg
    )
    assert records[0].status == "accepted", records[0].rejection_reason
    assert parse_answer(records[0].answer) == "a"
    assert records[0].answer_hashes == [answer_hash('"a"', AnswerSchema(kind="string"))]
