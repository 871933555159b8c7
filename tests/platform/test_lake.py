"""The lake: hive layout, partition isolation, atomic writes that survive a killed writer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from verilearn_assets.analysis.records import QuestionRecord
from verilearn_assets.core import lake
from verilearn_assets.core.records import ContractError


def _frame(tag: str, n: int = 3) -> pl.DataFrame:
    return pl.DataFrame({"id": [f"{tag}-{i}" for i in range(n)], "v": list(range(n))})


def test_hive_layout_and_isolation(home: Path) -> None:
    lake.write_partition("questions", _frame("a"), source="template", split="train")
    lake.write_partition("questions", _frame("b"), source="procedural", split="train")
    a_file = next((home / "lake/questions/source=template/split=train").glob("*.parquet"))
    a_mtime = a_file.stat().st_mtime_ns
    # re-materialize only procedural|train
    lake.write_partition("questions", _frame("c", 5), source="procedural", split="train")
    assert a_file.exists() and a_file.stat().st_mtime_ns == a_mtime
    assert lake.read_partition("questions", source="template", split="train")["id"].to_list() == [
        "a-0",
        "a-1",
        "a-2",
    ]
    b = lake.read_partition("questions", source="procedural", split="train")
    assert b["id"].to_list() == [f"c-{i}" for i in range(5)]
    parts = list((home / "lake/questions/source=procedural/split=train").iterdir())
    assert len(parts) == 1, parts  # the old part is gone, not appended


def test_duckdb_reads_hive_layout(home: Path) -> None:
    import duckdb

    lake.write_partition("questions", _frame("a"), source="template", split="train")
    lake.write_partition("questions", _frame("b", 2), source="llm", split="dev")
    rows = duckdb.sql(
        f"select source, split, count(*) from read_parquet('{home}/lake/questions/*/*/*.parquet',"
        " hive_partitioning=true) group by all order by all"
    ).fetchall()
    assert rows == [("llm", "dev", 2), ("template", "train", 3)]


def test_unsafe_partition_value_refused(home: Path) -> None:
    with pytest.raises(ValueError, match="not a safe name"):
        lake.partition_dir("questions", source="../x", split="train")


_WRITER = """
import sys, polars as pl
from verilearn_assets.core import lake
n = 30_000_000
ids = pl.arange(0, n, eager=True)
frame = pl.DataFrame({"id": ids.cast(pl.Utf8), "v": ids})
print("ready", flush=True)
lake.write_partition("questions", frame, source="template", split="train")
print("done", flush=True)
"""


def test_killed_writer_leaves_previous_partition_intact(home: Path) -> None:
    lake.write_partition("questions", _frame("old"), source="template", split="train")
    pdir = home / "lake/questions/source=template/split=train"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER], env=os.environ.copy(), stdout=subprocess.PIPE, text=True
    )
    deadline = time.time() + 120
    while time.time() < deadline and not list(pdir.glob(".part-*.tmp")):
        assert proc.poll() is None, "writer finished before it could be killed"
        time.sleep(0.005)
    assert list(pdir.glob(".part-*.tmp")), "writer never started its temporary file"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    got = lake.read_partition("questions", source="template", split="train")
    assert got["id"].to_list() == ["old-0", "old-1", "old-2"]
    assert [p.name for p in pdir.glob("part-*.parquet")] == ["part-00000.parquet"]


def test_records_round_trip_and_legacy_key_named(home: Path) -> None:
    from verilearn_assets.core.records import AnswerSchema

    q = QuestionRecord(
        id="x",
        source="template",
        split="train",
        dataset="d",
        table="t",
        question="q?",
        question_mechanical="q",
        answer_schema=AnswerSchema(kind="number"),
        answer="1.5",
        answer_hashes=["h"],
        code="submit(1.5)",
        n_steps=1,
        difficulty="easy",
    )
    lake.write_records("questions", [q], QuestionRecord, source="template", split="train")
    (back,) = lake.read_records("questions", QuestionRecord, source="template", split="train")
    assert back == q
    row = q.to_row() | {"_ground_truth": "1.5"}
    with pytest.raises(ContractError, match=r"'x'.*legacy key '_ground_truth'"):
        QuestionRecord.from_row(row)
    with pytest.raises(ContractError, match="'subtype'"):
        QuestionRecord.from_row(q.to_row() | {"subtype": "template"})
