"""GRPO with verifier rewards: TRL `GRPOTrainer` from the SFT model (no dagster).

The asset (`grpo_model`), the CLI (`verilearn train grpo`) and the ORM-vs-PRM experiment
all call `train_grpo`. Everything family-specific comes through the family contract
(`Family.grpo`: prompts, a reward scorer, roles, pass rates), so this module names no
family.

Rollouts are single-turn by default: a completion is one reply, scored as one task by
the family's verifier (analysis: one sandbox task running its python block; dafny: one
verification of the spliced program). TRL calls every reward function separately with the
same batch; `RewardBank` scores a batch once and hands each function its column.

`multi_turn: true` trains the agent the family evaluates instead: the family's
`GrpoTask.environment` (analysis: the student loop in the sandbox) answers each reply
until the episode ends or `max_turns`, through TRL's `rollout_func` (why not TRL's tool
loop: `training/grpo/rollout.py`); the environment's messages carry no loss, and the
episode's score is the reward. Every rollout lands in the run's `rollouts.jsonl`.

Single-turn prompts are fitted to `grpo.window - max_completion_length` by the context
budget before training (`training/grpo/budget.py`): compressed the family's way, or
dropped as `context_overflow`; `result.json`'s `prompt_budget` counts both. Multi-turn
openings come from the family's environment: one over the same room ends its episode as
`context_overflow` without generating (`opening_overflows`), and the turns after it
share one `max_completion_length` (`grpo/rollout.py`).

Defaults and the reason for each: `grpo/config.py` (`GrpoSettings`).

Gate evidence (`result.json`'s `evidence`, which `model_eval` requires): a GRPO model holds
the SFT run's rows and then what RL learned from the family's tasks. So it inherits the
evidence of the SFT run it continued (the `sft_dataset` materialization whose rows are in
its weights, not whatever partition is newest now) and adds the task partitions its
prompts came from. From the base model it carries the `sft_dataset` evidence its gate
checked (`evidence=`, given by the asset and the CLI; rows_used 0) with the tasks. An SFT
run without evidence, or a base start given none, leaves it empty: the model is ungated.
Checkpoints: `save_steps` writes the trainer's state (weights, optimizer, RNG, step) every
N steps under the run's `checkpoints/`; `train_grpo(resume=...)` (`verilearn train grpo
--resume latest|RUN_ID`) continues an unfinished run from its latest checkpoint in its own
directory with its own config.yaml, dropping the metrics rows logged after that step (they
are logged again), and reaches the weights an uninterrupted run reaches (test).

Stop sequences: the family's `GrpoTask.stop()` (dafny: configs/dafny_prompts.yaml's, the
ones evaluation sends) end every sampled completion, in the loss mask and in what the
scorer sees (`training/grpo/stop.py`).

Device and precision come from training.yaml `device`/`dtype`/`device_map`
(`training/device.py`): on this CPU `bf16=False, use_cpu=True` (TRL turns bf16 on by
default), on a GPU bfloat16 where supported; `use_cpu` is derived, never forced.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from verilearn_assets.core import lake
from verilearn_assets.core.family import Family, GrpoEnvOptions, GrpoScorer, GrpoTask
from verilearn_assets.core.family import family as family_by_name
from verilearn_assets.core.llm.fit import ContextBudget
from verilearn_assets.core.llm.tokens import HfChatCounter
from verilearn_assets.core.records import SOURCES, Record
from verilearn_assets.training.config import TrainingConfig, load_training_config
from verilearn_assets.training.device import Placement, placement, trainer_placement
from verilearn_assets.training.eval.single_turn import family_stop
from verilearn_assets.training.grpo.budget import PromptBudgetReport, fit_prompts
from verilearn_assets.training.grpo.config import GrpoSettings
from verilearn_assets.training.grpo.rollout import MultiTurnRollout, TurnGenerator, unique_prompts
from verilearn_assets.training.grpo.stop import stopping_trainer, text_before_stop
from verilearn_assets.training.run_dir import (
    GateEvidence,
    RunDir,
    RunResult,
    TrainRun,
    metrics_callback,
    read_metrics,
    tool_versions,
)

Progress = Callable[[int, int, dict[str, Any]], None]

log = logging.getLogger(__name__)


class NoGrpoTasks(ValueError):
    """The family, role, sources and split left no prompt to train on."""


class NoStartModel(FileNotFoundError):
    """No successful SFT run, and the config does not allow starting from the base model."""


# --- where training starts ------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class StartModel:
    path: Path
    kind: str  # "sft" or "base"
    merged: bool = True  # False: `path` is a LoRA adapter on `base`
    base: Path | None = None
    sft_run_id: str | None = None
    evidence: GateEvidence | None = None  # the SFT run's gate evidence (None: base, ungated)


def latest_sft_run(config: TrainingConfig, home: Path) -> RunResult | None:
    """The newest `sft-*` run whose result.json exists and whose model dir is on disk."""
    root = config.runs_root(Path(home))
    if not root.is_dir():
        return None
    for d in sorted(root.glob("sft-*"), reverse=True):  # run ids sort by time
        result = d / "result.json"
        if not result.is_file():
            continue
        try:
            run = RunResult.model_validate_json(result.read_text())
        except ValueError as exc:
            raise ValueError(f"{result}: not a valid run result: {exc}") from exc
        if run.kind == "sft" and Path(run.model_dir).is_dir():
            return run
    return None


def resolve_start(config: TrainingConfig, home: Path) -> StartModel:
    g = config.grpo
    base = config.base_model_dir()
    if g.start_from == "sft":
        run = latest_sft_run(config, home)
        if run is not None:
            return StartModel(
                Path(run.model_dir),
                "sft",
                run.merged,
                Path(run.base_model),
                run.run_id,
                run.evidence,
            )
        if not g.allow_base_fallback:
            raise NoStartModel(
                f"grpo: no successful SFT run under {config.runs_root(Path(home))} "
                "(train one with `verilearn train sft`, or set grpo.allow_base_fallback: true)"
            )
    if not base.is_dir():
        raise NoStartModel(f"grpo: base model {base} does not exist (run `make tiny-model`)")
    return StartModel(base, "base")


def load_policy(start: StartModel, where: Placement | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) in `where`'s weight dtype and device map (default: float32 on the
    CPU); an adapter run is merged into its base in memory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = (where or Placement("cpu", "float32")).load_kwargs()
    if start.merged:
        model = AutoModelForCausalLM.from_pretrained(str(start.path), **kwargs)
    else:
        from peft import PeftModel

        assert start.base is not None
        base = AutoModelForCausalLM.from_pretrained(str(start.base), **kwargs)
        model = PeftModel.from_pretrained(base, str(start.path)).merge_and_unload()
    tokenizer = AutoTokenizer.from_pretrained(str(start.path))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


# --- prompts and curriculum -----------------------------------------------------------------
def resolve_family(family: Family | str | None, settings: GrpoSettings) -> Family:
    fam = family if isinstance(family, Family) else family_by_name(family or settings.family)
    if fam.grpo is None:
        raise ValueError(f"family {fam.name!r} has no GRPO hook (Family.grpo is None)")
    return fam


def load_tasks(fam: Family, home: Path, split: str, sources: Sequence[str] | None) -> list[Record]:
    tasks: list[Record] = []
    for source in sources or SOURCES:
        tasks.extend(fam.read_tasks(home, source, split))
    return tasks


def grpo_evidence(
    start: StartModel,
    gated: GateEvidence | None,
    family: str,
    split: str,
    tasks: Sequence[Record],
    rows: Sequence[dict[str, Any]],
) -> GateEvidence | None:
    """What a GRPO model was trained on (module doc): the SFT run's evidence when it
    continued one, else the `sft_dataset` evidence its gate checked; plus the task
    partitions (sources of the tasks actually prompted) and how many tasks."""
    if start.kind == "sft":
        if start.evidence is None:
            return None  # an ungated SFT model stays ungated
        base = start.evidence.model_copy(update={"inherited_from": start.sft_run_id})
    elif gated is None:
        return None
    else:
        base = gated.model_copy(update={"rows_used": 0, "rows_truncated": 0, "rows_dropped": 0})
    used = {r["task_id"] for r in rows}
    sources = sorted({t.source for t in tasks if t.id in used})  # type: ignore[attr-defined]
    return base.model_copy(
        update={
            "family": family,
            "task_split": split,
            "task_sources": sources,
            "tasks_used": len(used),
        }
    )


def order_rows(
    rows: list[dict[str, Any]], curriculum: str, pass_rates: dict[str, float] | None = None
) -> list[dict[str, Any]]:
    """Curriculum order (stable): easy→hard by difficulty, or by pass rate per group
    (highest first; a group without a rate counts as 0.5), ties by difficulty then id."""
    if curriculum == "none":
        return list(rows)
    if curriculum == "easy_to_hard":
        return sorted(rows, key=lambda r: (r["difficulty"], r["task_id"]))
    if curriculum == "pass_rate":
        rates = pass_rates or {}
        return sorted(
            rows, key=lambda r: (-rates.get(r["group"], 0.5), r["difficulty"], r["task_id"])
        )
    raise ValueError(f"unknown curriculum {curriculum!r}")


# --- rewards --------------------------------------------------------------------------------
def completion_text(completion: Any) -> str:
    """TRL hands conversational completions as message lists, plain ones as strings."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(
            m.get("content") or "" for m in completion if m.get("role", "assistant") == "assistant"
        )
    raise TypeError(f"unexpected completion type {type(completion).__name__}")


