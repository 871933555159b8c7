"""One teacher episode: prompt, reply, run the cell, show the output, until it ends.

Every message is stored exactly as the policy saw or said it — system prompt, question,
rejected replies, re-prompts, tool outputs — each with its turn index. Turns are handed
out by one `Transcript`, and each `CellRun` records the turns it was given, so the trace
and the executions cannot drift apart; `check_alignment` proves it for a finished episode.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from verilearn_assets.analysis.records import (
    CellRun,
    Episode,
    FailureClass,
    Message,
    MessageKind,
    QuestionRecord,
    Role,
)
from verilearn_assets.analysis.rollout.config import TeacherConfig
from verilearn_assets.analysis.rollout.context import CellOutput, budget_messages
from verilearn_assets.analysis.rollout.grounding import HookGrounding, ground_hooks
from verilearn_assets.analysis.rollout.parse import FormatError, parse_reply
from verilearn_assets.analysis.rollout.policy import Policy
from verilearn_assets.analysis.rollout.prompts import (
    Observation,
    reprompt,
    system_prompt,
    task_prompt,
    tool_message,
)
from verilearn_assets.core.answers import AnswerError, answer_hash, answers_match, parse_answer
from verilearn_assets.core.llm.budget_records import BudgetCounts
from verilearn_assets.core.llm.fit import FAILURE_CLASS, ContextOverflow
from verilearn_assets.core.records import HookRecord, TableRecord
from verilearn_assets.core.sandbox.pool import CellResult, SandboxPool

log = logging.getLogger(__name__)


class AlignmentError(AssertionError):
    """An episode's messages and cell runs disagree — a bug, never a data problem."""


