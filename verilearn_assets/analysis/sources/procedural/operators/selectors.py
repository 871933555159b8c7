"""Selectors: take one column out of a table, or one side out of a split or a pair."""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators.spec import OpSpec, op
from verilearn_assets.analysis.sources.procedural.types import (
    CAT_SERIES,
    NUM_SERIES,
    PAIR,
    ROLE_KEY,
    ROLE_NUMERIC,
    SAMPLES,
    TABLE,
)

F = "selector"

OPS: list[OpSpec] = [
    op(
        "select_numeric",
        F,
        (TABLE,),
        NUM_SERIES,
        "{a0}[{c0}].dropna()",
        "the non-missing values of {c0}{a0}",
        slots=(ROLE_NUMERIC,),
    ),
    op(
        "select_category",
        F,
        (TABLE,),
        CAT_SERIES,
        "{a0}[{c0}].dropna()",
        "the non-missing values of {c0}{a0}",
        slots=(ROLE_KEY,),
    ),
    op(
        "group_a_values",
        F,
        (SAMPLES,),
        NUM_SERIES,
        "{a0}.loc[~{a0}['group'], 'value']",
        "the values in group A of {a0}",
    ),
    op(
        "group_b_values",
        F,
        (SAMPLES,),
        NUM_SERIES,
        "{a0}.loc[{a0}['group'], 'value']",
        "the values in group B of {a0}",
    ),
    op("pair_first", F, (PAIR,), NUM_SERIES, "{a0}['x']", "the first column of {a0}"),
    op("pair_second", F, (PAIR,), NUM_SERIES, "{a0}['y']", "the second column of {a0}"),
]
