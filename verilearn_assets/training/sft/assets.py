"""Dagster wiring of the SFT stage: `sft_dataset_trainable` (blocking) and `sft_model`.

`sft_dataset_trainable` runs the pure trainability check on every `sft_dataset` partition
(it rides along in `training_job`, which selects `sft_dataset` with its checks); it blocks
on the split SFT trains on (`training.yaml split`) and warns on the others.
`sft_model` trains on the `train` partition and refuses unless that partition was
materialized (itself behind the reliability gate) and every blocking check on it passed on
its latest materialization; the CLI (`verilearn train sft`) asks the same question through
`training_data_gate` (the one helper every training stage and `model_eval` ask, over
`gate.training_gate`) and trains through the same `train_sft`.

`make demo` is model-free, so there `sft_dataset_trainable` fails with "base model not
built" (a warning: the data pipeline finishes). Once the base model exists (`make
tiny-model`), `training_data_gate` re-runs that one check on that partition — the same
`trainable_result`, recorded in the instance as `verilearn gate` records — before it answers:
a check that failed only for want of a model is decided on the data, and a check that
failed for any other reason stands.
"""

import base64
from dataclasses import dataclass
from pathlib import Path

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetDep,
    AssetExecutionContext,
    AssetsDefinition,
    Config,
    DagsterInstance,
    Failure,
    JobDefinition,
    MaterializeResult,
    MetadataValue,
    SpecificPartitionsPartitionMapping,
    asset,
    asset_check,
    define_asset_job,
)

from resources.home import HomeResource
from verilearn_assets.core.partitions import SPLIT
from verilearn_assets.gate.adapter import (
    latest_check_evaluation,
    latest_materialization,
    new_gate_run_id,
    record_evaluation,
)
from verilearn_assets.gate.training_gate import (
    DatasetGate,
    GateOptions,
    TrainingGateEvidence,
    gate_closed,
    training_gate,
)
from verilearn_assets.training.config import TrainingConfig, load_training_config
from verilearn_assets.training.run_dir import GateEvidence, TrainRun
from verilearn_assets.training.sft.data import SftDataMissing, load_sft_rows, sft_partition_dir
from verilearn_assets.training.sft.dataset_assets import sft_dataset
from verilearn_assets.training.sft.trainability import check_trainability
from verilearn_assets.training.sft.trainer import train_sft


@asset_check(
    asset=sft_dataset,
    name="sft_dataset_trainable",
    blocking=True,
    partitions_def=SPLIT,
    description="Every row renders with the base model's chat template (with {% generation %} "
    "markers), fits max_seq_length or is cut by the documented rule (counted), and one "
    "optimizer step on a sample gives a finite loss.",
)
def sft_dataset_trainable(
    context: AssetCheckExecutionContext, home: HomeResource
) -> AssetCheckResult:
    result = trainable_result(home.dir(), context.partition_key)
    context.log.info(str(result.description))
    return result


BASE_MODEL_MISSING = "base_model_missing"  # metadata flag: failed only for want of a model


def trainable_result(
    home: Path, split: str, config: TrainingConfig | None = None
) -> AssetCheckResult:
    """The check's verdict on `sft_dataset[split]` (also what a headless evaluation stores)."""
    config = config or load_training_config()
    if not (config.base_model_dir() / "config.json").is_file():
        # No model to train (`make demo` stays model-free): a failed warning, so the data
        # pipeline still finishes, while `sft_model` refuses on this failed evaluation.
        return AssetCheckResult(
            passed=False,
            severity=AssetCheckSeverity.WARN,
            description=f"{config.base_model_dir()}: base model not built (make tiny-model)",
            metadata={BASE_MODEL_MISSING: True, "base_model": str(config.base_model_dir())},
        )
    report = check_trainability(config, load_sft_rows(home, split))
    meta: dict[str, object] = {
        k: v
        for k, v in report.model_dump().items()
        if isinstance(v, int | float | str) and v is not None
    }
    for name in ("truncated_ids", "dropped_ids", "errors"):
        items = getattr(report, name)
        if items:
            meta[name] = MetadataValue.md("\n".join(f"- {i}" for i in items))
    # SFT trains on `config.split` only: there a failure blocks. On the other splits the rows
    # are read by reports and comparisons, never trained on, so a failure is a warning (still
    # failed, with its reasons) that does not stop the split's run.
    severity = AssetCheckSeverity.ERROR if split == config.split else AssetCheckSeverity.WARN
    return AssetCheckResult(
        passed=report.passed, severity=severity, description=report.summary(), metadata=meta
    )


SFT_DATASET_CHECKS: list[AssetCheckKey] = [sft_dataset_trainable.check_key]


def recheck_without_model(
    instance: DagsterInstance, home: Path, split: str, config: TrainingConfig | None = None
) -> AssetCheckResult | None:
    """Re-run `sft_dataset_trainable` on `split` when its latest evaluation failed only
    because the base model was not built and the base model is built now; record the new
    verdict (tied to the partition's latest materialization) and return it. None when
    nothing was re-run: no evaluation, a pass, a failure for a real reason, a stale
    evaluation (the gate reports that), or still no model."""
    config = config or load_training_config()
    key = sft_dataset_trainable.check_key
    latest = latest_check_evaluation(instance, key, split)
    if latest is None:
        return None
    evaluation, evaluated_at = latest
    flag = evaluation.metadata.get(BASE_MODEL_MISSING)
    if evaluation.passed or flag is None or flag.value is not True:
        return None
    mat = latest_materialization(instance, sft_dataset.key, split)
    if mat is None or mat.timestamp > evaluated_at:
        return None
    if not (config.base_model_dir() / "config.json").is_file():
        return None
    try:
        result = trainable_result(home, split, config)
    except SftDataMissing:
        return None  # the partition's files are gone: training_data_gate names that
    record_evaluation(instance, key, split, result, new_gate_run_id())
    return result


