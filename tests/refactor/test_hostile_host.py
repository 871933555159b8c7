"""Hostile actions against the host side of the jail (issue 25 items 4-6), on both real
backends, through the runner API the actor uses, the CLI and the GRPO scorer.

Each answer here once crashed or swelled the host: a 1,100-deep directory chain
(`os.walk`/`shutil.rmtree` recursion), 120 MB of sparse files (read whole before
`max_files` was checked), a `1 + 1 + …` module compiled on the host, files hidden in
skipped directories (not counted), and a jail whose tmpfs and memory had no aggregate
bound. Now each fails its own step, cheaply, and the workspace is removed.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest
from refactor_support import refactor_config

from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace
from verilearn_assets.refactor.verify.workspace import (
    Budget,
    HostBudgetExceeded,
    remove_tree,
    scan,
    snapshot,
    syntax_errors,
)

DEEP = 1100
CHAIN = f"import os\nfor _ in range({DEEP}):\n    os.mkdir('d')\n    os.chdir('d')\nopen('leaf', 'w').close()\n"  # noqa: E501
SPARSE = "for i in range(8):\n    with open(f'big{i}', 'wb') as f:\n        f.truncate(15 * 1024 * 1024)\n"  # noqa: E501
HIDDEN = "import os\nos.makedirs('__pycache__')\nfor i in range(2100):\n    open(f'__pycache__/m{i}.pyc', 'w').close()\n"  # noqa: E501
# a module the host's compile() would recurse on (nested 100,000 deep), and a bigger one
NESTED = "open('mod.py', 'w').write('x = ' + '1 + ' * 100000 + '1\\n')"
HUGE = "open('mod.py', 'w').write('x = ' + '1 + ' * 200000 + '1\\n')"


def _command(*argv: str) -> dict:
    return {"kind": "command", "argv": list(argv)}


def _workspaces_left(config: RefactorConfig) -> list[str]:
    root = Path(config.workspace_root)
    return [p.name for p in root.iterdir() if not p.name.startswith(".")] if root.is_dir() else []


def _paths(tree: Path) -> list[tuple[str, str]]:
    """Every path under `tree` (skipped directories included) and its kind."""
    return [(e.rel, e.kind) for e in scan(tree, Budget(max_files=10**6, max_depth=10**4))]


def test_deep_chain_sparse_files_and_hidden_paths_fail_their_own_step(
    config: RefactorConfig, backend: str
) -> None:
    """Each over-budget step is refused as `limit` and the workspace is put back exactly
    as it was before it (files, a symlink, nothing left in skipped directories): the next
    step runs on the pre-step tree."""
    ws = prepare_workspace("t-host", {"mod.py": "x = 1\n", "pkg/a.py": "y = 2\n"}, config)
    try:
        link = apply_action(ws, _command("python", "-c", "import os; os.symlink('mod.py', 'al')"))
        assert link.status == "ok", link
        before, paths = ws.snapshot(), _paths(ws.tree)
        assert ("al", "link") in paths
        chain = apply_action(ws, _command("python", "-c", CHAIN))
        assert chain.status == "limit" and "max_depth 64" in chain.message, chain
        assert "restored" in chain.message and _paths(ws.tree) == paths
        tracemalloc.start()
        start = time.perf_counter()
        try:
            sparse = apply_action(ws, _command("python", "-c", SPARSE))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert sparse.status == "limit" and "max_tree_mb 64" in sparse.message, sparse
        assert peak < 8 * 1024 * 1024, f"the host allocated {peak} bytes for a refused tree"
        assert time.perf_counter() - start < 10
        assert _paths(ws.tree) == paths
        hidden = apply_action(ws, _command("python", "-c", HIDDEN))  # paths nobody diffs
        assert hidden.status == "limit" and "max_files 2000" in hidden.message, hidden
        assert _paths(ws.tree) == paths and ws.snapshot() == before
        for code, why in ((NESTED, "too deeply nested"), (HUGE, "bytes, over the")):
            step = apply_action(ws, _command("python", "-c", code))
            assert step.status == "invalid_python" and why in step.message, step
        assert len(step.diff) < 2000, "a file over max_text_kb is not diffed line by line"
        after = apply_action(ws, _command("python", "-c", "open('mod.py', 'w').write('x = 2\\n')"))
        assert after.status == "ok" and after.files_changed == ["mod.py"], after
    finally:
        cleanup(ws)
    assert not ws.root.exists() and _workspaces_left(config) == []


# three 200 KB list literals and one broken module: over HOST_COMPILE_BYTES in all
BIG_LISTS = (
    "for i in range(3):\n"
    "    open(f'big{i}.py', 'w').write('x = [' + '1,' * 100000 + ']\\n')\n"
    "open('bad.py', 'w').write('def broken(:\\n')\n"
)


def test_big_changed_modules_are_compiled_in_the_jail_not_on_the_host(
    config: RefactorConfig, backend: str
) -> None:
    """A step that changed more Python than HOST_COMPILE_BYTES is syntax-checked in the
    jail: the same verdict (the broken module named), without the host's memory."""
    from verilearn_assets.refactor.verify.runner import HOST_COMPILE_BYTES

    ws = prepare_workspace("t-compile", {"mod.py": "x = 1\n"}, config)
    try:
        tracemalloc.start()
        try:
            step = apply_action(ws, _command("python", "-c", BIG_LISTS))
            _, jailed_peak = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            files = [f"big{i}.py" for i in range(3)] + ["bad.py"]
            assert sum((ws.tree / f).stat().st_size for f in files) > HOST_COMPILE_BYTES
            on_host = syntax_errors(ws.tree, files)  # what the host would have paid
            _, host_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert step.status == "invalid_python", step
        assert [e.split(":")[0] for e in step.syntax_errors] == ["bad.py"], step
        assert [e.split(":")[0] for e in on_host] == ["bad.py"]
        assert jailed_peak < host_peak / 4, (jailed_peak, host_peak)
    finally:
        cleanup(ws)


