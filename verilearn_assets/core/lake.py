"""The Parquet lake: hive layout, atomic writes, one partition never touches another.

Layout: `<home>/lake/<asset>/source=<s>/split=<t>/part-<n>.parquet`. Every write goes to a
temporary file in the same directory and is renamed into place, so a crash leaves either
the old file or the new one, never half of either.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from verilearn_assets.core.records import Record


def home(explicit: str | Path | None = None) -> Path:
    """`explicit`, else `VERILEARN_HOME`, else `./.verilearn`; created on first use.

    Assets get theirs from `HomeResource`; the CLI and tests call this with no argument.
    """
    path = Path(explicit or os.environ.get("VERILEARN_HOME", ".verilearn")).resolve()
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


def atomic_write_parquet(frame: pl.DataFrame, target: Path) -> Path:
    """Write `frame` to `target` through a temp file + fsync + rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        frame.write_parquet(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_partition(asset: str, frame: pl.DataFrame, root: Path | None = None, **dims: str) -> Path:
    """Replace one partition with `frame` (a single part file); siblings are untouched.

    The new part is renamed into place before the old parts are removed, so readers and
    a crash see either the old partition or the new one.
    """
    pdir = partition_dir(asset, root, **dims)
    pdir.mkdir(parents=True, exist_ok=True)
    old = sorted(pdir.glob("part-*.parquet"))
    n = 1 + max((_part_number(p) for p in old), default=-1)
    new = atomic_write_parquet(frame, pdir / f"part-{n:05d}.parquet")
    for p in old:
        p.unlink()
    return new


def append_part(asset: str, frame: pl.DataFrame, root: Path | None = None, **dims: str) -> Path:
    """Add one more part to a partition (incremental writers: at most one part is lost)."""
    pdir = partition_dir(asset, root, **dims)
    pdir.mkdir(parents=True, exist_ok=True)
    n = 1 + max((_part_number(p) for p in pdir.glob("part-*.parquet")), default=-1)
    return atomic_write_parquet(frame, pdir / f"part-{n:05d}.parquet")


def read_partition(
    asset: str, root: Path | None = None, *, schema: dict | None = None, **dims: str
) -> pl.DataFrame:
    """All parts of one partition; an empty frame (with `schema`) when none exist."""
    pdir = partition_dir(asset, root, **dims)
    parts = sorted(pdir.glob("part-*.parquet")) if pdir.exists() else []
    if not parts:
        return pl.DataFrame(schema=schema or {})
    return pl.concat([pl.read_parquet(p) for p in parts], how="diagonal_relaxed")


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


def _part_number(path: Path) -> int:
    m = re.fullmatch(r"part-(\d+)\.parquet", path.name)
    return int(m.group(1)) if m else -1
