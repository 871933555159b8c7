"""Helpers the refactor tests import (a uniquely named module: `conftest` names clash
across test folders once the whole suite is collected)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verilearn_assets.core.sandbox.docker_backend import docker_available
from verilearn_assets.refactor.config import RefactorConfig, load_refactor_config

SMALL_RULES = ("optional-to-union", "eq-none-to-is", "list-call-to-literal")


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
            "test_cache": str(root / "test_cache.sqlite"),
            "limits": base.limits.model_copy(update=limits),
        }
    )


def write_tasks(home: Path, tasks: list) -> None:
    from verilearn_assets.core import lake
    from verilearn_assets.refactor.records import RefactorTask

    by_partition: dict[tuple[str, str], list] = {}
    for task in tasks:
        by_partition.setdefault((task.source, task.split), []).append(task)
    for (source, split), part in by_partition.items():
        lake.write_records(
            "refactor/tasks", part, RefactorTask, lake.lake_root(home), source=source, split=split
        )
