"""One dataset's ingestion, as its `raw_datasets` and `tables` partitions run it.

Each step records the dataset's outcome (ok, or why not) before returning or raising, so
the gate can name a missing dataset and its reason; a failure is a `DatasetFailure` whose
message is the one line a person reads.
"""

from __future__ import annotations

from pathlib import Path

from verilearn_assets.core.ingest.catalog import BundledDataset, DatasetsConfig, entry_source
from verilearn_assets.core.ingest.outcomes import DatasetFailure, outcome, record_outcome
from verilearn_assets.core.ingest.raw import RawDataset, fetch_dataset, load_raw_dataset
from verilearn_assets.core.ingest.splits import catalog_splits, remember_export_hash
from verilearn_assets.core.ingest.tables import (
    TableBuildError,
    type_dataset,
    write_dataset_tables,
)
from verilearn_assets.core.records import TableRecord


def ingest_raw(cfg: DatasetsConfig, home: Path, name: str) -> RawDataset:
    """Fetch (or export) dataset `name` and record the outcome."""
    home = Path(home)
    entry = cfg.entry(name)
    split = catalog_splits(cfg, home)[name]
    source = entry_source(entry)
    try:
        raw = fetch_dataset(entry, cfg, home)
    except DatasetFailure as exc:
        record_outcome(home, outcome(name, source, split, "raw_datasets", exc.status, str(exc)))
        raise
    if isinstance(entry, BundledDataset):
        remember_export_hash(entry, home, raw.content_hash)
    record_outcome(home, outcome(name, source, split, "raw_datasets", "ok", tables=len(raw.tables)))
    return raw


def ingest_tables(cfg: DatasetsConfig, home: Path, name: str) -> list[TableRecord]:
    """Type dataset `name` from its raw copy, write its lake part and record the outcome."""
    home = Path(home)
    entry = cfg.entry(name)
    split = catalog_splits(cfg, home)[name]
    source = entry_source(entry)
    try:
        records = type_dataset(cfg, home, load_raw_dataset(home, name), split)
    except TableBuildError as exc:
        failure = DatasetFailure(name, source, exc.status, str(exc))
        record_outcome(home, outcome(name, source, split, "tables", exc.status, str(failure)))
        raise failure from exc
    except Exception as exc:  # a missing raw copy, an unwritable home: still one line
        failure = DatasetFailure(name, source, "failed", f"{type(exc).__name__}: {exc}")
        record_outcome(home, outcome(name, source, split, "tables", "failed", str(failure)))
        raise failure from exc
    write_dataset_tables(home, name, split, records)
    record_outcome(home, outcome(name, source, split, "tables", "ok", tables=len(records)))
    return records
