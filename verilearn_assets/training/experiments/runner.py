"""Run an experiment card: train every arm, evaluate it, write the summary (pure of Dagster).

Layout, under the home's runs root:

    experiments/<name>-<time>/
        card.yaml, options.json     the card as run, and the run's limit/steps/splits
        arms/<arm>/state.json       stages done: each training run, each evaluated split
        arms/<arm>/runs/            the arm's own run directories (sft-…, grpo-<arm>-…)
        arms/<arm>/configs/         the config dir with the arm's `configs:` overrides
        arms/<arm>/eval-<split>.jsonl   its ModelEvalRecords (also in the lake's model_eval)
        summary.json, summary.md, plots/

An arm that trains SFT keeps its runs in its own runs dir, so its GRPO stage continues its
own SFT model and never another arm's. A GRPO-only arm continues the home's latest SFT run
(as `verilearn train grpo` does), so its run sits in the home's runs root beside it.

Resumable: state.json is written after every stage, and `resume` reopens the newest
experiment dir of the card; a stage recorded there is not run again, so an arm whose
stages are all recorded is skipped. A resumed run refuses a card or options that changed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from verilearn_assets.core import lake
from verilearn_assets.core.eval_records import ModelEvalRecord
from verilearn_assets.training.config import TrainingConfig
from verilearn_assets.training.eval.config import EvalSettings
from verilearn_assets.training.experiments.card import (
    ArmSpec,
    ExperimentCard,
    arm_training_config,
    card_training_config,
    load_card,
    resolve_card_path,
    write_config_overlay,
)
from verilearn_assets.training.experiments.summary import summarize, write_summary
from verilearn_assets.training.run_dir import GateEvidence, TrainRun, read_metrics

COMPARED = "rewards/outcome/mean"  # logged by every GRPO arm whatever it trains on
STATE = "state.json"

# (stage, the arm's resolved config) -> the gate evidence of the data it trains on; raises
# when the gate refuses (the CLI passes one that asks the Dagster instance)
Gate = Callable[[str, TrainingConfig], GateEvidence | None]
Progress = Callable[[str, str], None]  # (arm, what it is doing)


class StageState(BaseModel):
    run_id: str
    run_dir: str
    model_dir: str
    steps: int
    final_loss: float | None = None


class ArmState(BaseModel):
    """What an arm has done; written after every stage (the resume record)."""

    arm: str
    stages: dict[str, StageState] = Field(default_factory=dict)
    evaluated: dict[str, str] = Field(default_factory=dict)  # split -> records file
    model: str | None = None  # the model evaluated

    def done(self, spec: ArmSpec, splits: list[str], evaluate: bool) -> bool:
        trained = all(s in self.stages for s in spec.train)
        return trained and (not evaluate or all(s in self.evaluated for s in splits))


@dataclass
class ExperimentRun:
    dir: Path
    summary: dict[str, Any]
    ran: list[str] = field(default_factory=list)  # arms that did some work
    skipped: list[str] = field(default_factory=list)  # arms already complete


def experiments_root(config: TrainingConfig, home: Path) -> Path:
    return config.runs_root(Path(home)) / "experiments"


def experiment_dirs(root: Path, name: str | None = None) -> list[Path]:
    """Experiment dirs under `root` (of card `name`), oldest first (names sort by time)."""
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if (p / "card.yaml").is_file()]
    if name is not None:
        found = [p for p in found if p.name.rsplit("-", 1)[0] == name]
    return sorted(found, key=lambda p: p.name.rsplit("-", 1)[1])


def _options(limit: int | None, max_steps: int | None, splits: list[str]) -> dict[str, Any]:
    return {"limit": limit, "max_steps": max_steps, "splits": splits}


def open_experiment(
    root: Path, card: ExperimentCard, card_text: str, options: dict[str, Any], resume: bool
) -> Path:
    """The newest dir of this card when resuming (same card and options, or an error naming
    what changed), else a new `<name>-<time>` dir holding the card and options."""
    if resume:
        dirs = experiment_dirs(root, card.name)
        if not dirs:
            raise ValueError(f"--resume: no experiment {card.name!r} under {root} to resume")
        out = dirs[-1]
        stored = ExperimentCard.model_validate(yaml.safe_load((out / "card.yaml").read_text()))
        if stored != card:
            raise ValueError(
                f"--resume: {out / 'card.yaml'} differs from the card given; start a new "
                "run (without --resume) to run the changed card"
            )
        old = json.loads((out / "options.json").read_text())
        changed = {k: (old.get(k), v) for k, v in options.items() if old.get(k) != v}
        if changed:
            raise ValueError(
                f"--resume: {out / 'options.json'}: options changed (old, new): {changed}"
            )
        return out
    out = root / f"{card.name}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}"
    out.mkdir(parents=True)
    (out / "card.yaml").write_text(card_text)
    (out / "options.json").write_text(json.dumps(options, indent=2) + "\n")
    return out


def read_state(path: Path, arm: str) -> ArmState:
    if not path.is_file():
        return ArmState(arm=arm)
    try:
        return ArmState.model_validate_json(path.read_text())
    except ValueError as exc:
        raise ValueError(f"{path}: unreadable arm state: {exc}") from exc


@contextlib.contextmanager
def config_dir_env(directory: Path | None) -> Iterator[None]:
    """VERILEARN_CONFIG_DIR set to `directory` for the block (None: unchanged)."""
    if directory is None:
        yield
        return
    old = os.environ.get("VERILEARN_CONFIG_DIR")
    os.environ["VERILEARN_CONFIG_DIR"] = str(directory)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("VERILEARN_CONFIG_DIR", None)
        else:
            os.environ["VERILEARN_CONFIG_DIR"] = old


def train_stage(
    stage: str,
    config: TrainingConfig,
    home: Path,
    arm: str,
    *,
    max_steps: int | None,
    evidence: GateEvidence | None,
    progress: Progress | None,
) -> TrainRun:
    def report(step: int, total: int, logs: dict[str, Any]) -> None:
        if progress is not None and "loss" in logs:
            progress(arm, f"{stage} step {step}/{total} loss {logs['loss']:.4f}")

    if stage == "sft":
        from verilearn_assets.training.sft.trainer import train_sft

        return train_sft(config, home, max_steps=max_steps, progress=report, evidence=evidence)
    from verilearn_assets.training.grpo.trainer import train_grpo

    return train_grpo(
        config,
        home,
        max_steps=max_steps,
        progress=report,
        run_kind=f"grpo-{arm}",
        evidence=evidence,
    )


def eval_settings(card: ExperimentCard, base: EvalSettings, limit: int | None) -> EvalSettings:
    """The arm's evaluation settings: the card's n, temperature, limit and max_tokens on the
    training config's `eval:` (the CLI's --limit over the card's)."""
    ev = card.evaluation
    update: dict[str, Any] = {"n_best": ev.n, "limit": limit or ev.limit or base.limit}
    if ev.temperature is not None:  # every completion at one temperature: i.i.d. for pass@k
        update |= {"temperature": ev.temperature, "n_best_temperature": ev.temperature}
    if ev.max_tokens is not None:
        update["max_tokens"] = ev.max_tokens
    return base.model_copy(update=update)


