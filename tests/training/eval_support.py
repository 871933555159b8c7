"""A small real home for the evaluation and loop tests: one table, real template questions
verified in the sandbox, and the program teacher's verified episodes for them.

Episodes are recorded with `max_turns=1` (the whole reference program in one cell), so a
student that reproduces one reply passes; the system prompt states that bound, and the
evaluation uses the same teacher config so the student sees the very prompt trained on.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pandas as pd

from verilearn_assets.analysis.config import QuestionsConfig
from verilearn_assets.analysis.records import Episode, QuestionRecord
from verilearn_assets.analysis.rollout.config import TeacherConfig
from verilearn_assets.analysis.rollout.runner import policy_factory, run_partition
from verilearn_assets.analysis.sources.build import build_generated
from verilearn_assets.core import lake
from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.records import TableRecord, content_hash
from verilearn_assets.core.sandbox.config import SandboxConfig

SANDBOX = SandboxConfig(backend="bwrap", slots=2)
# one cell per episode; no second chance after a malformed reply (one request per question)
TEACHER = TeacherConfig(teacher="program", max_turns=1, max_format_errors=0)


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 40
    return pd.DataFrame(
        {
            "x": np.round(np.linspace(1.0, 2.0, n) ** 2, 3),
            "y": np.round(rng.gamma(2.0, 1.5, n), 3),
            "g": rng.choice(["a", "b", "c"], n),
        }
    )


def build_home(home: Path, templates: list[str], split: str = "train") -> list[QuestionRecord]:
    """Write the table, its template questions and their program episodes into `home`."""
    df = frame()
    data = home / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "toy.parquet").unlink(missing_ok=True)
    df.to_parquet(data / "toy.parquet", index=False)
    table = TableRecord(
        id=content_hash("eval-test-table", df.to_csv()),
        dataset="toy",
        name="toy",
        split=split,
        path="data/toy.parquet",  # home-relative, as the tables asset stores it
        n_rows=len(df),
        n_columns=df.shape[1],
        sha256="0" * 64,
        columns=profile_frame(df),
    )
    root = lake.lake_root(home)
    lake.write_records("tables", [table], TableRecord, root, split=split)
    cfg = QuestionsConfig.model_validate(
        {
            "eligibility": {"min_rows": 5, "min_group_size": 2, "min_numeric_unique": 3},
            "template": {"enabled": templates},
        }
    )
    local = table.model_copy(update={"path": str(data / "toy.parquet")})

    async def run() -> list[QuestionRecord]:
        from verilearn_assets.core.sandbox.pool import SandboxPool

        async with SandboxPool(SANDBOX) as pool:
            built = await build_generated([local], "template", split, cfg, pool)
            lake.write_records(
                "analysis/questions", built.records, QuestionRecord, root,
                source="template", split=split,
            )  # fmt: skip
            accepted = [q for q in built.records if q.status == "accepted"]
            done = await run_partition(
                accepted, {table.id: local}, policy_factory(TEACHER), pool, TEACHER,
                source="template", split=split, root=root,
            )  # fmt: skip
            assert not done.errors, done.errors
            return accepted

    return asyncio.run(run())


def episodes(home: Path, split: str = "train") -> list[Episode]:
    return lake.read_records(  # type: ignore[return-value]
        "analysis/episodes", Episode, lake.lake_root(home), source="template", split=split
    )
