"""`toolchains:` in configs/refactor.yaml: a language's test-runner limits over
`toolchains.py`'s defaults, and `npm` (javascript's second runner) over `javascript`'s.

Read through `load_refactor_config` from a real config directory, and applied by the jail:
an npm timeout shorter than `npm test` takes stops that run, while `node --test` on the same
files, under javascript's limits, passes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from backends import require_backend

from verilearn_assets.core.config import ConfigError
from verilearn_assets.refactor.config import load_refactor_config
from verilearn_assets.refactor.sources.catalog import read_corpus
from verilearn_assets.refactor.verify import toolchains
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    cleanup,
    prepare_workspace,
    run_on_files,
)

REPO = Path(__file__).resolve().parents[2]
NODE, NPM = ["node", "--test"], ["npm", "test"]


def _configs(tmp_path: Path, toolchains_yaml: str) -> Path:
    """The repository's configs with `toolchains:` replaced."""
    conf = tmp_path / "configs"
    shutil.copytree(REPO / "configs", conf)
    text = (conf / "refactor.yaml").read_text()
    assert "\ntoolchains: {}" in text
    (conf / "refactor.yaml").write_text(text.replace("\ntoolchains: {}", f"\n{toolchains_yaml}"))
    return conf


@pytest.fixture(scope="module")
def javascript() -> None:
    missing = {"javascript", "npm"} - set(toolchains.installed())
    if missing:
        pytest.skip(f"toolchains not installed: {sorted(missing)} (make refactor-toolchains)")


def _limits(config, argv: list[str]) -> tuple[int, int, float]:  # noqa: ANN001
    limits = toolchains.with_limits(config, argv).limits
    return limits.memory_mb, limits.pids, limits.test_timeout_s


def test_npm_limits_go_over_javascripts(javascript: None, tmp_path: Path) -> None:
    both = load_refactor_config(
        _configs(
            tmp_path / "both",
            "toolchains: {javascript: {pids: 100, test_timeout_s: 45}, npm: {test_timeout_s: 7}}",
        )
    )
    default = toolchains.installed()["javascript"].memory_mb
    assert _limits(both, NODE) == (default, 100, 45.0)
    assert _limits(both, NPM) == (default, 100, 7.0)  # javascript's pids, its own timeout
    alone = load_refactor_config(
        _configs(tmp_path / "alone", "toolchains: {javascript: {test_timeout_s: 45}}")
    )
    assert _limits(alone, NPM)[2] == _limits(alone, NODE)[2] == 45.0
    # ast-grep and Python commands keep the jail's own limits
    assert toolchains.with_limits(both, ["pytest", "-q"]) == both


def test_an_unknown_runner_key_names_the_file_and_the_field(tmp_path: Path) -> None:
    conf = _configs(tmp_path, "toolchains: {yarn: {test_timeout_s: 5}}")
    with pytest.raises(ConfigError, match=r"refactor\.yaml.*toolchains\.yarn"):
        load_refactor_config(conf)


def test_the_jail_stops_npm_at_its_own_timeout(javascript: None, tmp_path: Path) -> None:
    require_backend("bwrap")
    config = load_refactor_config(
        _configs(tmp_path, "toolchains: {npm: {test_timeout_s: 0.05}}")
    ).model_copy(
        update={
            "backend": "bwrap",
            "workspace_root": str(tmp_path / "workspaces"),
            "log_dir": str(tmp_path / "logs"),
            "test_cache": str(tmp_path / "test_cache.sqlite"),
        }
    )
    repo = {r.name: r for r in read_corpus().repos}["jsinventory"]
    ws = prepare_workspace("npm-limit", repo.path, config)
    try:
        files = dict(ws.baseline)
        own = list(repo.test_command)  # `node --test`: javascript's limits
        assert toolchains.for_argv(own) == toolchains.installed()["javascript"]
        node = run_on_files(ws, files, TestSpec(argv=own), use_cache=False)
        assert node.status == "passed", node
        npm = run_on_files(ws, files, TestSpec(argv=NPM), use_cache=False)
        assert npm.status == "timeout", npm
    finally:
        cleanup(ws)
