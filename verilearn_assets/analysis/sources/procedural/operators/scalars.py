"""Scalar combinators: compare or combine two numbers computed elsewhere in the program."""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators.spec import OpSpec, op
from verilearn_assets.analysis.sources.procedural.types import FLAG, NUMBER

F = "scalar"
_NN = (NUMBER, NUMBER)

OPS: list[OpSpec] = [
    op("difference", F, _NN, NUMBER, "{a0} - {a1}", "({a0}) minus ({a1})", distinct_inputs=True),
    op("ratio", F, _NN, NUMBER, "{a0} / {a1}", "({a0}) divided by ({a1})", distinct_inputs=True),
    op(
        "larger_of",
        F,
        _NN,
        NUMBER,
        "max({a0}, {a1})",
        "the larger of ({a0}) and ({a1})",
        commutative=(0, 1),
        distinct_inputs=True,
    ),
    op(
        "greater_than",
        F,
        _NN,
        FLAG,
        "bool({a0} > {a1})",
        "{a0} is greater than {a1}",
        distinct_inputs=True,
    ),
    op(
        "absolute_number",
        F,
        (NUMBER,),
        NUMBER,
        "abs({a0})",
        "the absolute value of {a0}",
        idempotent=True,
    ),
]
