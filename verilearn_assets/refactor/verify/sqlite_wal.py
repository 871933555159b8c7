"""SQLite connections in WAL mode, safe to open side by side on a new database.

Switching a new database to WAL takes an exclusive lock that SQLite's busy timeout does not
wait for: a second thread or process opening it at that moment gets "database is locked" at
once. The state store and the test cache are both opened by concurrent actors, so the
switch is retried briefly here.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

ATTEMPTS = 50
PAUSE_S = 0.05


def connect_wal(path: Path, **kwargs: Any) -> sqlite3.Connection:
    """`sqlite3.connect(path, timeout=30, **kwargs)` with `journal_mode=WAL` set."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(ATTEMPTS):
        conn = sqlite3.connect(path, timeout=30, **kwargs)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            conn.close()
            if "locked" not in str(exc) or attempt == ATTEMPTS - 1:
                raise
            time.sleep(PAUSE_S)
            continue
        return conn
    raise AssertionError("unreachable")
