"""Answers that are nearly always the same, or more right answers than a record accepts,
are not asked (issue 24): duplicate rows asked where something repeats, ties beyond
`max_column_choices` and unusable two-valued columns turn the question away."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from faithful import unfaithful
from known_answer import answers, build
from question_helpers import make_table, small_cfg

from verilearn_assets.analysis.sources.template import REGISTRY, NotApplicable, TableView

RNG = np.random.default_rng(4)
DISTINCT = pd.DataFrame(
    {"x": RNG.normal(0, 1, 30), "y": RNG.normal(0, 1, 30), "k": ["a", "b", "c"] * 10}
)


def _view(frame: pd.DataFrame, tmp, **template) -> TableView:
    t = make_table(frame, tmp)
    return TableView(t.columns, t.n_rows, t.path, small_cfg(**template))


def test_no_repeated_row_asks_about_a_pair_with_missing_combinations(tmp_path):
    # m = 1 exactly where k = 'a': 3 of the 2 x 3 combinations occur
    frame = DISTINCT.assign(m=[1, 0, 0] * 10)
    c = build("duplicate_rows", frame, tmp_path)
    assert c.question.startswith("Looking only at 'm' and 'k'"), c.question
    assert answers(c, frame)[0] == {"duplicates": 27, "unique_rows": 3}
    assert not unfaithful(c, frame)


def test_a_pair_holding_every_combination_is_not_asked(tmp_path):
    """Every combination of m (2 values) and k (3) occurs: 30 - 6 repeats whatever the
    data, fixed by the shape. The next pair (k with a continuous column) is not asked
    either, so nothing is."""
    frame = DISTINCT.assign(m=[0, 1] * 15)
    with pytest.raises(NotApplicable, match="no pair of columns"):
        REGISTRY["duplicate_rows"].build(_view(frame, tmp_path))


def test_a_repeated_row_keeps_the_whole_row_question(tmp_path):
    frame = pd.concat([DISTINCT, DISTINCT.iloc[:3]], ignore_index=True)
    c = build("duplicate_rows", frame, tmp_path)
    assert c.question.startswith("How many rows are exact duplicates")
    assert answers(c, frame)[0] == {"duplicates": 3, "unique_rows": 30}


def test_nothing_repeats_anywhere_is_not_asked(tmp_path):
    frame = pd.DataFrame({"x": np.arange(30) * 1.5, "y": np.arange(30) ** 2.0})
    with pytest.raises(NotApplicable, match="no row repeats"):
        REGISTRY["duplicate_rows"].build(_view(frame, tmp_path))


@pytest.mark.parametrize("name", ["top_category_share", "segment_then_correlate"])
def test_more_tied_tops_than_a_record_accepts_are_not_asked(tmp_path, name):
    """Five equally common levels, four accepted answers: 'the most common' is not asked
    (the old code listed four and rejected the fifth right answer)."""
    frame = DISTINCT.assign(k=list("abcde") * 6)
    view = _view(frame, tmp_path, max_column_choices=4)
    with pytest.raises(NotApplicable):
        REGISTRY[name].build(view)
    found = REGISTRY[name].build(_view(frame, tmp_path, max_column_choices=5))
    assert len(found[0].alternatives) == 4 and not unfaithful(found[0], frame)


def test_the_column_is_not_asked_when_a_two_valued_column_cannot_be_tested(tmp_path):
    """'the column that splits the rows into two groups': a second two-valued column
    with a one-row group is a reading the record cannot accept, so nothing is asked."""
    frame = DISTINCT.assign(h=["p", "q"] * 15)
    assert REGISTRY["ttest_discovered_groups"].build(_view(frame, tmp_path))
    odd = frame.assign(rare=["u"] + ["v"] * 29)
    with pytest.raises(NotApplicable):
        REGISTRY["ttest_discovered_groups"].build(_view(odd, tmp_path))


def test_rationing_keeps_about_one_table_in_four(tmp_path):
    cfg = small_cfg()
    kept = [
        TableView([], 0, str(tmp_path / f"table{i}.parquet"), cfg).rationed("k") for i in range(400)
    ]
    assert 0.18 < sum(kept) / len(kept) < 0.32
    again = [
        TableView([], 0, str(tmp_path / f"table{i}.parquet"), cfg).rationed("k") for i in range(400)
    ]
    assert again == kept  # stable: the same table is always in or out


def test_adaptive_prefers_a_split_its_rule_answers_with_a_t_test(tmp_path, monkeypatch):
    """'y' (first in eligibility order) has an outlier, so the rule picks mann-whitney on
    it; 'z' is normal in both arms: the question is asked about 'z' whatever the ration,
    and a table of 'y' alone is not asked when it is not rationed in."""
    from verilearn_assets.analysis.sources.template import base

    monkeypatch.setattr(base, "RATION_ONE_IN", 10**6)  # nothing is rationed in
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "y": np.r_[rng.normal(0, 1, 39), 40.0],
            "z": rng.normal(0, 1, 40),
            "arm": ["p", "q"] * 20,
        }
    )
    (c,) = REGISTRY["adaptive_two_sample_test"].build(_view(frame, tmp_path))
    assert "Compare 'z'" in c.question, c.question
    assert answers(c, frame)[0]["method"] != "mann-whitney"
    with pytest.raises(NotApplicable, match="1 table in 4"):
        REGISTRY["adaptive_two_sample_test"].build(_view(frame.drop(columns="z"), tmp_path))


def test_a_categorical_column_with_too_many_tied_tops_gives_way_to_the_next(tmp_path):
    frame = DISTINCT.assign(k=list("abcde") * 6, j=list("aab") * 10)
    (c,) = REGISTRY["top_category_share"].build(_view(frame, tmp_path, max_column_choices=4))
    assert "value of 'j'" in c.question and answers(c, frame)[0]["level"] == "a"


@pytest.mark.parametrize(
    "name",
    ["spearman_rank_correlation", "regression_most_predictive", "correlation_change_analysis"],
)
def test_a_column_sharing_few_rows_with_the_target_is_left_out_in_words(tmp_path, name):
    """'gappy' is present on 3 rows only, where it follows the target exactly: it would
    win by chance. It is left out, and the wording says so (a reader finds the same)."""
    rng = np.random.default_rng(6)
    n = 30
    frame = pd.DataFrame(
        {"a": rng.uniform(1, 9, n), "b": rng.uniform(1, 9, n), "c": rng.uniform(1, 9, n)}
    )
    frame["gappy"] = np.where(np.arange(n) < 3, frame["a"] * 2, np.nan)
    (c,) = REGISTRY[name].build(_view(frame, tmp_path))
    assert "Columns present together with 'a' on fewer than 5 rows are not candidates." in (
        c.question
    )
    assert "'gappy'" not in c.code.split("submit")[0].split("\n", 3)[-1]
    assert not unfaithful(c, frame)
    if name != "correlation_change_analysis":  # 2a is exactly linear: rho and R^2 are 1
        hidden = c.model_copy(update={"question": c.question.split(" Columns present")[0]})
        assert unfaithful(hidden, frame), "the reader must see the gap-column rule in the words"