def eval_role(family: str, role: str | None) -> str:
    """The role an arm is evaluated in: the card's, else the family's first evaluation role."""
    if role is not None:
        return role
    from verilearn_assets.core.family import families
    from verilearn_assets.training.eval.single_turn import eval_roles

    return eval_roles(families()[family])[0]


def evaluate_arm(
    card: ExperimentCard,
    arm: str,
    model: str,
    home: Path,
    arm_dir: Path,
    state: ArmState,
    splits: list[str],
    settings: EvalSettings,
    progress: Progress | None,
) -> None:
    """Serve the arm's model once and evaluate it on every split not yet recorded."""
    from verilearn_assets.core.llm.config import load_vllm_config
    from verilearn_assets.training.eval.evaluator import evaluate_model
    from verilearn_assets.training.eval.request import EvalRequest
    from verilearn_assets.training.eval.serving import resolve_model, serving

    todo = [s for s in splits if s not in state.evaluated]
    if not todo:
        return
    role = eval_role(card.evaluation.family, card.evaluation.role)
    with serving(resolve_model(model), load_vllm_config()) as served:
        for split in todo:
            if progress is not None:
                progress(arm, f"evaluating {model} on {card.evaluation.family}/{role} [{split}]")
            result = evaluate_model(
                EvalRequest(
                    model=model,
                    split=split,
                    home=home,
                    settings=settings,
                    family=card.evaluation.family,
                    role=role,
                    served=served,
                )
            )
            if result.errors:
                raise RuntimeError(
                    f"arm {arm}, split {split}: evaluation errors {result.errors[:3]}"
                )
            path = arm_dir / f"eval-{split}.jsonl"
            path.write_text("".join(r.model_dump_json() + "\n" for r in result.records))
            state.evaluated[split] = path.name
            state.model = model
            (arm_dir / STATE).write_text(state.model_dump_json(indent=2) + "\n")


def read_evaluations(arm_dir: Path, state: ArmState) -> dict[str, list[ModelEvalRecord]]:
    out = {}
    for split, name in state.evaluated.items():
        path = arm_dir / name
        recs = []
        for i, line in enumerate(path.read_text().splitlines(), 1):
            try:
                recs.append(ModelEvalRecord.model_validate_json(line))
            except ValueError as exc:
                raise ValueError(f"{path}: line {i}: not a model_eval record: {exc}") from exc
        out[split] = recs
    return out


