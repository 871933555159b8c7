"""The pieces a prompt is made of, and how each may shrink under the context budget.

A prompt is a list of `BudgetMessage`s, each made of `Segment`s that know their kind and
how to shrink: a segment has renderings (level 0 the original text) and says which levels
each stage of the ladder (`STAGES`, written down in docs/context_budget.md) may move it to.
Families build segments from their own material (the analysis family in
`analysis/rollout/context.py`, the dafny teacher in `dafny/rollout/vllm_teacher.py`, the refactor
actor in `refactor/rollout/teachers.py`); `fewshot_chat` segments a system + examples + task chat.
Fitting them into a window is `fit.py`; what fitting cost, in the lake, `budget_records.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

TRUNCATION_MARK = "…[{n} characters truncated]…"  # the marker tool outputs already use
MIN_BODY_CHARS = 120  # a truncated body keeps at least this much of its head and tail

Kind = Literal[
    "instructions",
    "task",
    "table",
    "tool_output",
    "reply",
    "rejected_reply",
    "fewshot",
    "state",  # an agent's working state (refactor `<state>` block)
    "context",  # reference material beside the task (dafny declarations, a code excerpt)
    "text",
]
# Stage names, in the order they are tried; each applies to segments of one kind.
STAGES: tuple[str, ...] = (
    "rejected_reply_omit",  # older replies that could not run: a one-line marker
    "tool_output_truncate",  # older tool outputs: middle-truncated, oldest first
    "table_stats",  # table: per-column statistics dropped, rarest columns first
    "tool_output_summary",  # older tool outputs: one line (status, submissions, hooks, error)
    "fewshot_drop",  # few-shot examples dropped, oldest first (a user/assistant pair at once)
    "state_compact",  # agent state: oldest hypotheses, open issues, decisions, history dropped
    "reply_compact",  # older replies: code middle cut, hook/submit lines kept
    "table_names",  # table: rare columns reduced to name and kind on one line
    "turn_drop",  # older replies and outputs with no hook, submission or error: dropped
    "context_truncate",  # reference material beside the task: middle-truncated
    "last_tool_output_truncate",  # the last tool output's body (status line stays)
    "table_omit",  # last resort: rarest columns' names omitted, with their count
)


def cap_text(text: str, limit: int) -> str:
    """Keep the head (2/3) and tail (1/3) of `text`, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    mark_len = len(TRUNCATION_MARK.format(n=len(text)))
    keep = max(limit - mark_len, 0)
    head, tail = keep - keep // 3, keep // 3
    cut = len(text) - head - tail
    return text[:head] + TRUNCATION_MARK.format(n=cut) + (text[-tail:] if tail else "")


# --------------------------------------------------------------------------- segments
class Segment:
    """A piece of a message with `levels` renderings; level 0 is the original text.

    `stage_range(stage)` says which levels a stage may move the segment to; renderings
    never grow as the level rises.
    """

    kind: Kind = "text"
    levels: int = 1

    def render(self, level: int) -> str:
        raise NotImplementedError

    def stage_range(self, stage: str, last: bool) -> range:
        """Levels reachable in `stage`; `last` is True for the newest segment of its kind."""
        return range(0)


@dataclass
class Keep(Segment):
    """Never cut: instructions, the task, hook/submission records."""

    text: str
    kind: Kind = "instructions"

    def render(self, level: int) -> str:
        return self.text


@dataclass(frozen=True)
class ColumnView:
    """One column as a table description shows it, full and without statistics."""

    name: str
    kind: str
    full: str  # the complete description line
    short: str  # the line without per-column statistics
    missing_pct: float = 0.0


