"""Helpers for the question tests: small tables on disk and loosened eligibility."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from verilearn_assets.analysis.config import QuestionsConfig
from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.records import TableRecord, content_hash


def make_table(frame: pd.DataFrame, tmp: Path, name: str = "t") -> TableRecord:
    """Write `frame` as typed Parquet and return its profiled TableRecord."""
    path = tmp / f"{name}.parquet"
    frame.to_parquet(path, index=False)
    return TableRecord(
        id=content_hash("test-table", name, frame.to_csv()),
        dataset=name,
        name=name,
        split="train",
        path=str(path),
        n_rows=len(frame),
        n_columns=frame.shape[1],
        sha256="0" * 64,
        columns=profile_frame(frame),
    )


def small_cfg(**template) -> QuestionsConfig:
    """Eligibility loosened for hand-sized tables."""
    return QuestionsConfig.model_validate(
        {
            "eligibility": {"min_rows": 5, "min_group_size": 2, "min_numeric_unique": 3},
            "template": template,
        }
    )


class PoolRunner:
    """One real SandboxPool kept running on a background event loop for a test session."""

    def __init__(self, config) -> None:
        import asyncio
        import threading

        from verilearn_assets.core.sandbox.pool import SandboxPool

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.pool = SandboxPool(config)
        self.run(self.pool.start())

    def run(self, coro):
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def verify(self, jobs, cfg, **kw):
        from verilearn_assets.analysis.verify.verifier import Verifier

        verifier = Verifier(self.pool, cfg)
        records = self.run(verifier.verify_all(jobs, **kw))
        return records, verifier.stats

    def close(self) -> None:
        self.run(self.pool.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
