"""`configs/training.yaml`: base model, data mixture, SFT knobs, run directories, GRPO, eval.

The sections' classes hold their own defaults and reasons (`sft/config.py`,
`grpo/config.py`, `eval/config.py`); this module holds the top-level keys. One validated
file for the whole training stage so a run directory can store the resolved config that
produced a model; unknown keys are errors (a misspelt knob never falls back to a default
silently).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from verilearn_assets.core.config import StrictConfig, load_config, load_yaml_model
from verilearn_assets.core.records import SPLITS
from verilearn_assets.training.device import Device, Dtype
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.grpo.config import GrpoSettings
from verilearn_assets.training.sft.config import MixtureSettings, SftSettings

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BASE_MODEL = ".verilearn/models/tiny-qwen2"


class TrainingConfig(StrictConfig):
    base_model: str = DEFAULT_BASE_MODEL
    # where SFT and GRPO train (training/device.py): auto = a GPU when torch sees one;
    # dtype auto = bfloat16 on a GPU that has it (float16 on an older one), float32 on CPU;
    # device_map (e.g. "auto") spreads a model too large for one GPU over the visible ones
    device: Device = "auto"
    dtype: Dtype = "auto"
    device_map: str | dict[str, Any] | None = None
    split: str = "train"
    runs_dir: str | None = None  # None: $VERILEARN_HOME/runs
    mixture: MixtureSettings = Field(default_factory=MixtureSettings)
    sft: SftSettings = Field(default_factory=SftSettings)
    grpo: GrpoSettings = Field(default_factory=GrpoSettings)
    eval: EvalSettings = Field(default_factory=EvalSettings)

    @model_validator(mode="after")
    def _known_split(self) -> TrainingConfig:
        if self.split not in SPLITS:
            raise ValueError(f"split {self.split!r} unknown; known: {list(SPLITS)}")
        return self

    def base_model_dir(self) -> Path:
        """Absolute: relative paths are taken from the repository root, not the cwd."""
        p = Path(os.path.expandvars(os.path.expanduser(self.base_model)))
        return p if p.is_absolute() else (REPO_ROOT / p)

    def runs_root(self, home: Path) -> Path:
        if self.runs_dir is None:
            return Path(home) / "runs"
        p = Path(os.path.expandvars(os.path.expanduser(self.runs_dir)))
        return p if p.is_absolute() else Path(home) / p


def load_training_config(path: str | Path | None = None) -> TrainingConfig:
    """`path` when given, else `configs/training.yaml` (or `$VERILEARN_CONFIG_DIR`)."""
    if path is not None:
        return load_yaml_model(path, TrainingConfig)
    return load_config("training", TrainingConfig)
