"""`verilearn sandbox exec FILE`: one JSON object on stdout, exit 0 when the sandbox worked."""

from __future__ import annotations

import argparse
import json

import pytest
from backends import require_backend

from verilearn_assets.cli import sandbox as sandbox_cli


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    sandbox_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_exec_prints_one_json_object(backend, tmp_path, table_csv, capsys) -> None:
    require_backend(backend)
    program = tmp_path / "prog.py"
    program.write_text(
        "total = int(df['a'].sum())\nhook(total, 'total = df.a.sum()')\n"
        "print('working')\nsubmit(total)\nsubmit({'n': len(df)})\n"
    )
    rc = run_cli(["sandbox", "exec", str(program), "--backend", backend, "--csv", table_csv])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["status"] == "ok" and out["stdout"] == "working\n"
    assert out["answer"] == {"n": 4} and out["submissions"] == [10, {"n": 4}]
    assert out["hooks"][0]["name"] == "total" and out["duration_ms"] > 0


def test_exec_reports_timeout_with_exit_zero(tmp_path, capsys) -> None:
    require_backend("bwrap")
    program = tmp_path / "spin.py"
    program.write_text("while True:\n    pass\n")
    rc = run_cli(["sandbox", "exec", str(program), "--backend", "bwrap", "--timeout", "1"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["status"] == "timeout" and out["answer"] is None


def test_exec_rejects_a_missing_file(tmp_path) -> None:
    with pytest.raises(ValueError, match="nope.py: no such file"):
        run_cli(["sandbox", "exec", str(tmp_path / "nope.py")])