class RewardBank:
    """Scores each batch once and serves every reward function its column."""

    def __init__(self, scorer: GrpoScorer, names: Sequence[str], stop: Sequence[str] = ()) -> None:
        self.scorer = scorer
        self.names = list(names)
        self.stop = list(stop)  # the scorer sees the text before a stop, as vLLM returns it
        self._key: tuple | None = None
        self._scores: list[dict[str, float]] = []
        self.batches = 0

    def scores(self, task_ids: Sequence[str], completions: Sequence[Any]) -> list[dict[str, float]]:
        texts = [text_before_stop(completion_text(c), self.stop) for c in completions]
        key = (tuple(task_ids), tuple(texts))
        if key != self._key:
            self._scores = self.scorer.score(list(task_ids), texts)
            self._key = key
            self.batches += 1
            for s in self._scores:
                missing = [n for n in self.names if n not in s]
                if missing:
                    raise KeyError(f"reward scorer returned no {missing} (got {sorted(s)})")
        return self._scores

    def function(self, name: str) -> Callable[..., list[float]]:
        def reward(prompts: list, completions: list, task_id: list[str], **_: Any) -> list[float]:
            return [float(s[name]) for s in self.scores(task_id, completions)]

        reward.__name__ = name  # TRL logs rewards/<__name__>/mean|std
        return reward


