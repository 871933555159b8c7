"""The training gate: the one question every stage that learns from the data (or judges a
model trained on it) asks before it starts.

"Did every blocking check pass on the latest materialization of every upstream partition?"
`sft_dataset`, `sft_model`, `grpo_model`, `model_eval` and `verilearn gate` all ask it
through `training_gate`, so the rule and its
wording live here only. The answer is one `TrainingGateEvidence` record: which checks were
read, on which partitions, and each evaluation's run and verdict, so a refusal (or a pass)
can be traced back in Dagster.

Blocking checks stop downstream steps inside one run; this closes the other door, a later
run that asks for training data while an upstream partition's latest evaluation failed, is
missing, or predates the partition's latest materialization.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    DagsterInstance,
    EventLogRecord,
    Failure,
    MetadataValue,
)
from pydantic import BaseModel, Field

from verilearn_assets.core.family import family as family_named
from verilearn_assets.core.partitions import partition_key
from verilearn_assets.gate.adapter import (
    all_blocking_check_keys,
    latest_check_run,
    latest_materialization,
)

Status = Literal["passed", "failed", "never evaluated", "stale", "not materialized"]


class CheckEvidence(BaseModel):
    """What the gate read for one blocking check on one partition."""

    check: str
    asset: str  # the asset key as the UI writes it (`analysis/questions`)
    partition: str | None  # None: an unpartitioned check (the smoke suite)
    status: Status
    materialization_run_id: str | None = None  # the run that wrote the partition last
    evaluation_run_id: str | None = None  # the run (or `gate-…` invocation) that evaluated it
    description: str | None = None

    @property
    def where(self) -> str:
        part = f" [{self.partition}]" if self.partition is not None else ""
        return f"check {self.check} on {self.asset}{part}"

    def reason(self) -> str | None:
        """Why this evaluation keeps the gate shut (None: it does not)."""
        if self.status == "passed":
            return None
        if self.status == "not materialized":
            return (
                f"{self.asset} [{self.partition}]: not materialized, so check {self.check} "
                "never ran"
            )
        if self.status == "never evaluated":
            if self.partition is None:
                return f"{self.where}: never evaluated"
            return f"{self.where}: never evaluated (or its latest run did not finish it)"
        if self.status == "stale":
            return f"{self.where}: last evaluated before the latest materialization"
        return f"{self.where}: FAILED — {self.description or 'failed'}"


class TrainingGateEvidence(BaseModel):
    """One answer of the training gate: what it read and why it is shut (if it is)."""

    split: str
    families: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    checks: list[str] = Field(default_factory=list)  # every check read, `<asset>:<check>`
    # partitions that were materialized and so judged, by family (and by dataset asset)
    partitions: dict[str, list[str]] = Field(default_factory=dict)
    evaluations: list[CheckEvidence] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)

    @property
    def open(self) -> bool:
        return not self.reasons


@dataclass(frozen=True)
class DatasetGate:
    """A training dataset asset partitioned by split (`sft_dataset`): its blocking checks on
    one split, where its files are, and how to build it when it was never materialized."""

    checks: tuple[AssetCheckKey, ...]
    split: str
    files: Path  # the partition directory; it must hold `part-*.parquet` files
    build_hint: str = ""

    @property
    def asset(self) -> str:
        return self.checks[0].asset_key.to_user_string()


@dataclass(frozen=True)
class GateOptions:
    """What a stage adds to the family checks: the dataset it trains on, checks that are
    not partitioned (the sandbox smoke suite), and whether every listed source must be
    materialized (a trained model's: each one its prompts came from) or at least one."""

    dataset: DatasetGate | None = None
    unpartitioned: tuple[AssetCheckKey, ...] = ()
    every_source: bool = False


def check_evidence(
    instance: DagsterInstance, checks: Iterable[AssetCheckKey], partitions: Iterable[str]
) -> tuple[list[CheckEvidence], list[str]]:
    """(evidence for each check × considered partition, partitions considered).

    A partition that was never materialized is not considered (an unconfigured `llm`
    source must not block training on the other sources); one that was must have a
    passing evaluation of every blocking check, newer than its latest materialization.
    """
    out: list[CheckEvidence] = []
    considered: list[str] = []
    checks = list(checks)
    for partition in partitions:
        assets = dict.fromkeys(ck.asset_key for ck in checks)
        latest = {a: latest_materialization(instance, a, partition) for a in assets}
        if all(v is None for v in latest.values()):
            continue
        considered.append(partition)
        for ck in checks:
            out.append(_one(instance, ck, partition, latest[ck.asset_key]))
    return out, considered


def _one(
    instance: DagsterInstance, ck: AssetCheckKey, partition: str, mat: EventLogRecord | None
) -> CheckEvidence:
    base = dict(check=ck.name, asset=ck.asset_key.to_user_string(), partition=partition)
    if mat is None:
        return CheckEvidence(**base, status="not materialized")
    base["materialization_run_id"] = mat.run_id
    found = latest_check_run(instance, ck, partition)
    if found is None:  # no execution, or the latest was planned and never finished
        return CheckEvidence(**base, status="never evaluated")
    evaluation, evaluated_at, run_id = found
    status: Status = (
        "stale" if evaluated_at < mat.timestamp else "passed" if evaluation.passed else "failed"
    )
    return CheckEvidence(
        **base,
        status=status,
        evaluation_run_id=run_id,
        description=evaluation.description,
    )


def _unpartitioned(instance: DagsterInstance, ck: AssetCheckKey) -> CheckEvidence:
    base = dict(check=ck.name, asset=ck.asset_key.to_user_string(), partition=None)
    record = instance.get_latest_asset_check_evaluation_record(ck)
    event = record.event if record is not None else None
    data = event.dagster_event.event_specific_data if event and event.dagster_event else None
    if not isinstance(data, AssetCheckEvaluation):
        return CheckEvidence(**base, status="never evaluated")
    return CheckEvidence(
        **base,
        status="passed" if data.passed else "failed",
        evaluation_run_id=record.run_id,
        description=data.description,
    )


def training_gate(
    instance: DagsterInstance,
    split: str,
    families: Sequence[str],
    sources: Sequence[str],
    options: GateOptions | None = None,
) -> TrainingGateEvidence:
    """The training gate on `split`: every blocking check of each of `families` on each
    materialized `source × split` partition, plus what `options` adds. The evidence record
    says what was read; its `reasons` say why training must not start (empty: open)."""
    options = options or GateOptions()
    ev = TrainingGateEvidence(split=split, families=list(families), sources=list(sources))
    reasons: list[str] = []
    if options.dataset is not None:
        reasons.extend(_dataset(instance, options.dataset, ev))
    parts = [str(partition_key(s, split)) for s in sources]
    missing: list[str] = []
    for name in families:
        keys = all_blocking_check_keys([name])
        ev.checks.extend(_name(k) for k in keys)
        found, considered = check_evidence(instance, keys, parts)
        ev.evaluations.extend(found)
        reasons.extend(r for e in found if (r := e.reason()) is not None)
        if considered:
            ev.partitions[name] = considered
        if options.every_source:
            missing.extend(
                f"{name} tasks [{p}]: never materialized in this instance"
                for p in parts
                if p not in considered
            )
    if families and not options.every_source and not ev.partitions:
        lakes = " or ".join(family_named(n).task_lake for n in families)
        missing.append(f"no partition of {lakes} for split {split!r} was materialized")
    reasons.extend(missing)
    for ck in options.unpartitioned:
        ev.checks.append(_name(ck))
        found_one = _unpartitioned(instance, ck)
        ev.evaluations.append(found_one)
        if (r := found_one.reason()) is not None:
            reasons.append(r)
    ev.reasons = reasons
    return ev


def _dataset(
    instance: DagsterInstance, dataset: DatasetGate, ev: TrainingGateEvidence
) -> list[str]:
    ev.checks.extend(_name(k) for k in dataset.checks)
    found, considered = check_evidence(instance, dataset.checks, [dataset.split])
    ev.evaluations.extend(found)
    if not considered:
        hint = f" ({dataset.build_hint})" if dataset.build_hint else ""
        return [f"{dataset.asset} [{dataset.split}] was never materialized{hint}"]
    ev.partitions[dataset.asset] = considered
    reasons = [r for e in found if (r := e.reason()) is not None]
    if not reasons and not any(dataset.files.glob("part-*.parquet")):
        reasons.append(f"{dataset.files}: {dataset.asset} partition is missing")
    return reasons


def _name(key: AssetCheckKey) -> str:
    return f"{key.asset_key.to_user_string()}:{key.name}"


def gate_closed(description: str, evidence: TrainingGateEvidence) -> Failure:
    """The failure an asset behind the gate raises: `description` + every reason on one
    line (the console shows it), the reasons as a list in the UI's metadata, and the
    evidence record (which checks, partitions and evaluations were read)."""
    reasons = evidence.reasons
    return Failure(
        description=description + " | ".join(reasons),
        metadata={
            "blocked_by": MetadataValue.md("\n".join(f"- {r}" for r in reasons)),
            "gate_evidence": MetadataValue.json(evidence.model_dump(mode="json")),
        },
    )


def evidence_from_failure_metadata(metadata: dict) -> TrainingGateEvidence | None:
    """The evidence record a `gate_closed` failure carries (None: not a gate refusal)."""
    value = metadata.get("gate_evidence")
    return None if value is None else TrainingGateEvidence.model_validate(value.value)
