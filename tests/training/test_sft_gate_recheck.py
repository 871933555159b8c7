"""The README's new-user flow: `make demo` (no model) → `make tiny-model` →
`verilearn train sft`. The demo's `sft_dataset_trainable` failed only because the base model
was not built; once it is, the SFT gate re-runs that check (the same `trainable_result`) and
training proceeds. A check that failed for a real reason still refuses, model or not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from gate_support import check_sft_rows, instance_with_sft_rows, use_tiny_config_dir

from verilearn_assets.cli import main
from verilearn_assets.core.family import SftRow
from verilearn_assets.gate.adapter import latest_check_evaluation
from verilearn_assets.training.config import load_training_config
from verilearn_assets.training.sft.assets import BASE_MODEL_MISSING, sft_dataset_trainable


def _set_base_model(cfg_dir: Path, base: Path) -> None:
    path = cfg_dir / "training.yaml"
    data = yaml.safe_load(path.read_text())
    data["base_model"] = str(base)
    path.write_text(yaml.safe_dump(data))


def _latest(instance):  # noqa: ANN001, ANN202
    found = latest_check_evaluation(instance, sft_dataset_trainable.check_key, "train")
    assert found is not None
    return found[0]


def test_check_failed_for_want_of_a_model_is_rerun_once_the_model_exists(
    home: Path,
    tmp_path: Path,
    tiny_model_dir: Path,
    sft_rows_real: list[SftRow],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    not_built = tmp_path / "models" / "tiny-qwen2"  # `make demo` builds no model
    cfg_dir = use_tiny_config_dir(monkeypatch, tmp_path / "configs", not_built)
    instance = instance_with_sft_rows(home, sft_rows_real)
    demo = check_sft_rows(instance, home)
    assert not demo.passed and "base model not built" in str(demo.description)

    # still no model: the gate refuses, naming the missing model, and trains nothing
    assert main(["train", "sft", "--max-steps", "1"]) == 2
    assert "base model not built" in capsys.readouterr().err
    assert not (home / "runs").exists()

    # `make tiny-model`: the next `verilearn train sft` re-decides the check and trains
    _set_base_model(cfg_dir, tiny_model_dir)
    assert main(["train", "sft", "--max-steps", "1"]) == 0
    assert "sft run sft-" in capsys.readouterr().out
    rerun = _latest(instance)
    assert rerun.passed and BASE_MODEL_MISSING not in rerun.metadata
    assert rerun.metadata["base_model"].value == str(tiny_model_dir)
    (result,) = (home / "runs").glob("sft-*/result.json")
    assert yaml.safe_load(result.read_text())["evidence"]["rows_used"] >= 1


def test_a_real_failure_is_not_rerun(
    home: Path,
    tmp_path: Path,
    tiny_model_dir: Path,
    sft_rows_real: list[SftRow],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_tiny_config_dir(monkeypatch, tmp_path / "configs", tiny_model_dir)
    instance = instance_with_sft_rows(home, sft_rows_real)
    strict = load_training_config().model_copy(deep=True)
    strict.sft.max_seq_length = 16  # no row fits: a real reason, with the model present
    failed = check_sft_rows(instance, home, strict)
    assert not failed.passed and "cannot fit" in str(failed.description)

    # the shipped rule would pass these rows, but the recorded verdict stands: no re-run
    assert main(["train", "sft", "--max-steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "sft_dataset_trainable" in err and "cannot fit" in err
    latest = _latest(instance)
    assert not latest.passed and "cannot fit" in str(latest.description)
    assert not (home / "runs").exists()
