"""The refactor family's GRPO hook: first-step prompts and a jailed, verifying scorer.

A GRPO sample is one turn of the actor loop from a fresh workspace with an empty state:
the prompt the actor would send at step 1, and a completion holding `<think>`, `<action>`
and `<state_update>`. The scorer runs the action in the jail on a fresh copy of the task's
repository and, when the action changed something, the actor's verdict (`verify/verdict.py`: a
change outside the task's files earns nothing; else the task's original tests on a clean
copy of the visible tree), and rewards with the actor's own `reward_of`: `outcome`
1.0 when the tree equals the task's target and the tests pass (a one-step task solved; a
multi-step task can only reach it with an action that does all steps at once), `partial`
the step reward (1.0, capped partial credit, or 0). A host-side exception on the way is
that completion's `crash` (0), never the training step's.

Stop sequences (`grpo_stop`): a step ends at `</state_update>` (`prompts.STEP_END`, what the
vLLM actors stop at too); GRPO cuts every sampled turn there (`training/grpo/stop.py`: no
token past it takes loss, the scorer sees the text before it, as a vLLM server returns it:
`parse_output` reads an unclosed last block) and evaluation sends it with every request.

Multi-turn (`grpo.multi_turn`): `RefactorEnvironment` runs whole trajectories with the
actor's own step (`Actor.step`: parse, state merge, the action in the jail, tests,
`reward_of`, the state committed as a new version) behind a teacher whose reply is
the trainer's generation. The environment's answer to a step is the user message the actor
renders for the next step (the updated `<state>` block and the last result); the episode
ends when a step reaches the target, or at the actor's step bound (reference steps +
`extra_steps`, capped by `max_turns`). Its reward is the last step's (`outcome` 1.0 when it
solved the task). One difference from the actor, by construction of a GRPO completion: the
model also sees its earlier turns, where the actor sends only the current step's prompt
(the state block is the memory the actor relies on; it is there in both).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from verilearn_assets.core.family import Family, GrpoEnvOptions
from verilearn_assets.core.records import SOURCES, Record
from verilearn_assets.refactor.config import load_refactor_config
from verilearn_assets.refactor.records import RefactorTask, TrajectoryStep
from verilearn_assets.refactor.rewards import reward_of
from verilearn_assets.refactor.rollout.actor import (
    Actor,
    host_error,
    last_result,
    run_action,
    state_key,
)
from verilearn_assets.refactor.rollout.prompts import (
    STEP_END,
    ParseFailure,
    load_prompts,
    parse_output,
    render_messages,
)
from verilearn_assets.refactor.rollout.state import State, StateError, parse_update, render
from verilearn_assets.refactor.sources.catalog import load_corpus
from verilearn_assets.refactor.verify.actions import ActionRejected, parse_action
from verilearn_assets.refactor.verify.runner import cleanup, prepare_workspace

ROLE = "default"
log = logging.getLogger("verilearn.refactor.grpo")


def _accepted(tasks: Sequence[Record], role: str) -> list[RefactorTask]:
    if role != ROLE:
        raise ValueError(f"refactor GRPO: the only role is {ROLE!r}, got {role!r}")
    return [t for t in cast(Sequence[RefactorTask], tasks) if t.status == "accepted"]


def group(task: RefactorTask) -> str:
    """What pass rates are counted by: the rule, or the rules in sequence."""
    return "+".join(task.rules)


def grpo_pass_rates(family: Family, home: Path, split: str) -> dict[str, float]:
    """Verified share of the stored trajectory steps per group, over every source of
    `split` (the curriculum's `pass_rate` order), read through `family` (the family module
    binds itself here, so this module never imports it back)."""
    groups: dict[str, str] = {}
    for source in SOURCES:
        for task in cast(list[RefactorTask], family.read_tasks(home, source, split)):
            groups[task.id] = group(task)
    counts: dict[str, list[int]] = {}
    for source in SOURCES:
        for step in cast(list[TrajectoryStep], family.read_rollouts(home, source, split)):
            if step.task_id in groups:
                c = counts.setdefault(groups[step.task_id], [0, 0])
                c[0] += int(step.verified)
                c[1] += 1
    return {k: v / n for k, (v, n) in counts.items() if n}


def grpo_stop() -> list[str]:
    """The stop sequences of every refactor request: the end of one step's answer."""
    return [STEP_END]


