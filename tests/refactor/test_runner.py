"""The jailed runner on both backends: real ast-grep, real pytest, hostile actions contained."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_tests,
)
from verilearn_assets.refactor.verify.workspace import UnsafeCorpusError, snapshot

MODULE = """from typing import Optional


def greet(name: Optional[str]) -> str:
    print("hello %s" % name)
    return "hello %s" % name
"""
TEST = """from pkg.mod import greet


def test_greet():
    assert greet("x") == "hello x"
"""
FILES = {"pkg/__init__.py": "", "pkg/mod.py": MODULE, "tests/test_mod.py": TEST}
OPTIONAL_RULE = {
    "id": "optional-to-union",
    "language": "python",
    "rule": {
        "kind": "generic_type",
        "all": [
            {"has": {"kind": "identifier", "regex": "^Optional$"}},
            {"has": {"kind": "type_parameter", "has": {"kind": "type", "pattern": "$A"}}},
        ],
    },
    "fix": "$A | None",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_rule_applies_in_jail_and_tests_pass(config: RefactorConfig, corpus: Path) -> None:
    before = snapshot(corpus)
    ws = prepare_workspace("t-rule", corpus, config)
    try:
        result = apply_action(ws, {"kind": "rule", "rule": OPTIONAL_RULE})
        assert result.status == "ok", result
        assert result.files_changed == ["pkg/mod.py"]
        assert "+def greet(name: str | None) -> str:" in result.diff
        assert "-def greet(name: Optional[str]) -> str:" in result.diff
        assert result.backend == config.backend and result.duration_ms > 0
        tests = run_tests(ws, TestSpec(argv=["pytest", "-q", "tests"]))
        assert (tests.status, tests.passed, tests.failed) == ("passed", 1, 0), tests
        # same action again: nothing left to match
        again = apply_action(ws, {"kind": "rule", "rule": OPTIONAL_RULE})
        assert again.status == "no_change" and again.files_changed == []
    finally:
        cleanup(ws)
    assert snapshot(corpus) == before  # the source is never modified
    assert not ws.root.exists()
    log = (Path(config.log_dir) / "t-rule.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in log] == ["apply", "tests", "apply"]


def test_pattern_rewrite_breaking_tests_is_reported(config: RefactorConfig, corpus: Path) -> None:
    ws = prepare_workspace("t-run", corpus, config)
    try:
        result = apply_action(
            ws, {"kind": "run", "pattern": "print($A)", "rewrite": "log($A)", "lang": "python"}
        )
        assert result.status == "ok" and result.files_changed == ["pkg/mod.py"]
        assert '+    log("hello %s" % name)' in result.diff
        tests = run_tests(ws)
        assert (tests.status, tests.passed, tests.failed) == ("failed", 0, 1), tests
        assert "NameError" in tests.stdout
    finally:
        cleanup(ws)


def test_rule_rewriting_every_file_stays_in_the_workspace(
    config: RefactorConfig, corpus: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary.py"
    canary.write_text("SECRET = 1\n")
    ws = prepare_workspace("t-all", corpus, config)
    # a planted link to a host file: the jail cannot see the target, so nothing follows it
    (ws.tree / "pkg" / "link.py").symlink_to(canary)
    try:
        wipe = {"id": "wipe", "language": "python", "rule": {"kind": "module"}, "fix": "X = 0"}
        result = apply_action(ws, {"kind": "rule", "rule": wipe})
        assert result.status == "ok", result
        assert result.files_changed == ["pkg/mod.py", "tests/test_mod.py"]
        assert (ws.tree / "pkg" / "mod.py").read_text() == "X = 0\n" or (
            ws.tree / "pkg" / "mod.py"
        ).read_text() == "X = 0"
    finally:
        cleanup(ws)
    assert canary.read_text() == "SECRET = 1\n"
    assert (corpus / "pkg" / "mod.py").read_text() == MODULE


def test_fix_producing_invalid_python_is_flagged(config: RefactorConfig, corpus: Path) -> None:
    ws = prepare_workspace("t-invalid", corpus, config)
    try:
        result = apply_action(ws, {"kind": "run", "pattern": "return $A", "rewrite": "return (($A"})
        assert result.status == "invalid_python", result
        assert result.syntax_errors and result.syntax_errors[0].startswith("pkg/mod.py:")
    finally:
        cleanup(ws)


def test_command_off_the_allowlist_never_runs(
    config: RefactorConfig, corpus: Path, tmp_path: Path
) -> None:
    ws = prepare_workspace("t-deny", corpus, config)
    try:
        for argv in (["sh", "-c", "touch pwned"], ["sg", "--version"], ["/bin/ls"]):
            result = apply_action(ws, {"kind": "command", "argv": argv})
            assert result.status == "disallowed", (argv, result)
            assert result.exit_code is None and result.duration_ms == 0
        assert not (ws.tree / "pwned").exists()
        # an allowlisted binary narrowed away by the config is refused too
        narrow = ws.config.model_copy(update={"allowed_binaries": ["ast-grep"]})
        ws.config = narrow
        denied = apply_action(ws, {"kind": "command", "argv": ["python", "-c", "print(1)"]})
        assert denied.status == "disallowed" and "python" in denied.message
    finally:
        cleanup(ws)


@pytest.mark.parametrize(
    "action",
    [
        {"kind": "run", "pattern": "print($A)", "rewrite": "x", "paths": ["../outside"]},
        {"kind": "run", "pattern": "print($A)", "rewrite": "x", "paths": ["/etc"]},
        {"kind": "rule", "rule": OPTIONAL_RULE, "paths": ["pkg/../../x"]},
        {"kind": "command", "argv": ["python", "/etc/passwd"]},
    ],
)
def test_path_outside_the_workspace_is_refused(
    config: RefactorConfig, corpus: Path, action: dict
) -> None:
    ws = prepare_workspace("t-path", corpus, config)
    try:
        result = apply_action(ws, action)
        assert result.status == "disallowed", result
        assert "outside the workspace" in result.message
    finally:
        cleanup(ws)


def test_symlink_out_of_the_corpus_is_refused(config: RefactorConfig, corpus: Path) -> None:
    (corpus / "pkg" / "passwd.py").symlink_to("/etc/passwd")
    with pytest.raises(UnsafeCorpusError, match=r"pkg/passwd\.py: symlink points outside"):
        prepare_workspace("t-link", corpus, config)
    left = [p for p in Path(config.workspace_root).iterdir() if not p.name.startswith(".spare")]
    assert left == []  # nothing left half-made (a Docker spare for the next one may wait)


def test_jail_has_no_network_and_no_host_files(config: RefactorConfig, corpus: Path) -> None:
    ws = prepare_workspace("t-net", corpus, config)
    code = (
        "import socket, os\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=2); print('NET')\n"
        "except OSError as e: print('nonet', e)\n"
        "print('home' if os.path.exists(os.path.expanduser('~root/.bashrc')) else 'nohome')\n"
        "print(sorted(os.listdir('/workspace')))\n"
    )
    try:
        result = apply_action(ws, {"kind": "command", "argv": ["python", "-c", code]})
        assert result.exit_code == 0, result
        assert "nonet" in result.stdout and "NET\n" not in result.stdout
        assert "nohome" in result.stdout
        assert "['pkg', 'tests']" in result.stdout
    finally:
        cleanup(ws)


FORK_TEST = """import os, time


