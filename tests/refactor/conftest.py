"""Fixtures for the refactor family: real ast-grep, real jails (bwrap and Docker)."""

from __future__ import annotations

from pathlib import Path

import pytest
from backends import require_backend
from refactor_support import SMALL_RULES, refactor_config

from verilearn_assets.refactor.config import RefactorConfig

BACKENDS = ["bwrap", "docker"]


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return request.param


@pytest.fixture
def config(backend: str, tmp_path: Path) -> RefactorConfig:
    return refactor_config(backend, tmp_path, action_timeout_s=10, test_timeout_s=20, pids=48)


@pytest.fixture(scope="session")
def small_tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    """Template and procedural tasks on one repository with three rules, two function-scoped
    rules and two renames (built once)."""
    from verilearn_assets.refactor.sources.catalog import load_corpus, load_rules
    from verilearn_assets.refactor.sources.partition import generate_tasks

    root = tmp_path_factory.mktemp("small-tasks")
    config = refactor_config("bwrap", root)
    config = config.model_copy(
        update={
            "generation": config.generation.model_copy(
                update={"max_function_scoped_per_repo": 2, "max_renames_per_repo": 2}
            )
        }
    )
    repos = [r for r in load_corpus() if r.name == "pathconf"]
    rules = [r for r in load_rules() if r.id in SMALL_RULES]
    return {
        source: generate_tasks(source, repos[0].split, config, repos, rules, max_pairs_per_repo=2)
        for source in ("template", "procedural")
    }
