"""Transforms: numeric series in, numeric series out.

Their phrases are imperative steps ("square each value"): wording lists a chain of
transforms in order instead of nesting them.
"""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators.spec import OpSpec, op
from verilearn_assets.analysis.sources.procedural.types import NUM_SERIES

F = "transform"
_S = (NUM_SERIES,)
_Q1 = "{a0}.quantile(0.25)"
_Q3 = "{a0}.quantile(0.75)"
_LO = f"{_Q1} - 1.5 * ({_Q3} - {_Q1})"
_HI = f"{_Q3} + 1.5 * ({_Q3} - {_Q1})"

OPS: list[OpSpec] = [
    op("absolute", F, _S, NUM_SERIES, "{a0}.abs()", "take absolute values", idempotent=True),
    op(
        "signed_log",
        F,
        _S,
        NUM_SERIES,
        "np.sign({a0}) * np.log1p({a0}.abs())",
        "map each value v to sign(v)*log(1+|v|)",
    ),
    op("square", F, _S, NUM_SERIES, "{a0} ** 2", "square each value"),
    op("cube_root", F, _S, NUM_SERIES, "np.cbrt({a0})", "take the (real) cube root of each value"),
    op(
        "zscore",
        F,
        _S,
        NUM_SERIES,
        "({a0} - {a0}.mean()) / {a0}.std()",
        "convert to z-scores (using the sample standard deviation)",
        idempotent=True,
    ),
    op(
        "minmax_scale",
        F,
        _S,
        NUM_SERIES,
        "({a0} - {a0}.min()) / ({a0}.max() - {a0}.min())",
        "min-max rescale to the range 0 to 1",
        idempotent=True,
    ),
    op(
        "percent_rank",
        F,
        _S,
        NUM_SERIES,
        "{a0}.rank(pct=True)",
        "replace each value by its percentile rank (average rank for ties, between 0 and 1)",
    ),
    op("center", F, _S, NUM_SERIES, "{a0} - {a0}.mean()", "subtract the mean", idempotent=True),
    op(
        "clip_tukey",
        F,
        _S,
        NUM_SERIES,
        f"{{a0}}.clip({_LO}, {_HI})",
        "clip to the Tukey fences (1.5 IQR beyond the linear-interpolated quartiles)",
    ),
    op(
        "drop_tukey_outliers",
        F,
        _S,
        NUM_SERIES,
        f"{{a0}}[{{a0}}.between({_LO}, {_HI})]",
        "drop values outside the Tukey fences (1.5 IQR beyond the linear-interpolated quartiles)",
    ),
    op(
        "upper_half",
        F,
        _S,
        NUM_SERIES,
        "{a0}[{a0} > {a0}.median()]",
        "keep only values above the median",
    ),
    op(
        "sort_ascending", F, _S, NUM_SERIES, "{a0}.sort_values()", "sort ascending", idempotent=True
    ),
    op(
        "first_difference",
        F,
        _S,
        NUM_SERIES,
        "{a0}.diff().dropna()",
        "take successive differences in table order (dropping the first)",
    ),
    op(
        "running_total", F, _S, NUM_SERIES, "{a0}.cumsum()", "take the running total in table order"
    ),
]
