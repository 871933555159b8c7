"""The analysis family's prompts as budget segments, so `ContextBudget.fit` can shrink them.

The system prompt splits into the rules (kept) and the table description (a
`TableSegment`); the question or exploration brief is the task (kept); tool messages are
rebuilt from the cells' observations so a truncation keeps the status line, submissions
and hook names; replies may be compacted to their reasoning and hook/submit lines.
Level 0 of every segment is the stored message byte for byte, so a prompt that fits is
sent unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from verilearn_assets.analysis.records import Message
from verilearn_assets.analysis.rollout.prompts import (
    Observation,
    cap_text,
    describe_column,
    status_line,
    steady,
    system_rules,
    table_head,
)
from verilearn_assets.core.llm.segments import (
    BudgetMessage,
    ColumnView,
    Keep,
    ReplySegment,
    Segment,
    TableSegment,
    ToolOutputSegment,
    ToolView,
)
from verilearn_assets.core.records import TableRecord


@dataclass(frozen=True)
class CellOutput:
    """What a tool message was built from: the observation and the hooks it recorded."""

    observation: Observation
    hook_names: tuple[str, ...]
    limit: int  # the tool message's character cap


def table_segment(table: TableRecord) -> TableSegment:
    columns = [
        ColumnView(
            name=repr(c.name),
            kind=c.kind,
            full=describe_column(c),
            short=f"- {c.name!r}: {c.kind}, {c.dtype}",
            missing_pct=c.missing_pct,
        )
        for c in table.columns
    ]
    return TableSegment(table_head(table), columns)


def tool_view(out: CellOutput) -> ToolView:
    obs = out.observation
    stdout, stderr, value = steady(obs.stdout), steady(obs.stderr), steady(obs.value_repr or "")
    sections = (("stdout", stdout), ("stderr", stderr), ("value", value))
    error_lines = [ln for ln in stderr.splitlines() if ln.strip()]
    return ToolView(
        status_line=status_line(obs),
        sections=tuple((n, b) for n, b in sections if b),
        submissions=tuple(cap_text(s, out.limit // 4) for s in obs.submissions),
        hooks=out.hook_names,
        error=cap_text(error_lines[-1], 200) if obs.status != "ok" and error_lines else "",
    )


def system_message(content: str, table: TableRecord, max_turns: int) -> BudgetMessage:
    """The system prompt as the rules (kept) and the table description (shrinkable)."""
    rules, table_seg = system_rules(max_turns), table_segment(table)
    msg = BudgetMessage("system", [Keep(rules, "instructions"), table_seg])
    if content != rules + msg.sep + table_seg.render(0):
        # not the prompt this module knows how to split: keep it whole rather than guess
        msg = BudgetMessage("system", [Keep(content, "instructions")])
    return msg


def budget_messages(
    messages: Sequence[Message],
    table: TableRecord,
    max_turns: int,
    outputs: Mapping[int, CellOutput],
) -> list[BudgetMessage]:
    """One `BudgetMessage` per transcript message, in order; `outputs` by tool turn."""
    out: list[BudgetMessage] = []
    for m in messages:
        role = m.role  # as `chat_messages` sends it
        seg: Segment
        if m.role == "system" and m.turn == 0:
            out.append(system_message(m.content, table, max_turns))
            continue
        if m.kind == "tool_output" and m.turn in outputs:
            seg = ToolOutputSegment(m.content, tool_view(outputs[m.turn]))
        elif m.kind == "reply":
            seg = ReplySegment(m.content)
        elif m.kind == "rejected_reply":
            seg = ReplySegment(m.content, rejected=True)
        elif m.kind == "prompt" and m.role == "user":
            seg = Keep(m.content, "task")
        else:  # re-prompts and anything unknown: short instructions, kept
            seg = Keep(m.content, "instructions")
        out.append(BudgetMessage(role, [seg]))
    return out
