"""Known answers of the missingness templates, worked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from known_answer import answers, build, verified


def test_most_missing_column_lists_the_tied_column(tmp_path):
    # a misses 2 cells, b misses 2 cells, c misses 1: a and b tie
    frame = pd.DataFrame(
        {
            "a": [1.0, np.nan, 3.0, np.nan, 5.0, 6.0],
            "b": [np.nan, 2.0, np.nan, 4.0, 5.0, 7.0],
            "c": [1.0, 2.0, 3.0, 4.0, np.nan, 8.0],
        }
    )
    ref, alts = answers(build("most_missing_column", frame, tmp_path), frame)
    assert ref == {"column": "a", "missing": 2}
    assert list(alts.values()) == [{"column": "b", "missing": 2}]


def test_duplicate_rows(tmp_path):
    # rows 3 and 4 repeat rows 0 and 1: 2 duplicates, 4 distinct rows
    frame = pd.DataFrame({"a": [1.0, 2, 3, 1, 2, 5], "b": ["x", "y", "x", "x", "y", "z"]})
    ref, alts = answers(build("duplicate_rows", frame, tmp_path), frame)
    assert ref == {"duplicates": 2, "unique_rows": 4} and alts == {}


def test_complete_case_shift(tmp_path):
    # m misses rows 1 and 3; t = 2, 4, 6, 8, 10, 12 has mean 7; kept rows 0, 2, 4, 5 have
    # t = 2, 6, 10, 12 with mean 7.5: shift +0.5 on 4 rows
    frame = pd.DataFrame(
        {
            "t": [2.0, 4, 6, 8, 10, 12],
            "m": [1.0, np.nan, 3.0, np.nan, 5.0, 7.0],
        }
    )
    c = build("complete_case_shift", frame, tmp_path)
    ref, alts = answers(c, frame)
    assert ref["rows_kept"] == 4 and ref["shift"] == pytest.approx(0.5) and alts == {}


# --- through the real sandbox -------------------------------------------------------------
def test_missing_rate_by_group(pool_runner, tmp_path):
    # m is missing in 1 of 3 'a' rows and 2 of 3 'b' rows
    frame = pd.DataFrame({"m": [np.nan, 1.0, 2.0, np.nan, np.nan, 3.0], "g": list("aaabbb")})
    _, ref, alts = verified(pool_runner, "missing_rate_by_group", frame, tmp_path)
    assert ref == {"level": "b", "missing_rate": pytest.approx(2 / 3)} and alts == {}
