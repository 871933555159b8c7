"""The `grpo:` section of configs/training.yaml (TRL GRPOTrainer from the SFT model).

`GrpoSettings` is the one home of every GRPO default and of the reason for it (beside each
field); configs/training.yaml is the user's copy of the values. The whole file is
validated by `training.config.TrainingConfig`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from verilearn_assets.core.config import StrictConfig
from verilearn_assets.core.records import SOURCES
from verilearn_assets.training.families import default_family


class GrpoSettings(StrictConfig):
    """What GRPO trains on, from where, and how; each default with its reason."""

    # what is trained on
    # a registered family whose contract has `grpo`; default: the registry's first (analysis)
    family: str = Field(default_factory=default_family)
    role: str | None = None  # None: the family's first GRPO role (dafny: writer)
    sources: list[str] | None = None  # task sources that enter (None = all)
    max_tasks: int | None = Field(default=None, ge=1)  # first N prompts after the curriculum
    # where it starts: the latest successful SFT run (`runs/sft-*/result.json`); without
    # one it refuses unless `allow_base_fallback` (tests and smoke runs on the tiny model)
    start_from: Literal["sft", "base"] = "sft"
    allow_base_fallback: bool = False  # start_from sft and no SFT run: use base_model
    # group size: completions per prompt, the group the advantage is normalised over. Four
    # is the smallest group where one success among failures gives a clear signal, and it
    # keeps a CPU step affordable; raise to 8-16 on a GPU
    num_generations: int = Field(default=4, ge=2)
    # KL pull toward the reference (SFT) model. The SFT model is what writes well-formed
    # answers; without the pull a policy chasing a sparse binary reward drifts from that
    # format first. TRL's own default is 0; we keep the KL on (and logged)
    beta: float = Field(default=0.04, ge=0.0)
    # dapo with group scaling: token-level normalisation over the batch's active tokens,
    # without the length bias of the original per-sequence GRPO mean
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    # full weights at a small rate: RL updates are small corrections of the SFT model
    learning_rate: float = Field(default=1e-5, gt=0)
    max_steps: int = Field(default=20, ge=1)
    per_device_train_batch_size: int = Field(default=4, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    logging_steps: int = Field(default=1, ge=1)
    # sampling of the rollouts
    max_completion_length: int = Field(default=256, ge=8)
    # prompt + completion tokens per sequence; None = `sft.max_seq_length`. Single-turn
    # prompts over `window - max_completion_length` are compressed by the context budget,
    # or dropped as context_overflow and counted (grpo/budget.py)
    window: int | None = Field(default=None, ge=16)
    # sample from the policy as it is: group variance is what GRPO learns from, and
    # truncating the distribution shrinks it
    temperature: float = Field(default=1.0, gt=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    top_k: int = Field(default=0, ge=0)  # 0: off
    min_p: float | None = Field(default=None, ge=0, le=1)
    seed: int = 0
    # rewards: outcome (binary) is always computed and logged (weight 0 when
    # `partial_credit`), so the pass-rate curve is always there; `partial_credit` trains on
    # the capped partial reward (never more than a correct answer) instead of the binary one
    partial_credit: bool = True
    # hook-grounded step credit beside the outcome: off by default, the ORM-vs-PRM
    # experiment turns it on; its weight stays < 1, never more than a correct answer
    process_reward: bool = False
    process_weight: float = Field(default=0.5, ge=0.0, lt=1.0)
    # none: shuffled prompts; easy_to_hard orders by the family's difficulty, pass_rate by
    # the stored pass rate per template (highest first); both turn shuffling off
    curriculum: Literal["none", "easy_to_hard", "pass_rate"] = "none"
    # multi-turn rollouts: the family's environment answers each reply (analysis: the
    # sandbox output as a `tool` turn) until the episode ends or `max_turns`; the loss
    # covers only the model's turns. Needs a family whose GRPO hook has an `environment`.
    multi_turn: bool = False
    # the episode's turn bound; None = `eval.max_turns`, else the family's own bound
    # (analysis: teacher.yaml's max_turns). It is stated in the analysis system prompt, so
    # the default trains on the prompt `model_eval` sends
    max_turns: int | None = Field(default=None, ge=1)
    save_model: bool = True  # write the trained policy to the run's model/ dir
    # trainer checkpoints (weights, optimizer, RNG, step) every N steps under the run's
    # checkpoints/; an interrupted run resumes from its latest (`verilearn train grpo
    # --resume latest|RUN_ID`). None: no checkpoints. save_total_limit: the newest N kept.
    save_steps: int | None = Field(default=None, ge=1)
    save_total_limit: int | None = Field(default=2, ge=1)
    # LoRA instead of full weights (rank/alpha/dropout/targets from `sft:`), for models too
    # large to copy: the reference is then the policy with its adapter off (no second model
    # copy); merged when saved
    lora: bool = False
    # CPU only: torch intra-op threads (None = torch's default). On a small model on a busy
    # shared machine, 1 thread avoids threads spin-waiting on each other: measure it with
    # `benchmarks/grpo.py` (default threads vs 1, same run)
    cpu_threads: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> GrpoSettings:
        bad = [s for s in self.sources or [] if s not in SOURCES]
        if bad:
            raise ValueError(f"grpo.sources: unknown source(s) {bad}; known: {list(SOURCES)}")
        batch = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if batch % self.num_generations:
            raise ValueError(
                f"grpo: per_device_train_batch_size × gradient_accumulation_steps ({batch}) "
                f"must be a multiple of num_generations ({self.num_generations}): a step "
                "holds whole groups"
            )
        return self

    def reward_weights(self) -> dict[str, float]:
        """Reward name -> weight in the trained sum; weight 0 still logs the curve."""
        weights = {"outcome": 0.0 if self.partial_credit else 1.0}
        if self.partial_credit:
            weights["partial"] = 1.0
        if self.process_reward:
            weights["process"] = self.process_weight
        return weights
