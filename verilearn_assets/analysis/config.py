"""`configs/questions.yaml`: how many questions a table yields, which templates run, the
floors (accepted questions per partition) the `questions_floors` gate rule holds them to,
and the sampling and drift limits of the family's other gate rules (`rules:`).

Those last settings used to live in `configs/gate.yaml`; the gate itself has no setting of
its own, so that file is gone, and one that still sets keys is refused here
(`refuse_retired_gate_yaml`), naming each key and where it lives now."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from verilearn_assets.analysis.screen.config import ScreenConfig
from verilearn_assets.analysis.sources.generation_stats import GenerationConfig
from verilearn_assets.analysis.sources.procedural import ProgramSearchConfig
from verilearn_assets.core.config import (
    ConfigError,
    StrictConfig,
    config_dir,
    load_config,
    read_yaml_mapping,
)


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


class DriftLimits(StrictConfig):
    """How far a rate may move the wrong way between two materializations of one partition
    before the family's drift checks warn (`checks.py`, the gate's drift rule kind).

    Drift checks only warn, never block: a limit set too tight costs a look in the UI, not
    a refused run. The defaults are the values the checks shipped with; tune them on the
    run-to-run spread of your own catalog."""

    # verified-episode share: a drop means the teacher, the prompts or the sandbox changed
    max_pass_rate_drop: float = Field(0.05, ge=0, le=1)
    # share of accepted questions with alternatives: a rise means vaguer wording got through
    max_alternatives_rate_rise: float = Field(0.10, ge=0, le=1)


class RulesConfig(StrictConfig):
    """The analysis gate rules' own knobs (the floors have their own section)."""

    # accepted questions per partition the `reproduce` rule re-executes. None (every one):
    # a question that does not reproduce must not reach training, so sample only for a
    # catalog too large to re-run
    reproduce_limit: int | None = Field(None, ge=1)
    # accepted questions per partition `questions_conventions_stated` re-runs under every
    # named convention variant, spread over the partition by id: each costs one sandbox run
    # per variant, so this bounds the rule's cost whatever the partition's size
    conventions_sample: int = Field(40, ge=1)
    drift: DriftLimits = Field(default_factory=DriftLimits)


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
    # sampling of the reproduce and conventions rules, drift limits (was configs/gate.yaml)
    rules: RulesConfig = Field(default_factory=RulesConfig)


# keys of the retired `configs/gate.yaml` -> where each one lives now in `questions.yaml`
RETIRED_GATE_KEYS = {
    "reproduce_limit": "rules.reproduce_limit",
    "conventions_sample": "rules.conventions_sample",
    "drift": "rules.drift",
    "drift.max_pass_rate_drop": "rules.drift.max_pass_rate_drop",
    "drift.max_alternatives_rate_rise": "rules.drift.max_alternatives_rate_rise",
}


def refuse_retired_gate_yaml(directory: Path) -> None:
    """Refuse a `gate.yaml` that still sets keys: nothing reads it any more, so a value
    kept there would be silently ignored. The error names the file, every key and where
    it lives now. A file holding no key (comments only) is harmless and passes."""
    path = directory / "gate.yaml"
    if not path.is_file():
        return
    data = read_yaml_mapping(path)
    if not data:
        return
    keys: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            keys.extend(f"{key}.{sub}" for sub in value)
        else:
            keys.append(str(key))
    target = directory / "questions.yaml"
    lines = []
    for key in keys:
        new = RETIRED_GATE_KEYS.get(key)
        if new is None:
            lines.append(f"{path}: key '{key}' is not read by anything (gate.yaml was retired)")
        else:
            lines.append(f"{path}: key '{key}' moved to {target} as '{new}'")
    raise ConfigError(
        "\n".join(lines) + f"\n{path}: move the values, then delete the file (the gate has "
        "no setting of its own; these are the analysis family's)"
    )


def load_questions_config(directory: str | Path | None = None) -> QuestionsConfig:
    refuse_retired_gate_yaml(Path(directory or config_dir()))
    return load_config("questions", QuestionsConfig, directory)
