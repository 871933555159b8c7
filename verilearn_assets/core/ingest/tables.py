"""Raw tables → typed Parquet + profile + split: the `TableRecord`s the rest of the graph reads.

Typed tables go to `<home>/tables/<dataset>/<table>.parquet` (written with pandas so
nullable integers and booleans survive a round trip); the records go to the lake asset
`tables`, one partition per split.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from verilearn_assets.core import lake
from verilearn_assets.core.ingest.archive import file_sha256
from verilearn_assets.core.ingest.catalog import DatasetsConfig
from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.ingest.raw import RawDataset, fetch_raw
from verilearn_assets.core.ingest.read_table import read_typed
from verilearn_assets.core.ingest.splits import assign_splits
from verilearn_assets.core.records import SPLITS, TableRecord, content_hash

ASSET = "tables"


class TableBuildError(RuntimeError):
    """A table could not be typed or written; the message names dataset and table."""


def build_tables(cfg: DatasetsConfig, home: Path) -> list[TableRecord]:
    """Fetch or export every enabled dataset, then type, profile, write and split it."""
    return type_tables(cfg, Path(home), fetch_raw(cfg, Path(home)))


def type_tables(cfg: DatasetsConfig, home: Path, raw: list[RawDataset]) -> list[TableRecord]:
    """The typed half of `build_tables`, from raw copies already made."""
    splits = assign_splits({d.name: d.content_hash for d in raw}, cfg.splits, cfg.salt)
    records = []
    for dataset in raw:
        for table in dataset.tables:
            where = f"dataset {dataset.name!r} table {table.name!r} ({table.path})"
            try:
                frame = read_typed(Path(table.path), cfg.read, cfg.limits.max_table_bytes)
            except Exception as exc:  # re-raised with dataset and table named
                raise TableBuildError(f"{where}: {exc}") from exc
            if frame.shape[1] > cfg.limits.max_columns:
                raise TableBuildError(
                    f"{where}: {frame.shape[1]} columns, over the cap of {cfg.limits.max_columns}"
                )
            frame = cap_rows(frame, cfg.limits.max_rows, cfg.seed, table.sha256)
            out = home / "tables" / dataset.name / f"{table.name}.parquet"
            _write_parquet(frame, out)
            records.append(
                TableRecord(
                    id=content_hash(
                        "table",
                        dataset.name,
                        table.name,
                        table.sha256,
                        cfg.read.model_dump(),
                        cfg.limits.max_rows,
                        cfg.seed,
                    ),
                    dataset=dataset.name,
                    name=table.name,
                    split=splits[dataset.name],
                    path=str(out),
                    n_rows=len(frame),
                    n_columns=frame.shape[1],
                    sha256=file_sha256(out),
                    columns=profile_frame(frame),
                )
            )
    return records


def cap_rows(frame: pd.DataFrame, max_rows: int, seed: int, key: str) -> pd.DataFrame:
    """At most `max_rows` rows: a seeded sample that keeps the original row order."""
    if len(frame) <= max_rows:
        return frame
    rng = np.random.default_rng([seed, int(key[:15], 16)])
    keep = np.sort(rng.choice(len(frame), size=max_rows, replace=False))
    return frame.iloc[keep].reset_index(drop=True)


def _write_parquet(frame: pd.DataFrame, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_table_records(home: Path, records: list[TableRecord]) -> dict[str, Path]:
    """Replace every split partition of the lake asset `tables` (an empty split included)."""
    root = lake.lake_root(Path(home))
    return {
        split: lake.write_records(
            ASSET, [r for r in records if r.split == split], TableRecord, root, split=split
        )
        for split in SPLITS
    }


def load_table_records(home: Path, split: str | None = None) -> list[TableRecord]:
    """TableRecords from the lake asset `tables`, for one split or all of them."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
    root = lake.lake_root(Path(home))
    out: list[TableRecord] = []
    for s in [split] if split else SPLITS:
        out.extend(lake.read_records(ASSET, TableRecord, root, split=s))  # type: ignore[arg-type]
    return out


def split_stats(records: list[TableRecord]) -> dict[str, dict[str, int]]:
    """Per split: tables, datasets, rows and columns (summed over tables)."""
    stats = {}
    for split in SPLITS:
        mine = [r for r in records if r.split == split]
        stats[split] = {
            "tables": len(mine),
            "datasets": len({r.dataset for r in mine}),
            "rows": sum(r.n_rows for r in mine),
            "columns": sum(r.n_columns for r in mine),
        }
    return stats


def stats_markdown(stats: dict[str, dict[str, int]]) -> str:
    lines = ["| split | datasets | tables | rows | columns |", "|---|---|---|---|---|"]
    for split, s in stats.items():
        lines.append(
            f"| {split} | {s['datasets']} | {s['tables']} | {s['rows']} | {s['columns']} |"
        )
    return "\n".join(lines)