def test_forks():
    children = []
    try:
        for _ in range(400):
            pid = os.fork()
            if pid == 0:
                time.sleep(600)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    assert len(children) < 400  # the pids limit stopped the fork loop
"""
LOOP_TEST = """def test_loops():
    while True:
        pass
"""


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_suite_that_forks_is_bounded_and_leaves_no_process(
    config: RefactorConfig, corpus: Path
) -> None:
    (corpus / "tests" / "test_fork.py").write_text(FORK_TEST)
    marker = f"not m{uuid.uuid4().hex}"
    ws = prepare_workspace("t-fork", corpus, config)
    try:
        result = run_tests(ws, TestSpec(argv=["pytest", "-q", "-k", marker, "tests/test_fork.py"]))
        assert result.status == "passed" and result.passed == 1, result
        time.sleep(0.2)
        assert _processes_with(marker) == []  # forked sleepers died with the jail
    finally:
        cleanup(ws)


def test_suite_that_loops_times_out(config: RefactorConfig, corpus: Path) -> None:
    (corpus / "tests" / "test_loop.py").write_text(LOOP_TEST)
    ws = prepare_workspace("t-loop", corpus, config)
    try:
        start = time.perf_counter()
        result = run_tests(ws, TestSpec(argv=["pytest", "-q", "tests/test_loop.py"], timeout_s=3))
        assert result.status == "timeout", result
        assert time.perf_counter() - start < 15
    finally:
        cleanup(ws)


def test_none_backend_runs_unjailed_for_debugging(tmp_path: Path, corpus: Path) -> None:
    from refactor_support import refactor_config

    config = refactor_config("none", tmp_path)
    ws = prepare_workspace("t-none", corpus, config)
    try:
        result = apply_action(ws, {"kind": "rule", "rule": OPTIONAL_RULE})
        assert result.status == "ok" and result.backend == "none"
        assert os.environ.get("VERILEARN_HOME") is None or ws.root.is_relative_to(tmp_path)
    finally:
        cleanup(ws)


def test_file_flood_and_memory_hog_are_limited(backend: str, corpus: Path, tmp_path: Path) -> None:
    from refactor_support import refactor_config

    config = refactor_config(backend, tmp_path, max_files=50, memory_mb=256)
    ws = prepare_workspace("t-limits", corpus, config)
    try:
        hog = "x = bytearray(1024 * 1024 * 1024)\nprint('allocated')\n"
        result = apply_action(ws, {"kind": "command", "argv": ["python", "-c", hog]})
        assert result.status == "failed" and "allocated" not in result.stdout, result
        assert "MemoryError" in result.stderr or result.exit_code in (137, -9), result
        flood = "import os\nfor i in range(200):\n    open(f'f{i}.txt', 'w').close()\n"
        result = apply_action(ws, {"kind": "command", "argv": ["python", "-c", flood]})
        assert result.status == "limit" and "max_files 50" in result.message, result
    finally:
        cleanup(ws)


def test_sandbox_log_rotates(tmp_path: Path, corpus: Path) -> None:
    from refactor_support import refactor_config

    config = refactor_config("bwrap", tmp_path).model_copy(
        update={"log_max_bytes": 1024, "log_backups": 2}
    )
    ws = prepare_workspace("t-log", corpus, config)
    try:
        for _ in range(8):
            apply_action(ws, {"kind": "run", "pattern": "print($A)", "rewrite": "print($A)"})
    finally:
        cleanup(ws)
    logs = sorted(p.name for p in Path(config.log_dir).iterdir())
    assert logs == ["t-log.jsonl", "t-log.jsonl.1", "t-log.jsonl.2"]
    assert all(
        json.loads(line)["kind"] == "apply"
        for line in (Path(config.log_dir) / "t-log.jsonl").read_text().splitlines()
    )


def test_test_results_are_cached_by_tree(tmp_path: Path, corpus: Path) -> None:
    from refactor_support import refactor_config

    config = refactor_config("bwrap", tmp_path)
    first = prepare_workspace("t-cache", corpus, config)
    second = prepare_workspace("t-cache", corpus, config)
    try:
        ran = run_tests(first)
        hit = run_tests(second)  # another workspace, same bytes
        assert (ran.cached, hit.cached) == (False, True)
        assert hit.model_dump(exclude={"cached"}) == ran.model_dump(exclude={"cached"})
        apply_action(second, {"kind": "rule", "rule": OPTIONAL_RULE})
        assert run_tests(second).cached is False  # a changed tree is tested again
        assert run_tests(first, use_cache=False).cached is False
    finally:
        cleanup(first)
        cleanup(second)


SEES_NOTHING_HIDDEN = """import os


