"""Known answers of the normality templates, through the real sandbox, checked against
scipy called directly on the hand-written values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from known_answer import verified
from scipy import stats

# group a (five values) is roughly bell-shaped; group b holds four values near 1 and a 9,
# which Shapiro-Wilk rejects
X = [2.1, 3.4, 1.9, 2.6, 2.4, 1.0, 1.1, 1.0, 1.2, 9.0]
FRAME = pd.DataFrame({"x": X, "g": list("aaaaabbbbb")})


def test_ks_normality_on_standardised_values(pool_runner, tmp_path):
    _, ref, alts = verified(pool_runner, "ks_normality_test", FRAME, tmp_path)
    x = np.array(X)
    z = (x - x.mean()) / x.std(ddof=1)
    expected = stats.kstest(z, stats.norm.cdf)
    assert ref == {
        "statistic": pytest.approx(expected.statistic),
        "p_value": pytest.approx(expected.pvalue),
    }
    assert alts == {}


def test_shapiro_normality_verdict(pool_runner, tmp_path):
    _, ref, alts = verified(pool_runner, "shapiro_normality", FRAME, tmp_path)
    w, p = stats.shapiro(np.array(X))
    assert p < 0.05  # the 9.0 makes the whole column clearly non-normal
    assert ref == {
        "statistic": pytest.approx(w),
        "p_value": pytest.approx(p),
        "normal_at_5pct": False,
    }
    assert alts == {}


def test_conditional_normality_per_group(pool_runner, tmp_path):
    _, ref, alts = verified(pool_runner, "conditional_normality", FRAME, tmp_path)
    assert stats.shapiro(X[:5]).pvalue > 0.05 and stats.shapiro(X[5:]).pvalue < 0.05
    assert ref == {"a": True, "b": False} and alts == {}
