"""Helpers for the teacher tests: a loop thread, a real table, scripted policies."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from verilearn_assets.analysis.records import Message, QuestionRecord
from verilearn_assets.analysis.rollout.policy import PolicyReply
from verilearn_assets.core.answers import answer_hash
from verilearn_assets.core.records import AnswerSchema, TableRecord, canonical_json
from verilearn_assets.core.sandbox.config import SandboxConfig
from verilearn_assets.core.sandbox.pool import SandboxPool

T = TypeVar("T")


class LoopThread:
    """One event loop in a thread, so a module-wide warm pool serves sync tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 180) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class Sandbox:
    def __init__(self, pool: SandboxPool, runner: LoopThread) -> None:
        self.pool = pool
        self.runner = runner

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 180) -> T:
        return self.runner.run(coro, timeout)


@contextmanager
def started_sandbox(backend: str) -> Iterator[Sandbox]:
    """A started pool on its own loop thread, stopped on exit (fixtures share this)."""
    runner = LoopThread()
    pool = SandboxPool(sandbox_config(backend))
    runner.run(pool.start())
    try:
        yield Sandbox(pool, runner)
    finally:
        runner.run(pool.stop())
        runner.close()


def sandbox_config(backend: str) -> SandboxConfig:
    return SandboxConfig(
        backend=backend,
        slots=2,
        cell_timeout_s=20.0,
        memory_mb=512,
        pids=48,
        cpus=1.0,
        output_cap_bytes=8000,
    )


def make_frame(seed: int = 7, n: int = 240) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    region = rng.choice(["north", "south", "east", "west"], size=n)
    qty = rng.integers(1, 40, size=n)
    price = np.round(rng.lognormal(3.0, 0.6, size=n), 2)
    price[rng.choice(n, 9, replace=False)] = np.nan
    discount = np.round(0.1 * qty + rng.normal(0, 0.5, size=n), 3)
    return pd.DataFrame(
        {
            "order_id": np.arange(1, n + 1),
            "region": region,
            "qty": qty,
            "price": price,
            "discount": discount,
            "weight": np.round(rng.gamma(2.0, 3.0, size=n), 3),
        }
    )


def make_question(
    table: TableRecord,
    code: str,
    answer: Any,
    schema: AnswerSchema,
    source: str = "template",
    text: str = "What is asked?",
) -> QuestionRecord:
    answer_json = canonical_json(answer)
    return QuestionRecord(
        id=QuestionRecord.make_id(source, table.dataset, table.id, code),
        source=source,
        split=table.split,
        dataset=table.dataset,
        table=table.id,
        question=text,
        question_mechanical=text,
        answer_schema=schema,
        answer=answer_json,
        answer_hashes=[answer_hash(answer_json, schema)],
        code=code,
        n_steps=1,
        difficulty="easy",
        template="scripted" if source == "template" else None,
    )


class ScriptedPolicy:
    """The one allowed double: it stands in for what a model says, nothing else.

    `script` is a list of replies (used in order) or a function of the conversation.
    Every conversation it was shown is kept, so tests can prove what the model saw.
    """

    def __init__(
        self,
        script: list[str] | Callable[[list[Message]], str],
        name: str = "scripted",
        tokens: tuple[int, int] = (0, 0),
    ) -> None:
        self.script = script
        self.name = name
        self.tokens = tokens
        self.seen: list[list[Message]] = []

    async def next_message(self, conversation: list[Message]) -> PolicyReply:
        self.seen.append([m.model_copy() for m in conversation])
        if callable(self.script):
            text = self.script(conversation)
        else:
            if len(self.seen) > len(self.script):
                raise AssertionError(f"script exhausted after {len(self.script)} replies")
            text = self.script[len(self.seen) - 1]
        return PolicyReply(text, *self.tokens)


def cell(code: str, why: str = "Next step.") -> str:
    return f"{why}\n\n```python\n{code}\n```"