def grpo_prompts(home: Path, tasks: Sequence[Record], role: str) -> list[dict[str, Any]]:
    """Step-1 prompts of the accepted tasks; harder = more steps, matches and rule size."""
    prompts = load_prompts()
    extra = load_refactor_config().actors.extra_steps
    empty = render(State())
    rows = []
    for task in _accepted(tasks, role):
        d = task.difficulty
        max_steps = len(task.reference_actions) + extra
        rows.append(
            {
                "prompt": render_messages(prompts, task, empty, 1, max_steps, ""),
                "task_id": task.id,
                "difficulty": float(d.steps + d.rule_complexity / 10 + d.matches / 100),
                "group": group(task),
            }
        )
    return rows


class RefactorScorer:
    """Scores completions of accepted refactor tasks in the configured jail."""

    def __init__(self, home: Path, tasks: Sequence[Record], role: str) -> None:
        self.tasks = {t.id: t for t in _accepted(tasks, role)}
        self.config = load_refactor_config().for_home(home)
        self.repos = {r.name: r for r in load_corpus(home=home, strict=False)}
        self.workers = max(1, self.config.actors.concurrency)

    def _one(self, task_id: str, completion: str) -> dict[str, float]:
        scores, _ = self._judge(task_id, completion)
        return scores

    def _detail(self, task_id: str, completion: str) -> dict[str, Any]:
        scores, reward = self._judge(task_id, completion)
        status = reward.failure or ("verified" if reward.verified else "partial")
        return {**scores, "status": status}

    def _judge(self, task_id: str, completion: str) -> tuple[dict[str, float], Any]:
        """Parse, run the action on a fresh workspace, then the verdict (scope and the
        task's original tests on a clean copy). Any host-side exception on the way is this
        completion's `crash` (reward 0, logged with its class and message), never the
        training step's."""
        if task_id not in self.tasks:
            raise KeyError(f"refactor rewards: no accepted task {task_id!r}")
        task = self.tasks[task_id]
        if task.repo not in self.repos:
            raise KeyError(f"refactor rewards: task {task_id}: repository {task.repo!r} not loaded")
        pre_failure = None
        action = None
        try:
            output = parse_output(completion)
            action = parse_action(output.action)
            parse_update(output.state_update, self.config.state)
        except ParseFailure:
            pre_failure = "parse"
        except ActionRejected as exc:
            pre_failure = exc.failure
        except StateError:
            pre_failure = "schema"
        sandbox: dict[str, Any] = {}
        tests: dict[str, Any] = {}
        th, diff = "", ""
        if pre_failure is None:
            ws = None
            try:
                ws = prepare_workspace(f"grpo-{task_id}", self.repos[task.repo].path, self.config)
                th, diff = run_action(ws, task, None, action, sandbox, tests)
            except Exception as exc:  # noqa: BLE001 - a hostile answer fails its own sample
                log.exception("refactor GRPO: task %s: host-side error", task_id)
                sandbox, tests = host_error(exc), {}
            finally:
                if ws is not None:
                    try:
                        cleanup(ws)
                    except Exception:  # noqa: BLE001 - leftovers never end a training step
                        log.exception("refactor GRPO: cleanup of %s failed", ws.root)
        reward = reward_of(task, pre_failure, sandbox, tests, th, diff)
        return {"outcome": 1.0 if reward.value == 1.0 else 0.0, "partial": reward.value}, reward

    def score(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[dict[str, float]]:
        if len(task_ids) != len(completions):
            raise ValueError(f"{len(task_ids)} task ids for {len(completions)} completions")
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(self._one, task_ids, completions))

    def evaluate(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[dict[str, Any]]:
        """`score` plus `status`: the step's failure class (parse, disallowed, crash,
        wrong_change, no_change, tests_fail, out_of_scope, tests_edited, ...), `verified`
        (a tree of the task reached, tests passing on the clean copy), or `partial`."""
        if len(task_ids) != len(completions):
            raise ValueError(f"{len(task_ids)} task ids for {len(completions)} completions")
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(self._detail, task_ids, completions))

    def close(self) -> None:
        """Nothing is held between calls: each completion gets its own workspace."""


class _GivenReply:
    """The actor's teacher whose reply is set from outside (the trainer's generation)."""

    name = "grpo"
    model = "policy"

    def __init__(self) -> None:
        self.text = ""

    async def respond(
        self, messages: list[dict[str, Any]], task: Any, step: int, state: Any, seed: int
    ) -> str:
        return self.text


