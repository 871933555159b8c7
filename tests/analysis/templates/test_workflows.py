"""Known answers of the multi-step workflow templates (bootstrap, binning, imputation,
segments, adaptive test), through the real sandbox; worked by hand or with scipy/numpy
called directly on the hand-written values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from known_answer import verified
from scipy import stats

from verilearn_assets.analysis.sources.template import base


def test_bootstrap_mean_ci_follows_the_stated_recipe(pool_runner, tmp_path):
    values = [3.0, 7.0, 1.0, 9.0, 4.0, 6.0]
    frame = pd.DataFrame({"x": values, "g": list("ababab")})
    _, ref, alts = verified(pool_runner, "bootstrap_mean_ci", frame, tmp_path)
    # the question's own recipe, written out independently of the template's code
    rng = np.random.default_rng(0)
    x = np.array(values)
    means = [rng.choice(x, size=6, replace=True).mean() for _ in range(1000)]
    lower, upper = np.percentile(means, [2.5, 97.5])
    assert ref == {"lower": pytest.approx(lower), "upper": pytest.approx(upper)}
    assert 1.0 <= lower < np.mean(values) < upper <= 9.0 and alts == {}


def test_quantile_binning(pool_runner, tmp_path):
    # a = 1..8 falls into quartiles of two rows each: b means (3+1)/2, (4+1)/2, (5+9)/2, (2+6)/2
    frame = pd.DataFrame({"a": [1.0, 2, 3, 4, 5, 6, 7, 8], "b": [3.0, 1, 4, 1, 5, 9, 2, 6]})
    _, ref, alts = verified(pool_runner, "quantile_binning", frame, tmp_path)
    assert ref == {"Q1": 2.0, "Q2": 2.5, "Q3": 7.0, "Q4": 4.0, "q4_minus_q1": 2.0}
    assert alts == {}


def test_imputation_mean_vs_median(pool_runner, tmp_path):
    # observed 1, 2, 3, 10: mean 4, median 2.5
    frame = pd.DataFrame({"x": [1.0, 2, 3, 10, np.nan, np.nan], "g": list("aabbcc")})
    _, ref, alts = verified(pool_runner, "imputation_mean_vs_median", frame, tmp_path)
    assert ref == {
        "std_observed": pytest.approx(np.std([1, 2, 3, 10], ddof=1)),
        "std_mean_imputed": pytest.approx(np.std([1, 2, 3, 10, 4, 4], ddof=1)),
        "std_median_imputed": pytest.approx(np.std([1, 2, 3, 10, 2.5, 2.5], ddof=1)),
    }
    assert alts == {}


def test_imputation_group_median_effect(pool_runner, tmp_path):
    # observed mean 56 / 5 = 11.2; group medians a: 2, b: 12, so the filled column sums
    # to 56 + 2 + 12 = 70 over 7 rows: mean 10, change -1.2
    frame = pd.DataFrame({"x": [1.0, 3, np.nan, 10, 12, 30, np.nan], "g": list("aaabbbb")})
    _, ref, alts = verified(pool_runner, "imputation_group_median_effect", frame, tmp_path)
    assert ref == {
        "mean_observed": pytest.approx(11.2),
        "mean_imputed": pytest.approx(10.0),
        "change": pytest.approx(-1.2),
    }
    assert alts == {}


def test_segment_then_correlate(pool_runner, tmp_path):
    # segment a (4 rows) is the largest; x deviations -1.5 -.5 .5 1.5, y deviations
    # -.5 -1.5 1.5 .5: r = 3 / sqrt(5 * 5) = 0.6
    frame = pd.DataFrame(
        {
            "x": [1.0, 2, 3, 4, 5, 6, 7],
            "y": [2.0, 1, 4, 3, 9, 9, 1],
            "g": list("aaaabbb"),
        }
    )
    _, ref, alts = verified(pool_runner, "segment_then_correlate", frame, tmp_path)
    assert ref == {"segment": "a", "r": pytest.approx(0.6)} and alts == {}


def test_segment_steepest_slope(pool_runner, tmp_path):
    # a: y = 2x exactly (slope 2); b: x deviations -1 0 1, y deviations -1 -1 2: slope 3/2
    frame = pd.DataFrame(
        {
            "x": [1.0, 2, 3, 1.5, 2.5, 3.5],
            "y": [2.0, 4, 6, 3, 3, 6],
            "g": list("aaabbb"),
        }
    )
    _, ref, alts = verified(pool_runner, "segment_steepest_slope", frame, tmp_path)
    assert ref == {"segment": "a", "slope": pytest.approx(2.0)} and alts == {}


@pytest.mark.parametrize(
    "p_group, q_group, method",
    [
        ([1.0, 2, 3], [4.0, 6, 8, 10], "student"),  # both linear: normal, similar spread
        ([1.0, 2, 3], [2.5, 4, 4, 4, 4, 30], "mann-whitney"),  # q is far from normal
    ],
)
def test_adaptive_two_sample_test(pool_runner, tmp_path, monkeypatch, p_group, q_group, method):
    # a table whose only split picks mann-whitney is asked on 1 table in 4 (the answer
    # class of nearly every real table): every table is rationed in here
    monkeypatch.setattr(base, "RATION_ONE_IN", 1)
    frame = pd.DataFrame(
        {"y": p_group + q_group, "arm": ["p"] * len(p_group) + ["q"] * len(q_group)}
    )
    _, ref, alts = verified(pool_runner, "adaptive_two_sample_test", frame, tmp_path)
    a, b = np.array(p_group), np.array(q_group)
    normal = stats.shapiro(a).pvalue > 0.05 and stats.shapiro(b).pvalue > 0.05
    assert normal == (method != "mann-whitney")
    if method == "mann-whitney":
        p = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
    else:
        assert stats.levene(a, b, center="median").pvalue > 0.05
        p = stats.ttest_ind(a, b, equal_var=True).pvalue
    assert ref == {"method": method, "p_value": pytest.approx(p)} and alts == {}
