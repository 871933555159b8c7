"""The actor queue and committed steps, in the same SQLite file as the states.

One transaction per step writes the step record, the new state version and the task's
progress together, so a killed run loses at most the step in flight: on restart, tasks
left `running` go back to `pending` and resume after their last committed step.
"""

from __future__ import annotations

import sqlite3
import time

from verilearn_assets.refactor.records import TrajectoryStep
from verilearn_assets.refactor.rollout.state import State, StateStore, transaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS queue (
    run TEXT NOT NULL,
    task_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done')),
    updated REAL NOT NULL,
    PRIMARY KEY (run, task_id)
);
CREATE TABLE IF NOT EXISTS steps (
    run TEXT NOT NULL,
    task_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    source TEXT NOT NULL,
    split TEXT NOT NULL,
    record JSON NOT NULL,
    PRIMARY KEY (run, task_id, step)
);
"""


class SqliteDispatch:
    """Which tasks are pending, running or done, in the SQLite file (the embedded default)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def enqueue(self, run: str, task_ids: list[str]) -> None:
        with transaction(self.conn):
            for i, task_id in enumerate(task_ids):
                self.conn.execute(
                    "INSERT OR IGNORE INTO queue VALUES (?, ?, ?, 'pending', ?)",
                    (run, task_id, i, time.time()),
                )

    def recover(self, run: str) -> int:
        """Tasks a killed run left `running` go back to `pending`."""
        with transaction(self.conn):
            cur = self.conn.execute(
                "UPDATE queue SET status = 'pending' WHERE run = ? AND status = 'running'", (run,)
            )
        return cur.rowcount

    def claim(self, run: str) -> str | None:
        with transaction(self.conn):
            row = self.conn.execute(
                "SELECT task_id FROM queue WHERE run = ? AND status = 'pending' "
                "ORDER BY position LIMIT 1",
                (run,),
            ).fetchone()
            if row is None:
                return None
            self.conn.execute(
                "UPDATE queue SET status = 'running', updated = ? WHERE run = ? AND task_id = ?",
                (time.time(), run, row[0]),
            )
        return str(row[0])

    def finish(self, run: str, task_id: str) -> None:
        with transaction(self.conn):
            self.conn.execute(
                "UPDATE queue SET status = 'done', updated = ? WHERE run = ? AND task_id = ?",
                (time.time(), run, task_id),
            )

    def counts(self, run: str) -> dict[str, int]:
        rows = self.conn.execute(
            "SELECT status, COUNT(*) FROM queue WHERE run = ? GROUP BY status", (run,)
        ).fetchall()
        return {str(s): int(n) for s, n in rows}


class RedisDispatch:
    """The same queue in Redis (several hosts pulling from one run): lists `pending` and
    `running`, set `done`; a claim is one atomic LMOVE, and recovery moves `running` back.
    Steps and states stay in SQLite, so a step is still committed in one transaction."""

    def __init__(self, url: str, prefix: str = "verilearn:refactor") -> None:
        import redis

        self.client = redis.Redis.from_url(url, decode_responses=True)
        self.client.ping()
        self.prefix = prefix

    def _key(self, run: str, what: str) -> str:
        return f"{self.prefix}:{run}:{what}"

    def enqueue(self, run: str, task_ids: list[str]) -> None:
        for task_id in task_ids:
            if self.client.sadd(self._key(run, "known"), task_id):
                self.client.rpush(self._key(run, "pending"), task_id)

    def recover(self, run: str) -> int:
        moved = 0
        while self.client.lmove(
            self._key(run, "running"), self._key(run, "pending"), "RIGHT", "LEFT"
        ):
            moved += 1
        return moved

    def claim(self, run: str) -> str | None:
        return self.client.lmove(
            self._key(run, "pending"), self._key(run, "running"), "LEFT", "RIGHT"
        )

    def finish(self, run: str, task_id: str) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(self._key(run, "done"), task_id)
        pipe.lrem(self._key(run, "running"), 0, task_id)
        pipe.execute()

    def counts(self, run: str) -> dict[str, int]:
        out = {
            "pending": self.client.llen(self._key(run, "pending")),
            "running": self.client.llen(self._key(run, "running")),
            "done": self.client.scard(self._key(run, "done")),
        }
        return {k: int(v) for k, v in out.items() if v}


class StepQueue:
    """Task dispatch (SQLite by default, Redis when configured) plus committed steps."""

    def __init__(self, store: StateStore, redis_url: str | None = None) -> None:
        self.store = store
        self.conn = store.conn
        self.conn.executescript(SCHEMA)
        self.dispatch: SqliteDispatch | RedisDispatch = (
            RedisDispatch(redis_url) if redis_url else SqliteDispatch(self.conn)
        )

    def enqueue(self, run: str, task_ids: list[str]) -> None:
        self.dispatch.enqueue(run, task_ids)

    def recover(self, run: str) -> int:
        return self.dispatch.recover(run)

    def claim(self, run: str) -> str | None:
        return self.dispatch.claim(run)

    def finish(self, run: str, task_id: str) -> None:
        self.dispatch.finish(run, task_id)

    def counts(self, run: str) -> dict[str, int]:
        return self.dispatch.counts(run)

    def committed(self, run: str, task_id: str) -> list[TrajectoryStep]:
        rows = self.conn.execute(
            "SELECT record FROM steps WHERE run = ? AND task_id = ? ORDER BY step", (run, task_id)
        ).fetchall()
        return [TrajectoryStep.model_validate_json(r[0]) for r in rows]

    def commit_step(self, run: str, record: TrajectoryStep, state_key: str, state: State) -> int:
        """Step record + state version + progress, all or nothing; returns the version."""
        with transaction(self.conn) as conn:
            version = self.store.save(state_key, state, conn=conn)
            record.state_version = version
            conn.execute(
                "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)",
                (
                    run,
                    record.task_id,
                    record.step,
                    record.source,
                    record.split,
                    record.model_dump_json(),
                ),
            )
            conn.execute(
                "UPDATE queue SET updated = ? WHERE run = ? AND task_id = ?",
                (time.time(), run, record.task_id),
            )
        return version

    def records(self, source: str, split: str) -> list[TrajectoryStep]:
        rows = self.conn.execute(
            "SELECT record FROM steps WHERE source = ? AND split = ? ORDER BY run, task_id, step",
            (source, split),
        ).fetchall()
        return [TrajectoryStep.model_validate_json(r[0]) for r in rows]
