"""`sft_model` and `verilearn train sft` refuse unless sft_dataset[train] passed its blocking
check on its latest materialization, and train through the same `train_sft` when it did."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from dagster import AssetCheckSeverity, AssetKey, AssetMaterialization, materialize

from resources.home import HomeResource
from verilearn_assets.cli import main
from verilearn_assets.cli.orchestrate import instance_for_home
from verilearn_assets.core import lake
from verilearn_assets.core.family import SftRow
from verilearn_assets.gate.adapter import record_evaluation
from verilearn_assets.training.config import load_training_config
from verilearn_assets.training.sft.assets import sft_dataset_trainable, sft_model, trainable_result

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def config_dir(tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of configs/ whose training.yaml trains the tiny model on one thread."""
    d = Path(shutil.copytree(REPO / "configs", tmp_path / "configs"))
    data = yaml.safe_load((d / "training.yaml").read_text())
    data["base_model"] = str(tiny_model_dir)
    data["sft"] |= {"cpu_threads": 1, "learning_rate": 5e-3}
    (d / "training.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(d))
    return d


def _materialize_sft(home: Path, instance, max_steps: int = 2):  # noqa: ANN001, ANN202
    return materialize(
        [sft_model],
        instance=instance,
        resources={"home": HomeResource(path=str(home))},
        run_config={"ops": {"sft_model": {"config": {"max_steps": max_steps}}}},
        raise_on_error=False,
    )


def _failure(result) -> str:  # noqa: ANN001
    return " ".join(
        str(e.event_specific_data.error) for e in result.all_events if e.is_step_failure
    )


def test_refuses_until_the_gate_passed_then_trains(
    home: Path,
    config_dir: Path,
    sft_rows_real: list[SftRow],
    capsys: pytest.CaptureFixture[str],
) -> None:
    instance = instance_for_home(home)

    # 1. sft_dataset[train] never materialized
    out = _materialize_sft(home, instance)
    assert not out.success and "never materialized" in _failure(out)
    assert main(["train", "sft"]) == 2
    assert "never materialized" in capsys.readouterr().err
    assert main(["train", "grpo"]) == 2  # GRPO starts from gated data too
    assert "never materialized" in capsys.readouterr().err

    # 2. materialized, but its blocking trainability check failed
    lake.write_records("sft_dataset", sft_rows_real, SftRow, lake.lake_root(home), split="train")
    instance.report_runless_asset_event(
        AssetMaterialization(asset_key=AssetKey("sft_dataset"), partition="train")
    )
    strict = load_training_config().model_copy(deep=True)
    strict.sft.max_seq_length = 16  # no row fits
    failed = trainable_result(home, "train", strict)
    assert not failed.passed
    key = sft_dataset_trainable.check_key
    record_evaluation(instance, key, "train", failed, "sft-test-fail")
    out = _materialize_sft(home, instance)
    assert not out.success
    why = _failure(out)
    assert "sft_dataset_trainable" in why and "FAILED" in why and "cannot fit" in why
    assert main(["train", "sft"]) == 2
    assert "sft_dataset_trainable" in capsys.readouterr().err

    # 3. the check passes on the shipped rule: the asset and the CLI both train
    passed = trainable_result(home, "train")
    assert passed.passed, passed.description
    record_evaluation(instance, key, "train", passed, "sft-test-pass")
    out = _materialize_sft(home, instance)
    assert out.success, _failure(out)
    mat = out.asset_materializations_for_node("sft_model")[0]
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert meta["steps"] == 2 and meta["rows_used"] >= 1
    assert Path(meta["model_dir"]).joinpath("config.json").is_file()
    assert "data:image/png;base64," in meta["plot_loss"]
    assert main(["train", "sft", "--max-steps", "2"]) == 0
    printed = capsys.readouterr().out
    assert "sft run sft-" in printed and "2 steps" in printed
    runs = sorted((home / "runs").glob("sft-*/result.json"))
    assert len(runs) == 2  # one from the asset, one from the CLI
    evidence = [yaml.safe_load(p.read_text())["evidence"] for p in runs]
    assert all(e["split"] == "train" and e["rows_in_partition"] == 3 for e in evidence)


def test_a_split_sft_does_not_train_on_fails_its_check_as_a_warning(
    home: Path, config_dir: Path, sft_rows_real: list[SftRow]
) -> None:
    """Rows that cannot fit block the split SFT trains on; elsewhere the same verdict is a
    failed warning (the split's run goes on, the reasons stay visible)."""
    strict = load_training_config().model_copy(deep=True)
    strict.sft.max_seq_length = 16  # no row fits
    for split in ("train", "test"):
        lake.write_records("sft_dataset", sft_rows_real, SftRow, lake.lake_root(home), split=split)
    on_train = trainable_result(home, "train", strict)
    on_test = trainable_result(home, "test", strict)
    assert not on_train.passed and on_train.severity == AssetCheckSeverity.ERROR
    assert not on_test.passed and on_test.severity == AssetCheckSeverity.WARN
    assert "cannot fit" in str(on_test.description)
    strict.split = "test"  # training on test makes its check the blocking one
    assert trainable_result(home, "test", strict).severity == AssetCheckSeverity.ERROR
