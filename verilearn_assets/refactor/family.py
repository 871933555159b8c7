"""The refactor family as the platform sees it: tasks, trajectories, blocking rules, SFT rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from verilearn_assets.core.contract import GateRule
from verilearn_assets.core.family import Family, GrpoTask, SftRow
from verilearn_assets.core.records import Record
from verilearn_assets.refactor import gate_rules
from verilearn_assets.refactor.grpo import (
    RefactorScorer,
    grpo_environment,
    grpo_pass_rates,
    grpo_prompts,
    grpo_stop,
)
from verilearn_assets.refactor.records import RefactorTask, TrajectoryStep
from verilearn_assets.refactor.repos.records import PROFILE_LAKE, RepoProfileRow

NAME = "refactor"


def assistant_turn(step: TrajectoryStep) -> str:
    out = step.model_output
    return (
        f"<think>{out.think}</think>\n<action>{out.action}</action>\n"
        f"<state_update>{out.state_update}</state_update>"
    )


def sft_rows(rollouts: Sequence[Record]) -> list[SftRow]:
    """One row per verified step (a tree of the task reached with its original tests passing
    on a clean copy; partial credit alone makes no row): the prompt the teacher saw, then
    its three-block answer."""
    rows = []
    for step in cast(Sequence[TrajectoryStep], rollouts):
        if not step.verified:
            continue
        messages = [*step.prompt_messages, {"role": "assistant", "content": assistant_turn(step)}]
        rows.append(
            SftRow(
                id=SftRow.make_id(NAME, step.id),
                family=NAME,
                task_id=step.task_id,
                rollout_id=step.id,
                source=step.source,
                split=step.split,
                teacher=step.teacher,
                messages=messages,
                n_messages=len(messages),
                weight=step.reward,
            )
        )
    return rows


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
    extra={"lake_models": {PROFILE_LAKE: RepoProfileRow}},  # real repositories (repos/)
    rules=(
        GateRule(
            "refactor_task_schema",
            "tasks",
            gate_rules.task_schema,
            "Every task validates, sits in its own partition, and accepted tasks carry a "
            "target diff, files and reference actions; rejected ones a reason.",
        ),
        GateRule(
            "refactor_one_split",
            "tasks",
            gate_rules.one_split,
            "No task and no repository appears in two splits.",
        ),
        GateRule(
            "refactor_trajectory_schema",
            "rollouts",
            gate_rules.trajectory_schema,
            "Every step validates, belongs to a task of its partition, is not duplicated, "
            "and is verified only with a positive reward and its tests passing.",
        ),
        GateRule(
            "refactor_steps_reproduce",
            "rollouts",
            gate_rules.steps_reproduce,
            "Every verified step reproduces: the trajectory's actions re-applied in a "
            "fresh jailed workspace give the recorded diff, and for a sample the task's "
            "original tests pass again on a clean copy of the tree.",
            needs_jail=True,
        ),
        GateRule(
            "refactor_state_caps",
            "rollouts",
            gate_rules.state_caps,
            "The state before every step respects the text, history and token caps.",
        ),
        GateRule(
            "refactor_rewards_recompute",
            "rollouts",
            gate_rules.rewards_recompute,
            "Rewards recomputed from what each step recorded equal the stored ones.",
        ),
    ),
    grpo=GrpoTask(
        grpo_prompts,
        RefactorScorer,
        pass_rates=grpo_pass_rates,
        environment=grpo_environment,
        stop=grpo_stop,
    ),
)
