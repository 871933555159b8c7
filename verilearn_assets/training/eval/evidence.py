"""The training gate, seen from evaluation: a trained model's run must show gated training
data; a model outside any run is allowed only as a baseline.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from verilearn_assets.core.llm.launcher import REPO_ROOT
from verilearn_assets.training.eval.serving import RESULT_FILE, ModelUnderTest
from verilearn_assets.training.run_dir import GateEvidence, RunResult


class UngatedModel(ValueError):
    """The model's training run has no (or broken) evidence of gated training data."""


class NotABaseline(UngatedModel):
    """A model outside any training run that is neither the base model nor a listed baseline
    (a trained model copied elsewhere must not pass as "base")."""


def _baseline_dir(entry: str) -> Path | None:
    """An `eval.baselines` entry as a directory (relative: from the cwd, then the repo), or
    None when it names no directory (then it is a served model name)."""
    raw = Path(os.path.expandvars(os.path.expanduser(entry)))
    for base in (raw,) if raw.is_absolute() else (Path.cwd() / raw, REPO_ROOT / raw):
        if base.is_dir():
            return base.resolve()
    return None


def check_baseline(mut: ModelUnderTest, base_model: Path | str, baselines: Sequence[str]) -> None:
    """Allow a model without a training run only when it is the configured base model or
    listed in `eval.baselines` (a directory, or a served name); raise `NotABaseline`."""
    dirs = {d for d in (_baseline_dir(str(base_model)), *map(_baseline_dir, baselines)) if d}
    names = {b for b in baselines if _baseline_dir(b) is None}
    how = (
        "list it under eval.baselines in configs/training.yaml to evaluate it as a baseline "
        f"(the base model {base_model} is always one)"
    )
    if mut.path is not None:
        if mut.path.resolve() not in dirs:
            raise NotABaseline(
                f"{mut.path}: not in a training run directory (no {RESULT_FILE}) and not a "
                f"baseline: {how}"
            )
    elif mut.name not in names:
        raise NotABaseline(
            f"served model {mut.name!r}: no training run to check and not a baseline: {how}"
        )


def gate_evidence(
    mut: ModelUnderTest, *, base_model: Path | str, baselines: Sequence[str] = ()
) -> GateEvidence | None:
    """The run's `GateEvidence`, or None for a baseline (the base model, or a model listed in
    `eval.baselines`).

    Raises `NotABaseline` for a model outside any run that is not a baseline, and
    `UngatedModel` naming the file and field when a trained model's result.json shows no
    gated data: rows passed in by hand, another asset, nothing used, or a partition that
    is gone. A GRPO run carries the evidence of the SFT run it continued plus the task
    partitions its prompts came from (`training/grpo/trainer.py::grpo_evidence`).
    """
    if mut.run_dir is None:
        check_baseline(mut, base_model, baselines)
        return None
    path = mut.run_dir / RESULT_FILE
    try:
        result = RunResult.model_validate_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise UngatedModel(f"{path}: unreadable run result: {exc}") from exc
    ev = result.evidence
    if ev is None:
        raise UngatedModel(
            f"{path}: field 'evidence' is empty: run {result.run_id} was not trained on a "
            "gated sft_dataset partition (rows passed in directly?)"
        )
    if ev.asset != "sft_dataset":
        raise UngatedModel(f"{path}: evidence.asset is {ev.asset!r}, not 'sft_dataset'")
    if ev.rows_used < 1 and ev.tasks_used < 1:  # GRPO from the base model: tasks, no rows
        raise UngatedModel(f"{path}: evidence.rows_used is {ev.rows_used}: trained on nothing")
    if ev.tasks_used and not (ev.family and ev.task_split and ev.task_sources):
        raise UngatedModel(
            f"{path}: evidence.tasks_used is {ev.tasks_used} but family/task_split/"
            "task_sources do not name the task partitions they came from"
        )
    if not Path(ev.partition_path).is_dir():
        raise UngatedModel(
            f"{path}: evidence.partition_path {ev.partition_path} does not exist: the gated "
            "data it names is gone"
        )
    return ev
