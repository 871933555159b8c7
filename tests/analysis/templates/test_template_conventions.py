"""Each named convention variant on a tiny table where it moves the answer (the candidate
is turned away unless an alternative lists the reading or the wording states it) and on
one where it cannot move it. Template code comes from the real templates, so the
variant's pattern is known to match what the generator writes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from known_answer import answers, build

from verilearn_assets.analysis.screen.config import ScreenConfig
from verilearn_assets.analysis.screen.conventions import BY_NAME, check_conventions
from verilearn_assets.analysis.screen.run import screen_one
from verilearn_assets.analysis.sources.candidate import Candidate
from verilearn_assets.analysis.sources.template.base import NUMBER


def bare(c: Candidate, question: str | None = None) -> Candidate:
    """The candidate without alternatives (and with another wording, if given)."""
    return c.model_copy(update={"alternatives": [], "question": question or c.question})


def hand(question: str, expr: str) -> Candidate:
    line = f"v = float({expr})"
    return Candidate(
        source="template",
        template="hand",
        question=question,
        question_mechanical=question,
        answer_schema=NUMBER,
        code=f"{line}\nhook(v, {line!r}, name='v')\nsubmit(v)\n",
        n_steps=2,
        difficulty="easy",
    )


# --- Mann-Whitney: continuity correction and exact p ---------------------------------------
# 8 per arm with tied values: scipy's 'auto' takes the normal approximation with continuity
# correction, so both the uncorrected and the exact reading give another p-value
MW_TIED = pd.DataFrame(
    {"y": [1.0, 2, 2, 3, 4, 5, 6, 7, 3, 5, 6, 8, 9, 9, 10, 11], "arm": ["p"] * 8 + ["q"] * 8}
)
# 3 and 4 untied values: 'auto' is already the exact test, continuity does not enter
MW_SMALL = pd.DataFrame({"y": [1.0, 2, 3, 4, 6, 8, 10], "arm": list("pppqqqq")})


def test_mann_whitney_continuity_and_exact_readings_turn_a_silent_question_away(tmp_path):
    c = build("mann_whitney_groups", MW_TIED, tmp_path)
    out = screen_one(c, MW_TIED, ScreenConfig())
    assert out.rejection_reason.startswith("ambiguous_convention: under mannwhitney_")
    assert {"mannwhitney_no_continuity:moved", "mannwhitney_exact:moved"} <= set(out.conventions)
    said = bare(c, c.question + " Use the normal approximation with continuity correction.")
    report = check_conventions(said, MW_TIED)
    assert report.rejection is None
    assert report.tried == ["mannwhitney_no_continuity:stated", "mannwhitney_exact:stated"]


def test_mann_whitney_small_untied_groups_do_not_move(tmp_path):
    c = build("mann_whitney_groups", MW_SMALL, tmp_path)
    report = check_conventions(c, MW_SMALL)
    assert report.tried == ["mannwhitney_no_continuity:same", "mannwhitney_exact:same"]
    assert report.rejection is None


def test_mann_whitney_exact_reading_is_not_tried_on_large_tables():
    code = "res = stats.mannwhitneyu(a, b, alternative='two-sided')"
    assert BY_NAME["mannwhitney_exact"].applies(code, 60)
    assert not BY_NAME["mannwhitney_exact"].applies(code, 61)


# --- median over every row or over complete rows -------------------------------------------
# x: 1 2 3 4 100 -> median 3; the rows complete in every column keep 3 4 100 -> median 4
WITH_GAPS = pd.DataFrame({"x": [1.0, 2, 3, 4, 100], "y": [np.nan, np.nan, 1.0, 2, 3]})


def test_median_over_complete_rows_moves_and_is_rejected_unless_stated():
    silent = hand("What is the median of 'x'?", "df['x'].median()")
    report = check_conventions(silent, WITH_GAPS)
    assert report.tried == ["median_complete_rows:moved"]
    assert report.rejection.startswith("ambiguous_convention: under median_complete_rows")
    assert "4.0" in report.rejection and "3.0" in report.rejection
    said = hand("What is the median of 'x' over all rows where it is present?", "df['x'].median()")
    assert check_conventions(said, WITH_GAPS).tried == ["median_complete_rows:stated"]


def test_median_on_a_complete_table_does_not_move():
    full = WITH_GAPS.fillna(0.0)
    silent = hand("What is the median of 'x'?", "df['x'].median()")
    report = check_conventions(silent, full)
    assert report.tried == ["median_complete_rows:same"] and report.rejection is None


# --- variance: sample (n - 1) or population (n) --------------------------------------------
# x: 1 2 3 4 -> sample variance 5/3, population 5/4; y: 2 4 6 8 -> 20/3 and 5
VAR = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [2.0, 4, 6, 8]})


def test_population_variance_moves_a_silent_variance():
    report = check_conventions(hand("What is the variance of 'x'?", "df['x'].var()"), VAR)
    assert report.tried == ["var_population:moved"]
    assert report.rejection.startswith("ambiguous_convention: under var_population")
    said = hand("What is the sample variance of 'x'?", "df['x'].var()")
    assert check_conventions(said, VAR).tried == ["var_population:stated"]


def test_a_variance_ratio_of_equal_length_columns_does_not_move():
    # (n - 1) cancels between numerator and denominator: 1/4 under either convention
    ratio = hand(
        "How many times the variance of 'y' is that of 'x'?", "df['x'].var() / df['y'].var()"
    )
    report = check_conventions(ratio, VAR)
    assert report.tried == ["var_population:same"] and report.rejection is None


# --- t-test: Welch or Student ---------------------------------------------------------------
# arm p: 1 2 3 (var 1), arm q: 4 6 8 10 (var 20/3): unequal sizes and variances
TT = pd.DataFrame({"y": [1.0, 2, 3, 4, 6, 8, 10], "arm": list("pppqqqq"), "sex": list("fmfmfmf")})


@pytest.mark.parametrize(
    "name", ["ttest_discovered_groups", "ttest_discovered_groups__exclude_target"]
)
def test_student_reading_is_an_alternative_of_a_plain_t_test(tmp_path, name):
    c = build(name, TT, tmp_path)
    assert check_conventions(c, TT).tried == ["ttest_student:alternative"]
    # without the Student alternative, the silent wording is turned away
    out = screen_one(bare(c), TT, ScreenConfig())
    assert out.rejection_reason.startswith("ambiguous_convention: under ttest_student")


def test_welch_named_in_the_wording_is_stated(tmp_path):
    c = build("ttest_discovered_groups__method_explicit", TT, tmp_path)
    assert "Welch" in c.question
    assert check_conventions(c, TT).tried == ["ttest_student:stated"]


def test_equal_sizes_and_variances_make_student_and_welch_agree(tmp_path):
    # p: 1 2 3, q: 4 5 6 -> same t and, with equal variances, the same degrees of freedom
    frame = pd.DataFrame({"y": [1.0, 2, 3, 4, 5, 6], "arm": list("pppqqq")})
    c = bare(build("ttest_discovered_groups", frame, tmp_path))
    report = check_conventions(c, frame)
    assert report.tried == ["ttest_student:same"] and report.rejection is None


# --- chi-squared: Yates correction on a 2x2 table -------------------------------------------
# counts [[3, 1], [1, 3]]: Yates chi2 0.5, plain chi2 2.0
TWO_BY_TWO = pd.DataFrame({"a": list("xxxxyyyy"), "b": list("uuuvuvvv")})


def test_yates_reading_is_listed_and_moves_a_bare_question(tmp_path):
    c = build("chi2_independence", TWO_BY_TWO, tmp_path)
    ref, alts = answers(c, TWO_BY_TWO)
    assert ref["chi2"] == pytest.approx(0.5) and list(alts.values())[0]["chi2"] == 2.0
    assert check_conventions(c, TWO_BY_TWO).tried == ["chi2_no_yates:alternative"]
    report = check_conventions(bare(c), TWO_BY_TWO)
    assert report.tried == ["chi2_no_yates:moved"]
    assert report.rejection.startswith("ambiguous_convention: under chi2_no_yates")
    said = bare(c, c.question + " Apply Yates' correction.")
    assert check_conventions(said, TWO_BY_TWO).tried == ["chi2_no_yates:stated"]


def test_yates_does_not_touch_a_three_by_two_table(tmp_path):
    frame = pd.DataFrame({"a": list("xxxyyyzzz"), "b": list("uuvuvvuvv")})
    c = bare(build("chi2_independence", frame, tmp_path))
    report = check_conventions(c, frame)
    assert report.tried == ["chi2_no_yates:same"] and report.rejection is None


# --- the first k of a ranking: a tie at the k-th place --------------------------------------
# b tracks a; c and d = 10 - c have the same |r| with a, tied for the second place
C = [2.0, 2, 3, 4, 6, 6, 8, 7]
TOP_TIED = pd.DataFrame(
    {
        "a": [1.0, 3, 2, 5, 4, 7, 6, 9],
        "b": [1.1, 2.9, 2.2, 4.8, 4.1, 7.3, 5.8, 8.7],
        "c": C,
        "d": [10 - x for x in C],
    }
)


def test_top_predictors_tie_is_an_alternative_or_turns_the_question_away(tmp_path):
    c = build("multiple_regression_top_predictors", TOP_TIED, tmp_path)
    ref, alts = answers(c, TOP_TIED)
    assert ref["predictors"] == ["b", "c"]
    assert [v["predictors"] for v in alts.values()] == [["b", "d"]]
    assert check_conventions(c, TOP_TIED).tried == ["top_k_last_tied:alternative"]
    out = screen_one(bare(c), TOP_TIED, ScreenConfig())
    assert out.rejection_reason.startswith("tie_unstated: under top_k_last_tied")
    said = bare(c, c.question + " If tied, take the column that comes first in the list.")
    assert check_conventions(said, TOP_TIED).tried == ["top_k_last_tied:stated"]


def test_top_predictors_without_a_tie_do_not_move(tmp_path):
    frame = TOP_TIED.assign(d=[5.0, 1, 4, 2, 8, 3, 7, 6])
    c = build("multiple_regression_top_predictors", frame, tmp_path)
    assert c.alternatives == []
    report = check_conventions(c, frame)
    assert report.tried == ["top_k_last_tied:same"] and report.rejection is None