# --- the run --------------------------------------------------------------------------------
def resumable_run(
    config: TrainingConfig, home: Path, resume: str | Path, run_kind: str
) -> tuple[RunDir, Path]:
    """The run to resume and its latest checkpoint. `resume` is a run directory, a run id
    under the runs root, or "latest" (the newest `<run_kind>-*` run with a checkpoint and
    no result.json). A finished run, or one without a checkpoint, is refused by name."""
    root = config.runs_root(home)
    if str(resume) == "latest":
        open_runs = sorted(
            p
            for p in root.glob(f"{run_kind}-*")
            if p.is_dir() and not (p / "result.json").exists()
            and RunDir.reopen(p).latest_checkpoint() is not None
        )  # fmt: skip
        if not open_runs:
            raise ValueError(
                f"grpo --resume latest: no unfinished {run_kind} run with a checkpoint under "
                f"{root} (set grpo.save_steps to write checkpoints)"
            )
        path = open_runs[-1]
    else:
        path = Path(resume) if Path(resume).is_dir() else root / str(resume)
    run = RunDir.reopen(path)
    if (run.path / "result.json").exists():
        raise ValueError(f"grpo --resume: run {run.run_id} finished ({run.path}/result.json)")
    checkpoint = run.latest_checkpoint()
    if checkpoint is None:
        raise ValueError(
            f"grpo --resume: run {run.run_id} has no checkpoint under {run.checkpoints} "
            "(it ran with grpo.save_steps: null, or stopped before the first save)"
        )
    return run, checkpoint


