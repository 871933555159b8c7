"""`grpo_model` refuses to train unless its data passed the gate (a real Dagster instance)."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance, materialize

from resources.home import HomeResource
from verilearn_assets.training.config import load_training_config
from verilearn_assets.training.grpo.assets import grpo_job, grpo_model, grpo_tasks
from verilearn_assets.training.sft.assets import training_data_gate


def test_grpo_model_refuses_ungated_data(home: Path) -> None:
    with DagsterInstance.ephemeral() as instance:
        config = load_training_config()
        reasons = training_data_gate(
            instance, home, config.split, config, grpo_tasks(config)
        ).reasons
        assert any("sft_dataset [train] was never materialized" in r for r in reasons)
        assert any("no partition of analysis/questions for split 'train'" in r for r in reasons)
        result = materialize(
            [grpo_model],
            instance=instance,
            resources={"home": HomeResource(path=str(home))},
            raise_on_error=False,
        )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    text = str(failure.event_specific_data.error)
    assert "grpo_model refuses: the gate did not pass" in text
    assert not (home / "runs").exists()  # nothing was trained
    assert grpo_job.name == "grpo_job"


def test_gate_opens_only_when_every_blocking_check_passed(home: Path) -> None:
    from dagster import AssetCheckResult, AssetKey, AssetMaterialization

    from verilearn_assets.core.partitions import partition_key
    from verilearn_assets.gate.adapter import all_blocking_check_keys, record_evaluation
    from verilearn_assets.training.sft.assets import sft_dataset_trainable

    instance = DagsterInstance.ephemeral()
    config = load_training_config()
    part = str(partition_key("template", "train"))
    keys = all_blocking_check_keys(["analysis"])
    for asset in {k.asset_key for k in keys}:
        instance.report_runless_asset_event(AssetMaterialization(asset_key=asset, partition=part))
    instance.report_runless_asset_event(
        AssetMaterialization(asset_key=AssetKey("sft_dataset"), partition="train")
    )
    (home / "lake" / "sft_dataset" / "split=train").mkdir(parents=True)
    (home / "lake" / "sft_dataset" / "split=train" / "part-0.parquet").write_bytes(b"")
    ok = AssetCheckResult(passed=True)
    record_evaluation(instance, sft_dataset_trainable.check_key, "train", ok, "grpo-gate-sft")
    for i, key in enumerate(keys[1:]):
        record_evaluation(instance, key, part, ok, f"grpo-gate-{i}")
    reasons = training_data_gate(instance, home, config.split, config, grpo_tasks(config)).reasons
    assert len(reasons) == 1 and keys[0].name in reasons[0] and "never evaluated" in reasons[0]
    record_evaluation(instance, keys[0], part, AssetCheckResult(passed=False), "grpo-gate-x")
    reasons = training_data_gate(instance, home, config.split, config, grpo_tasks(config)).reasons
    assert len(reasons) == 1 and keys[0].name in reasons[0]
    record_evaluation(instance, keys[0], part, ok, "grpo-gate-last")
    assert (
        training_data_gate(instance, home, config.split, config, grpo_tasks(config)).reasons == []
    )
