"""`verilearn report` over the small lake, through its handler and (when the whole CLI is
present) as a real subprocess."""

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from reports_lake import write_small_lake

from verilearn_assets.cli import SUBCOMMAND_MODULES, CliError
from verilearn_assets.cli import report as report_cli

REPO = Path(__file__).resolve().parents[2]
VERILEARN = Path(sys.executable).parent / "verilearn"  # the console script of the install


def run_report(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="verilearn")
    report_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["report", *argv])
    return args.handler(args)


def test_report_prints_the_tables(small_lake: Path, capsys: pytest.CaptureFixture) -> None:
    assert run_report(["--home", str(small_lake)]) == 0
    out = capsys.readouterr().out
    for title in (
        "Episode pass rate by source × split × teacher",
        "Teacher precision",
        "Failure classes",
        "Hook grounding rate",
        "Rejection reasons",
        "Per-dataset stats",
        "Alternatives (ambiguity) rate per template",
    ):
        assert title in out
    lines = out.splitlines()
    assert any(all(w in ln for w in ("program", "5", "4", "80.0%")) for ln in lines)
    assert any(all(w in ln for w in ("template", "train", "program", "66.7%")) for ln in lines)
    assert any(all(w in ln for w in ("wine", "178", "test", "100.0%")) for ln in lines)


def test_report_errors_are_clear(tmp_path: Path, home: Path) -> None:
    with pytest.raises(CliError, match="verilearn home not found"):
        run_report(["--home", str(tmp_path / "nowhere")])
    with pytest.raises(CliError, match="the lake is empty"):
        run_report(["--home", str(home)])


def test_report_on_a_lake_without_episodes(home: Path, capsys: pytest.CaptureFixture) -> None:
    write_small_lake(home, with_episodes=False)
    assert run_report([]) == 0  # VERILEARN_HOME from the `home` fixture
    out = capsys.readouterr().out
    assert "no rows" in out and "Questions by source × split" in out


@pytest.mark.skipif(not VERILEARN.exists(), reason=f"{VERILEARN} is not installed")
@pytest.mark.skipif(
    not all(importlib.util.find_spec(f"verilearn_assets.cli.{m}") for m in SUBCOMMAND_MODULES),
    reason="the full `verilearn` CLI needs every subcommand module "
    f"({', '.join(SUBCOMMAND_MODULES)}) to exist",
)
def test_report_as_a_subprocess(small_lake: Path, tmp_path: Path) -> None:
    env = {**os.environ, "VERILEARN_HOME": str(small_lake)}
    ok = subprocess.run(
        [str(VERILEARN), "report"], env=env, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert ok.returncode == 0, ok.stderr
    assert "Teacher precision" in ok.stdout and "80.0%" in ok.stdout
    env["VERILEARN_HOME"] = str(tmp_path / "missing")
    bad = subprocess.run(
        [str(VERILEARN), "report"], env=env, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert bad.returncode == 2
    assert "verilearn report: error:" in bad.stderr and "home not found" in bad.stderr