@dataclasses.dataclass
class GrpoData:
    """What one GRPO run trains on: the family's hook, the role, the reward weights, the
    split's tasks and their prompt rows (ordered by the curriculum, fitted to the window)."""

    fam: Family
    grpo: GrpoTask
    role: str
    weights: dict[str, float]
    tasks: list[Record]
    rows: list[dict[str, Any]]
    window: int = 0
    duplicates: int = 0  # multi-turn: prompts dropped as repeats of an earlier one
    prompt_budget: PromptBudgetReport | None = None  # single-turn: compressed / dropped


@dataclasses.dataclass
class Rewards:
    """The reward functions TRL calls and what they hold open (closed after training)."""

    funcs: list[Callable[..., list[float]]]
    closer: Any  # the scorer or the environment
    bank: RewardBank | None = None  # single-turn
    rollout: MultiTurnRollout | None = None  # multi-turn
    max_turns: int | None = None

    @property
    def batches(self) -> int:
        return self.bank.batches if self.bank else self.rollout.batches if self.rollout else 0


def family_and_rewards(
    config: TrainingConfig, family: Family | str | None, role: str | None
) -> tuple[Family, GrpoTask, str, dict[str, float]]:
    """Step 1: the family (`family`, else `grpo.family`), its role (`role`, else
    `grpo.role`, else its first) and the reward weights, each checked against its hook."""
    g = config.grpo
    fam = resolve_family(family, g)
    grpo = fam.grpo
    assert grpo is not None
    role = role or g.role or grpo.roles[0]
    if role not in grpo.roles:
        raise ValueError(f"family {fam.name!r}: GRPO role {role!r} unknown (roles: {grpo.roles})")
    weights = g.reward_weights()
    missing = [n for n in weights if n not in grpo.rewards]
    if missing:
        raise ValueError(
            f"grpo: family {fam.name!r} provides rewards {list(grpo.rewards)}, not {missing} "
            "(process_reward needs a family with a `process` reward)"
        )
    return fam, grpo, role, weights


def prompt_data(
    config: TrainingConfig,
    home: Path,
    fam: Family,
    grpo: GrpoTask,
    role: str,
    weights: dict[str, float],
) -> GrpoData:
    """Step 2: the split's accepted tasks and their prompt rows in curriculum order
    (multi-turn: unique prompts, the first `max_tasks`); raises `NoGrpoTasks` when none."""
    g = config.grpo
    tasks = load_tasks(fam, home, config.split, g.sources)
    rows = grpo.prompts(home, tasks, role)
    rates = (
        grpo.pass_rates(home, config.split)
        if g.curriculum == "pass_rate" and grpo.pass_rates
        else None
    )
    if g.curriculum == "pass_rate" and grpo.pass_rates is None:
        raise ValueError(f"grpo: curriculum pass_rate: family {fam.name!r} gives no pass rates")
    rows = order_rows(rows, g.curriculum, rates)
    duplicates = 0
    if g.multi_turn:
        if grpo.environment is None:
            raise ValueError(
                f"grpo.multi_turn: family {fam.name!r} gives no multi-turn environment "
                "(GrpoTask.environment is None); set grpo.multi_turn: false"
            )
        rows, duplicates = unique_prompts(rows[: g.max_tasks])
    if not rows:
        raise NoGrpoTasks(
            f"{_where(config, fam, role)}: no accepted task "
            f"({len(tasks)} task records in sources {g.sources or list(SOURCES)})"
        )
    return GrpoData(fam, grpo, role, weights, tasks, rows, duplicates=duplicates)


def _where(config: TrainingConfig, fam: Family, role: str) -> str:
    return f"grpo: family {fam.name!r} role {role!r} split {config.split!r}"


