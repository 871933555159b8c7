"""The Parquet lake: hive layout, atomic writes, one partition never touches another.

Layout: `<home>/lake/<asset>/source=<s>/split=<t>/part-<n>.parquet`. Every write goes to a
temporary file in the same directory and is renamed into place, so a crash leaves either
the old file or the new one, never half of either; the next write of the partition removes
the crashed writer's temporary file (`sweep_dead_temps`).

Several processes (Celery workers on one machine or on a shared file system) may write and
read the same partition at once. Each partition has a lock file (`.lock`, an `flock`):
a writer holds it exclusively only while it renames its finished part in and removes the
parts it replaces, a reader shares it while it lists and reads the parts. So a reader sees
one whole version, and two writers of the same partition end with exactly one writer's
complete version (the last to take the lock), never parts of both (docs/scale.md).
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path

import polars as pl

from verilearn_assets.core.home import resolve_home
from verilearn_assets.core.records import Record

LOCK_NAME = ".lock"


def home(explicit: str | Path | None = None) -> Path:
    """`explicit`, else `VERILEARN_HOME`, else `./.verilearn`; created on first use.

    Assets get theirs from `HomeResource`; the CLI and tests call this with no argument.
    """
    path = resolve_home(explicit)
    path.mkdir(parents=True, exist_ok=True)
    return path


def lake_root(base: Path | None = None) -> Path:
    return (base or home()) / "lake"


def partition_dir(asset: str, root: Path | None = None, **dims: str) -> Path:
    path = root or lake_root()
    path = path / asset
    for name, value in dims.items():
        if not re.fullmatch(r"[A-Za-z0-9_\-]+", value):
            raise ValueError(f"lake: partition value {name}={value!r} is not a safe name")
        path = path / f"{name}={value}"
    return path


@contextmanager
def _temp_parquet(
    frame: pl.DataFrame, directory: Path, name: str, *, lock_dir: bool
) -> Iterator[Path]:
    """`frame` in a hidden, fsynced temporary file of `directory` (never matched by
    `part-*.parquet`), to be renamed into place inside the block; removed if the block
    fails.

    The writer holds an `flock` on its temp file from creation to the end of the block, so
    `sweep_dead_temps` removes only the temp files of writers that died (SIGKILL, a lost
    worker), never a live one's. `lock_dir`: create it under the partition's shared lock,
    so no sweep (exclusive) sees it between its creation and its lock; False outside the
    lake (`atomic_write_parquet`), where no sweep runs."""
    directory.mkdir(parents=True, exist_ok=True)
    with partition_lock(directory, exclusive=False, create=True) if lock_dir else nullcontext():
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
        fcntl.flock(fd, fcntl.LOCK_EX)
    path = Path(tmp)
    try:
        # through the locked descriptor: the inode renamed into place is the locked one
        with open(fd, "wb", closefd=False) as fh:
            frame.write_parquet(fh)
        os.fsync(fd)
        yield path
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def sweep_dead_temps(pdir: Path, keep: Path | None = None) -> list[Path]:
    """Remove the temp files (`.*.tmp`) of `pdir` whose writer died before renaming them
    in; returns them. A live writer holds its temp's `flock`, so a temp this process can
    lock has no writer left (`keep`: the caller's own, which an NFS client's per-process
    lock would not protect from itself). Call under the partition's exclusive lock."""
    removed = []
    for tmp in pdir.glob(".*.tmp"):
        if tmp == keep:
            continue
        try:
            fd = os.open(tmp, os.O_RDWR)
        except FileNotFoundError:  # renamed in or removed since the listing
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # its writer is alive
        finally:
            os.close(fd)
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


def atomic_write_parquet(frame: pl.DataFrame, target: Path) -> Path:
    """Write `frame` to `target` through a temp file + fsync + rename (outside the lake;
    a lake partition's part: `replace_part`)."""
    with _temp_parquet(frame, target.parent, target.name, lock_dir=False) as tmp:
        os.replace(tmp, target)
    return target


@contextmanager
def partition_lock(pdir: Path, exclusive: bool, create: bool | None = None) -> Iterator[None]:
    """The partition's `flock` (Linux NFS clients emulate it with a whole-file POSIX lock,
    so it holds across machines on a shared file system). Closing the descriptor releases
    it, so a writer that dies mid-swap frees the partition. Only writers create the lock
    file (`create`, the default for an exclusive lock; see `_read_unlocked`); a reader of a
    directory it cannot write (a read-only copy of the lake, where no one writes), or whose
    lock an operator removed, reads unlocked."""
    path = pdir / LOCK_NAME
    create = exclusive if create is None else create
    try:
        if create:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        else:
            fd = os.open(path, os.O_RDONLY)
    except (PermissionError, FileNotFoundError):
        if create:
            raise
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


