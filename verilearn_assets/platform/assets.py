"""Dagster wiring for ingestion: `raw_datasets` → `tables`.

Both assets are unpartitioned: which split a dataset lands in is decided over the whole
catalog at once. The split shows up on disk as the lake partition `split=<t>`.
(No `from __future__ import annotations` here: Dagster inspects the `context` annotation.)
"""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from verilearn_assets.core import lake
from verilearn_assets.core.ingest.catalog import load_datasets_config
from verilearn_assets.core.ingest.raw import fetch_raw, load_raw_manifest
from verilearn_assets.core.ingest.tables import (
    split_stats,
    stats_markdown,
    type_tables,
    write_table_records,
)


@asset(
    group_name="ingest",
    description="Raw copies of every enabled dataset in "
    "configs/datasets.yaml: bundled tables exported, URL sources downloaded "
    "(sha256-pinned) and extracted safely.",
)
def raw_datasets(context: AssetExecutionContext) -> MaterializeResult:
    cfg = load_datasets_config()
    datasets = fetch_raw(cfg, lake.home())
    context.log.info(f"raw copies of {len(datasets)} datasets")
    listing = "\n".join(
        f"| {d.name} | {d.kind} | {d.source} | {len(d.tables)} | `{d.content_hash[:12]}` |"
        for d in datasets
    )
    return MaterializeResult(
        metadata={
            "datasets": len(datasets),
            "tables": sum(len(d.tables) for d in datasets),
            "catalog": MetadataValue.md(
                "| dataset | kind | source | tables | content hash |\n"
                "|---|---|---|---|---|\n" + listing
            ),
        }
    )


@asset(
    group_name="ingest",
    deps=[raw_datasets],
    description="Typed, profiled tables with "
    "a split per dataset; TableRecords in the lake under tables/split=<t>.",
)
def tables(context: AssetExecutionContext) -> MaterializeResult:
    cfg = load_datasets_config()
    home = lake.home()
    records = type_tables(cfg, home, load_raw_manifest(home))
    write_table_records(home, records)
    stats = split_stats(records)
    metadata: dict[str, object] = {
        "tables": len(records),
        "splits": MetadataValue.md(stats_markdown(stats)),
    }
    for split, values in stats.items():
        for key, value in values.items():
            metadata[f"{split}/{key}"] = value
    context.log.info(f"typed {len(records)} tables")
    return MaterializeResult(metadata=metadata)


INGEST_ASSETS = [raw_datasets, tables]
