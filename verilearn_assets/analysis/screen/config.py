"""`screen:` of configs/questions.yaml, apart from the screen itself: the questions config
reads it, and the screen reads the template registry that reads the questions config."""

from __future__ import annotations

from pydantic import Field

from verilearn_assets.core.config import StrictConfig


class ScreenConfig(StrictConfig):
    """`screen:` in configs/questions.yaml."""

    enabled: bool = True
    # the metamorphic screens of every candidate (`analysis.screen.metamorphic`): data dependence
    # on `perturbations` same-shape tables, step ablation, tautologies. False restores the
    # older screen (row subsamples for `perturb_sources`, adjacent-pair chain rules): the
    # "before" of benchmarks/question_quality.py
    metamorphic: bool = True
    perturbations: int = Field(4, ge=1)  # perturbed tables per candidate
    # with `metamorphic` off only: sources whose candidates get the row-subsample test
    perturb_sources: list[str] = Field(default_factory=lambda: ["procedural"])
    perturb_fraction: float = Field(0.8, gt=0, lt=1)
    seed: int = 0
    # run the reference through the tie probes and skip variants that cannot move (no tie
    # met, no missing value to drop); false runs every variant (the slower, older path)
    probe_ties: bool = True