class TableSegment(Segment):
    """A table description: a head line, then one line per column.

    Columns degrade rarest first (most missing values, then from the end of the table):
    statistics dropped; then moved to one compact `name: kind` line; then omitted with a
    count. Level = stage offset + number of columns degraded in that stage.
    """

    kind: Kind = "table"

    def __init__(self, head: str, columns: Sequence[ColumnView]) -> None:
        self.head = head
        self.columns = list(columns)
        n = len(self.columns)
        order = sorted(range(n), key=lambda i: (-self.columns[i].missing_pct, -i))
        self.rank = {col: r for r, col in enumerate(order)}  # 0 = degraded first
        self.levels = 3 * n + 1

    def stage_range(self, stage: str, last: bool) -> range:
        n = len(self.columns)
        offset = {"table_stats": 0, "table_names": n, "table_omit": 2 * n}.get(stage)
        return range(0) if offset is None else range(offset + 1, offset + n + 1)

    def render(self, level: int) -> str:
        n = len(self.columns)
        stats = min(level, n)
        named = min(max(level - n, 0), n)
        omitted = min(max(level - 2 * n, 0), n)
        lines = [self.head, "Columns:"]
        compact, hidden = [], 0
        for i, col in enumerate(self.columns):
            r = self.rank[i]
            if r < omitted:
                hidden += 1
            elif r < named:
                compact.append(f"{col.name}: {col.kind}")
            else:
                lines.append(col.short if r < stats else col.full)
        notes = []
        if stats:
            notes.append(f"per-column statistics dropped for {stats} of {n} columns")
        if compact:
            lines.append("More columns (name: kind): " + ", ".join(compact))
            notes.append(f"{len(compact)} columns shown by name and kind only")
        if hidden:
            notes.append(f"{hidden} columns not listed (inspect df.columns)")
        if notes:
            lines.append("[context budget: " + "; ".join(notes) + "]")
        return "\n".join(lines)


@dataclass(frozen=True)
class ToolView:
    """One tool output's parts: what a truncation may shorten and what it must keep."""

    status_line: str  # e.g. "[cell ok]": never cut
    sections: tuple[tuple[str, str], ...]  # (name, body): stdout, stderr, value
    submissions: tuple[str, ...] = ()  # submission records: never cut
    hooks: tuple[str, ...] = ()  # names of the hooks the cell recorded: never cut
    error: str = ""  # last line of the error, kept in the summary


def _limits(length: int) -> list[int]:
    """Character budgets for successive truncations of a body of `length`."""
    out, limit = [], length // 2
    while limit > MIN_BODY_CHARS:
        out.append(limit)
        limit //= 2
    return out + [MIN_BODY_CHARS] if length > MIN_BODY_CHARS else out


class ToolOutputSegment(Segment):
    """A tool message: original; middle-truncated at halving budgets; a one-line summary;
    dropped (only when it holds no submission, hook or error)."""

    kind: Kind = "tool_output"

    def __init__(self, original: str, view: ToolView, droppable: bool = True) -> None:
        """`droppable=False` keeps at least the summary (SFT rows: a dropped output would
        leave two assistant turns side by side)."""
        self.original = original
        self.view = view
        body = sum(len(b) for _, b in view.sections)
        self.limits = _limits(body)
        self.summary_level = len(self.limits) + 1
        self.droppable = droppable and not (view.submissions or view.hooks or view.error)
        self.levels = self.summary_level + 1 + self.droppable

    def stage_range(self, stage: str, last: bool) -> range:
        trunc = range(1, len(self.limits) + 1)
        if stage == "tool_output_truncate" and not last:
            return trunc
        if stage == "tool_output_summary" and not last:
            return range(self.summary_level, self.summary_level + 1)
        if stage == "turn_drop" and not last and self.droppable:
            return range(self.summary_level + 1, self.summary_level + 2)
        if stage == "last_tool_output_truncate" and last:
            return trunc
        return range(0)

    def render(self, level: int) -> str:
        v = self.view
        if level == 0:
            return self.original
        if level > self.summary_level:
            return ""
        if level == self.summary_level:
            return self.summary()
        budget = self.limits[level - 1]
        lines = [v.status_line]
        present = [(n, b) for n, b in v.sections if b]
        for i, (name, body) in enumerate(present):
            share = budget // (len(present) - i)
            shown = cap_text(body.rstrip("\n"), max(share, 40))
            budget -= len(shown)
            lines.append(f"{name}:\n{shown}")
        lines.extend(f"submitted: {s}" for s in v.submissions)
        return "\n".join(lines)

    def summary(self) -> str:
        """One line: status, how much was cut, hook names, the error; then submissions."""
        v = self.view
        size = sum(len(b) for _, b in v.sections)
        parts = [f"{v.status_line.rstrip(']')}; {size} chars of output cut"]
        if v.hooks:
            parts.append("hooks: " + ", ".join(v.hooks))
        if v.error:
            parts.append(f"error: {v.error}")
        line = "; ".join(parts) + "]"
        return "\n".join([line, *(f"submitted: {s}" for s in v.submissions)])


