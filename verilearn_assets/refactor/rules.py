"""The refactor family's blocking rules: plain functions of a `RuleContext`.

- task/trajectory schema contract (every record validates, partition columns match);
- every verified step reproduces: its trajectory's actions re-applied on a fresh workspace
  give the same diff at that step, and for a sample of them (`TEST_SAMPLE` per partition,
  chosen by step id) the task's original tests pass again on a clean copy of that tree;
- state caps hold at every step (texts, history, token budget);
- rewards recomputed from what each step recorded equal the stored ones;
- no task and no repository in two splits.
"""

from __future__ import annotations

from collections import defaultdict
from typing import cast

from verilearn_assets.core.contract import RuleContext, RuleOutcome
from verilearn_assets.core.records import SOURCES, SPLITS, content_hash
from verilearn_assets.refactor.config import load_refactor_config
from verilearn_assets.refactor.records import RefactorTask, TrajectoryStep
from verilearn_assets.refactor.rewards import recompute
from verilearn_assets.refactor.rollout.state import State, count_tokens, render
from verilearn_assets.refactor.sources.catalog import load_corpus
from verilearn_assets.refactor.verify.actions import ActionRejected, parse_action
from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace
from verilearn_assets.refactor.verify.verdict import verify_step

RAN = {"ok", "no_change", "failed", "timeout", "limit", "invalid_python"}


def _contract(ctx: RuleContext, which: str) -> tuple[list, list[str]]:
    try:
        records = ctx.tasks() if which == "tasks" else ctx.rollouts()
    except ValueError as exc:  # the lake names the file, record and field
        return [], [str(exc)]
    failures = []
    for r in records:
        if (r.source, r.split) != (ctx.source, ctx.split):
            failures.append(
                f"{which} {r.id}: in partition {ctx.source}/{ctx.split} "
                f"but says source={r.source} split={r.split}"
            )
    return records, failures


def task_schema(ctx: RuleContext) -> RuleOutcome:
    records, failures = _contract(ctx, "tasks")
    for t in cast(list[RefactorTask], records):
        if t.status not in ("accepted", "rejected"):
            failures.append(f"task {t.id}: status {t.status!r}")
        if t.status == "accepted" and not (t.target_diff and t.files and t.reference_actions):
            failures.append(f"task {t.id}: accepted without target diff, files or actions")
        if t.status == "rejected" and not t.reason:
            failures.append(f"task {t.id}: rejected without a reason")
    return RuleOutcome(rule="refactor_task_schema", checked=len(records), failures=failures)


def trajectory_schema(ctx: RuleContext) -> RuleOutcome:
    records, failures = _contract(ctx, "rollouts")
    tasks = {t.id for t in ctx.tasks()}
    seen: set[tuple[str, str, int]] = set()
    for s in cast(list[TrajectoryStep], records):
        if s.task_id not in tasks:
            failures.append(f"step {s.id}: task {s.task_id} is not in this partition")
        key = (s.task_id, s.teacher, s.step)
        if key in seen:
            failures.append(f"step {s.id}: step {s.step} of task {s.task_id} twice")
        seen.add(key)
        if s.verified and not (s.reward > 0 and s.tests.get("status") == "passed"):
            failures.append(
                f"step {s.id}: verified with reward {s.reward} and tests "
                f"{s.tests.get('status', 'not run')}"
            )
    return RuleOutcome(rule="refactor_trajectory_schema", checked=len(records), failures=failures)


def _trajectories(steps: list[TrajectoryStep]) -> dict[tuple[str, str, str], list[TrajectoryStep]]:
    out: dict[tuple[str, str, str], list[TrajectoryStep]] = defaultdict(list)
    for s in steps:
        out[(s.task_id, s.teacher, s.model)].append(s)
    return {k: sorted(v, key=lambda s: s.step) for k, v in out.items()}


TEST_SAMPLE = 20  # verified steps per partition whose tests the gate runs again


def test_sample(steps: list[TrajectoryStep], size: int = TEST_SAMPLE) -> set[str]:
    """The ids of the verified steps whose tests are re-run: the first `size` by a hash of
    the id (the same sample on every run, spread over tasks and teachers)."""
    verified = sorted((content_hash("gate-sample", s.id), s.id) for s in steps if s.verified)
    return {step_id for _, step_id in verified[:size]}


