"""Verdicts cached in the lake by content hash of (program, verifier versions, jail, flags).

Re-verifying the same string is then a dictionary look-up. The cache is Parquet parts under
`<home>/lake/dafny/verdicts/` (columns `key`, `status`, `result`: the verdict as JSON),
read once into an in-memory index. New verdicts are buffered and written as one part per
batch (`flush`: after a `verify_many`, every `BATCH` verdicts, and on close), each to a
temporary file renamed to a name no other process can pick (`part-<time>-<pid>-<random>`),
so concurrent processes never clash and a crash never leaves a half-written part. A miss
re-reads the directory only when its listing changed (one `stat`), so verdicts another
process wrote are found without a scan per look-up. When parts pile up, `compact` merges
them into one (the merged part is written before the old ones are removed; readers skip a
part that vanished under them). Crashes are not cached: they say nothing about the program.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import polars as pl
from pydantic import ValidationError

from verilearn_assets.core.lake import atomic_write_parquet
from verilearn_assets.core.records import content_hash
from verilearn_assets.dafny.verify.results import VerifyResult

BATCH = 32  # verdicts buffered before a part is written
COMPACT_AT = 64  # parts in the directory before `compact` merges them
SCHEMA = {"key": pl.Utf8, "status": pl.Utf8, "result": pl.Utf8}


def cache_key(source: str, versions: dict[str, str], flags: list[str]) -> str:
    """`versions` holds the dafny and z3 versions and the jail; `flags` the verdict flags."""
    return content_hash("dafny-verify", source, versions, flags, length=32)


class VerdictCache:
    """Thread-safe; one per verifier. `root` is the verdicts directory of the lake."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        # key -> (status, verdict JSON): the JSON is validated on a hit, the status kept
        # beside it so that writing a part never parses a verdict again
        self._index: dict[str, tuple[str, str]] = {}
        self._seen: set[str] = set()  # part names already read
        self._pending: dict[str, tuple[str, str]] = {}
        self._listing: tuple[int, int] | None = None  # the directory's (mtime_ns, inode)
        self._lock = threading.Lock()
        self._refresh()

    # --- reading --------------------------------------------------------------------------
    def parts(self) -> list[Path]:
        return sorted(self.root.glob("part-*.parquet")) if self.root.is_dir() else []

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.root.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_ino)

    def _refresh(self) -> None:
        """Read the parts not read yet (the listing changed)."""
        stamp = self._stamp()
        if stamp is None or stamp == self._listing:
            return
        self._listing = stamp
        for part in self.parts():
            if part.name in self._seen:
                continue
            try:
                frame = pl.read_parquet(part, columns=["key", "status", "result"])
            except FileNotFoundError:  # compacted away by another process: its rows moved
                continue
            except Exception as exc:  # noqa: BLE001 - a broken part is named, not skipped
                raise ValueError(f"{part}: corrupt dafny verdict cache part: {exc}") from exc
            rows = zip(frame["status"].to_list(), frame["result"].to_list(), strict=True)
            self._index.update(zip(frame["key"].to_list(), rows, strict=True))
            self._seen.add(part.name)

    def get(self, key: str) -> VerifyResult | None:
        with self._lock:
            row = self._pending.get(key) or self._index.get(key)
            if row is None:
                self._refresh()
                row = self._index.get(key)
        if row is None:
            return None
        text = row[1]
        try:
            return VerifyResult.model_validate_json(text)
        except ValidationError as exc:
            raise ValueError(f"{self.root}: corrupt dafny verdict for key {key}: {exc}") from exc

    def __len__(self) -> int:
        with self._lock:
            return len(self._index.keys() | self._pending.keys())

    # --- writing --------------------------------------------------------------------------
    def put(self, result: VerifyResult) -> None:
        if result.status == "crash" or not result.key:
            return
        text = result.model_copy(update={"cached": False}).model_dump_json()
        with self._lock:
            self._pending[result.key] = (result.status, text)
            full = len(self._pending) >= BATCH
        if full:
            self.flush()

    def flush(self) -> Path | None:
        """Write the buffered verdicts as one new part; returns it (None: nothing new)."""
        with self._lock:
            if not self._pending:
                return None
            rows = dict(self._pending)
            part = self._write(rows)
            self._index.update(rows)
            self._pending.clear()
            self._seen.add(part.name)
        if len(self.parts()) >= COMPACT_AT:
            self.compact()
        return part

    def _write(self, rows: dict[str, tuple[str, str]]) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        statuses = [status for status, _ in rows.values()]
        texts = [text for _, text in rows.values()]
        frame = pl.DataFrame(
            {"key": list(rows), "status": statuses, "result": texts}, schema=SCHEMA
        )
        name = f"part-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:12]}.parquet"
        return atomic_write_parquet(frame, self.root / name)

    def compact(self) -> Path | None:
        """Merge every part into one; old parts are removed after the merged one is in place."""
        with self._lock:
            self._listing = None
            self._refresh()
            old = [p for p in self.parts() if p.name in self._seen]
            if len(old) < 2:
                return None
            merged = self._write(dict(self._index))
            self._seen.add(merged.name)
            for p in old:
                p.unlink(missing_ok=True)
            return merged
