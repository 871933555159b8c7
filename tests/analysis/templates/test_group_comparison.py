"""Known answers of the group-comparison templates, worked by hand, alternatives included."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from known_answer import answers, build
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


@pytest.mark.parametrize("variant", ["", "__exclude_target"])
def test_ttest_welch_with_student_and_other_column_alternatives(tmp_path, variant):
    c = build(f"ttest_discovered_groups{variant}", FRAME, tmp_path)
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
