"""The `sft:` and `mixture:` sections of configs/training.yaml (TRL SFTTrainer on the gated
rows): which rows enter and how the SFT run trains.

`SftSettings` and `MixtureSettings` are the one home of these defaults and the reasons for
them; configs/training.yaml is the user's copy of the values. The whole file is validated
by `training.config.TrainingConfig`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from verilearn_assets.core.config import StrictConfig
from verilearn_assets.core.records import SOURCES


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
    # Rows longer than max_seq_length: compress applies the context budget's ladder, the one
    # every teacher and evaluation prompt goes through (docs/context_budget.md), counted with
    # the base model's tokenizer: older tool outputs middle-truncated, then summarized, the
    # last one's body last; the system prompt, the task, assistant turns (they carry the
    # loss) and submission lines are never cut (counted as compressed, with the tokens
    # removed); a row that still does not fit is dropped (counted). drop_last_turns keeps
    # the longest prefix of the row that ends on an assistant turn and fits (whole turns;
    # counted as truncated) and drops a row whose first assistant turn does not fit;
    # drop_row drops every row that does not fit (counted).
    truncation: Literal["compress", "drop_last_turns", "drop_row"] = "compress"
    # The trainability check fails when more than this fraction of a split's rows cannot
    # fit even truncated (they are always counted, and never trained on): it is there to
    # catch a max_seq_length or template that cannot work at all. 0.5 because the tiny
    # model's 2048-token window cannot hold some analysis system prompts: measured on a
    # three-family home (tiny tokenizer), 68 of 971 train rows (7%) and 47 of 165 analysis
    # test rows (28%) cannot fit; a real base model with a long window fits them all. 0.0
    # refuses any row that cannot fit.
    max_dropped_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    # How SftRow.weight (1/K for the K traces of one question, times the family weight) is
    # honoured: sample = each epoch draws rows with probability proportional to weight
    # (seeded); one_per_task = keep the first trace of each task (weights then only gate
    # families in/out).
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