@contextmanager
def _staged(frame: pl.DataFrame, pdir: Path) -> Iterator[Path]:
    """`frame` written unlocked to a temp file of `pdir`, then yielded under the
    partition's exclusive lock with the temp files of writers that died removed: the
    caller renames it in (what every lake writer shares)."""
    with _temp_parquet(frame, pdir, "part-new", lock_dir=True) as tmp:
        with partition_lock(pdir, exclusive=True):
            sweep_dead_temps(pdir, keep=tmp)
            yield tmp


def _commit(
    asset: str, frame: pl.DataFrame, root: Path | None, replace: bool, dims: dict[str, str]
) -> Path:
    """Rename `frame` in as the partition's next part (removing the parts it replaces
    when `replace`)."""
    pdir = partition_dir(asset, root, **dims)
    with _staged(frame, pdir) as tmp:
        old = _parts(pdir)
        n = 1 + max((_part_number(p) for p in old), default=-1)
        new = pdir / f"part-{n:05d}.parquet"
        os.replace(tmp, new)
        for p in old if replace else ():
            p.unlink(missing_ok=True)  # tolerant: an operator may have removed it
    return new


def replace_part(frame: pl.DataFrame, target: Path) -> Path:
    """Replace one named part of a partition (`target`, in the partition's directory) as
    the lake's own writers do: readers of the partition see the old part or the new."""
    with _staged(frame, target.parent) as tmp:
        os.replace(tmp, target)
    return target


def write_partition(asset: str, frame: pl.DataFrame, root: Path | None = None, **dims: str) -> Path:
    """Replace one partition with `frame` (a single part file); siblings are untouched.

    The new part is renamed into place before the old parts are removed, under the
    partition lock, so readers see either the old partition or the new one, and the same
    partition written twice at once ends with one writer's complete version.
    """
    return _commit(asset, frame, root, True, dims)


def append_part(asset: str, frame: pl.DataFrame, root: Path | None = None, **dims: str) -> Path:
    """Add one more part to a partition (incremental writers: at most one part is lost;
    the lock keeps two appenders from taking the same part number)."""
    return _commit(asset, frame, root, False, dims)


def read_partition(
    asset: str, root: Path | None = None, *, schema: dict | None = None, **dims: str
) -> pl.DataFrame:
    """All parts of one partition; an empty frame (with `schema`) when none exist."""
    pdir = partition_dir(asset, root, **dims)
    if not pdir.is_dir():
        return pl.DataFrame(schema=schema or {})
    frames = _read_unlocked(pdir)
    if frames is None:
        with partition_lock(pdir, exclusive=False):  # one whole version, never a mix of two
            frames = _read_parts(pdir)
    if not frames:
        return pl.DataFrame(schema=schema or {})
    return pl.concat(frames, how="diagonal_relaxed")


def _read_unlocked(pdir: Path) -> list[pl.DataFrame] | None:
    """The parts of a partition no writer has locked yet (a table dropped in place), read
    without creating a lock file; None when a writer has been here, before or during the
    read. A writer creates the lock before its first rename and never removes it, so a
    lock still absent after the read means no part was swapped under it."""
    lock = pdir / LOCK_NAME
    if lock.exists():
        return None
    try:
        frames = _read_parts(pdir)
    except FileNotFoundError:  # a part listed, then replaced by a writer: read locked
        return None
    return None if lock.exists() else frames


def _read_parts(pdir: Path) -> list[pl.DataFrame]:
    return [pl.read_parquet(p) for p in _parts(pdir)]


def write_records(
    asset: str,
    records: Sequence[Record],
    model: type[Record],
    root: Path | None = None,
    **dims: str,
) -> Path:
    return write_partition(asset, model.to_frame(records), root, **dims)


def read_records(
    asset: str, model: type[Record], root: Path | None = None, **dims: str
) -> list[Record]:
    frame = read_partition(asset, root, schema=model.polars_schema(), **dims)
    out = []
    for i, row in enumerate(frame.iter_rows(named=True)):
        try:
            out.append(model.from_row(row))
        except Exception as exc:  # re-raised with the place named
            where = partition_dir(asset, root, **dims)
            raise ValueError(f"{where}: record {i} ({row.get('id')!r}): {exc}") from exc
    return out


def _parts(pdir: Path) -> list[Path]:
    return sorted(pdir.glob("part-*.parquet"))


def _part_number(path: Path) -> int:
    m = re.fullmatch(r"part-(\d+)\.parquet", path.name)
    return int(m.group(1)) if m else -1