class TextSegment(Segment):
    """Free text that may be middle-truncated (older chat turns in `fit_chat`)."""

    def __init__(self, text: str, kind: Kind = "text") -> None:
        self.text = text
        self.kind = kind
        self.limits = _limits(len(text))
        self.levels = len(self.limits) + 1

    def stage_range(self, stage: str, last: bool) -> range:
        if self.kind == "tool_output" and stage == (
            "last_tool_output_truncate" if last else "tool_output_truncate"
        ):
            return range(1, self.levels)
        if stage == "reply_compact" and self.kind == "reply" and not last:
            return range(1, self.levels)
        if stage == "context_truncate" and self.kind == "context":
            return range(1, self.levels)
        return range(0)

    def render(self, level: int) -> str:
        return self.text if level == 0 else cap_text(self.text, self.limits[level - 1])


class RenderingsSegment(Segment):
    """A segment the family renders at each level itself (renderings[0] is the original,
    each next one no longer), reached in one `stage`: e.g. the refactor state with its
    oldest items dropped one by one, each rendering saying what it left out."""

    def __init__(self, renderings: Sequence[str], kind: Kind, stage: str) -> None:
        if not renderings:
            raise ValueError("RenderingsSegment needs at least the original rendering")
        if stage not in STAGES:
            raise ValueError(f"unknown budget stage {stage!r} (one of {STAGES})")
        self.renderings = list(renderings)
        self.kind = kind
        self.stage = stage
        self.levels = len(self.renderings)

    def stage_range(self, stage: str, last: bool) -> range:
        return range(1, self.levels) if stage == self.stage else range(0)

    def render(self, level: int) -> str:
        return self.renderings[level]


KEEP_LINE = ("hook(", "submit(")


class ReplySegment(Segment):
    """An older assistant reply: compacted to its reasoning and hook/submit lines, then
    dropped when it has none of those."""

    kind: Kind = "reply"

    def __init__(self, text: str, rejected: bool = False) -> None:
        self.text = text
        self.rejected = rejected
        self.kind = "rejected_reply" if rejected else "reply"
        self.droppable = not rejected and not any(k in text for k in KEEP_LINE)
        self.levels = 2 + self.droppable

    def stage_range(self, stage: str, last: bool) -> range:
        if self.rejected and stage == "rejected_reply_omit":
            return range(1, 2)  # even the newest: it is already answered by a re-prompt
        if last or self.rejected:
            return range(0)
        if stage == "reply_compact":
            return range(1, 2)
        if stage == "turn_drop" and self.droppable:
            return range(2, 3)
        return range(0)

    def render(self, level: int) -> str:
        if level == 0:
            return self.text
        if level == 2:
            return ""
        if self.rejected:
            return f"[a reply of {len(self.text)} characters that could not be run, omitted]"
        lines = self.text.splitlines()
        kept = [
            ln
            for i, ln in enumerate(lines)
            if i == 0 or ln.startswith("```") or any(k in ln for k in KEEP_LINE)
        ]
        cut = len(lines) - len(kept)
        if cut <= 0:
            return self.text
        # the cut lines go where the code was: after the opening fence
        fence = next((i for i, ln in enumerate(kept) if ln.startswith("```")), len(kept) - 1)
        marker = f"# …[{cut} lines cut]…"
        compact = "\n".join(kept[: fence + 1] + [marker] + kept[fence + 1 :])
        return compact if len(compact) < len(self.text) else self.text


@dataclass
class FewShotSegment(Segment):
    """A worked example: whole, or dropped (its message disappears). Segments sharing a
    `group` (the user and assistant halves of one example) are dropped together."""

    text: str
    kind: Kind = "fewshot"
    levels: int = 2
    group: int | None = None

    def stage_range(self, stage: str, last: bool) -> range:
        return range(1, 2) if stage == "fewshot_drop" else range(0)

    def render(self, level: int) -> str:
        return self.text if level == 0 else ""


