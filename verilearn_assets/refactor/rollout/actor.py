"""The actor loop: pull a task, load its state, prompt the teacher, run its action in the
jail, verify, merge the state, commit the step — one SQLite transaction per step — and
refresh the lake partition after each task.

Run it as a module to drive one partition from the command line (used by the kill/resume
test): `python -m verilearn_assets.refactor.rollout.actor --home H --source S --split T`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verilearn_assets.core import lake
from verilearn_assets.core.llm.fit import FAILURE_CLASS, ContextOverflow
from verilearn_assets.core.llm.teacher_metrics import Attempt, TeacherMetrics
from verilearn_assets.core.records import content_hash
from verilearn_assets.refactor.config import RefactorConfig, load_refactor_config
from verilearn_assets.refactor.records import ModelOutput, RefactorTask, TrajectoryStep
from verilearn_assets.refactor.rewards import reward_of
from verilearn_assets.refactor.rollout.compaction import Chat, compact_with_model
from verilearn_assets.refactor.rollout.prompts import (
    ParseFailure,
    PromptConfig,
    load_prompts,
    parse_output,
    prompt_text,
    render_messages,
)
from verilearn_assets.refactor.rollout.queue import StepQueue
from verilearn_assets.refactor.rollout.state import (
    StateError,
    StateStore,
    merge,
    parse_update,
    render,
)
from verilearn_assets.refactor.rollout.teachers import (
    ProgramTeacher,
    Teacher,
    load_actors,
    model_chat,
)
from verilearn_assets.refactor.sources.catalog import Repo, load_corpus
from verilearn_assets.refactor.verify.actions import ActionRejected, parse_action
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
)
from verilearn_assets.refactor.verify.verdict import verify_step
from verilearn_assets.refactor.verify.workspace import Workspace, tree_hash, unified_diff

log = logging.getLogger("verilearn.refactor.actor")

TASKS_LAKE = "refactor/tasks"
TRAJECTORIES_LAKE = "refactor/trajectories"
RAN = {"ok", "no_change", "failed", "timeout", "limit", "invalid_python"}


def db_path(home: Path) -> Path:
    return home / "refactor" / "actors.sqlite"


def state_key(task_id: str, teacher: str) -> str:
    return f"{task_id}:{teacher}"


@dataclass
class RunSummary:
    run: str
    tasks: int = 0
    steps: int = 0
    verified: int = 0
    parse_failures: int = 0
    sandbox_failures: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    compactions: dict[str, int] = field(default_factory=dict)  # model / rules / fallback
    metrics_path: str = ""  # this run's teacher_metrics.jsonl

    def metadata(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        return {
            "run": self.run,
            "tasks": self.tasks,
            "steps": self.steps,
            "verified_steps": self.verified,
            "precision": round(self.verified / self.steps, 4) if self.steps else 0.0,
            "parse_failures": self.parse_failures,
            "sandbox_failures": self.sandbox_failures,
            "actor_latency_p50_ms": round(statistics.median(lat), 3) if lat else 0.0,
            "actor_latency_max_ms": round(lat[-1], 3) if lat else 0.0,
            "compactions": ", ".join(f"{k}={v}" for k, v in sorted(self.compactions.items()))
            or "-",
            "teacher_metrics": self.metrics_path,
        }


@dataclass
class Actor:
    home: Path
    teacher: Teacher
    config: RefactorConfig
    prompts: PromptConfig
    repos: dict[str, Repo]
    extra_steps: int = 1
    seed: int = 0
    concurrency: int = 1
    redis_url: str | None = None  # dispatch tasks through Redis instead of SQLite
    compactor: Chat | None = None  # a model shortening states over budget (else rules)

    def __post_init__(self) -> None:
        self.config = self.config.for_home(self.home)
        self.store = StateStore(db_path(self.home))
        self.queue = StepQueue(self.store, self.redis_url)
        self.compactions: dict[str, int] = {}

    def close(self) -> None:
        self.store.close()

    def run_name(self, source: str, split: str) -> str:
        return f"{self.teacher.name}:{self.teacher.model}:{source}:{split}"

    async def run(self, tasks: list[RefactorTask], source: str, split: str) -> RunSummary:
        """Drive every accepted task of one partition; resumes a killed run."""
        run = self.run_name(source, split)
        by_id = {t.id: t for t in tasks if t.status == "accepted"}
        self.queue.enqueue(run, list(by_id))
        self.queue.recover(run)
        summary = RunSummary(run)
        metrics = TeacherMetrics("refactor", self.teacher.name, self.teacher.model)

        async def worker() -> None:
            # the queue and the store are used from this event-loop thread only; the jail
            # runs in worker threads, so `concurrency` tasks progress side by side
            while (task_id := self.queue.claim(run)) is not None:
                await self.run_task(run, by_id[task_id], summary, metrics)
                self.queue.finish(run, task_id)
                self.write_lake(source, split, set(by_id))
                summary.tasks += 1

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        self.write_lake(source, split, set(by_id))
        summary.compactions = dict(self.compactions)
        summary.metrics_path = str(metrics.write(self.home))
        return summary

    def write_lake(self, source: str, split: str, task_ids: set[str]) -> None:
        """Replace the partition with every committed step of its current tasks."""
        records = [r for r in self.queue.records(source, split) if r.task_id in task_ids]
        lake.write_records(
            TRAJECTORIES_LAKE,
            records,
            TrajectoryStep,
            lake.lake_root(self.home),
            source=source,
            split=split,
        )

    async def run_task(
        self,
        run: str,
        task: RefactorTask,
        summary: RunSummary,
        metrics: TeacherMetrics | None = None,
    ) -> None:
        key = state_key(task.id, self.teacher.name)
        done = self.queue.committed(run, task.id)
        if done and (done[-1].done or _crashed(done[-1])):
            return  # solved, or ended by a host-side error (its workspace state unknown)
        max_steps = len(task.reference_actions) + self.extra_steps
        step = len(done) + 1
        last = last_result(done[-1]) if done else ""
        try:
            ws = await asyncio.to_thread(
                prepare_workspace, task.id, self.repos[task.repo].path, self.config
            )
        except Exception as exc:  # noqa: BLE001 - no workspace (a container that would not
            # start, a corpus gone): this task's crash step, and the loop goes on
            log.exception("refactor actor: task %s: no workspace", task.id)
            self.crash_step(run, task, key, step, max_steps, last, exc)
            summary.steps += 1
            summary.sandbox_failures += 1
            if metrics is not None:  # a step that failed before the model was asked
                metrics.add(Attempt(task.source, task.split, False, 0.0))
            return
        try:
            await self._replay(ws, done)
            while step <= max_steps:
                record = await self.step(run, task, ws, key, step, max_steps, last)
                summary.steps += 1
                summary.verified += int(record.verified)
                summary.parse_failures += int(record.failure == "parse")
                summary.sandbox_failures += int(record.failure in ("crash", "disallowed"))
                summary.latencies_ms.append(record.latency_ms)
                if metrics is not None:  # a step is one attempt; tokens as the server said
                    used = getattr(self.teacher, "usage", {}).pop((task.id, step), (0, 0))
                    metrics.add(
                        Attempt(
                            task.source,
                            task.split,
                            record.verified,
                            record.latency_ms,
                            int(record.failure == "parse"),
                            *used,
                        )
                    )
                last = last_result(record)
                step += 1
                if record.done or _crashed(record):
                    break
        finally:
            try:
                await asyncio.to_thread(cleanup, ws)
            except Exception:  # noqa: BLE001 - one workspace's leftovers never end the loop
                log.exception("refactor actor: task %s: cleanup of %s failed", task.id, ws.root)

    def crash_step(
        self,
        run: str,
        task: RefactorTask,
        key: str,
        step: int,
        max_steps: int,
        last: str,
        exc: BaseException,
    ) -> TrajectoryStep:
        """Commit step `step` of `task` as a host-side crash before any answer (the teacher
        is not asked): reward 0, the error's class and message; the trajectory ends here."""
        state, _ = self.store.load(key)
        messages = render_messages(self.prompts, task, render(state), step, max_steps, last)
        record = TrajectoryStep(
            id=content_hash("refactor-step", run, task.id, step),
            task_id=task.id,
            source=task.source,
            split=task.split,
            step=step,
            prompt=prompt_text(messages),
            prompt_messages=messages,
            state_before=state.model_dump(),
            state_version=0,
            model_output=ModelOutput(),
            teacher=self.teacher.name,
            model=self.teacher.model,
            seed=self.seed + step,
            **crash_fields(exc),
        )
        self.queue.commit_step(run, record, key, state)
        return record

    async def _replay(self, ws: Workspace, done: list[TrajectoryStep]) -> None:
        """Rebuild the workspace of a resumed task from its committed steps."""
        for record in done:
            if record.sandbox_result.get("status") in RAN:
                await asyncio.to_thread(apply_action, ws, parse_action(record.model_output.action))
        if done and tree_hash(ws.snapshot()) != done[-1].tree_hash:
            raise RuntimeError(
                f"task {done[-1].task_id}: replaying {len(done)} committed steps gave another "
                "tree than recorded; cannot resume this trajectory"
            )

    async def step(
        self,
        run: str,
        task: RefactorTask,
        ws: Workspace,
        key: str,
        step: int,
        max_steps: int,
        last: str,
    ) -> TrajectoryStep:
        """One step of a trajectory: prompt, model, parse, state merge, the action in the jail,
        tests, reward, commit. Public because GRPO's refactor environment drives it too."""
        settings = self.config.state
        state, _ = self.store.load(key)
        try:
            messages = render_messages(
                self.prompts, task, render(state), step, max_steps, last, ws.tree
            )
        except Exception:  # noqa: BLE001 - the code the model left cannot be shown: no code
            log.exception("refactor actor: task %s step %d: code not shown", task.id, step)
            messages = render_messages(self.prompts, task, render(state), step, max_steps, last)
        seed = self.seed + step
        start = time.perf_counter()
        overflow = ""
        try:
            text = await self.teacher.respond(messages, task, step, state, seed)
        except ContextOverflow as exc:  # this step fails with its reason; the task goes on
            text, overflow = "", str(exc)
        latency = (time.perf_counter() - start) * 1000
        pre_failure: str | None = None
        message = ""
        sandbox: dict[str, Any] = {}
        tests: dict[str, Any] = {}
        new_state = state
        action: Any = None
        try:
            output = parse_output(text)
            action = parse_action(output.action)
            new_state = merge(
                state,
                parse_update(output.state_update, settings),
                settings,
                to_budget=self.compactor is None,
            )
        except ParseFailure as exc:
            output, pre_failure, message = ModelOutput(raw=text), "parse", str(exc)
        except ActionRejected as exc:
            pre_failure, message = exc.failure, str(exc)
        except StateError as exc:
            pre_failure, message = "schema", str(exc)
        if overflow:
            pre_failure = FAILURE_CLASS
            message = (
                overflow if overflow.startswith(FAILURE_CLASS) else f"{FAILURE_CLASS}: {overflow}"
            )
        if pre_failure is None and self.compactor is not None:
            new_state, how = await compact_with_model(new_state, settings, self.compactor)
            kind = "fallback" if how.startswith("rules (") else how
            self.compactions[kind] = self.compactions.get(kind, 0) + 1
        try:
            th, diff = await asyncio.to_thread(
                run_action, ws, task, pre_failure, action, sandbox, tests
            )
        except Exception as exc:  # noqa: BLE001 - any host-side failure is this step's crash
            log.exception("refactor actor: task %s step %d: host-side error", task.id, step)
            sandbox, tests, th, diff = host_error(exc), {}, "", ""
        reward = reward_of(task, pre_failure, sandbox, tests, th, diff)
        if message:
            sandbox["message"] = message
        if sandbox.get("status") == "host_error":
            tests = {}
        record = TrajectoryStep(
            id=content_hash("refactor-step", run, task.id, step),
            task_id=task.id,
            source=task.source,
            split=task.split,
            step=step,
            prompt=prompt_text(messages),
            prompt_messages=messages,
            state_before=state.model_dump(),
            state_version=0,
            model_output=output,
            sandbox_result=sandbox,
            tests=tests,
            diff_from_start=diff,
            tree_hash=th,
            reward=reward.value,
            failure=reward.failure,
            verified=reward.verified,
            done=reward.done,
            teacher=self.teacher.name,
            model=self.teacher.model,
            seed=seed,
            latency_ms=round(latency, 3),
        )
        try:
            self.queue.commit_step(run, record, key, new_state)
        except Exception as exc:  # noqa: BLE001 - e.g. a file name that is not UTF-8
            log.exception("refactor actor: task %s step %d: not committable", task.id, step)
            record = crash_record(record, exc)
            self.queue.commit_step(run, record, key, state)
        return record


