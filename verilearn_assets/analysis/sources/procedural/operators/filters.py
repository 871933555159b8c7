"""Filters: keep rows of a table by a condition on one column.

Thresholds are always taken from the full table `df`, never from the already-filtered
rows, so filters commute and repeat harmlessly: the reducer may sort and de-duplicate them.
"""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators.spec import OpSpec, op
from verilearn_assets.analysis.sources.procedural.types import ROLE_KEY, ROLE_NUMERIC, TABLE

F = "filter"


def _filter(name: str, mask: str, condition: str, role: str = ROLE_NUMERIC) -> OpSpec:
    return op(
        name, F, (TABLE,), TABLE, "{a0}[" + mask + "]", condition, slots=(role,), idempotent=True
    )


_IQR = "(df[{c0}].quantile(0.75) - df[{c0}].quantile(0.25))"

OPS: list[OpSpec] = [
    _filter(
        "filter_above_median", "{a0}[{c0}] > df[{c0}].median()", "{c0} is above its overall median"
    ),
    _filter(
        "filter_at_or_below_median",
        "{a0}[{c0}] <= df[{c0}].median()",
        "{c0} is at or below its overall median",
    ),
    _filter("filter_above_mean", "{a0}[{c0}] > df[{c0}].mean()", "{c0} is above its overall mean"),
    _filter(
        "filter_upper_quartile",
        "{a0}[{c0}] >= df[{c0}].quantile(0.75)",
        "{c0} is at or above its overall 75th percentile by linear interpolation",
    ),
    _filter(
        "filter_lower_quartile",
        "{a0}[{c0}] <= df[{c0}].quantile(0.25)",
        "{c0} is at or below its overall 25th percentile by linear interpolation",
    ),
    _filter(
        "filter_within_one_sd",
        "({a0}[{c0}] - df[{c0}].mean()).abs() <= df[{c0}].std()",
        "{c0} is within one standard deviation of its overall mean",
    ),
    _filter(
        "filter_no_iqr_outlier",
        "{a0}[{c0}].between(df[{c0}].quantile(0.25) - 1.5 * "
        + _IQR
        + ", df[{c0}].quantile(0.75) + 1.5 * "
        + _IQR
        + ")",
        "{c0} lies inside the Tukey fences (1.5 IQR beyond the overall linear-interpolated "
        "quartiles)",
    ),
    _filter(
        "filter_key_is_mode",
        "{a0}[{c0}] == df[{c0}].mode().iloc[0]",
        "{c0} equals its most frequent value in the whole table (the smallest one if several tie)",
        ROLE_KEY,
    ),
    _filter(
        "filter_key_not_mode",
        "{a0}[{c0}].notna() & ({a0}[{c0}] != df[{c0}].mode().iloc[0])",
        "{c0} is present and differs from its most frequent value in the whole table "
        "(the smallest one if several tie)",
        ROLE_KEY,
    ),
]
