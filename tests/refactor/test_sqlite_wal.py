"""New SQLite databases opened side by side in WAL mode: no "database is locked"."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from verilearn_assets.refactor.verify.sqlite_wal import connect_wal


def test_threads_opening_a_new_database_together_all_get_wal(tmp_path: Path) -> None:
    # Before connect_wal, the actors' threads opening a fresh test cache together failed
    # with "database is locked" (tests/refactor/test_actor.py, concurrency 2).
    errors: list[BaseException] = []
    modes: list[str] = []

    def open_it(path: Path, barrier: threading.Barrier) -> None:
        try:
            barrier.wait()
            conn = connect_wal(path)
            modes.append(conn.execute("PRAGMA journal_mode").fetchone()[0])
            conn.close()
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    for i in range(60):
        barrier = threading.Barrier(6)
        path = tmp_path / f"db{i}" / "cache.sqlite"
        threads = [threading.Thread(target=open_it, args=(path, barrier)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == [] and modes == ["wal"] * 360


def test_other_errors_are_not_retried(tmp_path: Path) -> None:
    (tmp_path / "dir.sqlite").mkdir()
    try:
        connect_wal(tmp_path / "dir.sqlite")
    except sqlite3.OperationalError as exc:
        assert "locked" not in str(exc)
    else:
        raise AssertionError("a directory opened as a database")
