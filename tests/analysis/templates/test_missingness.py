"""Known answers of the missingness templates, worked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
from known_answer import answers, build


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
