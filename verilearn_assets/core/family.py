"""The family contract: what a task family registers so the shared platform serves it.

A family (analysis, dafny, refactor, …) is one package with a `family.py` that exposes
`FAMILY: Family` and a `defs.py` whose `defs()` returns its Dagster definitions. The gate,
`sft_dataset`, the reports and the CLI read only this contract, so adding a family edits
nothing outside its folder. Pure Python: the Dagster side is built from it in `gate/adapter.py`
and the family's own `assets.py`/`checks.py`.

Conventions every family follows:
- two assets, both partitioned `source × split`: a task asset and a rollout asset, with the
  family name as asset-key prefix (`analysis/questions`, `dafny/trajectories`) and the same
  path in the lake (`<home>/lake/<family>/<asset>/source=<s>/split=<t>/`);
- task records carry `id`, `source`, `split` and `status` (accepted/rejected); rollout records
  carry `id`, `source`, `split` and `verified`, which is what the reports count;
- blocking rules are plain functions `RuleContext -> RuleOutcome`;
- optionally, `grpo: GrpoTask` (prompts per role, a verifier reward scorer, and a
  multi-turn environment where the family's agent acts over several turns): the GRPO
  trainer (`training/grpo/trainer.py`) RL-trains any family that sets it, with no family code.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field

from verilearn_assets.core import lake
from verilearn_assets.core.contract import GateRule
from verilearn_assets.core.records import Record, Source, Split, content_hash

if TYPE_CHECKING:
    from verilearn_assets.core.evaluation import EvalHook
    from verilearn_assets.core.llm.segments import BudgetMessage

PLATFORM_PACKAGES = frozenset({"core", "gate", "ingest", "scale", "reports", "training", "cli"})
"""Packages of `verilearn_assets` that are the platform, never a family."""

EXTRA_FAMILIES_ENV = "VERILEARN_FAMILIES"
"""Comma-separated module paths of families outside `verilearn_assets` (plugins, tests)."""


class SftRow(Record):
    """One chat-format training row, the same shape for every family."""

    id: str
    family: str
    task_id: str
    rollout_id: str
    source: Source
    split: Split
    role: str = "default"  # the role trained (dafny: writer/annotator); "default" otherwise
    teacher: str
    messages: list[dict[str, Any]]
    n_messages: int
    weight: float = 1.0
    template: str | None = Field(default=None)  # template / rule / operator family, if any

    @staticmethod
    def make_id(family: str, rollout_id: str, role: str = "default") -> str:
        return content_hash("sft", family, rollout_id, role)


class GrpoScorer(Protocol):
    """An open reward session (it may hold a sandbox pool or a verifier): scores
    completions of the family's tasks; `close` frees what it holds."""

    def score(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[dict[str, float]]:
        """One dict per completion holding every name of `GrpoTask.rewards`."""
        ...

    def close(self) -> None: ...


class GrpoEpisode(Protocol):
    """One multi-turn rollout in progress (one per completion: a GRPO group holds several
    episodes of the same task, hence an object and not a task-id key).

    `opening` is the conversation the model sees first (system, user, ...). `step` takes
    the model's next reply and returns the messages the environment answers with (a `tool`
    message with the execution's output, or a re-prompt) and whether the episode is over.
    `stop` ends it early (the trainer's completion budget is spent); `score` (after done or
    stop) gives every name of `GrpoTask.rewards`, like `GrpoScorer.score`; `record` is the
    JSON-ready episode (messages, end, verdict) written to the run's rollouts.jsonl.
    """

    opening: list[dict[str, Any]]

    def step(self, assistant_text: str) -> tuple[list[dict[str, Any]], bool]: ...

    def stop(self, reason: str) -> None: ...

    def score(self) -> dict[str, float]: ...

    def record(self) -> dict[str, Any]: ...


class GrpoEnvironment(Protocol):
    """An open multi-turn environment over a family's tasks (it may hold a sandbox pool);
    `reset(task_id)` starts one episode, `close` frees what it holds."""

    def reset(self, task_id: str) -> GrpoEpisode: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class GrpoEnvOptions:
    """What the trainer tells an environment when opening it: the turn bound (None: the
    family's own bound, the one its evaluation uses) and how many episodes may be open at
    once (a generation batch: the environment must not block the last one on the first)."""

    max_turns: int | None
    max_open_episodes: int


@dataclass(frozen=True)
class EvalChain:
    """A role evaluated as two model turns per task (dafny `cascade`: the writer's body, then
    the annotator on that body, then the verifier).

    - `first_role`: the grpo role whose prompts start the chain;
    - `next_prompts(home, tasks, rows, first_texts)`: the second turn's prompt rows (same
      task ids as `rows`);
    - `score(home, tasks, task_ids, first_texts, second_texts)`: one verdict dict per task,
      `outcome`/`partial` as for `GrpoScorer.score`.
    """

    first_role: str
    next_prompts: Callable[
        [Path, Sequence[Record], list[dict[str, Any]], list[str]], list[dict[str, Any]]
    ]
    score: Callable[
        [Path, Sequence[Record], Sequence[str], Sequence[str], Sequence[str]],
        list[dict[str, Any]],
    ]


# (home, tasks, rows) -> each row's prompt as budget segments, None for plain chat
PromptSegments = Callable[
    [Path, Sequence[Record], Sequence[dict[str, Any]]], "list[list[BudgetMessage] | None]"
]


@dataclass(frozen=True)
class GrpoTask:
    """What a family gives the GRPO trainer, so the trainer has no family-specific code.

    - `rewards`: the reward names every score dict holds; `outcome` (binary, verifier
      verdict) and `partial` (1.0 when correct, else capped credit < 1) are required,
      `process` is optional (step credit, e.g. hooks matching a reference trace).
    - `prompts(home, tasks, role)`: one row per accepted task with `prompt` (chat messages
      ending in the user turn), `task_id`, `difficulty` (a float, larger = harder) and
      `group` (template / rule: what pass rates are counted by).
    - `scorer(home, tasks, role)`: opens a `GrpoScorer` over those tasks.
    - `pass_rates(home, split)`: optional current pass rate per group (curriculum).
    - `environment(home, tasks, role, options)`: optional multi-turn environment, used
      when `grpo.multi_turn` is on: the model's turns alternate with the environment's
      (tool output), and the episode's own score is the reward.
    - `stop()`: optional stop sequences every request for these prompts sends (evaluation
      sends what the family's own model teacher sends).
    - `eval_chains`: roles evaluated as two chained model turns (see `EvalChain`); they
      join `roles` for `verilearn eval --role`.
    - `prompt_segments(home, tasks, rows)`: optional, each row's prompt as the context
      budget's segments (None for a row: plain chat), so GRPO compresses it the family's
      way (analysis: the table's statistics before anything else); without it a prompt's
      system and task messages are kept whole and a prompt that cannot fit is dropped.
    """

    prompts: Callable[[Path, Sequence[Record], str], list[dict[str, Any]]]
    scorer: Callable[[Path, Sequence[Record], str], GrpoScorer]
    rewards: tuple[str, ...] = ("outcome", "partial")
    roles: tuple[str, ...] = ("default",)
    pass_rates: Callable[[Path, str], dict[str, float]] | None = None
    environment: Callable[[Path, Sequence[Record], str, GrpoEnvOptions], GrpoEnvironment] | None = (
        None
    )
    stop: Callable[[], list[str]] | None = None
    eval_chains: dict[str, EvalChain] = field(default_factory=dict)
    prompt_segments: PromptSegments | None = None

    def __post_init__(self) -> None:
        missing = [r for r in ("outcome", "partial") if r not in self.rewards]
        if missing:
            raise TypeError(f"GrpoTask.rewards lacks {missing} (has {list(self.rewards)})")


@dataclass(frozen=True)
class Family:
    """One task family as the platform sees it."""

    name: str
    task_asset: str
    rollout_asset: str
    task_model: type[Record]
    rollout_model: type[Record]
    sft_rows: Callable[[Sequence[Record]], list[SftRow]]
    rules: tuple[GateRule, ...] = ()
    description: str = ""
    # columns `verilearn inspect` lists beside id/source/split/status (or verified)
    task_columns: tuple[str, ...] = ()
    rollout_columns: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    grpo: GrpoTask | None = None  # GRPO prompts and verifier rewards; None: not RL-trainable
    # evaluation (`verilearn eval`, `model_eval`; `core/evaluation.py`): the family's own
    # multi-turn evaluation (analysis: the student loop in the sandbox); None: one
    # completion per task through `grpo`, scored by its scorer
    evaluation: EvalHook | None = None
    # the roles `verilearn eval --role` accepts; None: the grpo roles, then its eval chains
    eval_roles: tuple[str, ...] | None = None
    # pass@k default when neither the caller nor training.yaml's eval: says: () -> (n,
    # temperature of the samples); None: one answer per task
    eval_n_best: Callable[[], tuple[int, float]] | None = None
    eval_group_label: str = "group"  # what the per-group table of an evaluation calls a group
    # the tools a training run on this family's rows records in its system.json, by name
    # (dafny: the verifier's version); None: none beyond the Python stack
    tool_versions: Callable[[], dict[str, str | None]] | None = None

    def __post_init__(self) -> None:
        for model, needed in (
            (self.task_model, ("id", "source", "split", "status")),
            (self.rollout_model, ("id", "source", "split", "verified")),
        ):
            missing = [f for f in needed if f not in model.model_fields]
            if missing:
                raise TypeError(
                    f"family {self.name!r}: {model.__name__} lacks field(s) {missing} "
                    "that the family contract requires"
                )
        names = [r.name for r in self.rules]
        if len(names) != len(set(names)):
            raise TypeError(f"family {self.name!r}: duplicate rule names in {names}")

    @property
    def task_lake(self) -> str:
        return f"{self.name}/{self.task_asset}"

    @property
    def rollout_lake(self) -> str:
        return f"{self.name}/{self.rollout_asset}"

    def asset_lake(self, which: Literal["tasks", "rollouts"]) -> str:
        return self.task_lake if which == "tasks" else self.rollout_lake

    def read_tasks(self, home: Path, source: str, split: str) -> list[Record]:
        return lake.read_records(
            self.task_lake, self.task_model, lake.lake_root(home), source=source, split=split
        )

    def read_rollouts(self, home: Path, source: str, split: str) -> list[Record]:
        return lake.read_records(
            self.rollout_lake, self.rollout_model, lake.lake_root(home), source=source, split=split
        )


# --- the registry -------------------------------------------------------------------------
def family_modules() -> list[str]:
    """Packages that hold a family: every `verilearn_assets.<pkg>` with a `family` module,
    then the modules named in `$VERILEARN_FAMILIES` (plugins and tests)."""
    import verilearn_assets

    found = []
    for info in sorted(pkgutil.iter_modules(verilearn_assets.__path__), key=lambda i: i.name):
        if info.name in PLATFORM_PACKAGES or not info.ispkg:
            continue
        if (Path(verilearn_assets.__path__[0]) / info.name / "family.py").is_file():
            found.append(f"verilearn_assets.{info.name}")
    extra = [m.strip() for m in os.environ.get(EXTRA_FAMILIES_ENV, "").split(",") if m.strip()]
    return found + [m for m in extra if m not in found]


@cache
def _load(modules: tuple[str, ...]) -> dict[str, Family]:
    out: dict[str, Family] = {}
    for mod in modules:
        try:
            family = importlib.import_module(f"{mod}.family").FAMILY
        except (ImportError, AttributeError) as exc:
            msg = f"family module {mod!r}: no importable `family.FAMILY`: {exc}"
            raise ImportError(msg) from exc
        if family.name in out:
            raise ValueError(f"two families named {family.name!r} ({mod})")
        out[family.name] = family
    return out


def families() -> dict[str, Family]:
    """Every registered family by name (analysis first, then alphabetical, then plugins)."""
    return _load(tuple(family_modules()))


def family(name: str) -> Family:
    known = families()
    if name not in known:
        raise ValueError(f"unknown family {name!r} (known: {', '.join(known)})")
    return known[name]


def family_module(name: str) -> str:
    """The package that registered family `name` (its `defs` module sits beside it)."""
    for mod in family_modules():
        if importlib.import_module(f"{mod}.family").FAMILY.name == name:
            return mod
    raise ValueError(f"unknown family {name!r}")
