"""The experiment card (`configs/experiments/<name>.yaml`) and its validation.

A card states a hypothesis, two or more arms, how they are evaluated and a success
criterion. An arm is a delta on `configs/training.yaml` (`set:`, dotted keys such as
`mixture.sources` or `grpo.process_reward`), optionally on other config files (`configs:`,
e.g. `teacher_prompts: {analysis.hints: false}`), a base `model`, and the stages it trains
(`train: [sft]`, `[grpo]`, `[sft, grpo]` or `[]` for the untrained model). Dotted keys are
validated against the config models (`TrainingConfig` for `set:`; the file's own keys and
loader for `configs:`), so a misspelt knob stops the card before any arm trains, with an
error naming the card file, the arm and the key.

The criterion is typed, not prose: "arm B's pass@1 on test exceeds arm A's by at least
5 points, and the bootstrap 95% interval of the difference does not cross 0" is
`{metric: pass@1, treatment: {arm: B}, control: {arm: A}, min_points: 5}`.
"""

from __future__ import annotations

import copy
import importlib
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from verilearn_assets.core.config import (
    ConfigError,
    StrictConfig,
    config_dir,
    load_yaml_model,
    read_yaml_mapping,
)
from verilearn_assets.core.records import SOURCES, SPLITS
from verilearn_assets.training.config import REPO_ROOT, TrainingConfig, load_training_config
from verilearn_assets.training.families import default_family

CARDS_DIR = REPO_ROOT / "configs" / "experiments"
METRIC = re.compile(r"^pass([@^])([1-9][0-9]*)$")  # pass@k (any of k passes), pass^k (all k)
GroupBy = Literal["all", "family", "source", "template"]

# config files an arm may override (every key must exist in the file), and the loaders
# (module:function taking a directory) that validate the overridden file as a whole
CONFIG_LOADERS: dict[str, tuple[str, ...]] = {
    "teacher": ("verilearn_assets.analysis.rollout.config:load_teacher_config",),
    "teacher_prompts": (
        "verilearn_assets.analysis.rollout.config:load_analysis_prompts",
        "verilearn_assets.refactor.rollout.prompts:load_prompts",
    ),
    "vllm": ("verilearn_assets.core.llm.config:load_vllm_config",),
    "sandbox": ("verilearn_assets.core.sandbox.config:load_sandbox_config",),
    "dafny_prompts": ("verilearn_assets.dafny.prompts:load_prompt_config",),
}


def parse_metric(metric: str) -> tuple[str, int]:
    """`pass@k` -> ("pass_at_k", k); `pass^k` -> ("pass_hat_k", k)."""
    m = METRIC.match(metric)
    if not m:
        raise ValueError(f"metric {metric!r}: expected pass@K or pass^K (K >= 1)")
    return ("pass_at_k" if m.group(1) == "@" else "pass_hat_k"), int(m.group(2))


class Cell(StrictConfig):
    """One side of a comparison: an arm on a split, optionally one group of tasks."""

    arm: str
    split: str | None = None  # None: the evaluation's first split
    by: GroupBy = "all"
    group: str | None = None  # the family / source / template value when `by` is not all

    @model_validator(mode="after")
    def _group(self) -> Cell:
        if self.split is not None and self.split not in SPLITS:
            raise ValueError(f"split {self.split!r} unknown; known: {list(SPLITS)}")
        if (self.by == "all") != (self.group is None):
            raise ValueError(
                "'group' is required when 'by' is family|source|template, else omitted"
            )
        if self.by == "source" and self.group not in SOURCES:
            raise ValueError(f"source {self.group!r} unknown; known: {list(SOURCES)}")
        return self


class SuccessCriterion(StrictConfig):
    """treatment − control on `metric` ≥ `min_points` (percentage points), and, when
    `interval_excludes_zero`, the bootstrap interval of the difference lies above 0."""

    metric: str = "pass@1"
    treatment: Cell
    control: Cell
    min_points: float = Field(default=5.0, ge=0.0, le=100.0)
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    interval_excludes_zero: bool = True

    @model_validator(mode="after")
    def _metric(self) -> SuccessCriterion:
        parse_metric(self.metric)
        return self

    def text(self) -> str:
        def side(c: Cell) -> str:
            where = f" on {c.split}" if c.split else ""
            grp = f" ({c.by} {c.group})" if c.group else ""
            return f"arm {c.arm}{where}{grp}"

        ci = (
            f", with a bootstrap {self.confidence:.0%} interval of the difference above 0"
            if self.interval_excludes_zero
            else ""
        )
        return (
            f"{self.metric} of {side(self.treatment)} exceeds {side(self.control)} by "
            f">= {self.min_points:g} points{ci}"
        )


