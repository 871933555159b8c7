"""Dagster wiring for ingestion: `raw_datasets` → `tables`, one partition per dataset.

Partitioned by `DATASET` (generated from the catalog), so a download that fails or a file
that cannot be read is one failed partition, retried by itself; the others materialize.
The split of each dataset is computed from the catalog, never from other partitions, and
shows up on disk as the lake partition `tables/split=<t>/`.
(No `from __future__ import annotations` here: Dagster inspects the `context` annotation.)
"""

from dagster import (
    AssetExecutionContext,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)

from resources.home import HomeResource
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.outcomes import DatasetFailure
from verilearn_assets.core.ingest.partition import ingest_raw, ingest_tables
from verilearn_assets.core.partitions import DATASET


def _failure(exc: DatasetFailure) -> Failure:
    """A step failure whose description is the one line the console prints."""
    return Failure(
        description=str(exc),
        metadata={
            "dataset": exc.dataset,
            "source": exc.source,
            "status": exc.status,
            "reason": exc.detail,
        },
        allow_retries=False,
    )


@asset(
    group_name="ingest",
    partitions_def=DATASET,
    description="Raw copy of one catalog dataset (configs/datasets.yaml): a bundled table "
    "exported, or a URL source downloaded (sha256-pinned) and extracted safely.",
)
def raw_datasets(context: AssetExecutionContext, home: HomeResource) -> MaterializeResult:
    name = context.partition_key
    try:
        raw = ingest_raw(load_datasets_config(), home.dir(), name)
    except DatasetFailure as exc:
        raise _failure(exc) from exc
    context.log.info(f"raw copy of {name}: {len(raw.tables)} tables")
    return MaterializeResult(
        metadata={
            "dataset": name,
            "kind": raw.kind,
            "source": raw.source,
            "tables": len(raw.tables),
            "content_hash": raw.content_hash,
            "files": MetadataValue.md(
                "| table | sha256 |\n|---|---|\n"
                + "\n".join(f"| {t.name} | `{t.sha256[:12]}` |" for t in raw.tables)
            ),
        }
    )


@asset(
    group_name="ingest",
    partitions_def=DATASET,
    deps=[raw_datasets],
    description="Typed, profiled tables of one dataset, in the split the catalog assigns it; "
    "TableRecords in the lake under tables/split=<t>/ (one part per dataset).",
)
def tables(context: AssetExecutionContext, home: HomeResource) -> MaterializeResult:
    name = context.partition_key
    try:
        records = ingest_tables(load_datasets_config(), home.dir(), name)
    except DatasetFailure as exc:
        raise _failure(exc) from exc
    split = records[0].split if records else ""
    context.log.info(f"typed {len(records)} tables of {name} into split {split}")
    return MaterializeResult(
        metadata={
            "dataset": name,
            "split": split,
            "tables": len(records),
            "rows": sum(r.n_rows for r in records),
            "columns": sum(r.n_columns for r in records),
            "profile": MetadataValue.md(
                "| table | rows | columns |\n|---|---|---|\n"
                + "\n".join(f"| {r.name} | {r.n_rows} | {r.n_columns} |" for r in records)
            ),
        }
    )


INGEST_ASSETS = [raw_datasets, tables]
