"""training.yaml `device`/`dtype`/`device_map`: resolved against the machine (with and
without a GPU, stated as facts, never probed), clear refusals, and the resolved placement
reaching a real SFT trainer and its saved weights on this CPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from verilearn_assets.core.config import ConfigError
from verilearn_assets.core.family import SftRow
from verilearn_assets.training.config import TrainingConfig, load_training_config
from verilearn_assets.training.device import Placement, placement, resolve
from verilearn_assets.training.grpo.trainer import StartModel, load_policy
from verilearn_assets.training.sft.trainer import train_sft

NO_GPU = {"cuda": False, "bf16_supported": False}
AMPERE = {"cuda": True, "bf16_supported": True}
VOLTA = {"cuda": True, "bf16_supported": False}


def test_auto_picks_the_gpu_and_its_best_precision() -> None:
    cpu = resolve("auto", "auto", None, **NO_GPU)
    assert (cpu.device, cpu.dtype) == ("cpu", "float32")
    assert cpu.trainer_args() == {"use_cpu": True, "bf16": False, "fp16": False}
    gpu = resolve("auto", "auto", "auto", **AMPERE)
    assert (gpu.device, gpu.dtype, gpu.device_map) == ("cuda", "bfloat16", "auto")
    assert gpu.trainer_args() == {"use_cpu": False, "bf16": True, "fp16": False}
    assert gpu.load_kwargs() == {"dtype": torch.bfloat16, "device_map": "auto"}
    old = resolve("auto", "auto", None, **VOLTA)
    assert old.trainer_args() == {"use_cpu": False, "bf16": False, "fp16": True}
    assert old.load_kwargs() == {"dtype": torch.float32}  # fp16 autocast, fp32 master weights
    # an explicit cpu on a GPU box stays on the CPU
    assert resolve("cpu", "auto", None, **AMPERE).trainer_args()["use_cpu"] is True


@pytest.mark.parametrize(
    ("device", "dtype", "device_map", "machine", "message"),
    [
        ("cuda", "auto", None, NO_GPU, "device is 'cuda' but torch sees no GPU"),
        ("auto", "float16", None, NO_GPU, "float16 needs a GPU"),
        ("cuda", "bfloat16", None, VOLTA, "does not support it"),
        ("cpu", "auto", "auto", AMPERE, "device_map 'auto' places the model on GPUs"),
    ],
)
def test_impossible_placements_are_refused(
    device: str, dtype: str, device_map: str | None, machine: dict[str, bool], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as err:
        resolve(device, dtype, device_map, **machine)  # type: ignore[arg-type]
    assert "configs/training.yaml" in str(err.value)


def test_shipped_config_trains_on_this_machine_and_rejects_unknown_values(
    tmp_path: Path,
) -> None:
    cfg = load_training_config()
    assert (cfg.device, cfg.dtype, cfg.device_map) == ("auto", "auto", None)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert placement(cfg).device == expected
    (tmp_path / "t.yaml").write_text("dtype: float8\n")
    with pytest.raises(ConfigError, match="dtype"):
        load_training_config(tmp_path / "t.yaml")


def test_bfloat16_reaches_the_sft_trainer_and_the_saved_model(
    tiny_model_dir: Path, sft_rows_real: list[SftRow], home: Path
) -> None:
    """bf16 autocast works on a CPU too (slowly): one step shows the setting in the trainer
    the run built, in its result.json and in the dtype of the weights it saved."""
    config = TrainingConfig.model_validate(
        {
            "base_model": str(tiny_model_dir),
            "device": "cpu",
            "dtype": "bfloat16",
            "sft": {"lora_r": 8, "lora_alpha": 16, "cpu_threads": 1},
        }
    )
    run = train_sft(config, sft_rows_real, home=home, max_steps=1)
    assert run.result is not None
    assert run.result.extra["placement"] == {
        "device": "cpu",
        "use_cpu": True,
        "bf16": True,
        "fp16": False,
        "weights_dtype": "bfloat16",
    }
    saved = AutoModelForCausalLM.from_pretrained(str(run.model_dir), dtype="auto")
    assert saved.dtype == torch.bfloat16
    # the GRPO policy loads in the placement's weight dtype as well
    model, _ = load_policy(StartModel(run.model_dir, "sft"), Placement("cpu", "bfloat16"))
    assert model.dtype == torch.bfloat16
    model, _ = load_policy(StartModel(tiny_model_dir, "base"))
    assert model.dtype == torch.float32
