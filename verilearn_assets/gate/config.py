"""`configs/gate.yaml`: the analysis gate rules' sampling and the drift thresholds.

The question floors are the analysis family's own and live in its config
(`analysis/config.py`, `configs/questions.yaml`)."""

from __future__ import annotations

from pydantic import Field

from verilearn_assets.core.config import StrictConfig, load_config


class DriftThresholds(StrictConfig):
    max_pass_rate_drop: float = Field(0.05, ge=0, le=1)
    max_alternatives_rate_rise: float = Field(0.10, ge=0, le=1)


class GateConfig(StrictConfig):
    reproduce_limit: int | None = Field(None, ge=1)  # None: re-execute every question
    # accepted questions per partition re-run under every convention variant
    conventions_sample: int = Field(40, ge=1)
    drift: DriftThresholds = DriftThresholds()


def load_gate_config(directory: str | None = None) -> GateConfig:
    return load_config("gate", GateConfig, directory)
