"""Evidence -> decision -> test: check assumptions, pick a method from them, run it.

Evidence operators look at a split (S) or a pair (P); decision operators turn evidence
into a method name; test operators run the chosen method on the same split or pair.
"""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators.spec import OpSpec, op
from verilearn_assets.analysis.sources.procedural.types import (
    DECISION_CORRELATION,
    DECISION_LOCATION,
    DECISION_SPREAD,
    EVIDENCE_EQUAL_VAR,
    EVIDENCE_NORMAL,
    EVIDENCE_PAIR_NORMAL,
    EVIDENCE_SIZE,
    FLAG,
    NUMBER,
    PAIR,
    PVALUE,
    SAMPLES,
)

E, D, T = "evidence", "decision", "test"
A = "{a0}.loc[~{a0}['group'], 'value']"
B = "{a0}.loc[{a0}['group'], 'value']"
X = "{a0}['x']"
Y = "{a0}['y']"
_NORMAL = "a Shapiro-Wilk test does not reject normality of {what} at the 5% level"

_LOCATION = (
    f"float(stats.mannwhitneyu({A}, {B}).pvalue if {{a1}} == 'mannwhitney' else "
    f"stats.ttest_ind({A}, {B}, equal_var={{a1}} == 'student').pvalue)"
)

