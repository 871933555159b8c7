"""Shared fixtures: every test gets its own VERILEARN_HOME and Dagster home."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from vllm_fixtures import RunningVllm, tiny_model_dir, vllm_python, vllm_server  # noqa: F401

if TYPE_CHECKING:
    import duckdb

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private VERILEARN_HOME (and DAGSTER_HOME under it) for one test."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("VERILEARN_HOME", str(h))
    (h / "dagster").mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(h / "dagster"))
    return h


@pytest.fixture
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB connection, closed after the test. (A connection object still
    reachable at exit, open or closed, makes DuckDB print `nanobind: leaked …`; see
    tests/reports/test_reports_no_leak_at_exit.py for how one was kept.)"""
    import duckdb

    with duckdb.connect() as con:
        yield con


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


def require_env(flag: str, reason: str) -> None:
    """Fail when CI demands the component (flag=1), else skip with the reason."""
    if os.environ.get(flag) == "1":
        pytest.fail(f"{reason} (and {flag}=1 requires it)")
    pytest.skip(reason)
