"""Raw tables → typed Parquet + profile + split: the `TableRecord`s the rest of the graph reads.

Typed tables go to `<home>/tables/<dataset>/<table>.parquet` (written with pandas so
nullable integers and booleans survive a round trip); the records go to the lake asset
`tables`, one partition per split holding one part file per dataset.
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
from verilearn_assets.core.ingest.outcomes import Status
from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.ingest.raw import RawDataset, fetch_raw
from verilearn_assets.core.ingest.read_table import TableTooLarge, read_typed
from verilearn_assets.core.ingest.splits import catalog_splits
from verilearn_assets.core.records import SPLITS, TableRecord, content_hash

ASSET = "tables"


class TableBuildError(RuntimeError):
    """A table could not be typed or written; the message names dataset and table.

    `status` says why, in the words the gate uses: `parse_failed` or `excluded_by_limits`.
    """

    def __init__(self, message: str, status: Status = "parse_failed") -> None:
        super().__init__(message)
        self.status = status


def build_tables(cfg: DatasetsConfig, home: Path) -> list[TableRecord]:
    """Fetch or export every enabled dataset, then type, profile, write and split it."""
    return type_tables(cfg, Path(home), fetch_raw(cfg, Path(home)))


def type_tables(cfg: DatasetsConfig, home: Path, raw: list[RawDataset]) -> list[TableRecord]:
    """The typed half of `build_tables`, from raw copies already made."""
    splits = catalog_splits(cfg, home)
    return [r for dataset in raw for r in type_dataset(cfg, home, dataset, splits[dataset.name])]


def type_dataset(
    cfg: DatasetsConfig, home: Path, dataset: RawDataset, split: str
) -> list[TableRecord]:
    """Type, cap, profile and write every table of one dataset (already fetched)."""
    records = []
    for table in dataset.tables:
        where = f"dataset {dataset.name!r} table {table.name!r} ({table.path})"
        try:
            frame = read_typed(Path(table.path), cfg.read, cfg.limits.max_table_bytes)
        except TableTooLarge as exc:
            raise TableBuildError(f"{where}: {exc}", "excluded_by_limits") from exc
        except Exception as exc:  # re-raised with dataset and table named
            raise TableBuildError(f"{where}: {exc}") from exc
        if frame.shape[1] > cfg.limits.max_columns:
            raise TableBuildError(
                f"{where}: {frame.shape[1]} columns, over the cap of {cfg.limits.max_columns}",
                "excluded_by_limits",
            )
        frame = cap_rows(frame, cfg.limits.max_rows, cfg.seed, table.sha256)
        out = Path(home) / "tables" / dataset.name / f"{table.name}.parquet"
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
                split=split,
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


def dataset_part(root: Path, split: str, dataset: str) -> Path:
    """`tables/split=<t>/part-ds-<dataset>.parquet`: one part per dataset in its split's
    partition, so `stg_tables` and `load_table_records` read a split as before."""
    return lake.partition_dir(ASSET, root, split=split) / f"part-ds-{dataset}.parquet"


def write_dataset_tables(home: Path, dataset: str, split: str, records: list[TableRecord]) -> Path:
    """Replace one dataset's tables in the lake; no other dataset's part is touched.

    The dataset's part in any other split (the catalog moved it) is removed after the new
    part is in place, and so are whole-catalog parts written before per-dataset
    partitions (`part-<n>.parquet`), which would otherwise list the dataset twice.
    """
    if split not in SPLITS:
        raise ValueError(f"dataset {dataset!r}: unknown split {split!r}")
    wrong = [r.id for r in records if r.dataset != dataset or r.split != split]
    if wrong:
        raise ValueError(f"dataset {dataset!r}: records {wrong} belong elsewhere")
    root = lake.lake_root(Path(home))
    stored = [r.model_copy(update={"path": home_relative(r.path, home)}) for r in records]
    # each split's part swapped under its partition lock, as the lake's own writers: a
    # reader of the split sees the catalog before or after this dataset moved, never a
    # part listed then gone
    target = lake.replace_part(TableRecord.to_frame(stored), dataset_part(root, split, dataset))
    for other in SPLITS:
        pdir = lake.partition_dir(ASSET, root, split=other)
        stale = [p for p in pdir.glob("part-*.parquet") if p.stem[5:].isdigit()]  # part-<n>
        if other != split and dataset_part(root, other, dataset).exists():
            stale.append(dataset_part(root, other, dataset))
        if stale:
            with lake.partition_lock(pdir, exclusive=True):
                for path in stale:
                    path.unlink(missing_ok=True)
    return target


def write_table_records(home: Path, records: list[TableRecord]) -> list[Path]:
    """Write the tables of every dataset in `records` (one part per dataset)."""
    datasets = sorted({r.dataset for r in records})
    return [
        write_dataset_tables(
            home,
            d,
            next(r.split for r in records if r.dataset == d),
            [r for r in records if r.dataset == d],
        )
        for d in datasets
    ]


def home_relative(path: str, home: Path) -> str:
    """A table file's path as stored: relative to the home when it lies inside it, so a
    home that is moved, copied or mounted elsewhere by another worker still finds it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path(home).resolve()))
    except ValueError:
        return str(p)  # outside the home (a table a user pointed at): kept as given


def load_table_records(home: Path, split: str | None = None) -> list[TableRecord]:
    """TableRecords from the lake asset `tables`, for one split or all of them, with each
    stored home-relative path resolved against *this* home."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
    home = Path(home).resolve()
    root = lake.lake_root(home)
    out: list[TableRecord] = []
    for s in [split] if split else SPLITS:
        for rec in lake.read_records(ASSET, TableRecord, root, split=s):  # type: ignore[arg-type]
            out.append(rec.model_copy(update={"path": str(home / rec.path)}))
    return out


def catalog_table_records(
    cfg: DatasetsConfig, home: Path, split: str
) -> tuple[list[TableRecord], dict[str, int]]:
    """The split's tables whose dataset is enabled in the catalog now, and the number of
    tables left out per dataset that is not (removed or `enabled: false`).

    The lake keeps a dataset's tables after it leaves the catalog (questions made from them
    still need them to verify); generation must not keep drawing from them.
    """
    enabled = {d.name for d in cfg.enabled()}
    kept: list[TableRecord] = []
    left_out: dict[str, int] = {}
    for rec in load_table_records(home, split):
        if rec.dataset in enabled:
            kept.append(rec)
        else:
            left_out[rec.dataset] = left_out.get(rec.dataset, 0) + 1
    return kept, dict(sorted(left_out.items()))


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
