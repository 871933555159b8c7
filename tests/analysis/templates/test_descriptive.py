"""Known answers of the descriptive templates, worked by hand on five values."""

from __future__ import annotations

import pandas as pd
import pytest
from known_answer import answers, build

# x: 1 2 3 4 100 -> mean 22, median 3; pandas linear quartiles: Q1 = 2, Q3 = 4
FRAME = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 100.0], "g": ["a", "a", "b", "b", "b"]})


def test_mean_median_gap(tmp_path):
    ref, alts = answers(build("mean_median_gap", FRAME, tmp_path), FRAME)
    assert ref == pytest.approx(22.0 - 3.0) and alts == {}


def test_range_and_iqr(tmp_path):
    ref, alts = answers(build("range_and_iqr", FRAME, tmp_path), FRAME)
    assert ref == pytest.approx({"range": 99.0, "iqr": 2.0}) and alts == {}


def test_highest_cv_column_and_its_tie(tmp_path):
    # u = 1,2,3,4,5: mean 3, sample sd sqrt(2.5); v = 2u has the same cv (a tie, listed);
    # w = 10..14 has mean 12, the same sd as u: a smaller cv
    frame = pd.DataFrame(
        {
            "u": [1.0, 2, 3, 4, 5],
            "v": [2.0, 4, 6, 8, 10],
            "w": [10.0, 11, 12, 13, 14],
        }
    )
    c = build("highest_cv_column", frame, tmp_path)
    assert "sample standard deviation" in c.question
    ref, alts = answers(c, frame)
    cv = 2.5**0.5 / 3
    assert ref["cv"] == pytest.approx(cv)
    assert {ref["column"], *(a["column"] for a in alts.values())} == {"u", "v"}
    assert all(a["cv"] == pytest.approx(cv) for a in alts.values())


def test_top_category_share(tmp_path):
    # g: a a b b b -> 'b' holds 3 of 5
    ref, _ = answers(build("top_category_share", FRAME, tmp_path), FRAME)
    values = list(ref.values()) if isinstance(ref, dict) else [ref]
    assert "b" in values and any(v == pytest.approx(0.6) for v in values)


def test_group_mean_top_category_lists_a_tied_level(tmp_path):
    # a: 1, 5 -> 3; b: 2, 4 -> 3 (tied with a); c: 0, 2 -> 1
    frame = pd.DataFrame({"g": ["a", "a", "b", "b", "c", "c"], "x": [1.0, 5.0, 2.0, 4.0, 0.0, 2.0]})
    ref, alts = answers(build("group_mean_top_category", frame, tmp_path), frame)
    assert ref == {"level": "a", "mean": 3.0}
    assert list(alts.values()) == [{"level": "b", "mean": 3.0}]


def test_distinct_levels_clean(tmp_path):
    # 'Red', ' red', 'RED ' are one level; 'blue', 'Blue' another; 'green': 3 levels
    frame = pd.DataFrame(
        {
            "c": ["Red", " red", "RED ", "blue", "Blue", "green"] * 2,
            "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] * 2,
        }
    )
    ref, alts = answers(build("distinct_levels_clean", frame, tmp_path), frame)
    assert ref == 3 and alts == {}
