"""Fixtures: one warm pool per real backend (Docker, bubblewrap), shared by the session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from backends import BACKENDS, require_backend
from sandbox_helpers import LoopThread, PoolHandle, test_config

from verilearn_assets.core.sandbox.pool import SandboxPool


@pytest.fixture(scope="session")
def table_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tables")


@pytest.fixture(scope="session")
def table_csv(table_dir: Path) -> str:
    path = table_dir / "people.csv"
    pd.DataFrame({"a": [1, 2, 3, 4], "b": ["x", "y", "x", "z"], "c": [0.5, 1.5, 2.5, 3.5]}).to_csv(
        path, index=False
    )
    return str(path)


@pytest.fixture(scope="session")
def table_parquet(table_dir: Path) -> str:
    path = table_dir / "numbers.parquet"
    pd.DataFrame({"a": list(range(100)), "g": ["p", "q"] * 50}).to_parquet(path)
    return str(path)


@pytest.fixture(scope="session", params=BACKENDS)
def pool(request: pytest.FixtureRequest) -> Iterator[PoolHandle]:
    """One shared warm pool per backend (starting one costs seconds)."""
    backend = request.param
    require_backend(backend)
    runner = LoopThread()
    sandbox = SandboxPool(test_config(backend))
    runner.run(sandbox.start())
    try:
        yield PoolHandle(sandbox, runner)
    finally:
        runner.run(sandbox.stop())
        runner.close()
