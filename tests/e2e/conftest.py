"""One real demo run on a small catalog, shared by the end-to-end tests.

The demo runs as a user runs it (`verilearn demo` in a subprocess, the shipped configs and
the whole bundled catalog) against a temporary VERILEARN_HOME: about 5 minutes on 2 cores.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from demo_support import REPO, DemoHome, Planted

DEMO_TIMEOUT_S = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The first end-to-end test pays for the shared demo run (minutes on 2 busy cores):
    give every test here room for it instead of the suite's default per-test timeout."""
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.timeout(DEMO_TIMEOUT_S))


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoHome:
    root = tmp_path_factory.mktemp("demo")
    home = root / "home"
    env = os.environ | {
        "VERILEARN_HOME": str(home),
        "VERILEARN_CONFIG_DIR": str(shutil.copytree(REPO / "configs", root / "configs")),
        "DAGSTER_HOME": str(home / "dagster"),
    }
    proc = subprocess.run(
        # the analysis family end to end; the Dafny and refactor families run their own
        # jobs through Dagster in tests/dafny and tests/refactor
        [sys.executable, "-m", "verilearn_assets.cli", "demo", "--families", "analysis"],
        env=env,
        capture_output=True,
        text=True,
        timeout=2400,
        cwd=REPO,
    )
    assert proc.returncode == 0, (
        f"verilearn demo failed ({proc.returncode})\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    )
    return DemoHome(root, env, proc.stdout)


@pytest.fixture(scope="session")
def planted(demo: DemoHome, tmp_path_factory: pytest.TempPathFactory) -> Planted:
    """A copy of the demo home with one corrupted trace planted and the gate run on it."""
    from verilearn_assets.analysis.records import Episode
    from verilearn_assets.core import lake

    root = tmp_path_factory.mktemp("planted")
    shutil.copytree(demo.home, root / "home")
    env = demo.env | {
        "VERILEARN_HOME": str(root / "home"),
        "DAGSTER_HOME": str(root / "home" / "dagster"),
    }
    copy = DemoHome(root, env, demo.stdout)
    with copy.environ():
        for split in ("train", "dev", "test"):
            eps = lake.read_records("analysis/episodes", Episode, source="template", split=split)
            if eps:
                break
        assert eps, "the demo wrote no template episodes"
        victim = eps[0]
        tool = next(m for m in victim.messages if m.role == "tool")
        # drop one tool output: the cell that produced it is left unpaired
        victim.messages = [m for m in victim.messages if m is not tool]
        lake.write_records("analysis/episodes", eps, Episode, source="template", split=split)
        # re-materialize the partition as a person would from the UI: finished episodes
        # are kept (the corrupted one too), and the blocking checks run in that run
        from dagster import DagsterInstance, materialize

        from verilearn_assets.analysis.assets import episodes
        from verilearn_assets.analysis.checks import ANALYSIS_CHECKS
        from verilearn_assets.definitions import RESOURCES

        checks = [
            c for c in ANALYSIS_CHECKS if all(k.asset_key == episodes.key for k in c.check_keys)
        ]
        run = materialize(
            [episodes, *checks],
            partition_key=f"template|{split}",
            instance=DagsterInstance.get(),
            resources=RESOURCES,
            raise_on_error=False,
        )
        assert not run.success, "a corrupted trace did not fail the episodes run"
    gate = copy.run("gate", "--sources", "template", "--splits", split)
    return Planted(copy, f"template|{split}", gate)
