"""`verilearn dafny verify` and `verilearn dafny load` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dafny_programs as P
import polars as pl
import pytest

from verilearn_assets.cli import main
from verilearn_assets.dafny.loader import BUNDLED


def run(args: list[str], home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "VERILEARN_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "verilearn_assets.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def in_process(args: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """The same entry point without a new interpreter (the import costs seconds)."""
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_verify_prints_one_line_per_file_and_caches(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    good, bad = tmp_path / "good.dfy", tmp_path / "bad.dfy"
    good.write_text(P.VERIFIED)
    bad.write_text(P.VERIFICATION_ERROR)
    out = run(["dafny", "verify", str(good), str(bad), "--mode", "cli", "--timeout", "60"], home)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert [(x["file"], x["status"], x["cached"]) for x in lines] == [
        (str(good), "verified", False),
        (str(bad), "verification_error", False),
    ]
    assert lines[1]["errors"][0]["line"] == 3 and lines[0]["verifier"]["z3"] == "4.8.5"
    code, stdout, _ = in_process(["dafny", "verify", str(bad)], capsys)
    assert code == 0 and json.loads(stdout)["cached"] is True


def test_verify_bad_input(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code, _, err = in_process(["dafny", "verify", str(tmp_path / "missing.dfy")], capsys)
    assert code == 2 and "missing.dfy: no such file" in err
    f = tmp_path / "x.dfy"
    f.write_text(P.VERIFIED)
    code, _, err = in_process(["dafny", "verify", str(f), "--timeout", "0"], capsys)
    assert code == 2 and "--timeout must be positive" in err


def test_load_counts_and_writes(home: Path, tmp_path: Path, capsys) -> None:
    args = ["dafny", "load", str(BUNDLED), "--out", str(tmp_path / "ex.parquet")]
    code, stdout, err = in_process(args, capsys)
    assert code == 0, err
    summary = json.loads(stdout.splitlines()[0])
    frame = pl.read_parquet(tmp_path / "ex.parquet")
    assert summary["examples"] == frame.height and summary["files"] == len(
        list(BUNDLED.glob("*.dfy"))
    )
    assert summary["skipped"] == {}
    code, _, err = in_process(["dafny", "load", str(tmp_path / "nowhere")], capsys)
    assert code == 2 and "not a directory" in err
