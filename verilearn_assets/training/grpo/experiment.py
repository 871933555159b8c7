"""The ORM-vs-PRM GRPO comparison from Python (kept for its callers; the logic is
`training.experiments`: `verilearn experiment run orm_vs_prm` trains and evaluates).

`run_experiment` trains the card's arms without evaluating them: summary.json then holds
each arm's training runs and outcome curves (`rewards/outcome/mean`, logged by every GRPO
arm whatever it trains on, so a PRM arm cannot look better by its own extra reward).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from verilearn_assets.training.config import TrainingConfig
from verilearn_assets.training.experiments.card import CARDS_DIR, ExperimentCard, load_card
from verilearn_assets.training.experiments.runner import run_card

DEFAULT_EXPERIMENT = CARDS_DIR / "orm_vs_prm.yaml"


def load_experiment(path: str | Path = DEFAULT_EXPERIMENT) -> ExperimentCard:
    return load_card(path)


def run_experiment(
    experiment: ExperimentCard | str | Path = DEFAULT_EXPERIMENT,
    home: Path | str | None = None,
    *,
    base: TrainingConfig | None = None,
    max_steps: int | None = None,
    progress: Callable[[str, str], None] | None = None,
) -> dict[str, Any]:
    """Train every arm (no evaluation); the summary (also in `<dir>/summary.json`)."""
    return run_card(
        experiment, home, base=base, max_steps=max_steps, evaluate=False, progress=progress
    ).summary