def run_action(
    ws: Workspace,
    task: RefactorTask,
    pre_failure: str | None,
    action: Any,
    sandbox: dict[str, Any],
    tests: dict[str, Any],
) -> tuple[str, str]:
    """The action in the jail and, when it changed something, the verdict (scope, then the
    task's original tests on a clean copy: `verdict.verify_step`), filling `sandbox` and
    `tests`; returns the tree hash and the diff from the start. Shared with GRPO's scorer."""
    if pre_failure is None:
        result = apply_action(ws, action)
        sandbox.update(result.model_dump(mode="json", exclude={"diff"}))
        if result.status == "ok":
            verdict = verify_step(ws, task, TestSpec(argv=task.test_command))
            tests.update(verdict.record())
            return verdict.tree, verdict.diff
    snap = ws.snapshot()
    return tree_hash(snap), unified_diff(ws.baseline, snap, ws.budget.max_text_bytes)


def crash_record(record: TrajectoryStep, exc: BaseException) -> TrajectoryStep:
    """`record` as a crash step (reward 0, the error's class and message, no diff, no
    tests), every text made encodable: what is committed when `record` itself cannot be."""
    return TrajectoryStep(**{**_encodable(record.model_dump()), **crash_fields(exc)})


def crash_fields(exc: BaseException) -> dict[str, Any]:
    """What a crash step records, whatever it was before: reward 0, the error's class and
    message, no diff, no tests (one list for `crash_step` and `crash_record`)."""
    return {
        "sandbox_result": _encodable(host_error(exc)),
        "tests": {},
        "diff_from_start": "",
        "tree_hash": "",
        "reward": 0.0,
        "failure": "crash",
        "verified": False,
        "done": False,
    }


