"""`WarehouseResource`: the DuckDB warehouse under `<home>` as a Dagster resource.

Thin wiring over `core/warehouse.py`: the resource knows how long to wait for the lock and
takes its home from `HomeResource`, the one owner of `VERILEARN_HOME`, so the warehouse and
the lake it reads can never point at two different homes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
from dagster import ConfigurableResource
from pydantic import Field

from resources.home import HomeResource
from verilearn_assets.core import warehouse


class WarehouseResource(ConfigurableResource):
    """DuckDB file at `<home>/warehouse.duckdb`: one writer at a time, readers read-only."""

    home: HomeResource
    lock_timeout_s: float = Field(
        default=warehouse.DEFAULT_LOCK_TIMEOUT_S,
        description="how long a writer or reader waits for the warehouse lock",
    )

    def home_dir(self) -> Path:
        return self.home.dir()

    def path(self) -> Path:
        return warehouse.warehouse_path(self.home_dir())

    def lake_root(self) -> Path:
        return self.home.lake_root()

    @contextmanager
    def writer(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self.home_dir().mkdir(parents=True, exist_ok=True)
        with warehouse.writer(self.path(), self.lock_timeout_s) as con:
            yield con

    @contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with warehouse.reader(self.path(), self.lock_timeout_s) as con:
            yield con
