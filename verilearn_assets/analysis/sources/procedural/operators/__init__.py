"""All operators, gathered by family."""

from __future__ import annotations

from verilearn_assets.analysis.sources.procedural.operators import (
    aggregates,
    filters,
    groups,
    inference,
    relations,
    scalars,
    selectors,
    transforms,
)
from verilearn_assets.analysis.sources.procedural.operators.spec import OpSpec

OPERATORS: list[OpSpec] = [
    *selectors.OPS,
    *filters.OPS,
    *transforms.OPS,
    *aggregates.OPS,
    *groups.OPS,
    *relations.OPS,
    *inference.OPS,
    *scalars.OPS,
]
BY_NAME: dict[str, OpSpec] = {}
for _spec in OPERATORS:
    if _spec.name in BY_NAME:
        raise ValueError(f"operator {_spec.name!r} is registered twice")
    BY_NAME[_spec.name] = _spec
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(s.family for s in OPERATORS))

__all__ = ["BY_NAME", "FAMILIES", "OPERATORS", "OpSpec"]