class EvaluationSpec(StrictConfig):
    """How every arm is evaluated: the same tasks, sampling and bounds for all."""

    splits: list[str] = Field(default_factory=lambda: ["test"], min_length=1)
    family: str = Field(default_factory=default_family)  # the registry's first: analysis
    role: str | None = None  # None: the family's first evaluation role ('default' for analysis)
    n: int = Field(default=1, ge=1)  # completions per task (pass@k for k <= n)
    # sampling temperature of all n completions (i.i.d. for pass@k); None: eval.temperature
    # for the verdict, eval.n_best_temperature for the others
    temperature: float | None = Field(default=None, ge=0.0)
    limit: int | None = Field(default=None, ge=1)  # tasks per split; None: eval.limit / all
    max_tokens: int | None = Field(default=None, ge=16)  # None: eval.max_tokens

    @model_validator(mode="after")
    def _splits(self) -> EvaluationSpec:
        bad = [s for s in self.splits if s not in SPLITS]
        if bad:
            raise ValueError(f"unknown split(s) {bad}; known: {list(SPLITS)}")
        if len(set(self.splits)) != len(self.splits):
            raise ValueError(f"splits repeat: {self.splits}")
        return self


class ArmSpec(StrictConfig):
    description: str = ""
    train: list[Literal["sft", "grpo"]] = Field(default_factory=list)
    model: str | None = None  # the arm's base model (training.yaml base_model)
    set: dict[str, Any] = Field(default_factory=dict)  # dotted keys of configs/training.yaml
    configs: dict[str, dict[str, Any]] = Field(default_factory=dict)  # {file: {dotted: v}}

    @field_validator("train")
    @classmethod
    def _order(cls, train: list[str]) -> list[str]:
        if train not in ([], ["sft"], ["grpo"], ["sft", "grpo"]):
            raise ValueError(f"{train}: one of [], [sft], [grpo], [sft, grpo] (sft first)")
        return train

    @field_validator("set")
    @classmethod
    def _one_evaluation(cls, keys: dict[str, Any]) -> dict[str, Any]:
        own = sorted(k for k in keys if k == "eval" or k.startswith("eval."))
        if own:
            raise ValueError(
                f"{own}: arms are compared on one evaluation; set eval keys in the card's "
                "`set:` or `evaluation:`, not per arm"
            )
        return keys

    @model_validator(mode="after")
    def _configs(self) -> ArmSpec:
        unknown = sorted(set(self.configs) - set(CONFIG_LOADERS))
        if "training" in self.configs:
            raise ValueError("configs.training: use the arm's `set:` for training.yaml keys")
        if unknown:
            raise ValueError(
                f"configs: file(s) {unknown} cannot be overridden; known: {sorted(CONFIG_LOADERS)}"
            )
        return self


class ExperimentCard(StrictConfig):
    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+$")
    hypothesis: str = Field(min_length=1)
    training_config: str | None = None  # a training.yaml for what arms share; None: default
    seed: int = 0  # bootstrap resampling seed
    set: dict[str, Any] = Field(default_factory=dict)  # training.yaml keys every arm shares
    bootstrap: int = Field(default=2000, ge=100)  # resamples per interval
    arms: dict[str, ArmSpec]
    evaluation: EvaluationSpec = Field(default_factory=EvaluationSpec)
    metrics: list[str] = Field(default_factory=lambda: ["pass@1"], min_length=1)
    success: SuccessCriterion

    @model_validator(mode="after")
    def _consistent(self) -> ExperimentCard:
        if len(self.arms) < 2:
            raise ValueError(f"arms: an experiment compares at least two, got {list(self.arms)}")
        bad = [a for a in self.arms if not re.fullmatch(r"[A-Za-z0-9_\-]+", a)]
        if bad:
            raise ValueError(f"arms: names {bad} must be letters, digits, '_' or '-'")
        for metric in [*self.metrics, self.success.metric]:
            _, k = parse_metric(metric)
            if k > self.evaluation.n:
                raise ValueError(
                    f"metric {metric}: k={k} needs evaluation.n >= {k} completions per task "
                    f"(n is {self.evaluation.n})"
                )
        for side in ("treatment", "control"):
            cell: Cell = getattr(self.success, side)
            if cell.arm not in self.arms:
                raise ValueError(f"success.{side}.arm {cell.arm!r} is not an arm {list(self.arms)}")
            if cell.split is not None and cell.split not in self.evaluation.splits:
                raise ValueError(
                    f"success.{side}.split {cell.split!r} is not evaluated "
                    f"(evaluation.splits: {self.evaluation.splits})"
                )
        return self

    def cell_split(self, cell: Cell) -> str:
        return cell.split or self.evaluation.splits[0]