def test_cleanup_removes_a_chain_left_in_the_workspace(config: RefactorConfig) -> None:
    ws = prepare_workspace("t-chain", {"mod.py": "x = 1\n"}, config)
    apply_action(ws, _command("python", "-c", CHAIN))
    cleanup(ws)  # no step in between: the chain itself is there
    assert not ws.root.exists() and _workspaces_left(config) == []


def test_remove_tree_and_budget_past_path_max(tmp_path: Path) -> None:
    """A chain whose full path is far beyond PATH_MAX (4096): refused by the walk,
    removed by descriptors."""
    top = tmp_path / "tree"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(40):  # 40 x 200 characters = 8,000
        os.mkdir("n" * 200, dir_fd=fd)
        sub = os.open("n" * 200, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = sub
    os.close(fd)
    with pytest.raises(HostBudgetExceeded, match="longer than"):
        snapshot(top, Budget(max_depth=100))
    with pytest.raises(HostBudgetExceeded, match="max_depth 8"):
        snapshot(top, Budget(max_depth=8))
    remove_tree(top)
    assert not top.exists()


def test_syntax_check_survives_what_compile_cannot(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text("x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    (tmp_path / "long.py").write_text("x = " + "1 + " * 100000 + "1\n")
    (tmp_path / "ok.py").write_text("x = 1\n")
    errors = syntax_errors(tmp_path, ["deep.py", "long.py", "ok.py"])
    assert [e.split(":")[0] for e in errors] == ["deep.py", "long.py"], errors


def test_jail_tmpfs_is_sized_and_root_is_not_a_dump(config: RefactorConfig, backend: str) -> None:
    """Writing 100 MB into the jail's /tmp, /dev/shm or root fails inside the jail (64 MB
    tmpfs mounts; Docker's root is read-only) instead of filling the host's RAM."""
    fill = (
        "import sys\n"
        "chunk = b'x' * (1 << 20)\n"
        "for place in ('/tmp', '/dev/shm', ''):\n"
        "    try:\n"
        "        with open(place + '/fill', 'wb') as f:\n"
        "            for _ in range(100):\n"
        "                f.write(chunk)\n"
        "        print(place or '/', 'filled')\n"
        "    except OSError as exc:\n"
        "        print(place or '/', 'refused', exc.errno)\n"
    )
    ws = prepare_workspace("t-tmpfs", {"mod.py": "x = 1\n"}, config)
    try:
        step = apply_action(ws, _command("python", "-c", fill))
        lines = step.stdout.split("\n")
        assert len([line for line in lines if "refused" in line]) == 3, (backend, step)
    finally:
        cleanup(ws)


def test_bwrap_memory_cgroup_bounds_tmpfs_pages(tmp_path: Path) -> None:
    """With 96 MB of tmpfs allowed but a 64 MB memory cgroup, filling /tmp gets the jail
    killed: tmpfs pages are charged to it (the per-process RLIMIT_AS would never see
    them)."""
    from verilearn_assets.core.isolation.cgroups import JailCgroup

    if os.geteuid() != 0:
        pytest.skip("cgroups need root here")
    probe = JailCgroup(16, 64)
    try:
        assert probe.paths, "no memory/pids cgroup on this machine although we are root"
    finally:
        probe.remove()
    config = refactor_config("bwrap", tmp_path, memory_mb=64, tmpfs_mb=96, require_cgroup=True)
    fill = (  # 6 files of 15 MB (RLIMIT_FSIZE is 16 MB a file)
        "chunk = b'x' * (1 << 20)\n"
        "for n in range(6):\n"
        "    with open(f'/tmp/fill{n}', 'wb') as f:\n"
        "        for i in range(15):\n"
        "            f.write(chunk)\n"
        "print('filled')\n"
    )
    ws = prepare_workspace("t-memcg", {"mod.py": "x = 1\n"}, config)
    try:
        step = apply_action(ws, _command("python", "-c", fill))
        assert "filled" not in step.stdout and step.exit_code in (-9, 137), step
    finally:
        cleanup(ws)


def test_cli_refusals_say_why_and_exit_nonzero(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from verilearn_assets.cli import main

    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mod.py").write_text("x = dict(a=1)\n")
    args = ["refactor", "apply", "--pattern", "dict(a=$A)", "--rewrite", "{'a': $A}",
            "--workspace", str(repo), "--backend", backend]  # fmt: skip
    code = main([*args, "--test", "curl http://example.org"])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 1 and out["status"] == "disallowed", out
    assert out["refused"]["what"] == "tests" and "'curl' is not allowed" in out["refused"]["reason"]
    assert "tests refused" in captured.err and "curl" in captured.err
    code = main([*args, "--test", "pytest /etc"])
    captured = capsys.readouterr()
    assert code == 1 and "outside the workspace" in json.loads(captured.out)["refused"]["reason"]
    # a directory too big to copy: one line, exit 2, nothing left behind
    for i in range(5):
        with open(repo / f"big{i}.bin", "wb") as fh:
            fh.truncate(15 * 1024 * 1024)
    code = main(args)
    captured = capsys.readouterr()
    assert code == 2 and "too big to copy" in captured.err and "max_tree_mb" in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    workspaces = tmp_path / "home" / "refactor" / "workspaces"
    assert not workspaces.is_dir() or not [
        p for p in workspaces.iterdir() if not p.name.startswith(".")
    ]


@pytest.fixture
def grpo_home(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home and a config directory whose jail is `backend`."""
    import yaml

    repo_configs = Path(__file__).resolve().parents[2] / "configs"
    configs = tmp_path / "configs"
    shutil.copytree(repo_configs, configs)
    sandbox = yaml.safe_load((configs / "sandbox.yaml").read_text())
    sandbox["refactor"]["backend"] = backend
    (configs / "sandbox.yaml").write_text(yaml.safe_dump(sandbox))
    monkeypatch.setenv("VERILEARN_CONFIG_DIR", str(configs))
    monkeypatch.setenv("VERILEARN_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_grpo_scorer_gives_hostile_answers_zero_not_an_exception(small_tasks, grpo_home) -> None:
    from verilearn_assets.refactor.family import FAMILY

    def answer(action: dict) -> str:
        update = json.dumps({"history": ["step 1"]})
        return (
            f"<think>one step</think>\n<action>{json.dumps(action)}</action>\n"
            f"<state_update>{update}</state_update>"
        )

    grpo = FAMILY.grpo
    assert grpo is not None
    task = next(t for t in small_tasks["template"] if t.status == "accepted")
    scorer = grpo.scorer(grpo_home, small_tasks["template"], "default")
    try:
        completions = [
            answer(_command("python", "-c", CHAIN)),
            answer(_command("python", "-c", SPARSE)),
            answer(_command("python", "-c", NESTED)),
        ]
        detail = scorer.evaluate([task.id] * len(completions), completions)
    finally:
        scorer.close()
    assert [d["status"] for d in detail] == ["crash", "crash", "wrong_change"], detail
    assert all(d["partial"] == 0.0 and d["outcome"] == 0.0 for d in detail), detail
    left = grpo_home / "refactor" / "workspaces"
    assert not left.is_dir() or not [p for p in left.iterdir() if not p.name.startswith(".")]