def fit_to_window(config: TrainingConfig, home: Path, start: StartModel, data: GrpoData) -> None:
    """Step 4: the window (`grpo.window`, else `sft.max_seq_length`); single-turn prompts
    fitted to it by the context budget (compressed the family's way, or dropped and
    counted), then the first `max_tasks`. Multi-turn openings are the environment's."""
    g = config.grpo
    window = g.window or config.sft.max_seq_length
    if window <= g.max_completion_length:
        raise ValueError(
            f"grpo.window {window} leaves no room for a prompt beside "
            f"max_completion_length {g.max_completion_length}"
        )
    data.window = window
    if g.multi_turn:  # multi-turn openings are the environment's (grpo/rollout.py)
        return
    budget = ContextBudget(
        window, g.max_completion_length, HfChatCounter(start.path), window_source="grpo"
    )
    segments = data.grpo.prompt_segments
    segmenter = functools.partial(segments, home, data.tasks) if segments else None
    rows, data.prompt_budget = fit_prompts(data.rows, budget, segmenter)
    if not rows:
        raise NoGrpoTasks(
            f"{_where(config, data.fam, data.role)}: every prompt overflows the window even "
            f"compressed ({len(data.prompt_budget.overflow_ids)} dropped as context_overflow; "
            f"window {window} minus max_completion_length {g.max_completion_length})"
        )
    data.rows = rows[: g.max_tasks]


def open_run(
    config: TrainingConfig,
    home: Path,
    run_kind: str,
    fam: Family,
    resumed: tuple[RunDir, Path] | None,
) -> tuple[RunDir, Path | None]:
    """Step 5: a new run directory (config, seeds, system), or the resumed one with its
    metrics cut back to the checkpoint's step (they are logged again)."""
    if resumed is not None:
        run, checkpoint = resumed
        step = int(checkpoint.name.rsplit("-", 1)[1])
        dropped = run.truncate_metrics(step)
        log.info(
            "grpo: resuming %s from %s (%d later metrics rows dropped)",
            run.run_id,
            checkpoint,
            dropped,
        )
        return run, checkpoint
    g = config.grpo
    run = RunDir.create(config, home, run_kind)
    run.write_config(config)
    run.write_seeds(seed=g.seed, data_seed=g.seed, sampling_seed=g.seed)
    run.write_system(tool_versions([fam]))
    return run, None


def reward_functions(
    config: TrainingConfig,
    home: Path,
    data: GrpoData,
    run: RunDir,
    turn_generator: TurnGenerator | None,
) -> Rewards:
    """Step 6: one reward function per weighted reward. Single-turn: the family's scorer
    behind a `RewardBank` (one scoring per batch); multi-turn: the family's environment
    behind TRL's `rollout_func` (`MultiTurnRollout`), the episode's score the reward."""
    g = config.grpo
    grpo = data.grpo
    if not g.multi_turn:
        scorer = grpo.scorer(home, data.tasks, data.role)
        bank = RewardBank(scorer, list(data.weights), family_stop(data.fam))
        return Rewards([bank.function(n) for n in data.weights], scorer, bank=bank)
    assert grpo.environment is not None
    # a generation batch is per_device_train_batch_size × steps_per_generation (TRL's
    # default: gradient_accumulation_steps), and all its episodes are open at once
    open_episodes = g.per_device_train_batch_size * g.gradient_accumulation_steps
    max_turns = g.max_turns if g.max_turns is not None else config.eval.max_turns
    env = grpo.environment(home, data.tasks, data.role, GrpoEnvOptions(max_turns, open_episodes))
    rollout = MultiTurnRollout(
        env,
        data.rows,
        g.max_completion_length,
        run.path / "rollouts.jsonl",
        turn_generator,
        window=data.window,
    )
    funcs = [rollout.reward_function(n, first=i == 0) for i, n in enumerate(data.weights)]
    return Rewards(funcs, env, rollout=rollout, max_turns=max_turns)