class RefactorEpisode:
    """One trajectory driven step by step (the `GrpoEpisode` protocol)."""

    def __init__(self, env: RefactorEnvironment, task: RefactorTask, n: int) -> None:
        self.env = env
        self.task = task
        self.run = f"grpo:{n}"  # one actor run per episode: a group repeats the task
        self.key = state_key(task.id, f"grpo-{n}")
        bound = len(task.reference_actions) + env.config.actors.extra_steps
        cap = env.options.max_turns
        self.max_steps = bound if cap is None else min(bound, cap)
        self.step_no = 1
        self.last = ""
        self.steps: list[TrajectoryStep] = []
        self.stopped: str | None = None
        self.opening = render_messages(env.prompts, task, render(State()), 1, self.max_steps, "")
        self.ws: Any = prepare_workspace(
            f"grpo-{task.id}-{n}", env.repos[task.repo].path, env.actor.config
        )

    @property
    def done(self) -> bool:
        return self.ws is None

    def step(self, assistant_text: str) -> tuple[list[dict[str, Any]], bool]:
        if self.done:
            raise RuntimeError(f"refactor episode {self.task.id}: the episode is over")
        actor = self.env.actor
        actor.teacher.text = assistant_text  # type: ignore[attr-defined]
        record = asyncio.run(
            actor.step(
                self.run, self.task, self.ws, self.key, self.step_no, self.max_steps, self.last
            )
        )
        self.steps.append(record)
        self.last = last_result(record)
        self.step_no += 1
        if record.done or self.step_no > self.max_steps:
            self._end()
            return [], True
        state, _ = actor.store.load(self.key)
        nxt = render_messages(  # the code of this episode's workspace, as the actor shows it
            self.env.prompts,
            self.task,
            render(state),
            self.step_no,
            self.max_steps,
            self.last,
            self.ws.tree,
        )
        return [nxt[-1]], False

    def _end(self) -> None:
        if self.ws is not None:
            ws, self.ws = self.ws, None
            cleanup(ws)

    def stop(self, reason: str) -> None:
        if not self.done:
            self.stopped = reason
            self._end()

    def score(self) -> dict[str, float]:
        last = self.steps[-1] if self.steps else None
        value = last.reward if last else 0.0
        return {"outcome": 1.0 if last is not None and last.done else 0.0, "partial": value}

    def record(self) -> dict[str, Any]:
        return {
            "task_id": self.task.id,
            "messages": self.opening
            + [
                m
                for s in self.steps
                for m in (
                    {"role": "assistant", "content": s.model_output.raw or s.model_output.action},
                    {"role": "environment", "content": _step_note(s)},
                )
            ],
            "end": "solved"
            if self.steps and self.steps[-1].done
            else "stopped"
            if self.stopped
            else "max_steps",
            "stopped": self.stopped,
            "steps": [
                s.model_dump(mode="json", exclude={"prompt", "prompt_messages"}) for s in self.steps
            ],
            "assistant_turns": len(self.steps),
            "reason": (self.steps[-1].failure or "ok") if self.steps else "no_step",
        }


def _step_note(step: TrajectoryStep) -> str:
    return f"reward {step.reward}: {last_result(step)}"


class RefactorEnvironment:
    """Trajectories over the GRPO tasks (the `GrpoEnvironment` protocol). The actor's
    state store lives in a scratch directory removed on close: GRPO episodes are not
    trajectories of the dataset."""

    def __init__(
        self, home: Path, tasks: Sequence[Record], role: str, options: GrpoEnvOptions
    ) -> None:
        self.tasks = {t.id: t for t in _accepted(tasks, role)}
        self.options = options
        self.config = load_refactor_config().for_home(home)
        self.prompts = load_prompts()
        self.repos = {r.name: r for r in load_corpus(home=home, strict=False)}
        self.scratch = Path(tempfile.mkdtemp(prefix="grpo-refactor-"))
        self.actor = Actor(
            home=self.scratch,
            teacher=_GivenReply(),
            config=self.config,
            prompts=self.prompts,
            repos=self.repos,
            extra_steps=self.config.actors.extra_steps,
        )
        self.episodes: list[RefactorEpisode] = []
        self._ids = itertools.count()

    def reset(self, task_id: str) -> RefactorEpisode:
        if task_id not in self.tasks:
            raise KeyError(f"refactor environment: no accepted task {task_id!r}")
        task = self.tasks[task_id]
        if task.repo not in self.repos:
            raise KeyError(
                f"refactor environment: task {task_id}: repository {task.repo!r} not loaded"
            )
        episode = RefactorEpisode(self, task, next(self._ids))
        self.episodes = [e for e in self.episodes if not e.done] + [episode]
        return episode

    def close(self) -> None:
        try:
            for e in self.episodes:
                e.stop("environment closed")
            self.actor.close()
        finally:
            shutil.rmtree(self.scratch, ignore_errors=True)


def grpo_environment(
    home: Path, tasks: Sequence[Record], role: str, options: GrpoEnvOptions
) -> RefactorEnvironment:
    return RefactorEnvironment(home, tasks, role, options)
