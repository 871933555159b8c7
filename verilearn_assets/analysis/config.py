"""`configs/questions.yaml`: how many questions a table yields, which templates run, and the
floors (accepted questions per partition) the `questions_floors` gate rule holds them to."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from verilearn_assets.analysis.screen.config import ScreenConfig
from verilearn_assets.analysis.sources.generation_stats import GenerationConfig
from verilearn_assets.analysis.sources.procedural import ProgramSearchConfig
from verilearn_assets.core.config import StrictConfig, load_config


class EligibilityConfig(StrictConfig):
    """Which columns a template may use, decided from the table profile."""

    min_rows: int = Field(20, ge=3)
    min_columns: int = Field(2, ge=1)
    min_numeric_unique: int = Field(5, ge=2)
    max_missing_pct: float = Field(60.0, ge=0, le=100)  # percent of rows
    min_categories: int = Field(2, ge=2)
    max_categories: int = Field(12, ge=2)
    min_group_size: int = Field(5, ge=2)


class TemplateSourceConfig(StrictConfig):
    enabled: list[str] | None = None  # None: every registered template
    disabled: list[str] = Field(default_factory=list)
    questions_per_template: int = Field(1, ge=1)  # distinct column choices asked per table
    max_column_choices: int = Field(4, ge=1)  # alternatives for ambiguous wording / ties
    tie_digits: int = Field(10, ge=3)  # values equal to this many significant digits tie


class VerifyConfig(StrictConfig):
    runs: int = Field(2, ge=2)  # fresh executions that must agree
    timeout_s: float | None = Field(None, gt=0)


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


class QuestionsConfig(StrictConfig):
    eligibility: EligibilityConfig = Field(default_factory=EligibilityConfig)
    template: TemplateSourceConfig = Field(default_factory=TemplateSourceConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    # the procedural search, validated at load like every other key
    procedural: ProgramSearchConfig = Field(default_factory=ProgramSearchConfig)
    # degenerate answers and unstated conventions, judged before verification
    screen: ScreenConfig = Field(default_factory=ScreenConfig)
    # questions each table should yield (the procedural search goes on until then)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    # accepted questions each partition must hold, by source (the `questions_floors` rule)
    floors: dict[str, QuestionFloors] = Field(default_factory=dict)


def load_questions_config(directory: str | Path | None = None) -> QuestionsConfig:
    return load_config("questions", QuestionsConfig, directory)
