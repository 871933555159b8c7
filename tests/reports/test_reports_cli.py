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


def test_report_prints_the_tables(
    small_lake: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # wide enough for every table as a grid
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
    # a newcomer's console: no library warning, no DuckDB connection left open at exit
    # ("nanobind: leaked … DuckDBPyConnection")
    assert "Warning" not in ok.stderr and "leaked" not in ok.stderr, ok.stderr
    env["VERILEARN_HOME"] = str(tmp_path / "missing")
    bad = subprocess.run(
        [str(VERILEARN), "report"], env=env, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert bad.returncode == 2
    assert "verilearn report: error:" in bad.stderr and "home not found" in bad.stderr


def test_report_markdown_csv_json(small_lake: Path, capsys: pytest.CaptureFixture) -> None:
    import csv
    import io
    import json

    assert run_report(["--home", str(small_lake), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "## Teacher precision (verified / total)" in md
    assert "| teacher | n_episodes | n_verified | precision | n_questions |" in md
    assert "| program | 5 | 4 | 80.0% | 5 |" in md

    assert run_report(["--home", str(small_lake), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    precision = {r["teacher"]: r for r in doc["teacher_precision"]["rows"]}
    assert precision["program"]["precision"] == pytest.approx(0.8)
    family = doc["family_counts"]["rows"]
    assert sum(r["n_tasks"] for r in family if r["family"] == "analysis") > 0

    assert run_report(["--home", str(small_lake), "--format", "csv", "--table", "pass_rate"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# pass_rate\n")
    rows = list(csv.DictReader(io.StringIO(text.split("\n", 1)[1])))
    assert {"source", "split", "teacher", "n_episodes", "n_verified", "pass_rate"} == set(rows[0])
    with pytest.raises(CliError, match="unknown report table 'nope'"):
        run_report(["--home", str(small_lake), "--table", "nope"])


def test_report_never_cuts_column_names_on_80_columns(small_lake: Path, tmp_path: Path) -> None:
    """A CI log or a pipe: 80 columns, no TTY. Every column name of every table shows whole."""
    import duckdb

    from verilearn_assets.core.warehouse import warehouse_path

    env = {**os.environ, "VERILEARN_HOME": str(small_lake), "COLUMNS": "80"}
    out = subprocess.run(
        [sys.executable, "-m", "verilearn_assets.cli", "report"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    assert "…" not in out.stdout
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
    con = duckdb.connect(str(warehouse_path(small_lake)), read_only=True)
    try:
        marts = [r[0] for r in con.execute("SHOW TABLES").fetchall() if r[0].startswith("mart_")]
        columns = {c[0] for m in marts for c in con.execute(f'DESCRIBE "{m}"').fetchall()}
    finally:
        con.close()
    for column in columns:
        assert column in out.stdout, column
