"""The refactor family as the platform sees it: tasks, trajectories, blocking rules, SFT rows."""

from __future__ import annotations

from pathlib import Path

from verilearn_assets.core.contract import GateRule
from verilearn_assets.core.family import Family, GrpoTask
from verilearn_assets.refactor.grpo import (
    RefactorScorer,
    grpo_environment,
    grpo_pass_rates,
    grpo_prompts,
    grpo_stop,
)
from verilearn_assets.refactor.records import RefactorTask, TrajectoryStep
from verilearn_assets.refactor.rules import (
    one_split,
    rewards_recompute,
    state_caps,
    steps_reproduce,
    task_schema,
    trajectory_schema,
)
from verilearn_assets.refactor.sft import NAME, sft_rows
from verilearn_assets.refactor.sources.repos.records import PROFILE_LAKE, RepoProfileRow


def pass_rates(home: Path, split: str) -> dict[str, float]:
    """The GRPO curriculum hook, given this family (its lake readers)."""
    return grpo_pass_rates(FAMILY, home, split)


FAMILY = Family(
    name=NAME,
    task_asset="tasks",
    rollout_asset="trajectories",
    task_model=RefactorTask,
    rollout_model=TrajectoryStep,
    sft_rows=sft_rows,
    description="ast-grep refactoring tasks run in a jail; verified SRL trajectories.",
    task_columns=("repo", "rules", "instruction"),
    rollout_columns=("task_id", "step", "teacher", "reward", "failure"),
    extra={"lake_models": {PROFILE_LAKE: RepoProfileRow}},  # real repositories (sources/repos/)
    rules=(
        GateRule(
            "refactor_task_schema",
            "tasks",
            task_schema,
            "Every task validates, sits in its own partition, and accepted tasks carry a "
            "target diff, files and reference actions; rejected ones a reason.",
        ),
        GateRule(
            "refactor_one_split",
            "tasks",
            one_split,
            "No task and no repository appears in two splits.",
        ),
        GateRule(
            "refactor_trajectory_schema",
            "rollouts",
            trajectory_schema,
            "Every step validates, belongs to a task of its partition, is not duplicated, "
            "and is verified only with a positive reward and its tests passing.",
        ),
        GateRule(
            "refactor_steps_reproduce",
            "rollouts",
            steps_reproduce,
            "Every verified step reproduces: the trajectory's actions re-applied in a "
            "fresh jailed workspace give the recorded diff, and for a sample the task's "
            "original tests pass again on a clean copy of the tree.",
            needs_jail=True,
        ),
        GateRule(
            "refactor_state_caps",
            "rollouts",
            state_caps,
            "The state before every step respects the text, history and token caps.",
        ),
        GateRule(
            "refactor_rewards_recompute",
            "rollouts",
            rewards_recompute,
            "Rewards recomputed from what each step recorded equal the stored ones.",
        ),
    ),
    grpo=GrpoTask(
        grpo_prompts,
        RefactorScorer,
        pass_rates=pass_rates,
        environment=grpo_environment,
        stop=grpo_stop,
    ),
)
