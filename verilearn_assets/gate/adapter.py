"""The Dagster side of the gate, in one place.

- `blocking_checks(family)`: each of a family's `GateRule`s as a blocking asset check,
  partitioned `source × split`, running `gate.registry.evaluate` — the same call
  `verilearn gate` makes.
- `drift_checks(family, rules)`: a family's drift rules (`gate/drift.py`) as warning checks.
- `record_evaluation`: how `verilearn gate` stores a verdict so the UI and the training
  gate see it (one synthetic run id per gate invocation, so any number of runs record).
- `latest_materialization` / `latest_check_run`: what the training gate
  (`gate/training_gate.py`) reads for every upstream partition.

Dagster has no public API for a check's latest evaluation *per partition* nor for storing
an evaluation under a run id of our choosing; those two uses of `dagster._core` live here
and nowhere else.
"""

import uuid

from dagster import (
    AssetCheckEvaluation,
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    AssetRecordsFilter,
    DagsterInstance,
    EventLogRecord,
    MetadataValue,
    asset_check,
)
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.events import DagsterEvent, DagsterEventType

from resources.container_pool import ContainerPoolResource
from resources.home import HomeResource
from verilearn_assets.core.contract import GateRule, RuleContext, RuleOutcome
from verilearn_assets.core.deploy import op_tags_for
from verilearn_assets.core.family import Family
from verilearn_assets.core.partitions import SOURCE_SPLIT, source_split
from verilearn_assets.gate.drift import DriftRule, drift_verdict
from verilearn_assets.gate.registry import evaluate, registered_rules

MAX_FAILING_LISTED = 50


def asset_key(family: Family, which: str) -> AssetKey:
    """The Dagster key of a family asset: the family name, then the asset name."""
    return AssetKey(family.asset_lake(which).split("/"))  # type: ignore[arg-type]


def check_key(family: Family, rule: GateRule) -> AssetCheckKey:
    return AssetCheckKey(asset_key(family, rule.on), rule.name)


def all_blocking_check_keys(only: list[str] | None = None) -> list[AssetCheckKey]:
    """The keys of every registered family's blocking checks."""
    return [check_key(r.family, r.rule) for r in registered_rules(only)]


def outcome_result(outcome: RuleOutcome, **extra: object) -> AssetCheckResult:
    """A RuleOutcome as an AssetCheckResult: counts and the failures listed in metadata."""
    meta: dict[str, object] = {
        "checked": outcome.checked,
        "failures": len(outcome.failures),
        **outcome.stats,
        **extra,
    }
    if outcome.failures:
        meta["failing"] = MetadataValue.md(
            "\n".join(f"- {f}" for f in outcome.failures[:MAX_FAILING_LISTED])
        )
    return AssetCheckResult(passed=outcome.passed, description=outcome.summary(), metadata=meta)


def _rule_check(family: Family, rule: GateRule) -> AssetChecksDefinition:
    """One blocking, partitioned asset check for one rule (pool-taking when it needs one),
    routed to the sandbox queue when it runs the pool or a jail of its own."""
    common = dict(
        asset=asset_key(family, rule.on),
        name=rule.name,
        blocking=True,
        partitions_def=SOURCE_SPLIT,
        description=rule.description,
        op_tags=op_tags_for(["sandbox"] if rule.needs_pool or rule.needs_jail else []),
    )
    if rule.needs_pool:

        @asset_check(**common)
        def pooled(
            context: AssetCheckExecutionContext,
            home: HomeResource,
            container_pool: ContainerPoolResource,
        ) -> AssetCheckResult:
            source, split = source_split(context.partition_key)
            return outcome_result(evaluate(family, rule, source, split, home.dir(), container_pool))

        return pooled

    @asset_check(**common)
    def plain(context: AssetCheckExecutionContext, home: HomeResource) -> AssetCheckResult:
        source, split = source_split(context.partition_key)
        return outcome_result(evaluate(family, rule, source, split, home.dir()))

    return plain


def blocking_checks(family: Family) -> list[AssetChecksDefinition]:
    """Every blocking rule of `family` as a Dagster asset check."""
    return [_rule_check(family, rule) for rule in family.rules]


def previous_metadata(
    instance: DagsterInstance, key: AssetKey, partition: str, name: str
) -> float | None:
    """Metadata `name` of the materialization before the latest one of this partition."""
    recs = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=2, ascending=False
    ).records
    if len(recs) < 2 or recs[1].asset_materialization is None:
        return None
    value = recs[1].asset_materialization.metadata.get(name)
    return None if value is None else float(value.value)


