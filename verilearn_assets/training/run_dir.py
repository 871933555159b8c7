"""One training run's directory: `$VERILEARN_HOME/runs/<run_id>/`.

Layout (every trainer writes the same files, so runs compare side by side):
    config.yaml     the resolved TrainingConfig that produced the run
    seeds.json      every seed the run used
    system.json     Python, torch/trl/transformers/peft/vllm versions, CPU/GPU, Dafny
    metrics.jsonl   one JSON object per logging step (loss, lr, tokens, rewards, ...)
    checkpoints/    trainer checkpoints
    plots/*.png     curves drawn from metrics.jsonl
    model/          the merged model dir (or adapter/ when not merged)
    result.json     what was trained on (gate evidence) and where the model is

No dagster import: the assets and the CLI both go through this module.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import secrets
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from verilearn_assets.core.family import Family
from verilearn_assets.training.config import REPO_ROOT, TrainingConfig

_RUN_ID = re.compile(r"[A-Za-z0-9_\-]+")


def new_run_id(kind: str) -> str:
    """Sortable by time, unique across processes: `<kind>-YYYYmmddTHHMMSS-<hex>`."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return f"{kind}-{stamp}-{secrets.token_hex(3)}"


class GateEvidence(BaseModel):
    """Which gated data a model was trained on: enough to trace it back in Dagster."""

    asset: str = "sft_dataset"
    split: str
    partition_path: str
    materialization_run_id: str | None = None  # Dagster run that wrote the partition
    rows_in_partition: int
    rows_used: int
    rows_truncated: int = 0
    rows_dropped: int = 0
    partitions: list[str] = Field(default_factory=list)  # upstream family partitions
    # GRPO runs: the weights also hold what RL learned from. `inherited_from` names the SFT
    # run whose evidence this is (its rows are in the starting weights; None: GRPO started
    # from the base model, rows_used 0); the prompts came from `family`'s task partitions
    # `task_sources` × `task_split`, whose blocking checks the GRPO gate required.
    inherited_from: str | None = None
    family: str | None = None
    task_split: str | None = None
    task_sources: list[str] = Field(default_factory=list)
    tasks_used: int = 0


class RunResult(BaseModel):
    run_id: str
    kind: str
    model_dir: str
    merged: bool
    base_model: str
    steps: int
    final_loss: float | None
    train_seconds: float
    evidence: GateEvidence | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


@dataclass
class TrainRun:
    """What a training function hands back to its caller (asset, CLI, test)."""

    run_id: str
    run_dir: Path
    model_dir: Path
    merged: bool
    steps: int
    final_loss: float | None
    losses: list[float] = field(default_factory=list)
    rows_used: int = 0
    rows_truncated: int = 0
    rows_dropped: int = 0
    plots: list[Path] = field(default_factory=list)
    result: RunResult | None = None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def vllm_version(repo: Path = REPO_ROOT) -> str | None:
    """vLLM's version in `.venv-vllm` (read from its dist-info: importing vllm takes seconds)."""
    for info in sorted((repo / ".venv-vllm").glob("lib/python*/site-packages/vllm*.dist-info")):
        m = re.fullmatch(r"vllm(?:_cpu)?-(.+)\.dist-info", info.name)
        if m:
            return m.group(1)
    return _version("vllm")