class Transcript:
    """The only place turn indices are assigned: contiguous, from 0, in append order."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def add(self, role: Role, kind: MessageKind, content: str) -> int:
        turn = len(self.messages)
        self.messages.append(Message(turn=turn, role=role, kind=kind, content=content))
        return turn


@dataclass
class Trace:
    """A finished conversation before it is judged against an answer."""

    messages: list[Message]
    cells: list[CellRun]
    submissions: list[str]
    hooks: list[HookRecord]
    hooks_total: int
    hooks_malformed: int
    end: str  # submitted | max_turns | format_errors | context_overflow
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: float = 0.0
    hook_details: list[Any] = field(default_factory=list)
    budget: BudgetCounts = field(default_factory=BudgetCounts)  # what fitting prompts cost
    overflow_reason: str = ""  # set when `end` is context_overflow

    @property
    def answer(self) -> str | None:
        return self.submissions[-1] if self.submissions else None

    @property
    def n_turns(self) -> int:
        """Assistant messages, rejected ones included."""
        return sum(m.role == "assistant" for m in self.messages)

    def failure_without_answer(self) -> FailureClass:
        """Why a trace that never submitted failed."""
        if self.end == "format_errors":
            return "format_error"
        if self.end == FAILURE_CLASS:
            return FAILURE_CLASS  # type: ignore[return-value]  # see records.FailureClass
        if self.cells and self.cells[-1].status != "ok":
            return "execution_failure"
        return "max_turns" if self.end == "max_turns" else "no_submission"


def _sandbox_dropped(result: CellResult) -> list[HookGrounding]:
    """Verdicts for the hook records the sandbox refused, so none vanishes unseen.

    Their indices follow the cell's valid hooks; each reason is the sandbox's own.
    """
    first = len(result.hooks)
    verdicts = [
        HookGrounding(first + k, None, "malformed", f"dropped by the sandbox: {why}")
        for k, why in enumerate(result.malformed_hooks)
    ]
    for v in verdicts:
        log.warning("hook entry %d malformed: %s", v.index, v.reason)
    return verdicts


async def run_trace(
    task_prompt: str, table: TableRecord, policy: Policy, pool: SandboxPool, cfg: TeacherConfig
) -> Trace:
    """Drive one conversation in a fresh sandbox slot holding `table`.

    `task_prompt` is the first user message (a question, or the exploration brief).
    A policy with a `budget` sees every prompt fitted to its window (the transcript keeps
    the full messages); a prompt that cannot fit, or a server 400 for length, ends the
    trace with `end = "context_overflow"` and the reason in `overflow_reason`.
    """
    started = time.monotonic()
    tx = Transcript()
    tx.add("system", "prompt", system_prompt(table, cfg.max_turns, cfg.prompts))
    tx.add("user", "prompt", task_prompt)
    cells: list[CellRun] = []
    codes: list[str] = []
    submissions: list[str] = []
    hooks: list[HookRecord] = []
    details: list[Any] = []
    hooks_total = hooks_malformed = 0
    format_errors = 0
    prompt_tokens = completion_tokens = 0
    end = "max_turns"
    budget = getattr(policy, "budget", None)
    counts = BudgetCounts()
    overflow_reason = ""
    outputs: dict[int, CellOutput] = {}
    async with contextlib.AsyncExitStack() as stack:
        task = None  # the slot is taken at the first cell: rejected replies need none
        while True:
            conversation = list(tx.messages)
            if budget is not None:
                fit = budget.fit(budget_messages(conversation, table, cfg.max_turns, outputs))
                counts.add(fit)
                if fit.overflow:
                    end, overflow_reason = FAILURE_CLASS, fit.reason
                    log.info("trace ends: %s", fit.reason)
                    break
                conversation = [
                    m.model_copy(update={"content": c})
                    for m, c in zip(conversation, fit.contents, strict=True)
                    if c is not None
                ]
            try:
                reply = await policy.next_message(conversation)
            except ContextOverflow as exc:  # the server's own count disagreed with ours
                counts.overflows += 1
                end, overflow_reason = FAILURE_CLASS, f"{FAILURE_CLASS}: {exc}"
                log.warning("trace ends: %s", exc)
                break
            prompt_tokens += reply.prompt_tokens
            completion_tokens += reply.completion_tokens
            parsed = parse_reply(reply.text)
            if isinstance(parsed, FormatError):
                tx.add("assistant", "rejected_reply", reply.text)
                format_errors += 1
                if format_errors > cfg.max_format_errors:
                    end = "format_errors"
                    break
                tx.add(
                    "user",
                    "reprompt",
                    reprompt(parsed.reason, cfg.max_format_errors - format_errors, cfg.prompts),
                )
                continue
            turn = tx.add("assistant", "reply", reply.text)
            if task is None:
                task = await stack.enter_async_context(pool.task(table.path))
            result = await task.run_cell(parsed.code, timeout_s=cfg.cell_timeout_s)
            obs = Observation(
                result.status,
                result.duration_ms,
                result.stdout,
                result.stderr,
                result.value_repr,
                list(result.submissions),
            )
            output_turn = tx.add("tool", "tool_output", tool_message(obs, cfg.tool_output_chars))
            outputs[output_turn] = CellOutput(
                obs, tuple(h.name for h in result.hooks), cfg.tool_output_chars
            )
            cells.append(
                CellRun(
                    turn=turn,
                    output_turn=output_turn,
                    code=parsed.code,
                    status=result.status,
                    stdout=result.stdout,
                    stderr=result.stderr,
                    duration_ms=result.duration_ms,
                )
            )
            codes.append(parsed.code)
            submissions.extend(result.submissions)
            # A hook may only ground against this cell and the cells that ran before it.
            grounded, malformed, cell_details = ground_hooks(result.hooks, codes)
            hooks.extend(grounded)
            details.extend(cell_details + _sandbox_dropped(result))
            hooks_total += len(result.hooks) + len(result.malformed_hooks)
            hooks_malformed += len(malformed) + len(result.malformed_hooks)
            if result.submissions:
                end = "submitted"
                break
            if len(cells) >= cfg.max_turns:
                end = "max_turns"
                break
    trace = Trace(
        tx.messages,
        cells,
        submissions,
        hooks,
        hooks_total,
        hooks_malformed,
        end,
        prompt_tokens,
        completion_tokens,
        (time.monotonic() - started) * 1000,
        details,
        counts,
        overflow_reason,
    )
    check_alignment(trace.messages, trace.cells)
    return trace


def check_alignment(messages: Sequence[Message], cells: Sequence[CellRun]) -> None:
    """Raise `AlignmentError` unless turns are contiguous and each cell pairs correctly.

    Each cell's `turn` must be an accepted assistant reply whose python block is exactly
    the cell's code, its `output_turn` the tool message right after it; every reply and
    every tool message belongs to exactly one cell.
    """
    for i, m in enumerate(messages):
        if m.turn != i:
            raise AlignmentError(f"message {i} has turn {m.turn}; turns must be 0..n-1")
    if messages and messages[0].role != "system":
        raise AlignmentError("turn 0 must be the system prompt")
    replies = [m.turn for m in messages if m.role == "assistant" and m.kind == "reply"]
    tools = [m.turn for m in messages if m.role == "tool"]
    if [c.turn for c in cells] != replies:
        raise AlignmentError(f"cell turns {[c.turn for c in cells]} != replies {replies}")
    if [c.output_turn for c in cells] != tools:
        raise AlignmentError(
            f"cell output turns {[c.output_turn for c in cells]} != tool messages {tools}"
        )
    for c in cells:
        if c.output_turn != c.turn + 1:
            raise AlignmentError(f"cell at turn {c.turn}: output at {c.output_turn}")
        parsed = parse_reply(messages[c.turn].content)
        if isinstance(parsed, FormatError) or parsed.code != c.code:
            raise AlignmentError(f"cell at turn {c.turn} does not hold the reply's code")


def judge(answer: str | None, question: QuestionRecord) -> bool:
    """Does a submission match the question's answer, an alternative, or a known hash?"""
    if answer is None:
        return False
    schema = question.answer_schema
    try:
        got = parse_answer(answer)
        digest = answer_hash(answer, schema)  # the canonical JSON, not the parsed value
    except AnswerError as exc:  # a submission that cannot be normalised is simply wrong
        log.info("question %s: submission %r rejected: %s", question.id, answer[:200], exc)
        return False
    if digest in set(question.answer_hashes):
        return True
    expected = [question.answer] + [a.answer for a in question.alternatives]
    return any(answers_match(parse_answer(e), got, schema) for e in expected)


