"""Fixtures for the teacher loop: a real sandbox pool and a real profiled table."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from teacher_harness import Sandbox, make_frame, started_sandbox

from verilearn_assets.core.ingest.profile import profile_frame
from verilearn_assets.core.isolation.bwrap import bwrap_path
from verilearn_assets.core.records import TableRecord


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A warm bubblewrap pool (the Docker backend is covered by the program-teacher test)."""
    if bwrap_path() is None:
        pytest.fail("bubblewrap is not installed (apt-get install bubblewrap)")
    with started_sandbox("bwrap") as sb:
        yield sb


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> TableRecord:
    df = make_frame()
    path = tmp_path_factory.mktemp("teacher_tables") / "orders.parquet"
    df.to_parquet(path)
    path.chmod(0o644)
    return TableRecord(
        id="tbl-orders",
        dataset="shop",
        name="orders",
        split="train",
        path=str(path),
        n_rows=len(df),
        n_columns=df.shape[1],
        sha256="0" * 64,
        columns=profile_frame(df),
    )