def test_nothing_hidden_and_a_write():
    assert not os.path.exists(".hidden") and not os.path.exists("pkg/__pycache__")
    with open("written.txt", "w") as fh:  # the clean copy's, never the workspace's
        fh.write("x")
"""


def _every_file(tree: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(tree)): p.read_bytes()
        for p in sorted(tree.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_tests_run_on_a_clean_copy_and_the_workspace_comes_back(
    config: RefactorConfig, corpus: Path
) -> None:
    """What a model leaves in hidden or skipped paths never reaches the tests, and what
    the tests write never reaches the workspace, which is exactly as it was after."""
    ws = prepare_workspace("t-clean", corpus, config)
    try:
        code = (
            "import pathlib\n"
            "pathlib.Path('.hidden').mkdir()\n"
            "pathlib.Path('.hidden/json.py').write_text('dumps = None')\n"
            "pathlib.Path('pkg/__pycache__').mkdir()\n"
            "pathlib.Path('pkg/__pycache__/mod.cpython-311.pyc').write_bytes(b'junk')\n"
            f"pathlib.Path('tests/test_seen.py').write_text({SEES_NOTHING_HIDDEN!r})\n"
        )
        assert apply_action(ws, {"kind": "command", "argv": ["python", "-c", code]}).status == "ok"
        before = _every_file(ws.tree)
        assert "pkg/__pycache__/mod.cpython-311.pyc" in before and ".hidden/json.py" in before
        result = run_tests(ws, TestSpec(argv=["pytest", "-q", "tests"]))
        assert (result.status, result.passed) == ("passed", 2), result.stdout[-800:]
        assert _every_file(ws.tree) == before  # back as it was; nothing the tests wrote
        assert sorted(p.name for p in ws.root.iterdir()) == ["control", "tree"]
    finally:
        cleanup(ws)
