"""Step rewards, a pure function of the task and what the step recorded (so the gate can
recompute every stored reward).

- 1.0: the workspace equals the target tree and the tests pass;
- partial, at most `PARTIAL_CAP`: a valid action, tests passing, that moves toward the
  target — `PARTIAL_CAP × k/N` when the tree equals the reference tree after k of N steps,
  else `PARTIAL_CAP ×` the share of the target diff's lines now present, when the step's
  diff holds no line the target does not (`diff_progress`);
- 0 with a failure class otherwise: parse, schema, disallowed, crash, tests_fail,
  no_change, wrong_change, and `out_of_scope` / `tests_edited` (a file outside the task's
  files changed, a test file the task changes is not in its target form:
  `verdict.scope_failure`, checked before the tests count).

The tests are the verdict's (`verdict.verify_step`): the task's original tests on a clean
copy of the visible tree. A step is **verified** only when it *reached* a tree of the
task, the target or the reference tree after one of its steps, with those tests passing;
partial credit by diff progress stays a reward, never a verified step.
"""

from __future__ import annotations

from dataclasses import dataclass

from verilearn_assets.refactor.records import RefactorTask, TrajectoryStep
from verilearn_assets.refactor.verify.verdict import scope_failure

PARTIAL_CAP = 0.5
FAILURES = (
    "parse",
    "schema",
    "disallowed",
    "crash",
    "tests_fail",
    "no_change",
    "wrong_change",
    "out_of_scope",
    "tests_edited",
)
# `host_error`: the host side raised on this step's answer (the actor and the GRPO scorer
# record it as a crash and go on)
CRASH_STATUSES = {"failed", "timeout", "limit", "host_error"}


@dataclass(frozen=True)
class Reward:
    value: float
    failure: str | None
    done: bool
    reached: bool = False  # the tree is the target or a reference step's, tests passing

    @property
    def verified(self) -> bool:
        return self.value > 0 and self.reached


def _changed_lines(diff: str) -> set[str]:
    out: set[str] = set()
    current = ""
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")):
            current = line[4:] if line.startswith("+++ ") else current
            continue
        if line.startswith(("+", "-")):
            out.add(f"{current}\0{line}")
    return out


def diff_progress(target_diff: str, diff: str) -> float:
    """The share of the target diff's changed lines the step's diff holds, 0 when it holds
    any line the target does not: code of the model's own in a file under test runs in the
    test process (`os._exit(0)` at import passes any suite), so only a sub-diff of the
    target can earn partial credit."""
    target = _changed_lines(target_diff)
    if not target:
        return 0.0
    got = _changed_lines(diff)
    if got - target:
        return 0.0
    return len(got & target) / len(target)


def compute_reward(
    task: RefactorTask,
    pre_failure: str | None,
    sandbox_status: str | None,
    tests_status: str | None,
    tree_hash: str,
    diff_from_start: str,
    scope: str | None = None,
) -> Reward:
    """`scope`: the verdict's scope failure as recorded (`out_of_scope`, `tests_edited`);
    the recorded diff is checked again here, so a stored step cannot claim less."""
    if pre_failure is not None:
        return Reward(0.0, pre_failure, False)
    if sandbox_status == "disallowed":
        return Reward(0.0, "disallowed", False)
    if sandbox_status in CRASH_STATUSES:
        return Reward(0.0, "crash", False)
    if sandbox_status == "invalid_python":
        return Reward(0.0, "wrong_change", False)
    if sandbox_status == "no_change":
        return Reward(0.0, "no_change", False)
    if scope is None:
        scope, _ = scope_failure(task, diff_from_start, tree_hash)
    if scope is not None:
        return Reward(0.0, scope, False)
    if tests_status != "passed":
        return Reward(0.0, "tests_fail", False)
    if tree_hash == task.target_tree:
        return Reward(1.0, None, True, reached=True)
    n = len(task.step_trees)
    if tree_hash in task.step_trees[:-1]:
        k = task.step_trees.index(tree_hash) + 1
        return Reward(round(PARTIAL_CAP * k / n, 6), None, False, reached=True)
    progress = diff_progress(task.target_diff, diff_from_start)
    if progress > 0:
        return Reward(round(PARTIAL_CAP * min(progress, 1.0), 6), None, False)
    return Reward(0.0, "wrong_change", False)


def reward_of(
    task: RefactorTask,
    pre_failure: str | None,
    sandbox: dict,
    tests: dict,
    tree_hash: str,
    diff_from_start: str,
) -> Reward:
    """`compute_reward` from a step's sandbox and test results as they are recorded: the
    actor, the GRPO scorer and `recompute` read the same fields the same way."""
    return compute_reward(
        task,
        pre_failure,
        sandbox.get("status"),
        tests.get("status"),
        tree_hash,
        diff_from_start,
        tests.get("scope"),
    )


def recompute(task: RefactorTask, step: TrajectoryStep) -> Reward:
    """The reward a stored step should have, from what it recorded (gate and tests)."""
    ran = "status" in step.sandbox_result
    pre_failure = None if ran else step.failure
    return reward_of(
        task, pre_failure, step.sandbox_result, step.tests, step.tree_hash, step.diff_from_start
    )
