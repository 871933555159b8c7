"""Dagster wiring of ingestion: the catalog datasets as `raw_datasets` → `tables`."""
