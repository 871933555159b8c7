"""Every reason the training gate gives, and the refusal each caller wraps it in, worded
as the user reads it: through `training_data_gate` (what `sft_model`, `grpo_model`,
`model_eval` and their CLI commands ask), the assets and `verilearn train`, on a real
Dagster instance whose events are recorded as the assets and checks record them."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetCheckResult, AssetKey, AssetMaterialization, DagsterInstance, materialize

from resources.home import HomeResource
from verilearn_assets.cli import main
from verilearn_assets.core.partitions import partition_key
from verilearn_assets.gate.adapter import all_blocking_check_keys, record_evaluation
from verilearn_assets.training.config import load_training_config
from verilearn_assets.training.eval.assets import learned_tasks
from verilearn_assets.training.run_dir import GateEvidence
from verilearn_assets.training.sft.assets import (
    sft_dataset_trainable,
    sft_model,
    training_data_gate,
)

OK = AssetCheckResult(passed=True)
TRAINABLE = "check sft_dataset_trainable on sft_dataset [train]"


def _materialize(instance: DagsterInstance, asset: AssetKey | str, partition: str) -> None:
    key = asset if isinstance(asset, AssetKey) else AssetKey(asset.split("/"))
    instance.report_runless_asset_event(AssetMaterialization(asset_key=key, partition=partition))


def _sft_dataset(instance: DagsterInstance, home: Path, *, files: bool = True) -> Path:
    """`sft_dataset[train]` materialized (with a part file unless `files` is False) and
    its blocking check passed after that."""
    part = home / "lake" / "sft_dataset" / "split=train"
    part.mkdir(parents=True)
    if files:
        (part / "part-0.parquet").write_bytes(b"")
    _materialize(instance, "sft_dataset", "train")
    record_evaluation(instance, sft_dataset_trainable.check_key, "train", OK, "gate-sft")
    return part


def _reasons(instance: DagsterInstance, home: Path, tasks=None) -> list[str]:  # noqa: ANN001
    config = load_training_config()
    return training_data_gate(instance, home, config.split, config, tasks).reasons


def _learned_from(sources: list[str]) -> GateEvidence:
    """The evidence of a model trained on analysis train rows of `sources`."""
    return GateEvidence(
        split="train",
        partition_path="unused",
        rows_in_partition=1,
        rows_used=1,
        family="analysis",
        task_split="train",
        task_sources=sources,
    )


def test_a_check_evaluated_before_the_latest_materialization_is_stale(home: Path) -> None:
    instance = DagsterInstance.ephemeral()
    _sft_dataset(instance, home)
    assert _reasons(instance, home) == []
    _materialize(instance, "sft_dataset", "train")  # rebuilt since it was checked
    assert _reasons(instance, home) == [
        f"{TRAINABLE}: last evaluated before the latest materialization"
    ]


def test_a_passed_partition_whose_files_are_gone_is_named(home: Path) -> None:
    instance = DagsterInstance.ephemeral()
    part = _sft_dataset(instance, home, files=False)
    assert _reasons(instance, home) == [f"{part}: sft_dataset partition is missing"]


def test_an_unmaterialized_asset_beside_a_materialized_one_names_each_check(
    home: Path,
) -> None:
    """The questions of `template|train` were built and checked, its episodes never: each
    episode check is named as never run (a passing questions check cannot open the gate)."""
    instance = DagsterInstance.ephemeral()
    _sft_dataset(instance, home)
    part = str(partition_key("template", "train"))
    keys = all_blocking_check_keys(["analysis"])
    questions = [k for k in keys if k.asset_key == AssetKey(["analysis", "questions"])]
    episodes = [k for k in keys if k.asset_key == AssetKey(["analysis", "episodes"])]
    assert questions and episodes
    _materialize(instance, AssetKey(["analysis", "questions"]), part)
    for i, key in enumerate(questions):
        record_evaluation(instance, key, part, OK, f"gate-q{i}")
    ev = _learned_from(["template"])
    reasons = _reasons(instance, home, learned_tasks(ev))
    assert reasons == [
        f"analysis/episodes [{part}]: not materialized, so check {k.name} never ran"
        for k in episodes
    ]


def test_a_trained_models_source_that_was_never_materialized_is_named(home: Path) -> None:
    """A GRPO run's prompts came from two sources; one of them is not in this instance:
    the evaluation gate names it (at-least-one would let the model through)."""
    instance = DagsterInstance.ephemeral()
    _sft_dataset(instance, home)
    part = str(partition_key("template", "train"))
    for asset in {k.asset_key for k in all_blocking_check_keys(["analysis"])}:
        _materialize(instance, asset, part)
    for i, key in enumerate(all_blocking_check_keys(["analysis"])):
        record_evaluation(instance, key, part, OK, f"gate-{i}")
    ev = _learned_from(["template", "procedural"])
    missing = str(partition_key("procedural", "train"))
    assert _reasons(instance, home, learned_tasks(ev)) == [
        f"analysis tasks [{missing}]: never materialized in this instance"
    ]
    only_template = ev.model_copy(update={"task_sources": ["template"]})
    assert _reasons(instance, home, learned_tasks(only_template)) == []


def test_sft_model_refusal_names_the_dataset_and_how_to_build_it(home: Path) -> None:
    with DagsterInstance.ephemeral() as instance:
        out = materialize(
            [sft_model],
            instance=instance,
            resources={"home": HomeResource(path=str(home))},
            raise_on_error=False,
        )
    assert not out.success
    (failed,) = [e for e in out.all_events if e.event_type_value == "STEP_FAILURE"]
    text = failed.event_specific_data.error.message
    assert (
        "sft_model refuses: the gate on sft_dataset [train] did not pass: sft_dataset [train] "
        "was never materialized (run training_job for 'train': it refuses unless the "
        "reliability gate passed)"
    ) in text
    assert not (home / "runs").exists()


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        (["train", "sft"], "sft_dataset [train] is not trainable: the gate did not pass: "),
        (["train", "grpo"], "GRPO on split 'train' refused: the gate did not pass: "),
        (  # an experiment arm asks the gate its stage's training command asks
            ["experiment", "run", "orm_vs_prm", "--limit", "1", "--max-steps", "1"],
            "grpo on split 'train' refused: the gate did not pass: ",
        ),
    ],
)
def test_verilearn_train_refuses_with_the_gates_reason(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], refusal: str
) -> None:
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert refusal + "sft_dataset [train] was never materialized" in err
    assert not list(home.glob("runs/*/model"))  # nothing was trained
