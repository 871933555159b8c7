"""Known answers of the outlier templates, worked by hand."""

from __future__ import annotations

import pandas as pd
from known_answer import answers, build, verified

# x: 1 2 3 4 100 -> Q1 = 2, Q3 = 4, IQR = 2, fences -1 and 7: only 100 is outside
FRAME = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 100.0], "g": ["a", "a", "b", "b", "b"]})


def test_iqr_outlier_count(tmp_path):
    ref, alts = answers(build("iqr_outlier_count", FRAME, tmp_path), FRAME)
    assert ref == 1 and alts == {}


def test_zscore_outlier_count(tmp_path):
    # eighteen 0s, one 1, one 10: mean 0.55, sample variance 94.95 / 19, so z(10) = 4.23
    # and every other |z| < 0.3: one value of twenty beyond 3 standard deviations
    frame = pd.DataFrame({"x": [0.0] * 18 + [1.0, 10.0], "g": ["a", "b"] * 10})
    ref, alts = answers(build("zscore_outlier_count", frame, tmp_path), frame)
    assert ref == {"count": 1, "share": 0.05} and alts == {}


# --- through the real sandbox -------------------------------------------------------------
def test_iterative_trimming(pool_runner, tmp_path):
    # eighteen 0s, one 1, one 10: round 1 drops 10 (z = 4.23); then mean 1/19, sample
    # variance (18/19) / 18 = 1/19, so z(1) = (18/19) * sqrt(19) = 4.13 and round 2 drops
    # it; eighteen 0s remain (no spread, so nothing is extreme)
    frame = pd.DataFrame({"x": [0.0] * 18 + [1.0, 10.0], "g": ["a", "b"] * 10})
    _, ref, alts = verified(pool_runner, "iterative_trimming", frame, tmp_path)
    assert ref == {"rounds": 2, "remaining": 18, "mean": 0.0} and alts == {}


def test_iqr_trimmed_mean_shift(pool_runner, tmp_path):
    # mean of 1 2 3 4 100 is 22; without the outlier 100 it is 2.5: shift -19.5
    _, ref, alts = verified(pool_runner, "iqr_trimmed_mean_shift", FRAME, tmp_path)
    assert ref == -19.5 and alts == {}