def save_policy(config: TrainingConfig, trainer: Any, model_dir: Path) -> None:
    """Step 8: the trained policy (LoRA merged in) and its tokenizer, when `save_model`."""
    g = config.grpo
    if g.save_model:
        policy = trainer.model.merge_and_unload() if g.lora else trainer.model
        policy.save_pretrained(str(model_dir))
        trainer.processing_class.save_pretrained(str(model_dir))


def grpo_plots(run: RunDir, weights: dict[str, float]) -> list[Path]:
    reward_keys = ["reward"] + [f"rewards/{n}/mean" for n in weights]
    return run.plots(
        [
            (["loss"], "loss", "GRPO loss"),
            (reward_keys, "rewards", "GRPO rewards"),
            (["kl"], "kl", "GRPO KL to the reference"),
        ]
    )


def grpo_result(
    config: TrainingConfig,
    run: RunDir,
    run_kind: str,
    start: StartModel,
    data: GrpoData,
    rewards: Rewards,
    out: Any,
    final: float | None,
    seconds: float,
    placed: dict[str, Any],
    evidence: GateEvidence | None,
) -> RunResult:
    """Step 9: result.json's record of the run (what `model_eval` reads its evidence from)."""
    g = config.grpo
    rollout = rewards.rollout
    return RunResult(
        run_id=run.run_id,
        kind=run_kind,
        model_dir=str(run.model_dir),
        merged=True,
        base_model=str(start.path),
        steps=int(out.global_step),
        final_loss=final,
        train_seconds=round(seconds, 3),
        evidence=grpo_evidence(start, evidence, data.fam.name, config.split, data.tasks, data.rows),
        extra={
            "family": data.fam.name,
            "role": data.role,
            "start": start.kind,
            "sft_run_id": start.sft_run_id,
            "tasks": len(data.rows),
            "reward_weights": data.weights,
            "curriculum": g.curriculum,
            "lora": g.lora,
            "scored_batches": rewards.batches,
            "task_order": [r["task_id"] for r in data.rows],
            "multi_turn": g.multi_turn,
            "placement": placed,
            **({"prompt_budget": data.prompt_budget.summary()} if data.prompt_budget else {}),
            **(
                {
                    "max_turns": rewards.max_turns,
                    "rollouts": rollout.rollouts,
                    "opening_overflows": rollout.opening_overflows,
                    "rollouts_file": str(rollout.record_path),
                    "duplicate_prompts_dropped": data.duplicates,
                }
                if rollout
                else {}
            ),
        },
    )


