"""Fixtures for the analysis tests: a real sandbox configuration."""

from __future__ import annotations

import pytest

from verilearn_assets.core.sandbox.config import SandboxConfig


@pytest.fixture(scope="session")
def sandbox_config() -> SandboxConfig:
    """The real pool: Docker when a daemon answers, else bubblewrap."""
    return SandboxConfig(backend="auto", slots=2)


@pytest.fixture(scope="session")
def pool_runner(sandbox_config):
    from question_helpers import PoolRunner

    runner = PoolRunner(sandbox_config)
    yield runner
    runner.close()
