"""`configs/gate.yaml`: floors and drift thresholds for the reliability-to-training gate."""

from __future__ import annotations

from pydantic import Field

from verilearn_assets.core.config import StrictConfig, load_config


class QuestionFloors(StrictConfig):
    """Minimum accepted questions per partition: in total, per template, per template
    family, per operator family, and per dataset of the split (each dataset below it is
    named). Floors apply only to partitions whose source produces that key (template and
    template-family floors to `template`, operator-family floors to `procedural`), and
    only when the split has tables.
    """

    total: int = Field(1, ge=0)
    per_template: dict[str, int] = Field(default_factory=dict)
    per_template_family: dict[str, int] = Field(default_factory=dict)
    per_operator_family: dict[str, int] = Field(default_factory=dict)
    per_dataset: int = Field(0, ge=0)
    # datasets the per-dataset floor does not apply to, each with why (e.g. too few rows)
    per_dataset_exempt: dict[str, str] = Field(default_factory=dict)


class DriftThresholds(StrictConfig):
    max_pass_rate_drop: float = Field(0.05, ge=0, le=1)
    max_alternatives_rate_rise: float = Field(0.10, ge=0, le=1)


class GateConfig(StrictConfig):
    floors: dict[str, QuestionFloors] = Field(default_factory=dict)  # by source
    reproduce_limit: int | None = Field(None, ge=1)  # None: re-execute every question
    # accepted questions per partition re-run under every convention variant
    conventions_sample: int = Field(40, ge=1)
    drift: DriftThresholds = DriftThresholds()


def load_gate_config(directory: str | None = None) -> GateConfig:
    return load_config("gate", GateConfig, directory)
