"""The refactor family's SFT rows: one chat per verified trajectory step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from verilearn_assets.core.family import SftRow
from verilearn_assets.core.records import Record
from verilearn_assets.refactor.records import TrajectoryStep

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
