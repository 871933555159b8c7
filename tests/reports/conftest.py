"""Fixtures for the report tests: a home holding the small lake of `reports_lake`."""

from __future__ import annotations

from pathlib import Path

import pytest
from reports_lake import write_small_lake


@pytest.fixture
def small_lake(home: Path) -> Path:
    """`home` with the full small lake written; returns the home."""
    write_small_lake(home)
    return home