def _drift_check(family: Family, rule: DriftRule) -> AssetChecksDefinition:
    key = asset_key(family, rule.on)

    @asset_check(
        asset=key,
        name=rule.name,
        blocking=False,
        partitions_def=SOURCE_SPLIT,
        description=rule.description,
    )
    def drift(context: AssetCheckExecutionContext, home: HomeResource) -> AssetCheckResult:
        source, split = source_split(context.partition_key)
        ctx = RuleContext(family=family, source=source, split=split, home=home.dir())
        before = previous_metadata(context.instance, key, context.partition_key, rule.metadata_key)
        verdict = drift_verdict(
            rule.what,
            rule.measure(ctx),
            before,
            rule.limit(),
            worse_when_higher=rule.worse_when_higher,
        )
        return AssetCheckResult(
            passed=verdict.passed,
            severity=AssetCheckSeverity.WARN,
            description=verdict.description,
            metadata={
                "rate": verdict.rate,
                "previous": -1.0 if verdict.previous is None else verdict.previous,
            },
        )

    return drift


def drift_checks(family: Family, rules: tuple[DriftRule, ...]) -> list[AssetChecksDefinition]:
    """A family's drift rules as non-blocking (WARN) asset checks, partitioned like its
    assets."""
    return [_drift_check(family, rule) for rule in rules]


def new_gate_run_id() -> str:
    """A run id for one `verilearn gate` invocation (its evaluations are stored under it)."""
    return f"gate-{uuid.uuid4()}"


def record_evaluation(
    instance: DagsterInstance,
    key: AssetCheckKey,
    partition: str,
    result: AssetCheckResult,
    run_id: str,
) -> None:
    """Store a headless evaluation of a blocking check on one partition.

    It is tied to the partition's latest materialization (without a target Dagster's
    per-partition check status drops it and the UI would show a failed check as passed),
    and stored under `run_id`: run-less evaluations all share the empty run id, and a
    second `verilearn gate` on the same partition would break the storage's unique index.
    """
    from dagster._core.definitions.asset_checks.asset_check_evaluation import (
        AssetCheckEvaluationTargetMaterializationData as Target,
    )

    mat = latest_materialization(instance, key.asset_key, partition)
    target = (
        Target(storage_id=mat.storage_id, run_id=mat.run_id, timestamp=mat.timestamp)
        if mat
        else None
    )
    evaluation = AssetCheckEvaluation(
        asset_key=key.asset_key,
        check_name=key.name,
        passed=result.passed,
        metadata=result.metadata,
        severity=result.severity,
        description=result.description,
        blocking=True,
        partition=partition,
        target_materialization_data=target,
    )
    instance.report_dagster_event(
        DagsterEvent(
            event_type_value=DagsterEventType.ASSET_CHECK_EVALUATION.value,
            job_name="verilearn_gate",
            event_specific_data=evaluation,
        ),
        run_id=run_id,
    )


def latest_materialization(
    instance: DagsterInstance, key: AssetKey, partition: str
) -> EventLogRecord | None:
    """The newest materialization record of one partition of `key`, if any."""
    result = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1, ascending=False
    )
    return result.records[0] if result.records else None


def latest_check_run(
    instance: DagsterInstance, key: AssetCheckKey, partition: str
) -> tuple[AssetCheckEvaluation, float, str] | None:
    """(the latest evaluation of check `key` on `partition`, its timestamp, its run id), or
    None when it was never evaluated (or its latest execution was planned and never ran)."""
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [key], partition_filter=PartitionKeyFilter(key=partition)
    ).get(key)
    if latest is None or latest.event is None or latest.event.dagster_event is None:
        return None
    evaluation = latest.event.dagster_event.event_specific_data
    if not isinstance(evaluation, AssetCheckEvaluation):  # planned, never evaluated
        return None
    return evaluation, latest.event.timestamp, latest.run_id


def latest_check_evaluation(
    instance: DagsterInstance, key: AssetCheckKey, partition: str
) -> tuple[AssetCheckEvaluation, float] | None:
    """(the latest evaluation of check `key` on `partition`, its timestamp), or None."""
    found = latest_check_run(instance, key, partition)
    return None if found is None else found[:2]
