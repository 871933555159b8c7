"""The analysis family's GRPO hook: prompts, the batch scorer and the multi-turn environment.

The rewards themselves are plain functions in `rewards.py`; this module runs completions
in the sandbox (one fresh task per single-turn completion, or the student loop itself for
multi-turn rollouts) and hands their scores to the trainer through `Family.grpo`.

Multi-turn rollouts (`grpo.multi_turn`): `AnalysisEnvironment` runs the student loop
itself (`teacher.loop.run_trace`, the code `model_eval` runs) with a bridge policy whose
replies are the trainer's generations, so the model sees exactly the prompts, tool messages
and re-prompts it is evaluated with; the finished episode is scored by
`rewards.score_trace`.

Prompts are the teacher's (`teacher_prompts.yaml` `analysis:`, through `load_teacher_config`):
the first user message is `task_prompt` with the same solved examples the teacher's episodes
show (`question_shots`), so a GRPO prompt is the one the SFT rows were made with and
evaluation sends; the multi-turn system prompt is the loop's own. Stop sequences: none. A
reply is one ```python block and ends at the end-of-turn token; the student loop's vLLM
policy sends no stop either, so GRPO (single- and multi-turn) and evaluation cut the same
way (`GrpoTask.stop` is None).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verilearn_assets.analysis.records import Episode, Message, QuestionRecord
from verilearn_assets.analysis.rewards import (
    Scored,
    extract_code,
    format_failure,
    score_run,
    score_trace,
    screen_code,
)
from verilearn_assets.analysis.rollout.config import TeacherConfig, load_teacher_config
from verilearn_assets.analysis.rollout.context import system_message
from verilearn_assets.analysis.rollout.loop import Trace, run_trace
from verilearn_assets.analysis.rollout.parse import FormatError
from verilearn_assets.analysis.rollout.policy import PolicyReply, chat_messages
from verilearn_assets.analysis.rollout.prompts import system_prompt, task_prompt
from verilearn_assets.analysis.rollout.runner import load_few_shot_pool
from verilearn_assets.core import lake
from verilearn_assets.core.family import Family, GrpoEnvOptions
from verilearn_assets.core.ingest.tables import load_table_records
from verilearn_assets.core.llm.fit import ContextOverflow
from verilearn_assets.core.llm.segments import BudgetMessage, Keep
from verilearn_assets.core.records import SOURCES, Record, TableRecord
from verilearn_assets.core.sandbox.config import SandboxConfig, load_sandbox_config
from verilearn_assets.core.sandbox.pool import SandboxPool

log = logging.getLogger(__name__)


# --- batch scoring in the sandbox and the family's GRPO hook -------------------------------
DIFFICULTY = {"easy": 0.0, "medium": 1.0, "hard": 2.0}


async def score_completions(
    pool: SandboxPool,
    questions: dict[str, QuestionRecord],
    table_paths: dict[str, str],
    task_ids: Sequence[str],
    completions: Sequence[str],
    timeout_s: float | None = None,
) -> list[Scored]:
    """Run each completion's one python block as one fresh sandbox task, concurrently (the
    pool bounds the parallelism), and score it. An unknown task id or table is an error."""

    async def one(task_id: str, completion: str) -> Scored:
        if task_id not in questions:
            raise KeyError(f"analysis rewards: no question {task_id!r} among the GRPO tasks")
        q = questions[task_id]
        if q.table not in table_paths:
            raise KeyError(f"analysis rewards: question {q.id}: table {q.table!r} not in the lake")
        code = extract_code(completion)
        if isinstance(code, FormatError):
            return format_failure(code.reason)
        screen = screen_code(code)
        if not screen.ok:  # never run code the screen refused
            return Scored(0.0, 0.0, 0.0, screen.reason or "screened")
        result = await pool.run_program(code, table_paths[q.table], timeout_s)
        return score_run(q, code, result)

    return list(
        await asyncio.gather(*(one(t, c) for t, c in zip(task_ids, completions, strict=True)))
    )


def question_shots(
    home: Path, teacher: TeacherConfig
) -> Callable[[QuestionRecord], list[QuestionRecord]]:
    """The solved examples a question's prompt shows: the teacher's `few_shot` pool of the
    train split (`runner.load_few_shot_pool`), as its episodes show them; none when 0."""
    n = teacher.prompts.few_shot
    if not n:
        return lambda q: []
    pool = load_few_shot_pool(teacher, lake.lake_root(home))
    return lambda q: pool.examples(q, n)


def grpo_prompts(home: Path, tasks: Sequence[Record], role: str) -> list[dict[str, Any]]:
    """Single-turn prompts: the teacher's system prompt (one cell) and its first user
    message (`task_prompt`: configured prompts, the episodes' few-shot examples)."""
    tables = {t.id: t for t in load_table_records(home)}
    teacher = load_teacher_config()
    shots = question_shots(home, teacher)
    rows = []
    for q in tasks:
        if not isinstance(q, QuestionRecord):
            raise TypeError(f"analysis grpo_prompts: {type(q).__name__} is not a QuestionRecord")
        if q.status != "accepted":
            continue
        if q.table not in tables:
            raise KeyError(f"analysis grpo_prompts: question {q.id}: table {q.table!r} not found")
        rows.append(
            {
                "prompt": [
                    {
                        "role": "system",
                        "content": system_prompt(tables[q.table], 1, teacher.prompts),
                    },
                    {"role": "user", "content": task_prompt(q, teacher.prompts, shots(q))},
                ],
                "task_id": q.id,
                "difficulty": DIFFICULTY[q.difficulty] + q.n_steps / 100.0,
                "group": q.template or "procedural",
            }
        )
    return rows


def grpo_prompt_segments(
    home: Path, tasks: Sequence[Record], rows: Sequence[dict[str, Any]]
) -> list[list[BudgetMessage] | None]:
    """`grpo_prompts`' rows as budget segments: the table description shrinks first (its
    per-column statistics, then rare columns), the rules and the question never."""
    tables = {t.id: t for t in load_table_records(home)}
    questions = {q.id: q for q in tasks if isinstance(q, QuestionRecord)}
    out: list[list[BudgetMessage] | None] = []
    for row in rows:
        q = questions.get(row["task_id"])
        system, user = row["prompt"]
        if q is None or q.table not in tables:
            out.append(None)
            continue
        out.append(
            [
                system_message(system["content"], tables[q.table], 1),
                BudgetMessage("user", [Keep(user["content"], "task")]),
            ]
        )
    return out


class AnalysisScorer:
    """A sandbox pool on its own event-loop thread, so the (synchronous) trainer can call
    `score` between generation and the policy update."""

    def __init__(self, home: Path, tasks: Sequence[Record], sandbox: SandboxConfig | None = None):
        self.questions = {q.id: q for q in tasks if isinstance(q, QuestionRecord)}
        self.tables = {t.id: t.path for t in load_table_records(home)}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.pool = SandboxPool(sandbox or load_sandbox_config())
        try:
            self._run(self.pool.start())
        except BaseException:
            self._stop_loop()
            raise
        self.last: list[Scored] = []

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def score_runs(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[Scored]:
        self.last = self._run(
            score_completions(self.pool, self.questions, self.tables, task_ids, completions)
        )
        return self.last

    def score(self, task_ids: Sequence[str], completions: Sequence[str]) -> list[dict[str, float]]:
        return [
            {"outcome": s.outcome, "partial": s.partial, "process": s.process}
            for s in self.score_runs(task_ids, completions)
        ]

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    def close(self) -> None:
        try:
            self._run(self.pool.stop())
        finally:
            self._stop_loop()


def grpo_scorer(home: Path, tasks: Sequence[Record], role: str) -> AnalysisScorer:
    return AnalysisScorer(home, tasks)


def grpo_pass_rates(family: Family, home: Path, split: str) -> dict[str, float]:
    """Verified share of the stored episodes per template, over every source of `split`
    (the episodes read through `family`, which `family.py` binds)."""
    counts: dict[str, list[int]] = {}
    for source in SOURCES:
        for ep in family.read_rollouts(home, source, split):
            if isinstance(ep, Episode):
                c = counts.setdefault(ep.template or "procedural", [0, 0])
                c[0] += int(ep.verified)
                c[1] += 1
    return {k: v / n for k, (v, n) in counts.items() if n}


# --- multi-turn GRPO: the student loop as an environment ------------------------------------
class _BridgePolicy:
    """The loop's `Policy` whose replies come from outside (the trainer's generation): each
    `next_message` hands the conversation out and waits for `reply` to be resolved."""

    name = "grpo"

    def __init__(self) -> None:
        self.requests: asyncio.Queue[tuple[list[Message], asyncio.Future[PolicyReply]]] = (
            asyncio.Queue()
        )

    async def next_message(self, conversation: list[Message]) -> PolicyReply:
        reply: asyncio.Future[PolicyReply] = asyncio.get_running_loop().create_future()
        await self.requests.put((list(conversation), reply))
        return await reply


class AnalysisEpisode:
    """One student episode driven turn by turn (the `GrpoEpisode` protocol)."""

    def __init__(self, env: AnalysisEnvironment, question: QuestionRecord, table: TableRecord):
        self.env = env
        self.question = question
        self.policy = _BridgePolicy()
        prompt = task_prompt(question, env.teacher.prompts, env.shots(question))
        self.task: asyncio.Task[Trace] = env._run(self._start(prompt, table))
        self._reply: asyncio.Future[PolicyReply] | None = None
        self._seen = 0
        self.stopped: str | None = None
        first = env._run(self._next())
        if first is None:  # the loop ended before asking (cannot happen with a fresh trace)
            raise RuntimeError(f"analysis episode {question.id}: the loop never asked")
        self.opening = chat_messages(first)
        self._seen = len(first)

    async def _start(self, prompt: str, table: TableRecord) -> asyncio.Task[Trace]:
        return asyncio.ensure_future(
            run_trace(prompt, table, self.policy, self.env.pool, self.env.teacher)
        )

    async def _next(self) -> list[Message] | None:
        """The loop's next request (its conversation), or None when the trace ended."""
        get = asyncio.ensure_future(self.policy.requests.get())
        done, _ = await asyncio.wait({get, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if get in done:
            conversation, self._reply = get.result()
            return conversation
        get.cancel()
        self._reply = None
        self.task.result()  # re-raise a loop failure here, naming nothing twice
        return None

    def _answer(self, outcome: PolicyReply | BaseException) -> list[Message] | None:
        reply = self._reply
        if reply is None:
            raise RuntimeError(f"analysis episode {self.question.id}: the episode is over")
        if isinstance(outcome, BaseException):
            self.env.loop.call_soon_threadsafe(reply.set_exception, outcome)
        else:
            self.env.loop.call_soon_threadsafe(reply.set_result, outcome)
        return self.env._run(self._next())

    def step(self, assistant_text: str) -> tuple[list[dict[str, Any]], bool]:
        """Run the reply through the loop; the messages after it (tool output or a
        re-prompt) and whether the episode ended."""
        before = self._seen
        conversation = self._answer(PolicyReply(assistant_text))
        if conversation is None:
            return chat_messages(self.trace.messages[before + 1 :]), True
        self._seen = len(conversation)
        return chat_messages(conversation[before + 1 :]), False

    def stop(self, reason: str) -> None:
        """End early: the loop sees a context overflow, its own way to end on length."""
        if self._reply is not None:
            self.stopped = reason
            self._answer(ContextOverflow(reason))

    @property
    def trace(self) -> Trace:
        if not self.task.done():
            raise RuntimeError(f"analysis episode {self.question.id}: still running")
        return self.task.result()

    def scored(self) -> Scored:
        return score_trace(self.question, self.trace)

    def score(self) -> dict[str, float]:
        s = self.scored()
        return {"outcome": s.outcome, "partial": s.partial, "process": s.process}

    def record(self) -> dict[str, Any]:
        trace, s = self.trace, self.scored()
        return {
            "task_id": self.question.id,
            "messages": [m.model_dump(mode="json") for m in trace.messages],
            "end": trace.end,
            "stopped": self.stopped,
            "answer": trace.answer,
            "cells": len(trace.cells),
            "assistant_turns": trace.n_turns,
            "reason": s.reason,
            "hooks_credited": list(s.hooks_credited),
        }


class AnalysisEnvironment(AnalysisScorer):
    """The student loop over the GRPO tasks (the `GrpoEnvironment` protocol): one sandbox
    pool with a slot per episode that may be open at once, because an open episode keeps
    its slot from its first cell to its end (its variables live there)."""

    def __init__(
        self,
        home: Path,
        tasks: Sequence[Record],
        options: GrpoEnvOptions,
        sandbox: SandboxConfig | None = None,
        teacher: TeacherConfig | None = None,
    ):
        cfg = sandbox or load_sandbox_config()
        cfg = cfg.model_copy(update={"slots": max(cfg.slots, options.max_open_episodes)})
        base = teacher or load_teacher_config()
        turns = options.max_turns or base.max_turns  # None: the bound model_eval uses
        self.teacher = base.model_copy(update={"max_turns": turns})
        self.table_records = {t.id: t for t in load_table_records(home)}
        self.shots = question_shots(home, self.teacher)
        self.episodes: list[AnalysisEpisode] = []
        super().__init__(home, tasks, cfg)

    def reset(self, task_id: str) -> AnalysisEpisode:
        if task_id not in self.questions:
            raise KeyError(f"analysis environment: no question {task_id!r} among the GRPO tasks")
        q = self.questions[task_id]
        if q.table not in self.table_records:
            raise KeyError(f"analysis environment: question {q.id}: table {q.table!r} not found")
        episode = AnalysisEpisode(self, q, self.table_records[q.table])
        self.episodes = [e for e in self.episodes if not e.task.done()] + [episode]
        return episode

    def close(self) -> None:
        """Stop unfinished episodes (their slots are freed first), then the pool."""
        open_tasks = [e.task for e in self.episodes if not e.task.done()]
        self.episodes = []

        async def cancel() -> None:
            for t in open_tasks:
                t.cancel()
            await asyncio.gather(*open_tasks, return_exceptions=True)

        try:
            if open_tasks:
                self._run(cancel())
        finally:
            super().close()


def grpo_environment(
    home: Path, tasks: Sequence[Record], role: str, options: GrpoEnvOptions
) -> AnalysisEnvironment:
    return AnalysisEnvironment(home, tasks, options)
