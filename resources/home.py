"""`HomeResource`: the one owner of `VERILEARN_HOME` for assets and checks.

Every asset asks this resource where the home is instead of reading the environment, so a
run configured with another home (a worker mounting the shared lake elsewhere, a test)
reads and writes only there. Records store paths relative to it. Where the home is when
no path is configured is `core/home.py`'s one answer.
"""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from verilearn_assets.core import lake


class HomeResource(ConfigurableResource):
    """Where the lake, the warehouse and the run directories live."""

    path: str | None = Field(
        default=None, description="verilearn home; defaults to $VERILEARN_HOME, else ./.verilearn"
    )

    def dir(self) -> Path:
        return lake.home(self.path)

    def lake_root(self) -> Path:
        return lake.lake_root(self.dir())
