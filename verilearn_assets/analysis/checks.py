"""The analysis family's asset checks: its blocking rules (from `family.py`, wired by the
gate's check factory) and two drift warnings that compare with the previous run.

Blocking checks (severity ERROR) stop downstream steps in the same run; `sft_dataset`
re-reads their latest evaluations so a later run cannot slip past a failed one.
"""

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetKey,
    AssetRecordsFilter,
    asset_check,
)

from resources.home import HomeResource
from verilearn_assets.analysis.assets import episodes, questions
from verilearn_assets.analysis.family import FAMILY
from verilearn_assets.core.partitions import SOURCE_SPLIT, source_split
from verilearn_assets.gate.adapter import blocking_checks
from verilearn_assets.gate.config import load_gate_config


def _previous_metadata(context, key: AssetKey, name: str) -> float | None:
    """`name` from the materialization before the latest one of this partition."""
    recs = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[context.partition_key]),
        limit=2,
        ascending=False,
    ).records
    if len(recs) < 2:
        return None
    value = recs[1].asset_materialization.metadata.get(name)
    return None if value is None else float(value.value)


def _drift(
    what: str, rate: float, before: float | None, limit: float, *, worse_when_higher: bool
) -> AssetCheckResult:
    """A WARN-severity verdict on how far `rate` moved the wrong way since last time."""
    moved = 0.0 if before is None else (rate - before if worse_when_higher else before - rate)
    direction = "rise" if worse_when_higher else "drop"
    return AssetCheckResult(
        passed=moved <= limit,
        severity=AssetCheckSeverity.WARN,
        description=f"{what} {rate:.3f} (previous {before}, max {direction} {limit})",
        metadata={"rate": rate, "previous": -1.0 if before is None else before},
    )


@asset_check(
    asset=questions,
    blocking=False,
    partitions_def=SOURCE_SPLIT,
    description="Warns when the alternatives (ambiguity) rate rises more than "
    "configured versus the previous materialization.",
)
def questions_ambiguity_drift(
    context: AssetCheckExecutionContext, home: HomeResource
) -> AssetCheckResult:
    qs = FAMILY.read_tasks(home.dir(), *source_split(context.partition_key))
    accepted = [q for q in qs if q.status == "accepted"]
    rate = sum(bool(q.alternatives) for q in accepted) / len(accepted) if accepted else 0.0
    before = _previous_metadata(context, questions.key, "alternatives_rate")
    limit = load_gate_config().drift.max_alternatives_rate_rise
    return _drift("alternatives rate", rate, before, limit, worse_when_higher=True)


@asset_check(
    asset=episodes,
    blocking=False,
    partitions_def=SOURCE_SPLIT,
    description="Warns when the pass rate drops more than configured versus the "
    "previous materialization.",
)
def episodes_pass_rate_drift(
    context: AssetCheckExecutionContext, home: HomeResource
) -> AssetCheckResult:
    eps = FAMILY.read_rollouts(home.dir(), *source_split(context.partition_key))
    rate = sum(e.verified for e in eps) / len(eps) if eps else 0.0
    before = _previous_metadata(context, episodes.key, "pass_rate")
    limit = load_gate_config().drift.max_pass_rate_drop
    return _drift("pass rate", rate, before, limit, worse_when_higher=False)


BLOCKING_CHECKS = blocking_checks(FAMILY)
ANALYSIS_CHECKS = [*BLOCKING_CHECKS, questions_ambiguity_drift, episodes_pass_rate_drift]