def to_episode(
    trace: Trace,
    question: QuestionRecord,
    *,
    teacher: str,
    sampling_key: str,
    role: str = "single",
    index: int = 0,
    verified: bool | None = None,
    failure_class: FailureClass | None = None,
) -> Episode:
    """An `Episode` record; `verified` defaults to matching the question's answer."""
    if verified is None:
        verified = judge(trace.answer, question)
        if not verified:
            failure_class = (
                "wrong_answer" if trace.answer is not None else trace.failure_without_answer()
            )
    return Episode(
        id=Episode.make_id(question.id, teacher, sampling_key, role, index),
        question_id=question.id,
        source=question.source,
        split=question.split,
        dataset=question.dataset,
        template=question.template,
        teacher=teacher,
        sampling_key=sampling_key,
        role=role,
        messages=trace.messages,
        cells=trace.cells,
        submissions=trace.submissions,
        answer=trace.answer,
        hooks=trace.hooks,
        hooks_total=trace.hooks_total,
        hooks_grounded=len(trace.hooks),
        hooks_malformed=trace.hooks_malformed,
        verified=verified,
        failure_class=None if verified else failure_class,
        n_turns=trace.n_turns,
        prompt_tokens=trace.prompt_tokens,
        completion_tokens=trace.completion_tokens,
        duration_ms=trace.duration_ms,
    )


async def run_episode(
    question: QuestionRecord,
    table: TableRecord,
    policy: Policy,
    pool: SandboxPool,
    cfg: TeacherConfig,
    *,
    role: str = "single",
    index: int = 0,
    counts: BudgetCounts | None = None,
    examples: Sequence[QuestionRecord] = (),
) -> Episode:
    """Run one trace for `question` and judge it against the question's answer.

    The trace's context-budget losses are added to `counts` when given; `examples` are the
    solved questions shown first (`FewShotPool.examples`, when `cfg.prompts.few_shot`).
    """
    if question.table != table.id:
        raise ValueError(
            f"question {question.id}: table {question.table!r} is not the given table {table.id!r}"
        )
    prompt = task_prompt(question, cfg.prompts, examples)
    trace = await run_trace(prompt, table, policy, pool, cfg)
    if counts is not None:
        counts.merge(trace.budget)
    return to_episode(
        trace,
        question,
        teacher=policy.name,
        sampling_key=cfg.sampling_key(policy.name),
        role=role,
        index=index,
    )
