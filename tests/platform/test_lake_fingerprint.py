"""`verilearn fingerprint`: ids and answers hashed, run times ignored, any changed answer named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl

from verilearn_assets.core import lake
from verilearn_assets.core.lake_fingerprint import differences, lake_print

REPO = Path(__file__).resolve().parents[2]


def _lake(root: Path, answer: str, duration_ms: int | None) -> Path:
    questions = pl.DataFrame(
        {"id": ["q1", "q2"], "answer": [answer, "2"], "duration_ms": [duration_ms or 1, 5]}
    )
    # a tool output as older lakes hold it: run time in the header, an object's address;
    # `duration_ms=None`: as tool messages are rendered now, with neither
    if duration_ms is None:
        tool = "[cell ok]\nstdout:\n<Fit object at 0x…>"
    else:
        tool = f"[cell ok, {duration_ms} ms]\nstdout:\n<Fit object at 0x7f{duration_ms:04x}>"
    episodes = pl.DataFrame(
        {"id": ["e1"], "question_id": ["q1"], "verified": [True], "messages": [tool]}
    )
    lake.write_partition("fam/questions", questions, root, source="template", split="dev")
    lake.write_partition("fam/episodes", episodes, root, source="template", split="dev")
    return root


def test_run_times_do_not_count_and_a_changed_answer_is_named(tmp_path: Path) -> None:
    before = lake_print(_lake(tmp_path / "a", "1", duration_ms=10))
    same = lake_print(_lake(tmp_path / "b", "1", duration_ms=99))
    changed = lake_print(_lake(tmp_path / "c", "7", duration_ms=10))
    assert sorted(before.assets) == ["fam/episodes", "fam/questions"]
    assert before.assets["fam/questions"].columns == ["answer", "id", "source", "split"]
    assert before == same
    # a lake written since tool messages show no run time or address prints the same
    assert lake_print(_lake(tmp_path / "d", "1", duration_ms=None)) == before
    assert before.assets["fam/episodes"].columns == [
        "id",
        "messages",
        "question_id",
        "source",
        "split",
        "verified",
    ]
    assert differences(before, changed) == [
        f"fam/questions: rows 2 -> 2, columns same, sha256 "
        f"{before.assets['fam/questions'].sha256[:12]} -> "
        f"{changed.assets['fam/questions'].sha256[:12]}"
    ]


def test_cli_compare_exits_1_naming_the_asset(tmp_path: Path) -> None:
    _lake(tmp_path / "a" / "lake", "1", duration_ms=10)
    _lake(tmp_path / "c" / "lake", "7", duration_ms=10)
    saved = tmp_path / "before.json"
    cli = [sys.executable, "-m", "verilearn_assets.cli", "fingerprint"]
    first = subprocess.run(
        [*cli, "--home", str(tmp_path / "a"), "--out", str(saved)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert first.returncode == 0, first.stderr
    assert json.loads(saved.read_text())["sha256"] == json.loads(first.stdout)["sha256"]
    again = subprocess.run(
        [*cli, "--home", str(tmp_path / "a"), "--compare", str(saved)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert again.returncode == 0 and "lake identical" in again.stdout
    other = subprocess.run(
        [*cli, "--home", str(tmp_path / "c"), "--compare", str(saved)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert other.returncode == 1
    assert other.stdout.splitlines()[0].startswith("fam/questions: rows 2 -> 2")


def test_a_home_without_a_lake_is_named_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = subprocess.run(
        [sys.executable, "-m", "verilearn_assets.cli", "fingerprint", "--home", str(missing)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 2
    assert f"{missing / 'lake'}: no lake here" in done.stderr
    assert not missing.exists()
