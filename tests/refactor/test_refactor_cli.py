"""`verilearn refactor apply` and `verilearn state dump` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verilearn_assets.cli import main
from verilearn_assets.refactor.rollout.state import State, StateStore
from verilearn_assets.refactor.sources.catalog import RULES_DIR, load_corpus
from verilearn_assets.refactor.verify.runner import cleanup, prepare_workspace
from verilearn_assets.refactor.verify.workspace import snapshot

PATHCONF = next(r.path for r in load_corpus() if r.name == "pathconf")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_apply_rule_file_with_tests_leaves_dir_untouched(
    backend: str, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    before = snapshot(PATHCONF)
    code, out, err = run_cli(
        capsys,
        "refactor", "apply", "--rule", str(RULES_DIR / "eq-none-to-is.yml"),
        "--workspace", str(PATHCONF), "--backend", backend, "--test", "pytest -q",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "ok" and data["backend"] == backend
    assert data["files_changed"] == ["pathconf/loader.py", "pathconf/validate.py"]
    assert "+        if default is None:" in data["diff"]
    assert data["tests"] == {"status": "passed", "passed": 17, "failed": 0}
    assert data["duration_ms"] > 0
    assert set(data) >= {
        "status",
        "exit_code",
        "files_changed",
        "diff",
        "tests",
        "stdout",
        "stderr",
    }
    assert snapshot(PATHCONF) == before


def test_apply_in_the_directory_itself_skips_the_home_inside_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cd repo && verilearn refactor apply ... --workspace .` with the default home: the
    home (`./.verilearn`) and the workspaces under it are inside the directory being copied.
    They must not be copied (a copy of the workspace into itself never ended), twice over."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "m.py").write_text('def f(x):\n    print("x", x)\n')
    monkeypatch.delenv("VERILEARN_HOME", raising=False)
    monkeypatch.chdir(repo)
    for _ in range(2):
        code, out, err = run_cli(
            capsys, "refactor", "apply", "--pattern", "print($$$A)",
            "--rewrite", "logger.info($$$A)", "--lang", "python", "--workspace", ".",
        )  # fmt: skip
        assert code == 0, err
        data = json.loads(out)
        assert data["status"] == "ok" and data["files_changed"] == ["m.py"], data
        assert '+    logger.info("x", x)' in data["diff"]
    assert (repo / ".verilearn").is_dir()  # the home really was inside the directory
    assert (repo / "m.py").read_text() == 'def f(x):\n    print("x", x)\n'
    ws = prepare_workspace("cli-repo", repo)  # what the jail sees: the code, not the home
    try:
        assert sorted(p.name for p in ws.tree.iterdir()) == ["m.py"]
    finally:
        cleanup(ws)


def test_apply_pattern_without_match(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    code, out, _ = run_cli(
        capsys, "refactor", "apply", "--pattern", "no_such_call($A)", "--rewrite", "x",
        "--lang", "python", "--workspace", str(PATHCONF),
    )  # fmt: skip
    data = json.loads(out)
    assert code == 0 and data["status"] == "no_change" and data["tests"] is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--pattern", "print($A)"], "--pattern needs --rewrite"),
        (["--pattern", "p", "--rewrite", "r", "--lang", "klingon"], "--lang"),
        (["--rule", "/nonexistent/rule.yml"], "rule file not found"),
    ],
)
def test_apply_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], home: Path, argv: list[str], message: str
) -> None:
    code, out, err = run_cli(capsys, "refactor", "apply", *argv, "--workspace", str(PATHCONF))
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_apply_rule_without_fix_key_shape(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> None:
    rule = tmp_path / "bad.yml"
    rule.write_text("id: x\nlanguage: python\nfixx: y\nrule: {pattern: print($A)}\n")
    code, _, err = run_cli(
        capsys, "refactor", "apply", "--rule", str(rule), "--workspace", str(PATHCONF)
    )
    assert code == 2 and "bad.yml" in err and "fixx" in err


def test_state_dump_latest_and_history(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    store = StateStore(home / "refactor" / "actors.sqlite")
    store.save("task1:program", State(goals=["g"]))
    store.save("task1:program", State(goals=["g"], history=["step 1"]))
    store.close()
    code, out, _ = run_cli(capsys, "state", "dump", "task1")
    data = json.loads(out)
    assert code == 0 and list(data) == ["task1:program"]
    assert [v["version"] for v in data["task1:program"]] == [2]
    assert data["task1:program"][0]["state"]["history"] == ["step 1"]
    code, out, _ = run_cli(capsys, "state", "dump", "task1", "--history")
    assert [v["version"] for v in json.loads(out)["task1:program"]] == [1, 2]
    code, _, err = run_cli(capsys, "state", "dump", "nope")
    assert code == 2 and "no saved state" in err