def train_grpo(
    config: TrainingConfig,
    home: Path | str | None = None,
    *,
    family: Family | str | None = None,
    role: str | None = None,
    max_steps: int | None = None,
    progress: Progress | None = None,
    run_kind: str = "grpo",
    turn_generator: TurnGenerator | None = None,
    evidence: GateEvidence | None = None,
    resume: str | Path | None = None,
) -> TrainRun:
    """One GRPO run on `config.split`'s accepted tasks of one family and role (module doc):

    0. a resumed run reloads its own config.yaml (`resume`: latest or a run id);
    1. the family, role and reward weights (`family_and_rewards`);
    2. the tasks and their prompt rows in curriculum order (`prompt_data`);
    3. the start model: the latest SFT run, else the base model if allowed (`resolve_start`);
    4. the prompts fitted to the window (`fit_to_window`);
    5. the run directory (`open_run`);
    6. the reward functions over the family's scorer or environment (`reward_functions`);
    7. TRL's GRPOTrainer trains (`_trainer`), the scorer or environment closed after;
    8. the policy saved (`save_policy`);
    9. plots and result.json with the gate evidence (`grpo_result`).

    `family`/`role` override `grpo.family`/`grpo.role`; `max_steps` overrides
    `grpo.max_steps` (the CLI's `--max-steps`). Writes a RunDir with metrics.jsonl (loss,
    reward mean/std, per-reward mean/std, KL, ...), reward/loss/KL plots and result.json
    (multi-turn: also rollouts.jsonl). `turn_generator` writes the assistant turns of
    multi-turn rollouts instead of the policy (tests script what a model says).
    `evidence` is the `sft_dataset` gate evidence the caller checked (asset, CLI); it is
    used only when training starts from the base model (`grpo_evidence`).
    """
    home = Path(home) if home is not None else lake.home()
    resumed: tuple[RunDir, Path] | None = None
    if resume is not None:
        resumed = resumable_run(config, home, resume, run_kind)
        config = load_training_config(resumed[0].path / "config.yaml")
    g = config.grpo
    fam, grpo, role, weights = family_and_rewards(config, family, role)
    data = prompt_data(config, home, fam, grpo, role, weights)
    start = resolve_start(config, home)
    fit_to_window(config, home, start, data)
    run, checkpoint = open_run(config, home, run_kind, fam, resumed)
    steps = max_steps if max_steps is not None else g.max_steps
    rewards = reward_functions(config, home, data, run, turn_generator)
    with _cpu_threads(g.cpu_threads):
        try:
            trainer = _trainer(
                config,
                start,
                data.rows,
                rewards.funcs,
                data.weights,
                run,
                steps,
                progress,
                rewards.rollout,
                family_stop(fam),
            )
            placed = trainer_placement(trainer)
            started = time.monotonic()
            out = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
            seconds = time.monotonic() - started
        finally:
            rewards.closer.close()
    save_policy(config, trainer, run.model_dir)
    metrics = read_metrics(run.metrics_path)
    losses = [float(m["loss"]) for m in metrics if isinstance(m.get("loss"), int | float)]
    final = losses[-1] if losses else _finite(out.training_loss)
    plots = grpo_plots(run, data.weights)
    result = grpo_result(
        config, run, run_kind, start, data, rewards, out, final, seconds, placed, evidence
    )
    run.write_result(result)
    return TrainRun(
        run_id=run.run_id,
        run_dir=run.path,
        model_dir=run.model_dir,
        merged=True,
        steps=int(out.global_step),
        final_loss=final,
        losses=losses,
        rows_used=len(data.rows),
        plots=plots,
        result=result,
    )


@contextlib.contextmanager
def _cpu_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op threads set to `n` on CPU for the run, then restored."""
    import torch

    if not n or torch.cuda.is_available():
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def _trainer(
    config: TrainingConfig,
    start: StartModel,
    rows: list[dict[str, Any]],
    reward_funcs: list[Callable[..., list[float]]],
    weights: dict[str, float],
    run: RunDir,
    max_steps: int,
    progress: Progress | None,
    rollout: MultiTurnRollout | None = None,
    stop: Sequence[str] = (),
) -> Any:
    import torch
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from verilearn_assets.training.sft.trainability import lora_config

    g = config.grpo
    torch.manual_seed(g.seed)
    where = placement(config)
    model, tokenizer = load_policy(start, where)
    args = GRPOConfig(
        output_dir=str(run.checkpoints),
        **where.trainer_args(),
        report_to=[],
        learning_rate=g.learning_rate,
        max_steps=max_steps,
        per_device_train_batch_size=g.per_device_train_batch_size,
        gradient_accumulation_steps=g.gradient_accumulation_steps,
        num_generations=g.num_generations,
        max_completion_length=g.max_completion_length,
        temperature=g.temperature,
        top_p=g.top_p,
        top_k=g.top_k,
        min_p=g.min_p,
        beta=g.beta,
        loss_type=g.loss_type,
        scale_rewards=g.scale_rewards,
        reward_weights=list(weights.values()),
        shuffle_dataset=g.curriculum == "none",
        logging_steps=g.logging_steps,
        save_strategy="steps" if g.save_steps else "no",
        save_steps=g.save_steps or 500,
        save_total_limit=g.save_total_limit,
        seed=g.seed,
        data_seed=g.seed,
        disable_tqdm=True,
        dataloader_num_workers=0,
        log_completions=False,
    )
    trainer_class = stopping_trainer(GRPOTrainer, stop) if stop else GRPOTrainer
    trainer = trainer_class(
        model=model,
        reward_funcs=reward_funcs,
        rollout_func=rollout,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=[metrics_callback(run, progress)],
        peft_config=lora_config(config.sft) if g.lora else None,
    )
    trainer.remove_callback(PrinterCallback)
    return trainer
