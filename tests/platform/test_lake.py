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
    files = sorted(
        p.name for p in (home / "lake/questions/source=procedural/split=train").iterdir()
    )
    assert files == [lake.LOCK_NAME, "part-00001.parquet"], files  # the old part is gone


def test_a_read_leaves_no_lock_file_behind(home: Path) -> None:
    """Only writers create `.lock`: a partition written by other means (a table dropped in
    place) reads as it is and stays as it was."""
    pdir = lake.partition_dir("tables", None, dataset="iris")
    pdir.mkdir(parents=True)
    _frame("t").write_parquet(pdir / "part-00000.parquet")
    assert lake.read_partition("tables", dataset="iris")["id"].to_list() == ["t-0", "t-1", "t-2"]
    assert sorted(p.name for p in pdir.iterdir()) == ["part-00000.parquet"]


@pytest.mark.parametrize("writer_lands", ["between listing and reading", "after the read"])
def test_an_unlocked_read_raced_by_a_first_writer_returns_the_new_version(
    home: Path, monkeypatch: pytest.MonkeyPatch, writer_lands: str
) -> None:
    """A partition with no lock yet is read unlocked; a writer that swaps its parts during
    that read (the lake test's concurrent readers hit this: FileNotFoundError on the part
    the writer removed) sends the reader back to read under the lock, whole."""
    pdir = lake.partition_dir("tables", None, dataset="iris")
    pdir.mkdir(parents=True)
    _frame("old").write_parquet(pdir / "part-00000.parquet")
    real_parts, real_read = lake._parts, pl.read_parquet
    raced = []

    def write_once() -> None:
        if not raced:
            raced.append(True)
            lake.write_partition("tables", _frame("new", 4), dataset="iris")

    def parts_then_write(d: Path) -> list[Path]:
        listed = real_parts(d)
        if writer_lands == "between listing and reading":
            write_once()
        return listed

    def read_then_write(path, *args, **kwargs):
        frame = real_read(path, *args, **kwargs)
        if writer_lands == "after the read":
            write_once()
        return frame

    monkeypatch.setattr(lake, "_parts", parts_then_write)
    monkeypatch.setattr(lake.pl, "read_parquet", read_then_write)
    got = lake.read_partition("tables", dataset="iris")
    assert raced == [True]
    assert got["id"].to_list() == [f"new-{i}" for i in range(4)]