def _encodable(value: Any) -> Any:
    """Strings with lone surrogates (a non-UTF-8 file name) replaced, recursively."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    return value


def _crashed(record: TrajectoryStep) -> bool:
    return record.sandbox_result.get("status") == "host_error"


def host_error(exc: BaseException) -> dict[str, Any]:
    """The sandbox result of a step whose host side raised: the class and the message."""
    return {
        "status": "host_error",
        "error_class": type(exc).__name__,
        "message": f"host error: {type(exc).__name__}: {exc}"[:500],
    }


def last_result(record: TrajectoryStep) -> str:
    """The one-line result of a step the next prompt shows."""
    status = record.sandbox_result.get("status", "not run")
    changed = ", ".join(record.sandbox_result.get("files_changed", [])) or "none"
    tests = record.tests.get("status", "not run")
    failure = f"; failure: {record.failure}" if record.failure else ""
    return f"action {status}, files changed: {changed}, tests {tests}{failure}"


def read_tasks(home: Path, source: str, split: str) -> list[RefactorTask]:
    return lake.read_records(  # type: ignore[return-value]
        TASKS_LAKE, RefactorTask, lake.lake_root(home), source=source, split=split
    )


def run_partition(
    home: Path,
    source: str,
    split: str,
    teacher: Teacher | None = None,
    config: RefactorConfig | None = None,
    tasks: list[RefactorTask] | None = None,
    redis_url: str | None = None,
) -> RunSummary:
    config = config or load_refactor_config()
    actor = Actor(
        home=home,
        teacher=teacher or ProgramTeacher(),
        config=config,
        prompts=load_prompts(),
        repos={r.name: r for r in load_corpus(home=home, strict=False)},
        redis_url=redis_url,
    )
    close = None
    if actor.config.state.compaction_actor:
        chosen = load_actors().actor(actor.config.state.compaction_actor)
        actor.compactor, close = model_chat(chosen)

    async def run() -> RunSummary:
        try:
            return await actor.run(tasks or read_tasks(home, source, split), source, split)
        finally:
            if close is not None:
                await close()

    try:
        return asyncio.run(run())
    finally:
        actor.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", required=True, type=Path)
    parser.add_argument("--source", required=True)
    parser.add_argument("--split", required=True)
    parser.add_argument("--backend", choices=["bwrap", "docker", "none"])
    parser.add_argument("--redis-url", help="dispatch tasks through this Redis (default: SQLite)")
    args = parser.parse_args(argv)
    config = load_refactor_config()
    if args.backend:
        config = config.with_backend(args.backend)
    summary = run_partition(
        args.home, args.source, args.split, config=config, redis_url=args.redis_url
    )
    print(json.dumps(summary.metadata()))


if __name__ == "__main__":
    main()