def sft_dataset_gate(
    instance: DagsterInstance, home: Path, split: str, config: TrainingConfig | None = None
) -> DatasetGate:
    """`sft_dataset[split]` as the training gate reads it. A trainability verdict that
    failed only for want of a base model is re-decided first, on `config`'s base model
    (default configs/training.yaml) — see `recheck_without_model`."""
    recheck_without_model(instance, home, split, config)
    return DatasetGate(
        checks=tuple(SFT_DATASET_CHECKS),
        split=split,
        files=sft_partition_dir(home, split),
        build_hint=f"run training_job for {split!r}: it refuses unless the reliability gate passed",
    )


@dataclass(frozen=True)
class TaskData:
    """Family task partitions a model learns (or learned) from beside `sft_dataset`: GRPO's
    prompts. `every_source`: each listed source must have been materialized (a trained
    model's: each one its prompts came from); otherwise at least one (a run about to start,
    since an unconfigured source must not block the others)."""

    family: str
    split: str
    sources: tuple[str, ...]
    every_source: bool = False


def training_data_gate(
    instance: DagsterInstance,
    home: Path,
    split: str,
    config: TrainingConfig | None = None,
    tasks: TaskData | None = None,
) -> TrainingGateEvidence:
    """The training gate on a model's data, the one every stage asks (`sft_model`,
    `grpo_model`, `model_eval` and their CLI commands): `sft_dataset[split]`'s blocking
    checks (the family checks were asked when that partition was materialized) and, for
    `tasks`, the family's blocking checks on those task partitions. `.reasons` says why
    training (or evaluation) must not start; empty: it may."""
    dataset = sft_dataset_gate(instance, home, split, config)
    if tasks is None:
        return training_gate(instance, split, [], [], GateOptions(dataset=dataset))
    return training_gate(
        instance,
        tasks.split,
        [tasks.family],
        list(tasks.sources),
        GateOptions(dataset=dataset, every_source=tasks.every_source),
    )


def gate_evidence(instance: DagsterInstance, home: Path, split: str) -> GateEvidence:
    """Which materialization of which partition the model is trained on."""
    mat = latest_materialization(instance, sft_dataset.key, split)
    meta = (
        mat.asset_materialization.metadata
        if mat is not None and mat.asset_materialization is not None
        else {}
    )
    parts = str(meta["partitions"].value).splitlines() if "partitions" in meta else []
    return GateEvidence(
        split=split,
        partition_path=str(sft_partition_dir(home, split)),
        materialization_run_id=mat.run_id if mat is not None else None,
        rows_in_partition=len(load_sft_rows(home, split)),
        rows_used=0,
        partitions=[p.removeprefix("- ") for p in parts],
    )


class SftModelConfig(Config):
    config_path: str | None = None  # a training.yaml; default configs/training.yaml
    max_steps: int | None = None  # overrides sft.max_steps


def train_metadata(run: TrainRun) -> dict[str, object]:
    meta: dict[str, object] = {
        "run_id": run.run_id,
        "run_dir": MetadataValue.path(str(run.run_dir)),
        "model_dir": MetadataValue.path(str(run.model_dir)),
        "merged": run.merged,
        "steps": run.steps,
        "final_loss": run.final_loss if run.final_loss is not None else float("nan"),
        "rows_used": run.rows_used,
        "rows_truncated": run.rows_truncated,
        "rows_dropped": run.rows_dropped,
    }
    for plot in run.plots:
        encoded = base64.b64encode(plot.read_bytes()).decode()
        meta[f"plot_{plot.stem}"] = MetadataValue.md(
            f"![{plot.stem}](data:image/png;base64,{encoded})\n\n`{plot}`"
        )
    return meta


@asset(
    group_name="training",
    deps=[AssetDep(sft_dataset, partition_mapping=SpecificPartitionsPartitionMapping(["train"]))],
    description="An SFT of the base model (TRL SFTTrainer) on sft_dataset[train]: a LoRA "
    "adapter merged into a normal model directory (or kept as an adapter), or all weights "
    "(sft.method: full); refuses unless sft_dataset[train] "
    "passed every blocking check on its latest materialization.",
)
def sft_model(
    context: AssetExecutionContext, config: SftModelConfig, home: HomeResource
) -> MaterializeResult:
    training: TrainingConfig = load_training_config(config.config_path)
    split = training.split
    gate = training_data_gate(context.instance, home.dir(), split, training)
    if not gate.open:
        raise gate_closed(
            f"sft_model refuses: the gate on sft_dataset [{split}] did not pass: ", gate
        )
    try:
        evidence = gate_evidence(context.instance, home.dir(), split)
    except SftDataMissing as exc:
        raise Failure(description=f"sft_model refuses: {exc}") from exc

    def log_progress(step: int, total: int, logs: dict) -> None:
        if "loss" in logs and (step % 10 == 0 or step == total):
            context.log.info(f"sft step {step}/{total}: loss {logs['loss']:.4f}")

    run = train_sft(
        training,
        home.dir(),
        max_steps=config.max_steps,
        progress=log_progress,
        evidence=evidence,
    )
    return MaterializeResult(metadata=train_metadata(run))


sft_job = define_asset_job(
    "sft_job",
    selection=[sft_model],
    description="SFT (LoRA or full, per configs/training.yaml) on the gated train split "
    "(sft_model).",
)

SFT_ASSETS: list[AssetsDefinition] = [sft_model]
SFT_CHECKS: list[AssetChecksDefinition] = [sft_dataset_trainable]
SFT_JOBS: list[JobDefinition] = [sft_job]
