"""Drift, a rule kind every family can declare: a rate measured on one partition, compared
with the value its previous materialization recorded.

A drift rule warns (it never blocks): the data may legitimately move, but a pass rate that
drops or an ambiguity rate that rises past the configured limit between two runs of the
same partition deserves a look. A family lists its `DriftRule`s and wires them with
`gate.adapter.drift_checks` (non-blocking asset checks); the verdict itself is pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from verilearn_assets.core.contract import RuleContext


@dataclass(frozen=True)
class DriftRule:
    """One drift warning of a family.

    - `measure(ctx)`: the rate now, on the partition `ctx` names;
    - `metadata_key`: the materialization metadata of the guarded asset that holds the same
      rate, so the previous materialization's value is the baseline;
    - `limit()`: how far it may move the wrong way, from the family's own config (read
      when evaluated: config edits count; the gate has no setting of its own);
    - `worse_when_higher`: True for a rate that should not rise (ambiguity), False for one
      that should not drop (pass rate).
    """

    name: str
    on: Literal["tasks", "rollouts"]
    what: str
    metadata_key: str
    measure: Callable[[RuleContext], float]
    limit: Callable[[], float]
    worse_when_higher: bool
    description: str


class DriftVerdict(BaseModel):
    """How far a rate moved the wrong way since the previous materialization."""

    passed: bool
    description: str
    rate: float
    previous: float | None


def drift_verdict(
    what: str, rate: float, before: float | None, limit: float, *, worse_when_higher: bool
) -> DriftVerdict:
    """Passed unless `rate` moved the wrong way by more than `limit` (no previous: passed)."""
    moved = 0.0 if before is None else (rate - before if worse_when_higher else before - rate)
    direction = "rise" if worse_when_higher else "drop"
    return DriftVerdict(
        passed=moved <= limit,
        description=f"{what} {rate:.3f} (previous {before}, max {direction} {limit})",
        rate=rate,
        previous=before,
    )
