"""One real demo run on a small catalog, shared by the end-to-end tests.

The demo runs as a user runs it (`verilearn demo` in a subprocess, the shipped configs and
the whole bundled catalog) against a temporary VERILEARN_HOME: about 4-5 minutes on 2 cores.
It starts as soon as the suite is collected (when a selected test needs it) and runs beside
the tests collected before this folder: it spends most of its time waiting on its sandbox
containers, and held the suite alone for ~5 minutes when it started with the first e2e test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from demo_support import REPO, DemoHome, Planted

DEMO_TIMEOUT_S = 1800
DEMO_RUN_TIMEOUT_S = 2400  # the demo subprocess, from its start


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The first end-to-end test pays for the shared demo run (minutes on 2 busy cores):
    give every test here room for it instead of the suite's default per-test timeout."""
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.timeout(DEMO_TIMEOUT_S))


@dataclass
class _Started:
    """The demo subprocess started at collection, its home and its output files."""

    root: Path
    env: dict[str, str]
    proc: subprocess.Popen
    started: float

    @property
    def out(self) -> Path:
        return self.root / "demo.stdout"

    @property
    def err(self) -> Path:
        return self.root / "demo.stderr"


_STARTED: list[_Started] = []


def _start_demo(root: Path) -> _Started:
    home = root / "home"
    env = os.environ | {
        "VERILEARN_HOME": str(home),
        "VERILEARN_CONFIG_DIR": str(shutil.copytree(REPO / "configs", root / "configs")),
        "DAGSTER_HOME": str(home / "dagster"),
    }
    with (root / "demo.stdout").open("w") as out, (root / "demo.stderr").open("w") as err:
        proc = subprocess.Popen(
            # the analysis family end to end; the Dafny and refactor families run their own
            # jobs through Dagster in tests/dafny and tests/refactor
            [sys.executable, "-m", "verilearn_assets.cli", "demo", "--families", "analysis"],
            env=env,
            stdout=out,
            stderr=err,
            cwd=REPO,
        )
    return _Started(root, env, proc, time.monotonic())


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the shared demo now if a selected test will use it (see the module docstring)."""
    here = Path(__file__).parent
    if not any(
        Path(str(item.fspath)).is_relative_to(here) and "demo" in getattr(item, "fixturenames", ())
        for item in session.items
    ):
        return
    factory: pytest.TempPathFactory = session.config._tmp_path_factory  # type: ignore[attr-defined]
    _STARTED.append(_start_demo(factory.mktemp("demo")))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A demo still running when the session ends (a run stopped early) is stopped."""
    for started in _STARTED:
        if started.proc.poll() is None:
            started.proc.terminate()
            try:
                started.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                started.proc.kill()
                started.proc.wait()


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoHome:
    started = _STARTED[0] if _STARTED else _start_demo(tmp_path_factory.mktemp("demo"))
    left = DEMO_RUN_TIMEOUT_S - (time.monotonic() - started.started)
    try:
        code = started.proc.wait(timeout=max(left, 1))
    except subprocess.TimeoutExpired:
        started.proc.kill()
        started.proc.wait()
        pytest.fail(f"verilearn demo did not finish within {DEMO_RUN_TIMEOUT_S} s")
    stdout, stderr = started.out.read_text(), started.err.read_text()
    assert code == 0, f"verilearn demo failed ({code})\n{stdout[-6000:]}\n{stderr[-6000:]}"
    return DemoHome(started.root, started.env, stdout)


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