OPS: list[OpSpec] = [
    # evidence
    op(
        "normal_group_a",
        E,
        (SAMPLES,),
        EVIDENCE_NORMAL,
        f"bool(stats.shapiro({A}).pvalue > 0.05)",
        _NORMAL.format(what="group A of {a0}"),
    ),
    op(
        "normal_group_b",
        E,
        (SAMPLES,),
        EVIDENCE_NORMAL,
        f"bool(stats.shapiro({B}).pvalue > 0.05)",
        _NORMAL.format(what="group B of {a0}"),
    ),
    op(
        "equal_variance",
        E,
        (SAMPLES,),
        EVIDENCE_EQUAL_VAR,
        f"bool(stats.levene({A}, {B}).pvalue > 0.05)",
        "Levene's test (median-centred) does not reject equal variances of the groups of {a0} "
        "at the 5% level",
    ),
    op(
        "both_groups_large",
        E,
        (SAMPLES,),
        EVIDENCE_SIZE,
        f"bool(min(len({A}), len({B})) >= 30)",
        "both groups of {a0} have at least 30 values",
    ),
    op(
        "normal_pair_first",
        E,
        (PAIR,),
        EVIDENCE_PAIR_NORMAL,
        f"bool(stats.shapiro({X}).pvalue > 0.05)",
        _NORMAL.format(what="the first column of {a0}"),
    ),
    op(
        "normal_pair_second",
        E,
        (PAIR,),
        EVIDENCE_PAIR_NORMAL,
        f"bool(stats.shapiro({Y}).pvalue > 0.05)",
        _NORMAL.format(what="the second column of {a0}"),
    ),
    # decisions
    op(
        "choose_welch_or_mannwhitney",
        D,
        (EVIDENCE_NORMAL, EVIDENCE_NORMAL),
        DECISION_LOCATION,
        "'welch' if ({a0} and {a1}) else 'mannwhitney'",
        "Welch's t-test if {a0} and {a1}, otherwise the Mann-Whitney U test",
        commutative=(0, 1),
        distinct_inputs=True,
    ),
    op(
        "choose_student_or_welch",
        D,
        (EVIDENCE_EQUAL_VAR,),
        DECISION_LOCATION,
        "'student' if {a0} else 'welch'",
        "Student's t-test if {a0}, otherwise Welch's t-test",
    ),
    op(
        "choose_location_test",
        D,
        (EVIDENCE_NORMAL, EVIDENCE_NORMAL, EVIDENCE_EQUAL_VAR),
        DECISION_LOCATION,
        "('student' if {a2} else 'welch') if ({a0} and {a1}) else 'mannwhitney'",
        "the Mann-Whitney U test unless {a0} and {a1}; if both hold, Student's t-test if "
        "{a2}, otherwise Welch's t-test",
        commutative=(0, 1),
        distinct_inputs=True,
    ),
    op(
        "choose_by_size_or_normality",
        D,
        (EVIDENCE_SIZE, EVIDENCE_NORMAL, EVIDENCE_NORMAL),
        DECISION_LOCATION,
        "'welch' if ({a0} or ({a1} and {a2})) else 'mannwhitney'",
        "Welch's t-test if {a0}, or if {a1} and {a2}; otherwise the Mann-Whitney U test",
        commutative=(1, 2),
        distinct_inputs=True,
    ),
    op(
        "choose_spread_test",
        D,
        (EVIDENCE_NORMAL, EVIDENCE_NORMAL),
        DECISION_SPREAD,
        "'bartlett' if ({a0} and {a1}) else 'levene'",
        "Bartlett's test if {a0} and {a1}, otherwise Levene's test (median-centred)",
        commutative=(0, 1),
        distinct_inputs=True,
    ),
    op(
        "choose_correlation",
        D,
        (EVIDENCE_PAIR_NORMAL, EVIDENCE_PAIR_NORMAL),
        DECISION_CORRELATION,
        "'pearson' if ({a0} and {a1}) else 'spearman'",
        "Pearson's correlation if {a0} and {a1}, otherwise Spearman's",
        commutative=(0, 1),
        distinct_inputs=True,
    ),
    # tests
    op(
        "run_location_test",
        T,
        (SAMPLES, DECISION_LOCATION),
        PVALUE,
        _LOCATION,
        "the two-sided p-value comparing group A and group B of {a0} with the test chosen "
        "this way: {a1}",
    ),
    op(
        "run_spread_test",
        T,
        (SAMPLES, DECISION_SPREAD),
        PVALUE,
        f"float(stats.bartlett({A}, {B}).pvalue if {{a1}} == 'bartlett' else "
        f"stats.levene({A}, {B}).pvalue)",
        "the p-value comparing the variances of group A and group B of {a0} with the test "
        "chosen this way: {a1}",
    ),
    op(
        "run_correlation_test",
        T,
        (PAIR, DECISION_CORRELATION),
        PVALUE,
        f"float(stats.pearsonr({X}, {Y}).pvalue if {{a1}} == 'pearson' else "
        f"stats.spearmanr({X}, {Y}).pvalue)",
        "the two-sided p-value of the correlation test on {a0}, using {a1}",
    ),
    op(
        "chosen_correlation",
        T,
        (PAIR, DECISION_CORRELATION),
        NUMBER,
        f"float(stats.pearsonr({X}, {Y}).statistic if {{a1}} == 'pearson' else "
        f"stats.spearmanr({X}, {Y}).statistic)",
        "the correlation coefficient of {a0}, using {a1}",
    ),
    op(
        "welch_test",
        T,
        (SAMPLES,),
        PVALUE,
        f"float(stats.ttest_ind({A}, {B}, equal_var=False).pvalue)",
        "the two-sided p-value of Welch's t-test comparing group A and group B of {a0}",
    ),
    op(
        "mannwhitney_test",
        T,
        (SAMPLES,),
        PVALUE,
        f"float(stats.mannwhitneyu({A}, {B}).pvalue)",
        "the two-sided p-value of the Mann-Whitney U test comparing group A and group B of {a0}",
    ),
    op(
        "ks_test",
        T,
        (SAMPLES,),
        PVALUE,
        f"float(stats.ks_2samp({A}, {B}).pvalue)",
        "the p-value of the two-sample Kolmogorov-Smirnov test between group A and group B of {a0}",
    ),
    op("rejects_at_5pct", T, (PVALUE,), FLAG, "bool({a0} < 0.05)", "{a0} is below 0.05"),
    op("rejects_at_1pct", T, (PVALUE,), FLAG, "bool({a0} < 0.01)", "{a0} is below 0.01"),
]
