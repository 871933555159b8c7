"""One writer at a time across processes; readers share the warehouse with each other."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from verilearn_assets.core.warehouse import WarehouseBusy, reader, warehouse_path, writer

HOLDER = textwrap.dedent("""
    import sys
    from verilearn_assets.core.warehouse import reader, writer
    role, db = sys.argv[1], sys.argv[2]
    opener = writer if role == "writer" else reader
    with opener(db, timeout_s=30) as con:
        if role == "writer":
            con.execute("CREATE OR REPLACE TABLE t AS SELECT 41 + 1 AS x")
        print("held", con.execute("SELECT max(x) FROM t").fetchone()[0], flush=True)
        sys.stdin.readline()  # hold until the test says so
    print("released", flush=True)
""")


@contextmanager
def held_by_other_process(role: str, db: Path) -> Iterator[subprocess.Popen]:
    """Another process holding the warehouse as `role` until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, role, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        expected = "42" if role == "writer" else "1"
        assert line.split() == ["held", expected], (line, proc.stderr.read())
        yield proc
    finally:
        if proc.poll() is None:
            proc.stdin.write("\n")
            proc.stdin.flush()
        proc.wait(timeout=30)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = warehouse_path(tmp_path)
    with writer(path) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS x")
    return path


def test_second_writer_fails_clearly_while_first_holds(db: Path) -> None:
    with held_by_other_process("writer", db) as holder:
        t0 = time.monotonic()
        with pytest.raises(WarehouseBusy) as err:
            with writer(db, timeout_s=0.5):
                pass
        assert time.monotonic() - t0 >= 0.5  # it waited before giving up
        message = str(err.value)
        assert str(db) in message and f"writer pid {holder.pid}" in message
        # a reader cannot slip in under a writer either
        with pytest.raises(WarehouseBusy, match="as a reader"):
            with reader(db, timeout_s=0.3):
                pass
    with writer(db, timeout_s=1) as con:  # released: the next writer gets in and sees 42
        assert con.execute("SELECT x FROM t").fetchall() == [(42,)]


def test_waiting_writer_gets_in_when_the_first_finishes(db: Path) -> None:
    with held_by_other_process("writer", db) as holder:
        release_at = time.monotonic() + 0.8

        def release() -> None:
            time.sleep(0.8)
            holder.stdin.write("\n")
            holder.stdin.flush()

        threading.Thread(target=release, daemon=True).start()
        with writer(db, timeout_s=30) as con:
            assert time.monotonic() >= release_at
            con.execute("INSERT INTO t VALUES (7)")
    with reader(db) as con:
        assert con.execute("SELECT list_sort(list(x)) FROM t").fetchone()[0] == [7, 42]


def test_readers_read_concurrently_and_keep_writers_out(db: Path) -> None:
    with held_by_other_process("reader", db):
        with reader(db, timeout_s=1) as con:  # a second reader, side by side
            assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
            with pytest.raises(Exception, match="read-only"):
                con.execute("CREATE TABLE u AS SELECT 1")
        with pytest.raises(WarehouseBusy, match="as a writer"):
            with writer(db, timeout_s=0.3):
                pass


def test_reader_on_a_missing_warehouse_says_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="warehouse not built yet"):
        with reader(warehouse_path(tmp_path)):
            pass
