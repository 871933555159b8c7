"""Known answers of the group-comparison templates, worked by hand, alternatives included."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from known_answer import answers, build, verified
from scipy import stats

# arm p: 1 2 3 (mean 2, var 1); arm q: 4 6 8 10 (mean 7, var 20/3)
FRAME = pd.DataFrame(
    {
        "y": [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0],
        "arm": ["p", "p", "p", "q", "q", "q", "q"],
        "sex": ["f", "m", "f", "m", "f", "m", "f"],
    }
)
WELCH_T = (2 - 7) / math.sqrt(1 / 3 + (20 / 3) / 4)  # -5 / sqrt(2)
WELCH_DF = 2.0**2 / ((1 / 3) ** 2 / 2 + ((20 / 3) / 4) ** 2 / 3)
POOLED = (2 * 1 + 3 * 20 / 3) / 5  # 4.4
STUDENT_T = (2 - 7) / math.sqrt(POOLED * (1 / 3 + 1 / 4))


def two_sided_p(t: float, df: float) -> float:
    return 2 * stats.t.sf(abs(t), df)


@pytest.mark.parametrize(
    "name", ["ttest_discovered_groups", "ttest_discovered_groups__exclude_target"]
)
def test_ttest_welch_with_student_and_other_column_alternatives(tmp_path, name):
    c = build(name, FRAME, tmp_path)
    ref, alts = answers(c, FRAME)
    assert ref["statistic"] == pytest.approx(WELCH_T)
    assert ref["p_value"] == pytest.approx(two_sided_p(WELCH_T, WELCH_DF))
    student = alts["Student's t-test (equal variances), groups from 'arm'"]
    assert student["statistic"] == pytest.approx(STUDENT_T)
    assert student["p_value"] == pytest.approx(two_sided_p(STUDENT_T, 5))
    # sex: f = 1, 3, 6, 10 and m = 2, 4, 8: the other two-valued column is a reading too
    assert "groups from 'sex' (another two-valued column)" in alts


def test_ttest_method_explicit_names_welch_and_drops_student(tmp_path):
    c = build("ttest_discovered_groups__method_explicit", FRAME, tmp_path)
    _, alts = answers(c, FRAME)
    assert "Welch's t-test" in c.question
    assert not any(d.startswith("Student") for d in alts)


def test_chi2_with_and_without_yates(tmp_path):
    # counts [[3, 1], [1, 3]], every expected count 2: plain chi2 = 4 * 1/2 = 2,
    # Yates: 4 * (1 - 0.5)^2 / 2 = 0.5; one degree of freedom
    frame = pd.DataFrame(
        {
            "a": ["x", "x", "x", "x", "y", "y", "y", "y"],
            "b": ["u", "u", "u", "v", "u", "v", "v", "v"],
        }
    )
    ref, alts = answers(build("chi2_independence", frame, tmp_path), frame)
    assert ref["chi2"] == pytest.approx(0.5) and ref["dof"] == 1
    assert ref["p_value"] == pytest.approx(stats.chi2.sf(0.5, 1))
    (plain,) = alts.values()
    assert plain["chi2"] == pytest.approx(2.0)
    assert plain["p_value"] == pytest.approx(stats.chi2.sf(2.0, 1))


# --- through the real sandbox -------------------------------------------------------------
def test_mann_whitney_u_and_exact_p(pool_runner, tmp_path):
    # every p value (1, 2, 3) is below every q value (4, 6, 8, 10): U for p is 0, and with
    # no ties the exact two-sided p is 2 / C(7, 3) = 2 / 35
    _, ref, alts = verified(pool_runner, "mann_whitney_groups", FRAME, tmp_path)
    assert ref == {"u_statistic": 0.0, "p_value": pytest.approx(2 / 35)} and alts == {}


# a: 1 2 3 (mean 2), b: 4 5 6 (mean 5), c: 5 8 14 (mean 9); grand mean 48 / 9
THREE = pd.DataFrame({"y": [1.0, 2, 3, 4, 5, 6, 5, 8, 14], "g": list("aaabbbccc")})


def test_anova_f_p_and_eta_squared(pool_runner, tmp_path):
    _, ref, alts = verified(pool_runner, "anova_effect_size", THREE, tmp_path)
    grand = 48 / 9
    ss_between = 3 * ((2 - grand) ** 2 + (5 - grand) ** 2 + (9 - grand) ** 2)
    ss_within = 2 + 2 + (16 + 1 + 25)  # squared deviations from each group's mean
    f = (ss_between / 2) / (ss_within / 6)
    assert ref == {
        "f_statistic": pytest.approx(f),
        "p_value": pytest.approx(stats.f.sf(f, 2, 6)),
        "eta_squared": pytest.approx(ss_between / (ss_between + ss_within)),
    }
    assert alts == {}


def test_levene_median_centred(pool_runner, tmp_path):
    # absolute deviations from each group's median: a 1 0 1, b 1 0 1, c 3 0 6; Levene's W is
    # the one-way ANOVA F of those deviations
    _, ref, alts = verified(pool_runner, "levene_variance_test", THREE, tmp_path)
    w, p = stats.f_oneway([1, 0, 1], [1, 0, 1], [3, 0, 6])
    assert ref == {
        "statistic": pytest.approx(w),
        "p_value": pytest.approx(p),
        "equal_variances": bool(p > 0.05),
    }
    assert alts == {}
