"""The training gate: read the instance's check evaluations for every upstream partition.

Blocking checks stop downstream steps inside one run; this closes the other door, a
later run that asks for training data while an upstream partition's latest evaluation
failed, is missing, or predates the partition's latest materialization.
"""

from __future__ import annotations

from collections.abc import Iterable

from dagster import AssetCheckKey, AssetKey, AssetRecordsFilter, DagsterInstance
from dagster._core.event_api import EventLogRecord, PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import (
    AssetCheckExecutionRecordStatus,
)


def latest_materialization(
    instance: DagsterInstance, key: AssetKey, partition: str
) -> EventLogRecord | None:
    """The newest materialization record of one partition of `key`, if any."""
    result = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1, ascending=False
    )
    return result.records[0] if result.records else None


def _latest_materialization_time(
    instance: DagsterInstance, key: AssetKey, partition: str
) -> float | None:
    record = latest_materialization(instance, key, partition)
    return record.timestamp if record else None


def gate_failures(
    instance: DagsterInstance, checks: Iterable[AssetCheckKey], partitions: Iterable[str]
) -> tuple[list[str], list[str]]:
    """(blocking reasons, partitions considered) for the given checks × partitions.

    A partition that was never materialized is not considered (an unconfigured `llm`
    source must not block training on the other sources); one that was must have a
    passing evaluation of every blocking check, newer than its latest materialization.
    """
    reasons: list[str] = []
    considered: list[str] = []
    checks = list(checks)
    for partition in partitions:
        by_asset: dict[AssetKey, float | None] = {}
        for ck in checks:
            if ck.asset_key not in by_asset:
                by_asset[ck.asset_key] = _latest_materialization_time(
                    instance, ck.asset_key, partition
                )
        if all(v is None for v in by_asset.values()):
            continue
        considered.append(partition)
        for ck in checks:
            mat_time = by_asset[ck.asset_key]
            if mat_time is None:
                reasons.append(
                    f"{ck.asset_key.to_user_string()} [{partition}]: "
                    f"not materialized, so check {ck.name} never ran"
                )
                continue
            latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
                [ck], partition_filter=PartitionKeyFilter(key=partition)
            ).get(ck)
            where = f"check {ck.name} on {ck.asset_key.to_user_string()} [{partition}]"
            if latest is None or latest.event is None:
                reasons.append(f"{where}: never evaluated")
                continue
            evaluation = latest.event.dagster_event.event_specific_data
            if latest.event.timestamp < mat_time:
                reasons.append(f"{where}: last evaluated before the latest materialization")
            elif (
                latest.status != AssetCheckExecutionRecordStatus.SUCCEEDED or not evaluation.passed
            ):
                why = evaluation.description or "failed"
                reasons.append(f"{where}: FAILED — {why}")
    return reasons, considered
