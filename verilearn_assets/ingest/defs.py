"""Ingestion's Dagster definitions, merged by `verilearn_assets/definitions.py`."""

from dagster import Definitions

from verilearn_assets.ingest.assets import INGEST_ASSETS


def defs() -> Definitions:
    return Definitions(assets=INGEST_ASSETS)
