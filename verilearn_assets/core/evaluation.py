"""The evaluation contract: what a family's own evaluation hook (`Family.evaluation`) is
given and gives back, so the training side evaluates every family with no family code.

Most families need no hook: the training side asks the served model one completion per
task through the family's GRPO prompts and scores it with the family's GRPO scorer. A
family whose model acts over several turns in an environment of its own (analysis: the
student loop running code cells in the sandbox) fills `Family.evaluation` instead. The
hook is called in two steps so that nothing is served before the tasks are known to
exist: `hook(job)` reads and checks the split's tasks (raising `ValueError` naming what is
missing), and the returned `FamilyEvaluation.run(client)` answers them with the model
the training side serves at `client`.

Pure: pydantic models and protocols over the core's records and the vLLM client config.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from verilearn_assets.core.eval_records import ModelEvalRecord
from verilearn_assets.core.llm.config import VllmConfig

Progress = Callable[[int, int], None]  # (tasks done, tasks in all)


class EvalSampling(Protocol):
    """How the model under test is sampled (the `eval:` section of configs/training.yaml
    gives these, with their defaults and the reason for each)."""

    @property
    def temperature(self) -> float: ...

    @property
    def max_tokens(self) -> int: ...

    @property
    def seed(self) -> int: ...

    @property
    def concurrency(self) -> int: ...

    @property
    def max_turns(self) -> int | None: ...


@dataclass(frozen=True)
class EvalJob:
    """One resolved evaluation of one model on one family's split in one role.

    `model` is the id every record carries, `model_path` the directory served (None for a
    served name), `run_id` the training run that made it (None: a base model). `n_best`
    answers per task: the first at `sampling` (the verdict a record keeps), the others at
    `n_best_temperature` with seeds `seed + k`. `options` holds the family's own
    overrides a caller passes through (analysis: `teacher`, `sandbox` configs).
    """

    home: Path
    split: str
    role: str
    model: str
    model_path: str | None
    run_id: str | None
    sampling: EvalSampling
    n_best: int
    n_best_temperature: float
    limit: int | None = None
    task_ids: Sequence[str] | None = None
    progress: Progress | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


class FamilyEvaluation(Protocol):
    """A family's evaluation with its tasks read and checked, ready to ask the model."""

    def run(self, client: VllmConfig) -> list[ModelEvalRecord]:
        """Answer every task with the model served at `client` (n-best included): one record
        per task, `extra` holding `n_best`, `n_best_passed` and `pass_at_n`; raise when a
        task could not be run (never a silent pass or fail)."""
        ...


EvalHook = Callable[[EvalJob], FamilyEvaluation]


def n_best_counts(
    runs: Sequence[Sequence[ModelEvalRecord]], n: int, temperature: float
) -> list[ModelEvalRecord]:
    """The verdict run (`runs[0]`) with each task's n-best counts in `extra`: how many of
    the `n` runs passed it (`n_best_passed`, `pass_at_n`), and the samples' temperature
    when there were samples."""
    records = list(runs[0])
    for rec in records:
        n_ok = sum(r.passed for run in runs for r in run if r.question_id == rec.question_id)
        rec.extra.update(n_best=n, n_best_passed=n_ok, pass_at_n=n_ok > 0)
        if n > 1:
            rec.extra["n_best_temperature"] = temperature
    return records
