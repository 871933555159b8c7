"""The `grpo:` section of configs/training.yaml (TRL GRPOTrainer from the SFT model).

Its own module so the GRPO stage can grow its knobs without touching the SFT ones; the
whole file is validated by `training.config.TrainingConfig`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from verilearn_assets.core.config import StrictConfig


class GrpoSettings(StrictConfig):
    num_generations: int = Field(default=4, ge=2)  # group size: completions per prompt
    beta: float = Field(default=0.04, ge=0.0)  # KL weight to the reference (SFT) model
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = "dapo"
    learning_rate: float = Field(default=1e-5, gt=0)
    max_steps: int = Field(default=20, ge=1)
    per_device_train_batch_size: int = Field(default=4, ge=1)
    max_completion_length: int = Field(default=256, ge=8)
    temperature: float = Field(default=1.0, gt=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    seed: int = 0
    process_reward: bool = False  # add hook-grounded process credit beside the outcome
    process_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    curriculum: Literal["none", "easy_to_hard", "pass_rate"] = "none"
