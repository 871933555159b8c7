"""The toy family: one template source of arithmetic tasks, a verifier that accepts all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from verilearn_assets.core.contract import GateRule, RuleContext, RuleOutcome
from verilearn_assets.core.family import Family, SftRow
from verilearn_assets.core.records import Record, Source, Split, content_hash


class ToyTask(Record):
    id: str
    source: Source
    split: Split
    prompt: str
    answer: str
    status: Literal["accepted", "rejected"]


class ToyRollout(Record):
    id: str
    task_id: str
    source: Source
    split: Split
    reply: str
    verified: bool


def make_tasks(source: str, split: str, n: int = 3) -> list[ToyTask]:
    return [
        ToyTask(
            id=content_hash("toy", source, split, i),
            source=source,
            split=split,
            prompt=f"{i} + {i}?",
            answer=str(2 * i),
            status="accepted",
        )
        for i in range(n)
    ]


def roll_out(task: ToyTask) -> ToyRollout:
    return ToyRollout(
        id=content_hash("toy-rollout", task.id),
        task_id=task.id,
        source=task.source,
        split=task.split,
        reply=task.answer,
        verified=True,  # the always-true verifier
    )


def every_task_accepted(ctx: RuleContext) -> RuleOutcome:
    tasks = ctx.tasks()
    bad = [t.id for t in tasks if t.status != "accepted"]
    return RuleOutcome(rule="toy_tasks_accepted", checked=len(tasks), failures=bad)


def sft_rows(rollouts: Sequence[Record]) -> list[SftRow]:
    return [
        SftRow(
            id=SftRow.make_id("toy", r.id),
            family="toy",
            task_id=r.task_id,
            rollout_id=r.id,
            source=r.source,
            split=r.split,
            teacher="program",
            messages=[{"role": "assistant", "content": r.reply}],
            n_messages=1,
        )
        for r in rollouts
    ]


FAMILY = Family(
    name="toy",
    task_asset="tasks",
    rollout_asset="rollouts",
    task_model=ToyTask,
    rollout_model=ToyRollout,
    sft_rows=sft_rows,
    rules=(
        GateRule("toy_tasks_accepted", "tasks", every_task_accepted, "Every toy task accepted."),
    ),
    task_columns=("prompt", "answer"),
)