# --- dotted overrides --------------------------------------------------------------------------
def apply_dotted(data: dict[str, Any], overrides: dict[str, Any], *, strict: bool) -> dict:
    """A copy of `data` with each `a.b.c: value` set. `strict`: every key must already exist
    (a YAML file documents all its keys); otherwise sections are created and the model
    validating the result rejects unknown keys."""
    out = copy.deepcopy(data)
    for key, value in overrides.items():
        parts = key.split(".")
        if not all(parts):
            raise ValueError(f"key {key!r}: empty part in a dotted key")
        node = out
        for i, part in enumerate(parts[:-1]):
            if node.get(part) is None and not strict:
                node[part] = {}
            child = node.get(part)
            if not isinstance(child, dict):
                where = ".".join(parts[: i + 1])
                what = "no such section" if child is None else "not a section"
                raise ValueError(f"key {key!r}: {where!r} is {what}")
            node = child
        if strict and parts[-1] not in node:
            known = ", ".join(sorted(node)) or "none"
            raise ValueError(f"key {key!r}: no such key (known here: {known})")
        node[parts[-1]] = value
    return out


def arm_training_config(
    base: TrainingConfig, arm: ArmSpec, shared: dict[str, Any] | None = None
) -> TrainingConfig:
    """The arm's resolved TrainingConfig: the card's shared `set:`, then the arm's model and
    `set:` keys, on the shared config."""
    data = apply_dotted(base.model_dump(mode="json"), shared or {}, strict=False)
    if arm.model is not None:
        data["base_model"] = arm.model
    data = apply_dotted(data, arm.set, strict=False)
    return TrainingConfig.model_validate(data)


def overlay_config_files(arm: ArmSpec, source: Path | None = None) -> dict[str, dict]:
    """Each overridden config file's full mapping (from `source`, default the config dir),
    with the arm's dotted keys set; every key must exist in the file."""
    source = source or config_dir()
    out = {}
    for name, keys in arm.configs.items():
        path = source / f"{name}.yaml"
        try:
            out[name] = apply_dotted(read_yaml_mapping(path), keys, strict=True)
        except ValueError as exc:
            raise ValueError(f"configs.{name} ({path}): {exc}") from exc
    return out


def write_config_overlay(arm: ArmSpec, target: Path, source: Path | None = None) -> Path:
    """A copy of the config dir with the arm's `configs:` overrides, each file validated by
    its loader; the arm trains and evaluates with VERILEARN_CONFIG_DIR pointing here."""
    import shutil

    import yaml

    source = source or config_dir()
    files = overlay_config_files(arm, source)
    shutil.copytree(source, target, dirs_exist_ok=True)
    for name, data in files.items():
        (target / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        for loader in CONFIG_LOADERS[name]:
            module, func = loader.split(":")
            getattr(importlib.import_module(module), func)(target)
    return target


# --- loading -----------------------------------------------------------------------------------
def resolve_card_path(card: str | Path) -> Path:
    """A path, else a card name under configs/experiments/."""
    path = Path(card)
    if path.is_file():
        return path
    named = CARDS_DIR / f"{card}.yaml"
    if named.is_file():
        return named
    known = ", ".join(sorted(p.stem for p in CARDS_DIR.glob("*.yaml")))
    raise ConfigError(f"{card}: no such card file, nor a card name (known: {known})")


def load_card(card: str | Path, base: TrainingConfig | None = None) -> ExperimentCard:
    """Read and validate a card, and every arm's delta against the config models (`base`
    replaces the card's training config, for tests). Errors name the file and the field."""
    path = resolve_card_path(card)
    parsed = load_yaml_model(path, ExperimentCard)
    check_evaluation(parsed.evaluation, path)
    shared = base or card_training_config(parsed, path)
    for name, arm in parsed.arms.items():
        try:
            arm_training_config(shared, arm, parsed.set)
            overlay_config_files(arm)
        except ValidationError as exc:
            lines = [
                f"{path}: arm {name!r}: field "
                f"'{'.'.join(str(p) for p in e['loc']) or '<root>'}': {e['msg']}"
                for e in exc.errors()
            ]
            raise ConfigError("\n".join(lines)) from exc
        except ValueError as exc:
            raise ConfigError(f"{path}: arm {name!r}: {exc}") from exc
    return parsed


def check_evaluation(ev: EvaluationSpec, path: Path) -> None:
    """The evaluated family is registered and has the role (as `verilearn eval` checks)."""
    from verilearn_assets.core.family import families
    from verilearn_assets.training.eval.single_turn import eval_roles

    known = families()
    if ev.family not in known:
        raise ConfigError(
            f"{path}: field 'evaluation.family': {ev.family!r} unknown (known: {sorted(known)})"
        )
    roles = eval_roles(known[ev.family])
    if ev.role is not None and ev.role not in roles:
        raise ConfigError(
            f"{path}: field 'evaluation.role': {ev.family} has roles {list(roles)}, not {ev.role!r}"
        )


def card_training_config(card: ExperimentCard, card_path: Path | None = None) -> TrainingConfig:
    """The card's shared training config (`training_config`, relative to the repo root)."""
    if card.training_config is None:
        return load_training_config()
    p = Path(card.training_config)
    p = p if p.is_absolute() else REPO_ROOT / p
    where = f"{card_path}: " if card_path else ""
    if not p.is_file():
        raise ConfigError(f"{where}field 'training_config': {p} not found")
    return load_training_config(p)
