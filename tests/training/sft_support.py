"""Real analysis episodes for the SFT tests: the teacher loop in a real bubblewrap sandbox.

The only stand-in is `Script`, which plays what a model would say; every tool output,
verdict and SFT row comes from the platform's own code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from verilearn_assets.analysis.records import Episode, Message, QuestionRecord
from verilearn_assets.analysis.rollout.config import TeacherConfig
from verilearn_assets.analysis.rollout.loop import run_episode
from verilearn_assets.analysis.rollout.policy import PolicyReply
from verilearn_assets.analysis.sft import sft_rows
from verilearn_assets.core.answers import answer_hash
from verilearn_assets.core.family import SftRow
from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.records import AnswerSchema, TableRecord, canonical_json
from verilearn_assets.core.sandbox.config import SandboxConfig
from verilearn_assets.core.sandbox.pool import SandboxPool


class Script:
    """Plays a fixed list of replies, one per turn (what a model would have said)."""

    name = "scripted"

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.turn = 0

    async def next_message(self, conversation: list[Message]) -> PolicyReply:
        reply = self.replies[self.turn]
        self.turn += 1
        return PolicyReply(reply, 0, 0)


def code_reply(code: str, why: str) -> str:
    return f"{why}\n\n```python\n{code}\n```"


def sales_table(directory: Path) -> TableRecord:
    rng = np.random.default_rng(3)
    n = 60
    frame = pd.DataFrame(
        {
            "store": rng.choice(["a", "b", "c"], size=n),
            "units": rng.integers(1, 30, size=n),
            "price": np.round(rng.uniform(2.0, 9.0, size=n), 2),
        }
    )
    path = directory / "sales.parquet"
    frame.to_parquet(path)
    path.chmod(0o644)
    return TableRecord(
        id="tbl-sales",
        dataset="shop",
        name="sales",
        split="train",
        path=str(path),
        n_rows=n,
        n_columns=frame.shape[1],
        sha256="0" * 64,
        columns=profile_frame(frame),
    )


def question(table: TableRecord, code: str, answer: object, text: str) -> QuestionRecord:
    schema = AnswerSchema(kind="integer")
    answer_json = canonical_json(answer)
    return QuestionRecord(
        id=QuestionRecord.make_id("template", table.dataset, table.id, code),
        source="template",
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
        template="scripted_sum",
    )


def real_episodes(directory: Path) -> list[Episode]:
    """Three verified episodes: two traces of one question, one of another."""
    table = sales_table(directory)
    frame = pd.read_parquet(table.path)
    total = int(frame["units"].sum())
    big = int((frame["units"] > 20).sum())
    q_total = question(table, "submit(int(df['units'].sum()))", total, "How many units in all?")
    q_big = question(
        table, "submit(int((df['units'] > 20).sum()))", big, "How many rows sold over 20 units?"
    )
    scripts = [
        (
            q_total,
            [
                code_reply("total = int(df['units'].sum())\nprint('total', total)", "Add units."),
                code_reply("submit(total)", "Submit the total."),
            ],
        ),
        (
            q_total,
            [
                code_reply("s = df['units'].sum()\nprint(s)", "Sum the column."),
                code_reply("submit(int(s))", "Submit it."),
            ],
        ),
        (
            q_big,
            [
                code_reply("mask = df['units'] > 20\nprint(int(mask.sum()))", "Count big rows."),
                code_reply("submit(int(mask.sum()))", "Submit the count."),
            ],
        ),
    ]
    cfg = TeacherConfig()
    sandbox = SandboxConfig(backend="bwrap", slots=1, cell_timeout_s=30.0, memory_mb=512)

    async def run_all() -> list[Episode]:
        pool = SandboxPool(sandbox)
        await pool.start()
        try:
            out = []
            for i, (q, replies) in enumerate(scripts):
                out.append(await run_episode(q, table, Script(replies), pool, cfg, index=i))
            return out
        finally:
            await pool.stop()

    episodes = asyncio.run(run_all())
    bad = [(e.question_id, e.failure_class) for e in episodes if not e.verified]
    assert not bad, f"scripted episodes did not verify: {bad}"
    return episodes


def episode_rows(episodes: list[Episode]) -> list[SftRow]:
    return sft_rows(episodes)
