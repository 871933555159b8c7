"""The operator registry: enough operators, typed signatures, templates that fit them."""

from __future__ import annotations

import string

from verilearn_assets.analysis.sources.procedural import FAMILIES, OPERATORS
from verilearn_assets.analysis.sources.procedural.grammar import MIN_COST, ROOT_OPS
from verilearn_assets.analysis.sources.procedural.types import ALL_TYPES, ANSWER_TYPES, ROLES


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def test_at_least_fifty_operators_with_unique_names() -> None:
    names = [s.name for s in OPERATORS]
    assert len(names) >= 50
    assert len(set(names)) == len(names)


def test_every_family_named_in_the_issue_is_present() -> None:
    wanted = {
        "selector",
        "transform",
        "filter",
        "group_aggregate",
        "column_aggregate",
        "series_aggregate",
        "relation",
        "evidence",
        "decision",
        "test",
    }
    assert wanted <= set(FAMILIES)


def test_signatures_are_typed_and_templates_use_exactly_their_inputs() -> None:
    for spec in OPERATORS:
        assert spec.output in ALL_TYPES, spec.name
        assert all(t in ALL_TYPES for t in spec.inputs), spec.name
        assert all(r in ROLES for r in spec.slots), spec.name
        expected = {f"a{i}" for i in range(len(spec.inputs))} | {
            f"c{i}" for i in range(len(spec.slots))
        }
        assert _fields(spec.code) == expected, f"{spec.name}: code uses {_fields(spec.code)}"
        assert "->" in spec.signature and str(spec.output) in spec.signature
        # code must be a single physical line so the hooked line is a line of the program
        assert "\n" not in spec.code


def test_every_type_is_producible_and_every_answer_type_has_a_root() -> None:
    assert all(MIN_COST[t] < 100 for t in ALL_TYPES)
    assert {s.output for s in ROOT_OPS} == set(ANSWER_TYPES)
