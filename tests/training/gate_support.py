"""Shared set-up of the train → gate → eval tests: a config dir for the tiny model, and a
Dagster instance whose gate on `sft_dataset[train]` and the family's task partitions is
decided (the SFT check by the real `trainable_result`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from dagster import AssetCheckResult, AssetKey, AssetMaterialization, DagsterInstance
from grpo_support import bwrap_config_dir

from verilearn_assets.core import lake
from verilearn_assets.core.family import SftRow
from verilearn_assets.core.partitions import partition_key
from verilearn_assets.gate.adapter import all_blocking_check_keys, record_evaluation
from verilearn_assets.training.sft.assets import sft_dataset_trainable, trainable_result


def tiny_config_dir(target: Path, base_model: Path | str, **sections: dict[str, Any]) -> Path:
    """configs/ copied to `target` (bwrap sandbox), training.yaml on `base_model` with one
    torch thread and each given section merged in (e.g. grpo={...}, eval={...})."""
    d = bwrap_config_dir(target)
    data = yaml.safe_load((d / "training.yaml").read_text())
    data["base_model"] = str(base_model)
    data["sft"] |= {"cpu_threads": 1}
    for name, values in sections.items():
        data[name] = {**(data.get(name) or {}), **values}
    (d / "training.yaml").write_text(yaml.safe_dump(data))
    return d


def use_tiny_config_dir(
    monkeypatch: Any, target: Path, base_model: Path | str, **sections: dict[str, Any]
) -> Path:
    """`tiny_config_dir`, made the process's config dir (`VERILEARN_CONFIG_DIR`)."""
    d = tiny_config_dir(target, base_model, **sections)
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(d))
    return d


def instance_with_sft_rows(home: Path, rows: list[SftRow]) -> DagsterInstance:
    """The home's Dagster instance (as the CLI opens it) with `sft_dataset[train]`
    materialized from `rows`."""
    from verilearn_assets.cli.orchestrate import instance_for_home

    instance = instance_for_home(home)
    materialize_sft_rows(instance, home, rows)
    return instance


def materialize_sft_rows(instance: DagsterInstance, home: Path, rows: list[SftRow]) -> None:
    """`sft_dataset[train]` in the lake, and its materialization in the instance."""
    lake.write_records("sft_dataset", rows, SftRow, lake.lake_root(home), split="train")
    instance.report_runless_asset_event(
        AssetMaterialization(asset_key=AssetKey("sft_dataset"), partition="train")
    )


def check_sft_rows(instance: DagsterInstance, home: Path, config: Any = None) -> AssetCheckResult:
    """`sft_dataset_trainable` on [train] (the check's own code), recorded as evaluated."""
    result = trainable_result(home, "train", config)
    record_evaluation(instance, sft_dataset_trainable.check_key, "train", result, _run_id())
    return result


def decide_family_gate(
    instance: DagsterInstance, family: str, source: str, split: str, passed: bool
) -> None:
    """Every blocking check of `family` on `source × split` materialized and evaluated."""
    part = str(partition_key(source, split))
    keys = all_blocking_check_keys([family])
    for asset in {k.asset_key for k in keys}:
        instance.report_runless_asset_event(AssetMaterialization(asset_key=asset, partition=part))
    for key in keys:
        record_evaluation(instance, key, part, AssetCheckResult(passed=passed), _run_id())


def _run_id() -> str:
    from verilearn_assets.gate.adapter import new_gate_run_id

    return new_gate_run_id()