def arm_info(spec: ArmSpec, state: ArmState) -> dict[str, Any]:
    """summary.json's arm entry: the delta, each training run (GRPO: its outcome curve),
    and the arm's final run at the top level."""
    info: dict[str, Any] = {
        "description": spec.description,
        "train": spec.train,
        "model": state.model,
        "settings": spec.set,
        "configs": spec.configs,
        "runs": {},
    }
    for stage, st in state.stages.items():
        run = st.model_dump()
        rows = [m for m in read_metrics(Path(st.run_dir) / "metrics.jsonl") if COMPARED in m]
        if rows:
            values = [float(m[COMPARED]) for m in rows]
            run |= {
                "outcome_curve": [[int(m["step"]), float(m[COMPARED])] for m in rows],
                "outcome_mean": sum(values) / len(values),
                "outcome_last": values[-1],
                "reward_last": float(rows[-1]["reward"]) if "reward" in rows[-1] else None,
            }
        info["runs"][stage] = run
    last = info["runs"].get(spec.train[-1]) if spec.train else None
    if last is not None:  # the arm's final run, once trained
        info |= {k: v for k, v in last.items() if k != "outcome_curve"}
    return info


def run_card(
    card: ExperimentCard | str | Path,
    home: Path | str | None = None,
    *,
    base: TrainingConfig | None = None,
    limit: int | None = None,
    arms: list[str] | None = None,
    resume: bool = False,
    max_steps: int | None = None,
    splits: list[str] | None = None,
    evaluate: bool = True,
    gate: Gate | None = None,
    progress: Progress | None = None,
) -> ExperimentRun:
    """Train and evaluate the card's arms (all, or `arms`), then write the summary.

    `base` replaces the card's training config (tests); `limit` the tasks per split;
    `max_steps` every stage's steps; `splits` the card's evaluation splits; `evaluate`
    False trains only (the summary then holds the training curves and no verdict).
    """
    home = Path(home) if home is not None else lake.home()
    if isinstance(card, ExperimentCard):
        parsed, text = card, yaml.safe_dump(card.model_dump(mode="json"), sort_keys=False)
    else:
        path = resolve_card_path(card)
        parsed, text = load_card(path, base), path.read_text()
    unknown = sorted(set(arms or []) - set(parsed.arms))
    if unknown:
        raise ValueError(f"--arms: {unknown} not in card {parsed.name} (arms: {list(parsed.arms)})")
    shared = base or card_training_config(parsed)
    splits = splits or parsed.evaluation.splits
    options = _options(limit, max_steps, splits)
    out = open_experiment(experiments_root(shared, home), parsed, text, options, resume)
    result = ExperimentRun(out, {})
    for name, spec in parsed.arms.items():
        if arms and name not in arms:
            continue
        arm_dir = out / "arms" / name
        arm_dir.mkdir(parents=True, exist_ok=True)
        state = read_state(arm_dir / STATE, name)
        if state.done(spec, splits, evaluate):
            result.skipped.append(name)
            if progress is not None:
                progress(name, "complete in a previous run: skipped")
            continue
        result.ran.append(name)
        config = arm_training_config(shared, spec, parsed.set)
        if "sft" in spec.train:
            config = config.model_copy(update={"runs_dir": str((arm_dir / "runs").resolve())})
        overlay = write_config_overlay(spec, arm_dir / "configs") if spec.configs else None
        with config_dir_env(overlay):
            for stage in spec.train:
                if stage in state.stages:
                    continue
                if progress is not None:
                    progress(name, f"training {stage}")
                evidence = gate(stage, config) if gate is not None else None
                run = train_stage(
                    stage, config, home, name, max_steps=max_steps, evidence=evidence,
                    progress=progress,
                )  # fmt: skip
                state.stages[stage] = StageState(
                    run_id=run.run_id,
                    run_dir=str(run.run_dir),
                    model_dir=str(run.model_dir),
                    steps=run.steps,
                    final_loss=run.final_loss,
                )
                (arm_dir / STATE).write_text(state.model_dump_json(indent=2) + "\n")
            if evaluate:
                trained = [state.stages[s].model_dir for s in spec.train]
                model = trained[-1] if trained else (spec.model or str(config.base_model_dir()))
                settings = eval_settings(parsed, config.eval, limit)  # the card's eval keys
                evaluate_arm(parsed, name, model, home, arm_dir, state, splits, settings, progress)
    result.summary = write_experiment_summary(out, parsed)
    return result


def write_experiment_summary(out: Path, card: ExperimentCard) -> dict[str, Any]:
    """The summary of every arm recorded in `out` (arms not run yet are listed as such)."""
    evaluations: dict[str, dict[str, list[ModelEvalRecord]]] = {}
    infos: dict[str, dict[str, Any]] = {}
    for name, spec in card.arms.items():
        arm_dir = out / "arms" / name
        state = read_state(arm_dir / STATE, name)
        infos[name] = arm_info(spec, state)
        evaluations[name] = read_evaluations(arm_dir, state)
    splits = json.loads((out / "options.json").read_text())["splits"]
    summary = summarize(card, evaluations, infos, splits)
    summary["dir"] = str(out)
    write_summary(summary, out)
    return summary
