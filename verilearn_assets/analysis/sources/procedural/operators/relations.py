"""Two-column relations: aligned pairs (correlation, regression) and two-group splits."""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators.spec import OpSpec, op
from verilearn_assets.analysis.sources.procedural.types import (
    NUMBER,
    PAIR,
    ROLE_KEY,
    ROLE_NUMERIC,
    SAMPLES,
    TABLE,
)

F = "relation"
A = "{a0}.loc[~{a0}['group'], 'value']"
B = "{a0}.loc[{a0}['group'], 'value']"
X = "{a0}['x']"
Y = "{a0}['y']"


def _rel(name: str, code: str, phrase: str, symmetric: bool) -> OpSpec:
    return op(
        name, F, (PAIR,), NUMBER, code, phrase, symmetric_pair=symmetric, order_insensitive=True
    )


def _two(name: str, code: str, phrase: str) -> OpSpec:
    return op(name, F, (SAMPLES,), NUMBER, code, phrase, order_insensitive=True)


_SPLIT_VALUES = "pd.DataFrame({{'value': {a0}[{c0}], 'group': "

OPS: list[OpSpec] = [
    op(
        "pair_columns",
        F,
        (TABLE,),
        PAIR,
        "{a0}[[{c0}, {c1}]].dropna().set_axis(['x', 'y'], axis=1)",
        "P",
        slots=(ROLE_NUMERIC, ROLE_NUMERIC),
        extra={"define": "Let P be the pairs ({c0}, {c1}) over rows{a0} where both are present."},
    ),
    _rel("pearson", f"float({X}.corr({Y}))", "the Pearson correlation within {a0}", True),
    _rel(
        "spearman",
        f"float({X}.corr({Y}, method='spearman'))",
        "the Spearman rank correlation within {a0}",
        True,
    ),
    _rel(
        "kendall",
        f"float({X}.corr({Y}, method='kendall'))",
        "the Kendall tau-b correlation within {a0}",
        True,
    ),
    _rel("covariance", f"float({X}.cov({Y}))", "the sample covariance within {a0}", True),
    _rel(
        "ols_slope",
        f"float(stats.linregress({X}, {Y}).slope)",
        "the least-squares slope of the second column on the first column of {a0}",
        False,
    ),
    _rel(
        "ols_intercept",
        f"float(stats.linregress({X}, {Y}).intercept)",
        "the least-squares intercept of the second column on the first column of {a0}",
        False,
    ),
    _rel(
        "r_squared",
        f"float(stats.linregress({X}, {Y}).rvalue ** 2)",
        "the R-squared of a simple linear regression within {a0}",
        True,
    ),
    _rel(
        "mean_abs_gap",
        f"float(({X} - {Y}).abs().mean())",
        "the mean absolute difference between the two columns of {a0}",
        True,
    ),
    op(
        "split_by_median",
        F,
        (TABLE,),
        SAMPLES,
        _SPLIT_VALUES + "{a0}[{c1}] > df[{c1}].median()}})"
        ".loc[{a0}[[{c0}, {c1}]].notna().all(axis=1)]",
        "S",
        slots=(ROLE_NUMERIC, ROLE_NUMERIC),
        extra={
            "define": "Let S be the values of {c0} over rows{a0} where {c0} and {c1} are "
            "present, split into group A (rows where {c1} is at or below its "
            "overall median) and group B (rows where {c1} is above its overall "
            "median)."
        },
    ),
    op(
        "split_by_mode",
        F,
        (TABLE,),
        SAMPLES,
        _SPLIT_VALUES + "{a0}[{c1}] == df[{c1}].mode().iloc[0]}})"
        ".loc[{a0}[[{c0}, {c1}]].notna().all(axis=1)]",
        "S",
        slots=(ROLE_NUMERIC, ROLE_KEY),
        extra={
            "define": "Let S be the values of {c0} over rows{a0} where {c0} and {c1} are "
            "present, split into group A (rows where {c1} differs from its most "
            "frequent value in the whole table, the smallest one if several tie) and "
            "group B (rows where it equals that value)."
        },
    ),
    _two(
        "group_mean_gap",
        f"float({B}.mean() - {A}.mean())",
        "the mean of group B minus the mean of group A in {a0}",
    ),
    _two(
        "group_median_gap",
        f"float({B}.median() - {A}.median())",
        "the median of group B minus the median of group A in {a0}",
    ),
    _two(
        "cohens_d",
        f"float(({B}.mean() - {A}.mean()) / np.sqrt((({A}.count() - 1) * {A}.var() + "
        f"({B}.count() - 1) * {B}.var()) / ({A}.count() + {B}.count() - 2)))",
        "Cohen's d (group B minus group A, pooled sample standard deviation) in {a0}",
    ),
    _two(
        "variance_ratio",
        f"float({B}.var() / {A}.var())",
        "the sample variance of group B divided by that of group A in {a0}",
    ),
]
