"""`configs/training.yaml`: base model, data mixture, SFT knobs, run directories, GRPO, eval.

One validated file for the whole training stage so a run directory can store the resolved
config that produced a model; unknown keys are errors (a misspelt knob never falls back to
a default silently).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from verilearn_assets.core.config import StrictConfig, load_config, load_yaml_model
from verilearn_assets.core.records import SOURCES, SPLITS
from verilearn_assets.training.device import Device, Dtype
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.grpo.config import GrpoSettings

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BASE_MODEL = ".verilearn/models/tiny-qwen2"


class MixtureSettings(StrictConfig):
    """Which SFT rows enter training, and how much each family counts.

    `None` for a list means "all"; an empty list means "none". A family absent from
    `family_weights` weighs 1.0; a weight of 0 leaves the family out.
    """

    families: list[str] | None = None
    sources: list[str] | None = None
    templates: list[str] | None = None  # template / rule / operator names (SftRow.template)
    family_weights: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_sources(self) -> MixtureSettings:
        bad = [s for s in self.sources or [] if s not in SOURCES]
        if bad:
            raise ValueError(f"unknown source(s) {bad}; known: {list(SOURCES)}")
        neg = {k: v for k, v in self.family_weights.items() if v < 0}
        if neg:
            raise ValueError(f"family_weights must be >= 0, got {neg}")
        return self

    def family_weight(self, family: str) -> float:
        return float(self.family_weights.get(family, 1.0))


class SftSettings(StrictConfig):
    """Method (LoRA adapter or full weights), optimizer and sequence knobs of the SFT run
    (TRL SFTTrainer)."""

    # lora: train a PEFT LoRA adapter (the lora_* knobs); full: train every weight (the
    # lora_* knobs are ignored; the result is always a normal HF model dir)
    method: Literal["lora", "full"] = "lora"
    lora_r: int = Field(default=16, ge=1)
    lora_alpha: int = Field(default=32, ge=1)
    lora_dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = "all-linear"
    gradient_checkpointing: bool = False
    learning_rate: float = Field(default=2e-4, gt=0)
    lr_scheduler_type: Literal[
        "linear", "cosine", "constant", "constant_with_warmup", "cosine_with_restarts"
    ] = "linear"
    warmup_ratio: float = Field(default=0.0, ge=0.0, lt=1.0)  # fraction of the steps
    weight_decay: float = Field(default=0.0, ge=0.0)
    per_device_train_batch_size: int = Field(default=2, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    num_train_epochs: float = Field(default=1.0, gt=0)
    max_steps: int = Field(default=-1, ge=-1)  # -1: run num_train_epochs
    logging_steps: int = Field(default=1, ge=1)
    save_steps: int | None = Field(default=None, ge=1)  # None: one checkpoint at the end
    seed: int = 0
    max_seq_length: int = Field(default=2048, ge=16)
    # compress: the context budget's ladder (docs/context_budget.md), drop what still overflows
    truncation: Literal["compress", "drop_last_turns", "drop_row"] = "compress"
    # The trainability check fails when more than this fraction of a split's rows cannot
    # fit even truncated (they are always counted, and never trained on).
    max_dropped_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    weighting: Literal["sample", "one_per_task"] = "sample"
    # torch CPU threads while training; None = torch's default (one per core). On a shared
    # CPU, 1 avoids threads thrashing each other (measured here: 1.4 s/step vs 8.2 s/step
    # with 2 threads at load average 12 on 2 cores).
    cpu_threads: int | None = Field(default=None, ge=1)
    merge: bool = True  # True: merged HF model dir; False: adapter dir (vLLM --enable-lora)
    # SftRow.role values that train (dafny: writer / annotator; other families: "default");
    # None: every role. Checked against the roles the split's rows carry when training.
    roles: list[str] | None = None

    @model_validator(mode="after")
    def _roles_named(self) -> SftSettings:
        if self.roles is None:
            return self
        if not self.roles:
            raise ValueError(
                "sft.roles is an empty list, which trains nothing; null trains every role"
            )
        blank = [r for r in self.roles if not r.strip()]
        twice = sorted({r for r in self.roles if self.roles.count(r) > 1})
        if blank or twice:
            raise ValueError(f"sft.roles: blank {blank} or repeated {twice} role names")
        return self

    @model_validator(mode="after")
    def _full_has_no_adapter(self) -> SftSettings:
        if self.method == "full" and not self.merge:
            raise ValueError(
                "sft.method is 'full' but sft.merge is false: full fine-tuning trains every "
                "weight and saves a normal model directory, there is no adapter to keep "
                "(set merge: true, or method: lora to serve an adapter)"
            )
        return self


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
