"""The context budget: every prompt fits the served model's window, and losses are counted.

A prompt is a list of `BudgetMessage`s, each made of `Segment`s that know their kind and
how to shrink. `ContextBudget.fit` walks one fixed ladder of stages (`STAGES`, written
down in docs/context_budget.md), oldest material first inside each stage, and stops at
the first state that fits `window - max_tokens` as counted by the served tokenizer.
Kept whole, always: the instructions, the task (question), hook and submission records,
and the status line of the last tool output. Whatever still does not fit is an overflow:
the caller ends that one item with failure class `context_overflow` and goes on.

Families build segments from their own material (the analysis family in
`analysis/rollout/context.py`, the dafny teacher in `dafny/vllm_teacher.py`, the refactor
actor in `refactor/teachers.py`); `fewshot_chat` segments a system + examples + task chat,
`fit_chat` applies the policy to plain chat messages and `fit_sft` to training rows
(assistant turns never altered). Callers with a client send through
`VllmClient.chat_budgeted`, which fits, counts and raises `ContextOverflow`.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from verilearn_assets.core import lake
from verilearn_assets.core.config import StrictConfig
from verilearn_assets.core.llm.tokens import TokenCounter, has_tokenizer, load_counter
from verilearn_assets.core.records import Record, Source, Split, content_hash

log = logging.getLogger(__name__)

FAILURE_CLASS = "context_overflow"
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


class ContextOverflow(RuntimeError):
    """An item does not fit the model's window even after compression.

    Not an error of the run: the caller ends the item with failure class
    `context_overflow`, records `reason`, and goes on with the partition.
    """

    failure_class = FAILURE_CLASS


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

    status_line: str  # e.g. "[cell ok, 12 ms]": never cut
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


# --------------------------------------------------------------------------- results
@dataclass
class FitResult:
    """The fitted prompt and what fitting it cost."""

    messages: list[dict[str, str]]  # what to send (dropped messages left out)
    contents: list[str | None]  # per input message: its new content, None if dropped
    prompt_tokens: int  # by `counter`, after fitting
    original_tokens: int
    limit: int  # window - max_tokens
    counter: str
    messages_compressed: int = 0
    tokens_removed: dict[str, int] = field(default_factory=dict)  # by segment kind
    messages_by_kind: dict[str, int] = field(default_factory=dict)
    overflow: bool = False

    @property
    def reason(self) -> str:
        return (
            f"{FAILURE_CLASS}: the prompt needs {self.prompt_tokens} tokens after compression "
            f"({self.original_tokens} before), the budget is {self.limit} "
            f"(window minus max_tokens; counted by {self.counter})"
        )


@dataclass
class BudgetCounts:
    """Losses summed over many fits: what an asset partition reports."""

    requests: int = 0
    messages_compressed: Counter[str] = field(default_factory=Counter)  # by kind
    tokens_removed: Counter[str] = field(default_factory=Counter)  # by kind
    overflows: int = 0
    counter: str = ""

    def add(self, fit: FitResult) -> None:
        self.requests += 1
        self.messages_compressed.update(fit.messages_by_kind)
        self.tokens_removed.update(fit.tokens_removed)
        self.overflows += fit.overflow
        self.counter = self.counter or fit.counter

    def merge(self, other: BudgetCounts) -> None:
        self.requests += other.requests
        self.messages_compressed.update(other.messages_compressed)
        self.tokens_removed.update(other.tokens_removed)
        self.overflows += other.overflows
        self.counter = self.counter or other.counter

    def metadata(self) -> dict[str, Any]:
        """Flat figures for Dagster materialization metadata."""
        return {
            "context_requests": self.requests,
            "context_messages_compressed": sum(self.messages_compressed.values()),
            "context_tokens_removed": sum(self.tokens_removed.values()),
            "context_overflows": self.overflows,
            "context_counter": self.counter or "none (no budgeted request)",
            **{f"context_tokens_removed_{k}": v for k, v in sorted(self.tokens_removed.items())},
        }

    def records(
        self, family: str, asset: str, source: str, split: str
    ) -> list[ContextBudgetRecord]:
        """One row per kind compressed, plus a `context_overflow` row carrying overflows."""
        kinds = sorted(set(self.messages_compressed) | set(self.tokens_removed))
        rows = [
            (k, self.messages_compressed.get(k, 0), self.tokens_removed.get(k, 0), 0) for k in kinds
        ]
        rows.append((FAILURE_CLASS, 0, 0, self.overflows))
        return [
            ContextBudgetRecord(
                id=content_hash("context_budget", family, asset, source, split, kind),
                family=family,
                asset=asset,
                source=source,
                split=split,
                kind=kind,
                requests=self.requests,
                messages_compressed=mc,
                tokens_removed=tr,
                overflows=ov,
                counter=self.counter,
            )
            for kind, mc, tr, ov in rows
        ]


LAKE_ASSET = "context_budget"  # every family's rows; one lake partition per family asset


def lake_asset(family: str, asset: str) -> str:
    """Where one family asset's rows live: `context_budget/<family>/<asset>/source=/split=/`,
    read by `mart_context_budget` (so two assets never overwrite each other's rows)."""
    return f"{LAKE_ASSET}/{family}/{asset}"


class ContextBudgetRecord(Record):
    """Losses of one asset partition for one kind of material (lake `context_budget`)."""

    id: str
    family: str
    asset: str
    source: Source
    split: Split
    kind: str
    requests: int  # budgeted requests in the partition (same on every row)
    messages_compressed: int
    tokens_removed: int
    overflows: int
    counter: str


# --------------------------------------------------------------------------- the policy
class BudgetConfig(StrictConfig):
    """Where the window and the tokenizer come from when the server does not say."""

    max_model_len: int | None = Field(
        None, ge=16, description="window in tokens; None = what the server reports"
    )
    tokenizer_path: str | None = Field(
        None, description="directory with tokenizer.json; None = the served model's files"
    )
    estimate_bytes_per_token: float = Field(
        1.0, gt=0, description="estimate when no tokenizer is reachable (1.0 = safe bound)"
    )
    estimate_margin: float = Field(0.1, ge=0)


@dataclass
class ContextBudget:
    """Fit prompts into `window - max_tokens` tokens as `counter` counts them."""

    window: int
    max_tokens: int
    counter: TokenCounter
    window_source: str = "config"
    additive: bool = True  # search with per-message counts (False: whole prompts; a baseline)
    # text -> tokens, shared by the fits of one budget: a conversation grows turn by turn,
    # so most messages of the next prompt were counted for the last one
    _counts: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    _counted_chars: int = field(default=0, repr=False, compare=False)
    _per_role: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def count_text(self, text: str) -> int:
        """`counter.count_text`, remembered (up to ~16M characters of text, then reset)."""
        if text not in self._counts:
            if self._counted_chars > 16_000_000:
                self._counts.clear()
                self._counted_chars = 0
            self._counts[text] = self.counter.count_text(text)
            self._counted_chars += len(text)
        return self._counts[text]

    @property
    def limit(self) -> int:
        return self.window - self.max_tokens

    def fit(self, messages: Sequence[BudgetMessage]) -> FitResult:
        """Walk `STAGES` until the prompt fits; mark an overflow if it never does.

        The search counts each message's text on its own (cached by text) plus the
        template's cost per message, measured once; the result is then counted whole, and
        if the template joined tokens across messages the search goes on with that
        difference taken off the target. The reported count is always the whole one.
        """
        levels = [[0] * len(m.segments) for m in messages]

        def contents() -> list[str | None]:
            return _contents(messages, levels)

        def exact() -> int:
            return self.counter.count_chat(_chat(messages, contents()))

        approx = self._additive(messages, contents) if self.additive else None
        # the whole count when the prompt may fit as it is; else the additive one suffices
        # for `original_tokens`, which only reports how far over the budget it was
        if approx is None or approx() <= self.limit + 64:
            original = current = exact()
        else:
            original = current = approx()
        target = self.limit
        for _ in range(4):  # each round only compresses further
            if current <= self.limit:
                break
            if approx is None:
                current = self._compress(messages, levels, exact, target)
                break
            self._compress(messages, levels, approx, target)
            current = exact()
            target -= max(current - approx(), 1)
        return self._result(messages, levels, contents(), original, current)

    def _additive(
        self, messages: Sequence[BudgetMessage], contents: Callable[[], list[str | None]]
    ) -> Callable[[], int] | None:
        """A fast count: the template's cost per message plus each text's own count.

        None when the template cannot be probed with empty messages (then every step of
        the search counts the whole prompt).
        """
        count = self.counter.count_chat
        per_role = self._per_role
        try:
            for role in {m.role for m in messages} | {"user"}:
                if role not in per_role:
                    one = [{"role": role, "content": ""}]
                    per_role[role] = count(one * 2) - count(one)
            base = count([{"role": "user", "content": ""}]) - per_role["user"]
        except Exception as exc:  # a template that insists on alternating roles, say
            log.info("context budget: no additive count (%s); counting whole prompts", exc)
            return None

        def approx() -> int:
            total = base
            for m, text in zip(messages, contents(), strict=True):
                if text is not None:
                    total += per_role[m.role] + self.count_text(text)
            return total

        return approx

    def _compress(
        self,
        messages: Sequence[BudgetMessage],
        levels: list[list[int]],
        tokens: Callable[[], int],
        target: int,
    ) -> int:
        newest: dict[str, tuple[int, int]] = {}
        for mi, m in enumerate(messages):
            for si, s in enumerate(m.segments):
                newest[s.kind] = (mi, si)
        groups: dict[int, list[tuple[int, int]]] = {}  # segments that move together
        for mi, m in enumerate(messages):
            for si, s in enumerate(m.segments):
                group = getattr(s, "group", None)
                if group is not None:
                    groups.setdefault(group, []).append((mi, si))
        current = tokens()
        for stage in STAGES:
            done: set[int] = set()
            for mi, m in enumerate(messages):  # oldest first
                for si, seg in enumerate(m.segments):
                    reach = seg.stage_range(stage, newest.get(seg.kind) == (mi, si))
                    reach = range(max(reach.start, levels[mi][si] + 1), reach.stop)
                    group = getattr(seg, "group", None)
                    if not reach or group in done:
                        continue
                    where = [(mi, si)] if group is None else groups[group]
                    if group is not None:
                        done.add(group)
                    current = self._lowest_fitting(levels, where, reach, tokens, target)
                    if current <= target:
                        return current
        return current

    @staticmethod
    def _lowest_fitting(
        levels: list[list[int]],
        where: Sequence[tuple[int, int]],
        reach: range,
        tokens: Callable[[], int],
        target: int,
    ) -> int:
        """Set the segments to the lowest level in `reach` that fits, else the highest."""

        def put(level: int) -> None:
            for mi, si in where:
                levels[mi][si] = level

        lo, hi = reach.start, reach.stop - 1
        put(hi)
        best = tokens()
        if best > target:
            return best
        while lo < hi:  # renderings shrink with the level, so fitting is monotone
            mid = (lo + hi) // 2
            put(mid)
            n = tokens()
            if n <= target:
                hi, best = mid, n
            else:
                lo = mid + 1
        put(hi)
        return best

    def _result(
        self,
        messages: Sequence[BudgetMessage],
        levels: list[list[int]],
        texts: list[str | None],
        original: int,
        current: int,
    ) -> FitResult:
        removed: Counter[str] = Counter()
        by_kind: Counter[str] = Counter()
        compressed = 0
        for m, row in zip(messages, levels, strict=True):
            kinds = set()
            for s, lv in zip(m.segments, row, strict=True):
                if lv:
                    cut = self.count_text(s.render(0)) - self.count_text(s.render(lv))
                    removed[s.kind] += max(cut, 0)
                    kinds.add(s.kind)
            compressed += bool(kinds)
            by_kind.update(kinds)
        return FitResult(
            messages=_chat(messages, texts),
            contents=list(texts),
            prompt_tokens=current,
            original_tokens=original,
            limit=self.limit,
            counter=self.counter.name,
            messages_compressed=compressed,
            tokens_removed=dict(removed),
            messages_by_kind=dict(by_kind),
            overflow=current > self.limit,
        )

    def fit_chat(self, messages: Sequence[Mapping[str, str]]) -> FitResult:
        """The same policy over plain chat messages (e.g. SFT rows).

        System messages and the first user message (the task) are kept; later user/tool
        messages are tool outputs and earlier assistant messages replies, both
        middle-truncated; the last message is never cut.
        """
        seen_user = False
        out = []
        for i, m in enumerate(messages):
            role, text = m["role"], m["content"]
            last = i == len(messages) - 1
            if role == "system" or last or (role == "user" and not seen_user):
                seen_user = seen_user or role == "user"
                seg: Segment = Keep(text, "instructions" if role == "system" else "task")
            elif role == "assistant":
                seg = TextSegment(text, "reply")
            else:
                seg = TextSegment(text, "tool_output")
            out.append(BudgetMessage(role, [seg]))
        return self.fit(out)

    def fit_sft(self, messages: Sequence[Mapping[str, str]]) -> FitResult:
        """The ladder over a training row: only tool outputs shrink.

        System messages, the first user message (the task), every assistant turn (it
        carries the loss) and any other user message are kept byte for byte; tool outputs
        (`tool` messages, or later `user` ones that start with a status line such as
        `[cell ok, 3 ms]`) are middle-truncated, then summarized (status, submissions and
        error kept), the last one only at the end of the ladder; none is dropped, so no
        two assistant turns ever meet.
        """
        seen_user = False
        out = []
        for m in messages:
            role, text = m["role"], m["content"]
            looks_like_output = role == "tool" or (
                role == "user" and seen_user and _STATUS_LINE.match(text) is not None
            )
            seg: Segment
            if looks_like_output:
                seg = ToolOutputSegment(text, parse_tool_text(text), droppable=False)
            elif role == "assistant":
                seg = Keep(text, "reply")
            else:
                seg = Keep(text, "task" if role == "user" and not seen_user else "instructions")
            seen_user = seen_user or role == "user"
            out.append(BudgetMessage(role, [seg]))
        return self.fit(out)


_STATUS_LINE = re.compile(r"\[[^\]\n]{1,200}\]\s*(\n|$)")
_SECTION = re.compile(r"^(stdout|stderr|value):$")


def parse_tool_text(text: str) -> ToolView:
    """A `ToolView` from a rendered tool message (`[status]`, `stdout:`/`stderr:`/`value:`
    sections, `submitted:` lines): what a stored transcript or SFT row still has when the
    cell's observation is gone. Text in no section is one body."""
    lines = text.split("\n")
    status = lines[0] if _STATUS_LINE.match(text) else ""
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


def write_counts(
    counts: BudgetCounts, family: str, asset: str, root: Path, source: str, split: str
) -> Path:
    """One asset partition's losses into the lake rows `mart_context_budget` reads
    (replacing that partition's rows from an earlier run)."""
    return lake.write_records(
        lake_asset(family, asset),
        counts.records(family, asset, source, split),
        ContextBudgetRecord,
        root,
        source=source,
        split=split,
    )


def _contents(messages: Sequence[BudgetMessage], levels: list[list[int]]) -> list[str | None]:
    """Each message's text at `levels`; None for a message compression emptied (dropped)."""
    out: list[str | None] = []
    dropped = 0
    for m, row in zip(messages, levels, strict=True):
        parts = (s.render(lv) for s, lv in zip(m.segments, row, strict=True))
        text = m.sep.join(t for t in parts if t)
        if not text and any(row):
            out.append(None)
            dropped += 1
            continue
        if dropped:  # the first message after a dropped run says what is missing
            text = f"[context budget: {dropped} earlier messages omitted]\n{text}"
            dropped = 0
        out.append(text)
    return out


def _chat(messages: Sequence[BudgetMessage], texts: Sequence[str | None]) -> list[dict[str, str]]:
    pairs = zip(messages, texts, strict=True)
    return [{"role": m.role, "content": t} for m, t in pairs if t is not None]


def for_server(
    model_info: Mapping[str, Any] | None,
    max_tokens: int,
    cfg: BudgetConfig | None = None,
    *,
    local_model_dir: str | Path | None = None,
) -> ContextBudget | None:
    """A budget from what the server reports on `/v1/models` and from `cfg`.

    The window is the smaller of the server's `max_model_len` and the configured one
    (either may be missing; with neither there is no budget and None is returned). The
    tokenizer is the configured directory, else the server's model directory (`root`)
    when it is on this machine, else `local_model_dir` (the launched model), else the
    estimate.
    """
    cfg = cfg or BudgetConfig()
    reported = (model_info or {}).get("max_model_len")
    windows = [w for w in (reported, cfg.max_model_len) if isinstance(w, int)]
    if not windows:
        return None
    window = min(windows)
    source = "server" if reported == window else "config"
    if max_tokens >= window:
        raise ValueError(
            f"max_tokens {max_tokens} leaves no room for a prompt in the {window}-token window "
            f"({source}); lower sampling.max_tokens"
        )
    root = (model_info or {}).get("root")
    candidates = [cfg.tokenizer_path, root, local_model_dir]
    tokenizer_dir = next((c for c in candidates if c and has_tokenizer(c)), None)
    if cfg.tokenizer_path and tokenizer_dir != cfg.tokenizer_path:
        raise ValueError(f"budget.tokenizer_path {cfg.tokenizer_path!r} has no tokenizer.json")
    counter = load_counter(
        tokenizer_dir,
        bytes_per_token=cfg.estimate_bytes_per_token,
        margin=cfg.estimate_margin,
    )
    return ContextBudget(window, max_tokens, counter, source)
