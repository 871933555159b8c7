"""`WarehouseResource`: the DuckDB warehouse under `<home>` as a Dagster resource.

Thin wiring over `verilearn_assets.warehouse`: the resource only knows where the home is
and how long to wait for the lock; the locking and SQL logic live in the pure module.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
from dagster import ConfigurableResource
from pydantic import Field

from verilearn_assets.core import lake, warehouse


class WarehouseResource(ConfigurableResource):
    """DuckDB file at `<home>/warehouse.duckdb`: one writer at a time, readers read-only."""

    home: str | None = Field(
        default=None, description="verilearn home; defaults to $VERILEARN_HOME, else ./.verilearn"
    )
    lock_timeout_s: float = Field(
        default=warehouse.DEFAULT_LOCK_TIMEOUT_S,
        description="how long a writer or reader waits for the warehouse lock",
    )

    def home_dir(self) -> Path:
        return Path(self.home or os.environ.get("VERILEARN_HOME", ".verilearn")).resolve()

    def path(self) -> Path:
        return warehouse.warehouse_path(self.home_dir())

    def lake_root(self) -> Path:
        return lake.lake_root(self.home_dir())

    @contextmanager
    def writer(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self.home_dir().mkdir(parents=True, exist_ok=True)
        with warehouse.writer(self.path(), self.lock_timeout_s) as con:
            yield con

    @contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with warehouse.reader(self.path(), self.lock_timeout_s) as con:
            yield con
