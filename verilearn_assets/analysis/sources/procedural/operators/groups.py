"""Group aggregates: one number per group of a key column, and reductions of those."""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators.spec import OpSpec, op
from verilearn_assets.analysis.sources.procedural.types import (
    COUNT,
    GROUP_VALUES,
    LABEL,
    NUMBER,
    ROLE_KEY,
    ROLE_NUMERIC,
    TABLE,
)

F = "group_aggregate"
_G = (GROUP_VALUES,)


def _by(name: str, method: str, what: str) -> OpSpec:
    return op(
        name,
        F,
        (TABLE,),
        GROUP_VALUES,
        "{a0}.groupby({c0}, observed=True)[{c1}]." + method + "().dropna()",
        what + " of {c1} for each value of {c0}{a0}",
        slots=(ROLE_KEY, ROLE_NUMERIC),
        order_insensitive=True,
    )


OPS: list[OpSpec] = [
    _by("group_mean", "mean", "the mean"),
    _by("group_median", "median", "the median"),
    _by("group_std", "std", "the sample standard deviation"),
    _by("group_max", "max", "the maximum"),
    _by("group_min", "min", "the minimum"),
    _by("group_sum", "sum", "the sum"),
    op(
        "group_size",
        F,
        (TABLE,),
        GROUP_VALUES,
        "{a0}.groupby({c0}, observed=True).size()",
        "the number of rows for each value of {c0}{a0}",
        slots=(ROLE_KEY,),
        order_insensitive=True,
    ),
    op(
        "group_share", F, _G, GROUP_VALUES, "{a0} / {a0}.sum()", "{a0}, each divided by their total"
    ),
    op(
        "group_with_max",
        F,
        _G,
        LABEL,
        "str({a0}.idxmax())",
        "the group with the largest value in {a0} (the first in sorted order if tied)",
    ),
    op(
        "group_with_min",
        F,
        _G,
        LABEL,
        "str({a0}.idxmin())",
        "the group with the smallest value in {a0} (the first in sorted order if tied)",
    ),
    op("largest_group_value", F, _G, NUMBER, "float({a0}.max())", "the largest of {a0}"),
    op("smallest_group_value", F, _G, NUMBER, "float({a0}.min())", "the smallest of {a0}"),
    op(
        "group_value_spread",
        F,
        _G,
        NUMBER,
        "float({a0}.max() - {a0}.min())",
        "the largest minus the smallest of {a0}",
    ),
    op(
        "mean_of_groups",
        F,
        _G,
        NUMBER,
        "float({a0}.mean())",
        "the unweighted average over groups of {a0}",
    ),
    op(
        "groups_above_average",
        F,
        _G,
        COUNT,
        "int(({a0} > {a0}.mean()).sum())",
        "how many groups in {a0} exceed the unweighted average over groups",
    ),
]
