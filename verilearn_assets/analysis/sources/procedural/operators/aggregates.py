"""Series aggregates (series -> one number) and column aggregates (table -> one number)."""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators.spec import OpSpec, op
from verilearn_assets.analysis.sources.procedural.types import (
    CAT_SERIES,
    COUNT,
    LABEL,
    NUM_SERIES,
    NUMBER,
    ROLE_KEY,
    ROLE_NUMERIC,
    TABLE,
)

S = "series_aggregate"
C = "column_aggregate"
_S = (NUM_SERIES,)
_Q1 = "{a0}.quantile(0.25)"
_Q3 = "{a0}.quantile(0.75)"


def _agg(name: str, code: str, phrase: str, out=NUMBER) -> OpSpec:
    return op(name, S, _S, out, code, phrase, order_insensitive=True)


OPS: list[OpSpec] = [
    _agg("mean", "float({a0}.mean())", "the mean of {a0}"),
    _agg("median", "float({a0}.median())", "the median of {a0}"),
    _agg("std", "float({a0}.std())", "the sample standard deviation of {a0}"),
    _agg("variance", "float({a0}.var())", "the sample variance of {a0}"),
    _agg("minimum", "float({a0}.min())", "the minimum of {a0}"),
    _agg("maximum", "float({a0}.max())", "the maximum of {a0}"),
    _agg("value_range", "float({a0}.max() - {a0}.min())", "the range (max minus min) of {a0}"),
    _agg(
        "iqr",
        f"float({_Q3} - {_Q1})",
        "the interquartile range (linear-interpolated quartiles) of {a0}",
    ),
    _agg("total", "float({a0}.sum())", "the sum of {a0}"),
    _agg("skewness", "float({a0}.skew())", "the sample skewness (pandas, bias-corrected) of {a0}"),
    _agg("kurtosis", "float({a0}.kurt())", "the excess kurtosis (pandas, bias-corrected) of {a0}"),
    _agg(
        "coef_variation",
        "float({a0}.std() / {a0}.mean())",
        "the coefficient of variation (sample std divided by mean) of {a0}",
    ),
    _agg(
        "median_abs_deviation",
        "float(({a0} - {a0}.median()).abs().median())",
        "the median absolute deviation from the median of {a0}",
    ),
    _agg(
        "quantile_90",
        "float({a0}.quantile(0.9))",
        "the 90th percentile (linear interpolation) of {a0}",
    ),
    _agg(
        "quantile_10",
        "float({a0}.quantile(0.1))",
        "the 10th percentile (linear interpolation) of {a0}",
    ),
    _agg("std_error", "float({a0}.sem())", "the standard error of the mean of {a0}"),
    _agg("count_values", "int({a0}.count())", "the number of {a0}", COUNT),
    _agg(
        "count_distinct", "int({a0}.nunique())", "the number of distinct values among {a0}", COUNT
    ),
    _agg(
        "count_above_mean",
        "int(({a0} > {a0}.mean()).sum())",
        "how many of {a0} are above their mean",
        COUNT,
    ),
    _agg(
        "count_tukey_outliers",
        f"int((({{a0}} < {_Q1} - 1.5 * ({_Q3} - {_Q1})) | "
        f"({{a0}} > {_Q3} + 1.5 * ({_Q3} - {_Q1}))).sum())",
        "how many of {a0} fall outside their Tukey fences (1.5 IQR beyond the linear-interpolated "
        "quartiles)",
        COUNT,
    ),
    op(
        "row_count",
        C,
        (TABLE,),
        COUNT,
        "int(len({a0}))",
        "the number of rows{a0}",
        order_insensitive=True,
    ),
    op(
        "missing_count",
        C,
        (TABLE,),
        COUNT,
        "int({a0}[{c0}].isna().sum())",
        "the number of missing values of {c0}{a0}",
        slots=(ROLE_NUMERIC,),
    ),
    op(
        "share_above_overall_mean",
        C,
        (TABLE,),
        NUMBER,
        "float(({a0}[{c0}] > df[{c0}].mean()).mean())",
        "the share of rows{a0} whose {c0} is above the overall mean of {c0}",
        slots=(ROLE_NUMERIC,),
    ),
    op(
        "mode_share",
        C,
        (TABLE,),
        NUMBER,
        "float({a0}[{c0}].value_counts(normalize=True).iloc[0])",
        "the share of the most frequent value of {c0} among its non-missing values{a0}",
        slots=(ROLE_KEY,),
    ),
    op(
        "category_count",
        C,
        (TABLE,),
        COUNT,
        "int({a0}[{c0}].nunique())",
        "the number of distinct values of {c0}{a0}",
        slots=(ROLE_KEY,),
    ),
    op(
        "most_frequent",
        C,
        (CAT_SERIES,),
        LABEL,
        "str({a0}.mode().iloc[0])",
        "the most frequent of {a0} (the smallest one if tied)",
        order_insensitive=True,
    ),
    op(
        "least_frequent",
        C,
        (CAT_SERIES,),
        LABEL,
        "str({a0}.value_counts().sort_index(kind='stable').idxmin())",
        "the least frequent of {a0} (the smallest one if tied)",
        order_insensitive=True,
    ),
    op(
        "distinct_labels",
        C,
        (CAT_SERIES,),
        COUNT,
        "int({a0}.nunique())",
        "the number of distinct values among {a0}",
        order_insensitive=True,
    ),
]