@dataclass
class BudgetMessage:
    """One chat message as segments joined by `sep`; empty after compression = dropped."""

    role: str
    segments: list[Segment]
    sep: str = "\n\n"


STATUS_LINE = re.compile(r"\[[^\]\n]{1,200}\]\s*(\n|$)")
_SECTION = re.compile(r"^(stdout|stderr|value):$")


def parse_tool_text(text: str) -> ToolView:
    """A `ToolView` from a rendered tool message (`[status]`, `stdout:`/`stderr:`/`value:`
    sections, `submitted:` lines): what a stored transcript or SFT row still has when the
    cell's observation is gone. Text in no section is one body."""
    lines = text.split("\n")
    status = lines[0] if STATUS_LINE.match(text) else ""
    rest = lines[1:] if status else lines
    submissions = tuple(
        ln.removeprefix("submitted: ") for ln in rest if ln.startswith("submitted: ")
    )
    sections: list[tuple[str, list[str]]] = []
    for ln in rest:
        if ln.startswith("submitted: "):
            continue
        header = _SECTION.match(ln)
        if header:
            sections.append((header.group(1), []))
        elif sections:
            sections[-1][1].append(ln)
        else:
            sections.append(("output", [ln]))
    bodies = tuple((name, "\n".join(body)) for name, body in sections if any(body))
    stderr = [ln for name, body in bodies if name == "stderr" for ln in body.splitlines()]
    failed = bool(status) and " ok," not in status and "ok]" not in status
    error = cap_text(next((ln for ln in reversed(stderr) if ln.strip()), ""), 200)
    return ToolView(
        status_line=status or "[tool output]",
        sections=bodies,
        submissions=submissions,
        error=error if failed else "",
    )


def fewshot_chat(
    messages: Sequence[Mapping[str, str]], task: Sequence[Segment] | None = None
) -> list[BudgetMessage]:
    """System + worked examples + task: the system messages are kept, the messages between
    them and the last one are few-shot examples (user/assistant pairs dropped together),
    the last message is the task, kept whole unless the caller gives its `task` segments
    (joined with no separator, so level 0 is the message byte for byte)."""
    out: list[BudgetMessage] = []
    body = list(messages)
    last = body.pop() if body else None
    pair = 0
    for m in body:
        if m["role"] == "system" and pair == 0:
            out.append(BudgetMessage("system", [Keep(m["content"], "instructions")]))
            continue
        if m["role"] == "user":
            pair += 1
        out.append(BudgetMessage(m["role"], [FewShotSegment(m["content"], group=pair)]))
    if last is not None:
        segs = list(task) if task is not None else [Keep(last["content"], "task")]
        if task is not None and "".join(s.render(0) for s in segs) != last["content"]:
            raise ValueError("fewshot_chat: the task segments do not spell the last message")
        out.append(BudgetMessage(last["role"], segs, sep=""))
    return out


def split_around(text: str, part: str, segment: Segment, kind: Kind = "task") -> list[Segment]:
    """`text` as [Keep(before), segment, Keep(after)] around the first occurrence of `part`
    (join with sep ""); the whole text kept when `part` is empty or absent."""
    at = text.find(part) if part else -1
    if at < 0:
        return [Keep(text, kind)]
    before, after = text[:at], text[at + len(part) :]
    return [Keep(before, kind), segment, Keep(after, kind)]


def plain(messages: Sequence[BudgetMessage]) -> list[dict[str, str]]:
    """The messages unfitted (every segment at level 0): what goes out with no budget."""
    return [
        {"role": m.role, "content": m.sep.join(s.render(0) for s in m.segments)} for m in messages
    ]


def keep_all(messages: Sequence[Mapping[str, str]]) -> list[BudgetMessage]:
    """Plain messages as segments nothing may cut: fitted, they fit or overflow."""
    return [
        BudgetMessage(
            m["role"], [Keep(m["content"], "instructions" if m["role"] == "system" else "task")]
        )
        for m in messages
    ]
