"""Any CLI failure is one line on the console; an unexpected one leaves its trace in a log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"VERILEARN_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    return subprocess.run(
        [sys.executable, "-m", "verilearn_assets.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )


def test_a_corrupt_lake_file_is_one_line_and_a_log(tmp_path: Path) -> None:
    part = tmp_path / "lake/analysis/questions/source=template/split=dev/part-00000.parquet"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"this is not parquet")
    run = _cli(tmp_path, "inspect", "questions")
    assert run.returncode == 3, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("verilearn inspect: internal error: ")
    assert "Traceback" not in run.stderr
    log = Path(lines[0].rsplit("(traceback in ", 1)[1].rstrip(")"))
    assert log.is_file() and log.is_relative_to(tmp_path / "logs")
    assert "Traceback (most recent call last)" in log.read_text()


def test_bad_input_is_one_line_with_exit_2(tmp_path: Path) -> None:
    run = _cli(tmp_path, "inspect", "questions", "--limit", "0")
    assert run.returncode == 2
    assert run.stderr.strip() == "verilearn inspect: error: --limit must be at least 1, got 0"
