"""The context budget: every prompt fits the served model's window, and losses are counted.

`ContextBudget.fit` walks one fixed ladder of stages (`STAGES` of `segments.py`, written
down in docs/context_budget.md), oldest material first inside each stage, and stops at
the first state that fits `window - max_tokens` as counted by the served tokenizer.
Kept whole, always: the instructions, the task (question), hook and submission records,
and the status line of the last tool output. Whatever still does not fit is an overflow:
the caller ends that one item with failure class `context_overflow` and goes on.

`fit_chat` applies the policy to plain chat messages and `fit_sft` to training rows
(assistant turns never altered); `for_server` builds a budget from what the server
reports. Callers with a client send through `VllmClient.chat_budgeted`, which fits,
counts and raises `ContextOverflow`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from verilearn_assets.core.config import StrictConfig
from verilearn_assets.core.llm.segments import (
    STAGES,
    STATUS_LINE,
    BudgetMessage,
    Keep,
    Segment,
    TextSegment,
    ToolOutputSegment,
    parse_tool_text,
)
from verilearn_assets.core.llm.tokens import TokenCounter, has_tokenizer, load_counter

log = logging.getLogger(__name__)

FAILURE_CLASS = "context_overflow"


class ContextOverflow(RuntimeError):
    """An item does not fit the model's window even after compression.

    Not an error of the run: the caller ends the item with failure class
    `context_overflow`, records `reason`, and goes on with the partition.
    """

    failure_class = FAILURE_CLASS


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
        `[cell ok]`) are middle-truncated, then summarized (status, submissions and
        error kept), the last one only at the end of the ladder; none is dropped, so no
        two assistant turns ever meet.
        """
        seen_user = False
        out = []
        for m in messages:
            role, text = m["role"], m["content"]
            looks_like_output = role == "tool" or (
                role == "user" and seen_user and STATUS_LINE.match(text) is not None
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
