"""Experiments over GRPO settings: train one run per arm, compare their reward curves.

The seed question "outcome reward (ORM) or process reward (PRM)?" is
`configs/experiments/orm_vs_prm.yaml`: both arms start from the same model, see the same
tasks in the same order (same seed) for the same steps, and differ only in their `grpo:`
overrides. The comparison is on the binary outcome curve (`rewards/outcome/mean`), which
both arms log whatever they train on, so a PRM arm cannot look better by its own extra
reward.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from verilearn_assets.core import lake
from verilearn_assets.core.config import StrictConfig, load_yaml_model
from verilearn_assets.training.config import REPO_ROOT, TrainingConfig, load_training_config
from verilearn_assets.training.grpo import train_grpo
from verilearn_assets.training.grpo_config import GrpoSettings
from verilearn_assets.training.run_dir import TrainRun, read_metrics

COMPARED = "rewards/outcome/mean"
DEFAULT_EXPERIMENT = REPO_ROOT / "configs" / "experiments" / "orm_vs_prm.yaml"


class ExperimentConfig(StrictConfig):
    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+$")
    training_config: str | None = None
    family: str | None = None
    role: str | None = None
    max_steps: int | None = Field(default=None, ge=1)
    grpo: dict[str, Any] = Field(default_factory=dict)
    arms: dict[str, dict[str, Any]]

    @model_validator(mode="after")
    def _arms(self) -> ExperimentConfig:
        if len(self.arms) < 2:
            raise ValueError(f"experiment {self.name!r}: needs at least two arms")
        for arm in self.arms:  # every arm's settings must validate before anything trains
            self.settings(GrpoSettings(), arm)
        return self

    def settings(self, base: GrpoSettings, arm: str) -> GrpoSettings:
        merged = {**base.model_dump(), **self.grpo, **self.arms[arm]}
        if self.family:
            merged["family"] = self.family
        try:
            return GrpoSettings.model_validate(merged)
        except ValueError as exc:
            raise ValueError(f"experiment {self.name!r}, arm {arm!r}: {exc}") from exc


def load_experiment(path: str | Path = DEFAULT_EXPERIMENT) -> ExperimentConfig:
    return load_yaml_model(path, ExperimentConfig)


def run_experiment(
    experiment: ExperimentConfig | str | Path = DEFAULT_EXPERIMENT,
    home: Path | str | None = None,
    *,
    base: TrainingConfig | None = None,
    max_steps: int | None = None,
    progress: Callable[[str, int, int, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Train every arm, then write summary.json and reward_curves.png; returns the summary.

    `base` replaces the experiment's training config (tests); `max_steps` overrides both.
    """
    exp = experiment if isinstance(experiment, ExperimentConfig) else load_experiment(experiment)
    home = Path(home) if home is not None else lake.home()
    config = base or load_training_config(exp.training_config)
    steps = max_steps or exp.max_steps
    runs: dict[str, TrainRun] = {}
    for arm in exp.arms:
        arm_config = config.model_copy(update={"grpo": exp.settings(config.grpo, arm)})
        report = (lambda s, t, logs, a=arm: progress(a, s, t, logs)) if progress else None
        runs[arm] = train_grpo(
            arm_config,
            home,
            role=exp.role,
            max_steps=steps,
            progress=report,
            run_kind=f"grpo-{arm}",
        )
    out = config.runs_root(home) / "experiments"
    out = out / f"{exp.name}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}"
    out.mkdir(parents=True)
    summary: dict[str, Any] = {"experiment": exp.name, "compared": COMPARED, "arms": {}}
    curves: dict[str, list[tuple[int, float]]] = {}
    for arm, run in runs.items():
        rows = [m for m in read_metrics(run.run_dir / "metrics.jsonl") if COMPARED in m]
        curves[arm] = [(int(m["step"]), float(m[COMPARED])) for m in rows]
        values = [v for _, v in curves[arm]]
        summary["arms"][arm] = {
            "run_id": run.run_id,
            "run_dir": str(run.run_dir),
            "settings": exp.arms[arm],
            "steps": run.steps,
            "outcome_mean": sum(values) / len(values) if values else None,
            "outcome_last": values[-1] if values else None,
            "reward_last": next((float(m["reward"]) for m in reversed(rows)), None),
        }
    summary["plot"] = str(_plot(curves, out / "reward_curves.png", exp.name))
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    summary["dir"] = str(out)
    return summary


def _plot(curves: dict[str, list[tuple[int, float]]], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    try:
        for arm, pts in curves.items():
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, marker=".", label=arm)
        ax.set_xlabel("step")
        ax.set_ylabel("outcome reward (mean)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