def steps_reproduce(ctx: RuleContext) -> RuleOutcome:
    """Re-apply each trajectory's recorded actions on a fresh workspace, in order; at every
    verified step the diff from the start must equal the recorded one, and for a sample of
    verified steps the task's original tests must pass on a clean copy of the replayed
    tree (`verdict.verify_step`, no cache): a recorded test status is not taken on trust."""
    steps = cast(list[TrajectoryStep], ctx.rollouts())
    tasks = {t.id: cast(RefactorTask, t) for t in ctx.tasks()}
    config = load_refactor_config().for_home(ctx.home)
    repos = {r.name: r for r in load_corpus(home=ctx.home, strict=False)}
    sample = test_sample(steps)
    failures: list[str] = []
    checked = 0
    for (task_id, _, _), trajectory in _trajectories(steps).items():
        if not any(s.verified for s in trajectory) or task_id not in tasks:
            continue
        task = tasks[task_id]
        ws = prepare_workspace(f"gate-{task_id}", repos[task.repo].path, config)
        try:
            for s in trajectory:
                if s.sandbox_result.get("status") in RAN:
                    try:
                        apply_action(ws, parse_action(s.model_output.action))
                    except ActionRejected as exc:
                        failures.append(f"step {s.id}: recorded action no longer valid: {exc}")
                        break
                if not s.verified:
                    continue
                checked += 1
                where = f"step {s.id} (task {task_id} step {s.step})"
                diff = ws.diff_from_start()
                if diff != s.diff_from_start:
                    failures.append(f"{where}: replay gives another diff")
                elif s.id in sample:
                    verdict = verify_step(ws, task, use_cache=False)
                    if verdict.scope is not None or verdict.status != "passed":
                        why = verdict.scope or f"tests {verdict.status}"
                        tail = verdict.tests.stdout.strip()[-300:] if verdict.tests else ""
                        failures.append(f"{where}: on a clean copy: {why} {tail}".rstrip())
        finally:
            cleanup(ws)
    return RuleOutcome(rule="refactor_steps_reproduce", checked=checked, failures=failures)


def state_caps(ctx: RuleContext) -> RuleOutcome:
    settings = load_refactor_config().state
    steps = cast(list[TrajectoryStep], ctx.rollouts())
    failures = []
    for s in steps:
        try:
            state = State.model_validate(s.state_before)
        except ValueError as exc:
            failures.append(f"step {s.id}: state_before breaks a cap: {exc}")
            continue
        tokens = count_tokens(render(state))
        if tokens > settings.token_budget:
            failures.append(
                f"step {s.id}: state renders to {tokens} tokens > {settings.token_budget}"
            )
        if len(state.history) > settings.history_cap:
            failures.append(f"step {s.id}: history has {len(state.history)} entries")
    return RuleOutcome(rule="refactor_state_caps", checked=len(steps), failures=failures)


def rewards_recompute(ctx: RuleContext) -> RuleOutcome:
    steps = cast(list[TrajectoryStep], ctx.rollouts())
    tasks = {t.id: cast(RefactorTask, t) for t in ctx.tasks()}
    failures = []
    for s in steps:
        if s.task_id not in tasks:
            failures.append(f"step {s.id}: no task {s.task_id} to recompute against")
            continue
        again = recompute(tasks[s.task_id], s)
        stored = (s.reward, s.failure, s.done, s.verified)
        if (again.value, again.failure, again.done, again.verified) != stored:
            failures.append(
                f"step {s.id}: stored reward {s.reward} ({s.failure}, verified={s.verified}) "
                f"but recomputed {again.value} ({again.failure}, verified={again.verified})"
            )
    return RuleOutcome(rule="refactor_rewards_recompute", checked=len(steps), failures=failures)


def one_split(ctx: RuleContext) -> RuleOutcome:
    """No task id and no repository appears under two splits (all partitions scanned)."""
    task_splits: dict[str, set[str]] = defaultdict(set)
    repo_splits: dict[str, set[str]] = defaultdict(set)
    checked = 0
    for source in SOURCES:
        for split in SPLITS:
            other = RuleContext(ctx.family, source, split, ctx.home)
            for t in cast(list[RefactorTask], other.tasks()):
                checked += 1
                task_splits[t.id].add(split)
                repo_splits[t.repo].add(split)
    failures = [f"task {k}: in splits {sorted(v)}" for k, v in task_splits.items() if len(v) > 1]
    failures += [f"repo {k}: in splits {sorted(v)}" for k, v in repo_splits.items() if len(v) > 1]
    return RuleOutcome(rule="refactor_one_split", checked=checked, failures=failures)
