"""Fixtures for the refactor family: real ast-grep, real jails (bwrap and Docker)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verilearn_assets.core.sandbox.docker_backend import docker_available
from verilearn_assets.refactor.config import RefactorConfig, load_refactor_config

BACKENDS = ["bwrap", "docker"]


def require_backend(backend: str) -> None:
    """Skip when the backend is missing here, fail when CI says it must be present."""
    if backend == "docker":
        ok, why = docker_available()
        if not ok:
            if os.environ.get("VERILEARN_REQUIRE_DOCKER") == "1":
                pytest.fail(f"VERILEARN_REQUIRE_DOCKER=1 but {why}")
            pytest.skip(why)


def refactor_config(backend: str, root: Path, **limits: float) -> RefactorConfig:
    """The repository's config with this backend, private dirs and (short) limits."""
    base = load_refactor_config()
    return base.model_copy(
        update={
            "backend": backend,
            "workspace_root": str(root / "workspaces"),
            "log_dir": str(root / "logs"),
            "limits": base.limits.model_copy(update=limits),
        }
    )


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return request.param


@pytest.fixture
def config(backend: str, tmp_path: Path) -> RefactorConfig:
    return refactor_config(backend, tmp_path, action_timeout_s=10, test_timeout_s=20, pids=48)
