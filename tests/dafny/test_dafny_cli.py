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
from dafny4_programs import acc_for

from verilearn_assets.cli import main
from verilearn_assets.dafny.corpus.loader import BUNDLED


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


DAFNY4 = acc_for(1)
BY_METHOD = "function Sq(x: int): int\n{\n  x * x\n} by method {\n  return x * x;\n}\n"


def test_verify_rewrites_dafny4_as_the_loader_does(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A Dafny 4 file verifies through the same rewrites as the loader, each named in its
    line; one with no sound rewrite is `dialect_error` with the reason; `--dialect as-is`
    hands the files to 2.3 untouched."""
    four, by_method, two = tmp_path / "four.dfy", tmp_path / "by.dfy", tmp_path / "two.dfy"
    wrong = tmp_path / "wrong.dfy"
    four.write_text(DAFNY4)
    by_method.write_text(BY_METHOD)
    two.write_text(P.VERIFIED)
    wrong.write_text(DAFNY4.replace("s := s + 1 * (j + 1);", "s := s + j;"))
    files = [str(four), str(by_method), str(two), str(wrong)]
    code, stdout, err = in_process(["dafny", "verify", *files], capsys)
    assert code == 0, err
    lines = {Path(x["file"]).name: x for x in map(json.loads, stdout.splitlines())}
    assert lines["four.dfy"]["status"] == "verified"
    assert lines["four.dfy"]["dialect"] == "4"
    assert lines["four.dfy"]["rewrites"] == [
        "ghost function → function (1)",
        "for loop → while (1)",
    ]
    assert lines["by.dfy"]["status"] == "dialect_error"
    assert "by method has no mechanical rewrite" in lines["by.dfy"]["reason"]
    assert (lines["two.dfy"]["status"], lines["two.dfy"]["rewrites"]) == ("verified", [])
    # the wrong body's error points at the invariant in the file as written
    assert lines["wrong.dfy"]["status"] == "verification_error"
    written = DAFNY4.split("\n").index("    invariant s == Acc(j)") + 1
    err = next(e for e in lines["wrong.dfy"]["errors"] if "invariant" in e["message"])
    assert err["line"] == written and err["rewritten_line"] > written
    code, stdout, err = in_process(["dafny", "verify", "--dialect", "as-is", *files], capsys)
    assert code == 0, err
    as_is = {Path(x["file"]).name: x for x in map(json.loads, stdout.splitlines())}
    assert as_is["four.dfy"]["status"] in ("parse_error", "resolution_error")
    assert as_is["by.dfy"]["status"] == "parse_error" and as_is["four.dfy"]["rewrites"] == []
    assert as_is["two.dfy"]["status"] == "verified"


def test_load_a_catalog_corpus(home: Path, capsys: pytest.CaptureFixture) -> None:
    code, stdout, err = in_process(["dafny", "load", "--corpus", "dafny-bundled"], capsys)
    assert code == 0, err
    summary = json.loads(stdout.splitlines()[0])
    (bundled,) = summary["corpora"]
    assert bundled["corpus"] == "dafny-bundled" and bundled["files"] == len(
        list(BUNDLED.glob("*.dfy"))
    )
    assert summary["examples"] == bundled["examples"] and summary["skipped"] == {}
    code, _, err = in_process(["dafny", "load", "--corpus", "nope"], capsys)
    assert code == 2 and "'nope' is not an enabled dafny entry" in err
    code, _, err = in_process(["dafny", "load"], capsys)
    assert code == 2 and "give a directory or --corpus NAME" in err
