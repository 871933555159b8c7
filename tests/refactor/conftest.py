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
            "test_cache": str(root / "test_cache.sqlite"),
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


SMALL_RULES = ("optional-to-union", "eq-none-to-is", "list-call-to-literal")


@pytest.fixture(scope="session")
def small_tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    """Template and procedural tasks on one repository with three rules (built once)."""
    from verilearn_assets.refactor.catalog import load_corpus, load_rules
    from verilearn_assets.refactor.tasks import generate_tasks

    root = tmp_path_factory.mktemp("small-tasks")
    config = refactor_config("bwrap", root)
    repos = [r for r in load_corpus() if r.name == "pathconf"]
    rules = [r for r in load_rules() if r.id in SMALL_RULES]
    return {
        source: generate_tasks(source, repos[0].split, config, repos, rules, max_pairs_per_repo=2)
        for source in ("template", "procedural")
    }


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