def test_duckdb_reads_hive_layout(home: Path, duck) -> None:
    lake.write_partition("questions", _frame("a"), source="template", split="train")
    lake.write_partition("questions", _frame("b", 2), source="llm", split="dev")
    rows = duck.sql(
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
n = 5_000_000
ids = pl.arange(0, n, eager=True)
frame = pl.DataFrame({"id": ids.cast(pl.Utf8), "v": ids})
lake.write_partition("questions", frame, source="template", split="train")
"""


def _writer_at_its_temp(pdir: Path, script: str, *args: str) -> tuple[subprocess.Popen, Path]:
    """Start a writer process (the caller holds a reader's lock on `pdir`, so it cannot
    rename) and return it with the temp file it wrote there."""
    before = set(pdir.glob(".*.tmp"))
    proc = subprocess.Popen([sys.executable, "-c", script, *args], env=os.environ.copy())
    deadline = time.time() + 120
    while time.time() < deadline and not set(pdir.glob(".*.tmp")) - before:
        assert proc.poll() is None, f"writer {args} ended while a reader held the partition"
        time.sleep(0.005)
    new = set(pdir.glob(".*.tmp")) - before
    assert len(new) == 1, f"writer {args} never started its temporary file: {new}"
    return proc, new.pop()


def test_killed_writer_leaves_previous_partition_intact(home: Path) -> None:
    """Killed while it writes its temp file or waits to rename it in (a reader holds the
    partition, so the kill always comes before the rename, however fast the writer)."""
    lake.write_partition("questions", _frame("old"), source="template", split="train")
    pdir = home / "lake/questions/source=template/split=train"
    with lake.partition_lock(pdir, exclusive=False):
        proc, _ = _writer_at_its_temp(pdir, _WRITER)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    got = lake.read_partition("questions", source="template", split="train")
    assert got["id"].to_list() == ["old-0", "old-1", "old-2"]
    assert [p.name for p in pdir.glob("part-*.parquet")] == ["part-00000.parquet"]
    # the next write removes the dead writer's temp file along the way
    lake.write_partition("questions", _frame("new"), source="template", split="train")
    assert sorted(p.name for p in pdir.iterdir()) == [lake.LOCK_NAME, "part-00001.parquet"]


_BLOCKED_WRITER = """
import sys, polars as pl
from verilearn_assets.core import lake
frame = pl.DataFrame({"id": [f"{sys.argv[1]}-{i}" for i in range(3)], "v": [0, 1, 2]})
lake.write_partition("questions", frame, source="template", split="train")
"""


def test_a_sweep_removes_a_killed_writers_temp_and_never_a_live_ones(home: Path) -> None:
    """Two writers wait for the partition (a reader holds it) with their temp files
    written; one is killed. The sweep removes the dead one's temp only, and the live
    writer then renames its own in."""
    lake.write_partition("questions", _frame("old"), source="template", split="train")
    pdir = home / "lake/questions/source=template/split=train"
    with lake.partition_lock(pdir, exclusive=False):
        live, live_temp = _writer_at_its_temp(pdir, _BLOCKED_WRITER, "live")
        dead, dead_temp = _writer_at_its_temp(pdir, _BLOCKED_WRITER, "dead")
        dead.send_signal(signal.SIGKILL)
        assert dead.wait(timeout=30) == -signal.SIGKILL
        assert lake.sweep_dead_temps(pdir) == [dead_temp]
        assert live_temp.exists() and not dead_temp.exists()
    assert live.wait(timeout=60) == 0
    got = lake.read_partition("questions", source="template", split="train")
    assert got["id"].to_list() == ["live-0", "live-1", "live-2"]
    assert sorted(p.name for p in pdir.iterdir()) == [lake.LOCK_NAME, "part-00001.parquet"]


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


# --- concurrent writers and readers in separate processes ------------------------------------
ROWS = 20_000  # big enough that a write takes a few ms, so writers and readers overlap
ROUNDS = 12


def _version(writer: int, rnd: int) -> pl.DataFrame:
    """One complete version: ROWS rows, every one stamped with its writer and round."""
    tag = f"w{writer}r{rnd}"
    return pl.DataFrame({"id": [f"{tag}-{i}" for i in range(ROWS)], "tag": [tag] * ROWS})


def _writer(root: str, writer: int, split: str, start, errors) -> None:
    start.wait(30)
    try:
        for rnd in range(ROUNDS):
            lake.write_partition(
                "questions", _version(writer, rnd), Path(root), source="template", split=split
            )
    except BaseException as exc:  # reported to the test, which names the writer
        errors.put(f"writer {writer}: {type(exc).__name__}: {exc}")


def _reader(root: str, start, stop, errors, reads) -> None:
    start.wait(30)
    n = 0
    try:
        while not stop.is_set():
            got = lake.read_partition("questions", Path(root), source="template", split="train")
            if got.height == 0:
                continue
            tags = got["tag"].unique().to_list()
            ids = got["id"].to_list()
            if len(tags) != 1 or ids != [f"{tags[0]}-{i}" for i in range(ROWS)]:
                errors.put(f"reader saw {got.height} rows of versions {sorted(tags)[:4]}")
                return
            n += 1
    except BaseException as exc:
        errors.put(f"reader: {type(exc).__name__}: {exc}")
    reads.put(n)


def test_concurrent_writers_end_with_one_complete_version(tmp_path: Path) -> None:
    """Three processes rewrite the same partition while two others each own a sibling and
    two readers read the shared one: no writer fails, no reader sees a mixed or partial
    version, and each partition ends as one writer's complete last round."""
    import multiprocessing as mp

    # polars' thread pool makes fork unsafe; a fork server that has only imported the lake
    # starts the processes in well under a second each, spawn re-imports in every one
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["verilearn_assets.core.lake"])
    root = tmp_path / "lake"
    start, stop, errors, reads = ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Queue()
    splits = {0: "train", 1: "train", 2: "train", 3: "dev", 4: "test"}
    writers = [
        ctx.Process(target=_writer, args=(str(root), w, s, start, errors))
        for w, s in splits.items()
    ]
    readers = [
        ctx.Process(target=_reader, args=(str(root), start, stop, errors, reads)) for _ in range(2)
    ]
    for p in writers + readers:
        p.start()
    start.set()
    for p in writers:
        p.join(120)
    stop.set()
    for p in readers:
        p.join(60)
    alive = [p for p in writers + readers if p.is_alive()]
    for p in alive:
        p.kill()
    assert not alive, "a writer or reader did not finish in time"
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert failures == []
    n_reads = sum(reads.get(timeout=10) for _ in readers)
    assert n_reads > 0  # the readers really read

    last = {w: f"w{w}r{ROUNDS - 1}" for w in splits}
    for split, owners in (("train", [0, 1, 2]), ("dev", [3]), ("test", [4])):
        pdir = lake.partition_dir("questions", root, source="template", split=split)
        files = sorted(p.name for p in pdir.iterdir())
        assert len(files) == 2 and files[0] == lake.LOCK_NAME, files  # one part, no temp
        got = lake.read_partition("questions", root, source="template", split=split)
        (tag,) = got["tag"].unique().to_list()
        assert tag in {last[w] for w in owners}, (split, tag)
        assert got["id"].to_list() == [f"{tag}-{i}" for i in range(ROWS)]