def system_info(tools: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """Software and hardware a run used; torch is imported only if already installed.
    `tools`: the versions of the tools the run's families use (`tool_versions`)."""
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "versions": {
            d: _version(d)
            for d in ("torch", "trl", "transformers", "peft", "datasets", "accelerate")
        },
    }
    info["versions"]["vllm"] = vllm_version()
    try:
        import torch

        info["device"] = "cuda" if torch.cuda.is_available() else "cpu"
        info["gpus"] = (
            [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            if torch.cuda.is_available()
            else []
        )
        info["torch_threads"] = torch.get_num_threads()
    except ImportError:
        info["device"] = "unknown"
    info.update(tools or {})
    return info


def tool_versions(fams: Iterable[Family]) -> dict[str, str | None]:
    """The tools the families of a run record in system.json (`Family.tool_versions`)."""
    out: dict[str, str | None] = {}
    for fam in fams:
        if fam.tool_versions is not None:
            out.update(fam.tool_versions())
    return out


class MetricsWriter:
    """Appends one JSON object per logging step to metrics.jsonl (flushed each line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, step: int, values: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = {"step": int(step), "time": datetime.now(UTC).isoformat()}
        for k, v in values.items():
            if isinstance(v, bool) or v is None or isinstance(v, str):
                row[k] = v
            elif isinstance(v, int | float):
                row[k] = float(v) if isinstance(v, float) else v
            else:
                try:
                    row[k] = float(v)  # tensors, numpy scalars
                except (TypeError, ValueError):
                    row[k] = str(v)
        with self.path.open("a") as fh:
            fh.write(json.dumps(row, allow_nan=True) + "\n")
        return row


def read_metrics(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {i}: not JSON: {exc}") from exc
    return out


class RunDir:
    """Creates and fills one run directory; every path a trainer needs is a property."""

    def __init__(self, root: Path, run_id: str, *, existing: bool = False) -> None:
        if not _RUN_ID.fullmatch(run_id):
            raise ValueError(f"run id {run_id!r}: only letters, digits, '_' and '-'")
        self.run_id = run_id
        self.path = Path(root) / run_id
        if existing:
            if not self.path.is_dir():
                raise FileNotFoundError(f"run directory {self.path} does not exist")
        else:
            self.path.mkdir(parents=True, exist_ok=False)
            self.checkpoints.mkdir()
            self.plots_dir.mkdir()
        self.metrics = MetricsWriter(self.metrics_path)

    @classmethod
    def create(cls, config: TrainingConfig, home: Path, kind: str) -> RunDir:
        return cls(config.runs_root(Path(home)), new_run_id(kind))

    @classmethod
    def reopen(cls, path: Path) -> RunDir:
        """An existing run directory (to resume it)."""
        return cls(path.parent, path.name, existing=True)

    def latest_checkpoint(self) -> Path | None:
        """The trainer checkpoint with the highest step (`checkpoints/checkpoint-<step>`)."""
        found = [
            (int(p.name.rsplit("-", 1)[1]), p)
            for p in self.checkpoints.glob("checkpoint-*")
            if p.is_dir() and p.name.rsplit("-", 1)[1].isdigit()
        ]
        return max(found)[1] if found else None

    def truncate_metrics(self, step: int) -> int:
        """Drop metrics rows logged after `step` (a resumed run logs them again); returns
        how many rows were dropped."""
        rows = self.read_metrics()
        kept = [r for r in rows if int(r.get("step", 0)) <= step]
        self.metrics_path.write_text("".join(json.dumps(r) + "\n" for r in kept))
        return len(rows) - len(kept)

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def plots_dir(self) -> Path:
        return self.path / "plots"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def model_dir(self) -> Path:
        return self.path / "model"

    @property
    def adapter_dir(self) -> Path:
        return self.path / "adapter"

    def write_config(self, config: TrainingConfig) -> Path:
        data = config.model_dump(mode="json")
        data["base_model"] = str(config.base_model_dir())
        p = self.path / "config.yaml"
        p.write_text(yaml.safe_dump(data, sort_keys=False))
        return p

    def write_seeds(self, **seeds: int) -> Path:
        p = self.path / "seeds.json"
        p.write_text(json.dumps(seeds, indent=2, sort_keys=True) + "\n")
        return p

    def write_system(self, tools: Mapping[str, str | None] | None = None) -> Path:
        p = self.path / "system.json"
        p.write_text(json.dumps(system_info(tools), indent=2, sort_keys=True) + "\n")
        return p

    def write_result(self, result: RunResult) -> Path:
        p = self.path / "result.json"
        p.write_text(result.model_dump_json(indent=2) + "\n")
        return p

    def read_metrics(self) -> list[dict[str, Any]]:
        return read_metrics(self.metrics_path)

    def plots(self, specs: list[tuple[list[str], str, str]]) -> list[Path]:
        """The plots of (keys, name, title) specs that have data (each titled with the run)."""
        made = (self.plot(keys, name, f"{title} — {self.run_id}") for keys, name, title in specs)
        return [p for p in made if p is not None]

    def plot(self, keys: list[str], name: str, title: str | None = None) -> Path | None:
        """One PNG with a curve per key found in metrics.jsonl; None when no key has data."""
        rows = self.read_metrics()
        series = {
            k: [(r["step"], r[k]) for r in rows if isinstance(r.get(k), int | float)] for k in keys
        }
        series = {k: v for k, v in series.items() if v}
        if not series:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
        try:
            for k, pts in series.items():
                xs, ys = zip(*[(s, v) for s, v in pts if math.isfinite(v)], strict=True)
                ax.plot(xs, ys, marker="." if len(xs) < 50 else None, label=k)
            ax.set_xlabel("step")
            ax.set_title(title or f"{self.run_id}: {', '.join(series)}")
            ax.grid(alpha=0.3)
            ax.legend()
            fig.tight_layout()
            out = self.plots_dir / f"{name}.png"
            fig.savefig(out)
        finally:
            plt.close(fig)
        return out


def metrics_callback(run_dir: RunDir, progress: Any = None):  # -> transformers.TrainerCallback
    """A TrainerCallback writing every `on_log` to metrics.jsonl (SFT and GRPO both use it).

    `progress`, when given, is called as `progress(step, max_steps, logs)` after each log so
    a CLI can draw a bar. Built lazily: transformers is imported only by training code.
    """
    from transformers import TrainerCallback

    class _MetricsCallback(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
            if logs:
                values = dict(logs)
                if "num_input_tokens_seen" not in values and state.num_input_tokens_seen:
                    values["num_input_tokens_seen"] = state.num_input_tokens_seen
                run_dir.metrics.write(state.global_step, values)
                if progress is not None:
                    progress(state.global_step, state.max_steps, values)

    return _MetricsCallback()
