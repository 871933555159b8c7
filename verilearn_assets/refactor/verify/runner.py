"""The jailed runner: a fresh workspace per task, one validated action per step, tests.

Seed API: `prepare_workspace(task_id, files)`, `apply_action(workspace, action)`,
`run_tests(workspace, test_spec)`, `cleanup(workspace)`. Every action is validated and its
binary checked against the allowlist before anything runs; every run is logged as one JSON
line in `<log_dir>/<task_id>.jsonl` (rotated).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import sqlite3
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verilearn_assets.core.home import expand_home, resolve_home
from verilearn_assets.core.isolation.cgroups import JailUnavailable
from verilearn_assets.core.isolation.run import Completed
from verilearn_assets.refactor.config import RefactorConfig, load_refactor_config
from verilearn_assets.refactor.verify import toolchains
from verilearn_assets.refactor.verify.actions import (
    ActionRejected,
    CommandAction,
    PatternAction,
    RuleAction,
    action_to_dict,
    check_allowed,
    parse_action,
)
from verilearn_assets.refactor.verify.clean_copy import (
    clean_files,
    is_test_path,
    jail_test_argv,
    visible_files,
)
from verilearn_assets.refactor.verify.jail import run_in_jail
from verilearn_assets.refactor.verify.sqlite_wal import connect_wal
from verilearn_assets.refactor.verify.workspace import (
    HostBudgetExceeded,
    Snapshot,
    Workspace,
    changed_files,
    copy_tree,
    new_workspace_root,
    remove_tree,
    restore_tree,
    snapshot_and_links,
    syntax_errors,
    tree_hash,
    unified_diff,
    workspace_root_path,
    write_files,
)

log = logging.getLogger("verilearn.refactor.runner")

AnyAction = RuleAction | PatternAction | CommandAction
StepStatus = Literal[
    "ok", "no_change", "failed", "timeout", "disallowed", "invalid_python", "limit"
]


class StepResult(BaseModel):
    """What one action did: the fields `verilearn refactor apply` prints and rewards read."""

    model_config = ConfigDict(extra="forbid")
    status: StepStatus
    message: str = ""
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    files_changed: list[str] = Field(default_factory=list)
    diff: str = ""
    syntax_errors: list[str] = Field(default_factory=list)
    duration_ms: float = 0.0
    backend: str = ""


class TestSpec(BaseModel):
    """The command that tests a workspace (pytest by default) and its timeout."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(extra="forbid")
    argv: list[str] = Field(default_factory=lambda: ["pytest", "-q"], min_length=1)
    timeout_s: float | None = Field(default=None, gt=0)


class TestResult(BaseModel):
    __test__ = False
    model_config = ConfigDict(extra="forbid")
    status: Literal["passed", "failed", "timeout", "error", "disallowed"]
    cached: bool = False  # the same tree and command were tested before (see TestCache)
    exit_code: int | None = None
    passed: int = 0
    failed: int = 0
    errors: int = 0
    stdout: str = ""
    stderr: str = ""
    duration_ms: float = 0.0


def prepare_workspace(
    task_id: str,
    files: Path | str | Mapping[str, str],
    config: RefactorConfig | None = None,
) -> Workspace:
    """A fresh workspace holding a copy of `files` (a directory, or path → text)."""
    config = config or load_refactor_config()
    jailed = config.backend == "docker" and config.docker.lifetime != "command"
    session = None
    if jailed:  # the container first: it may have been started ahead, over its own dirs
        from verilearn_assets.refactor.verify.docker_jail import open_session

        root = workspace_root_path(config, task_id)
        session = open_session(config, root)
    else:
        root = new_workspace_root(config, task_id)
    try:
        if isinstance(files, Mapping):
            write_files(files, root / "tree")
        else:
            # never the home or the workspaces into themselves (`--workspace .` in a repo)
            home = resolve_home()
            copy_tree(Path(files), root / "tree", exclude=(home, root.parent))
        ws = Workspace(task_id=task_id, root=root, config=config, jail=session)
        ws.baseline = ws.snapshot()
    except BaseException:
        try:
            if session is not None:
                session.close(wait=not _background_close(config))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        raise
    return ws


def apply_action(workspace: Workspace, action: AnyAction | str | dict[str, Any]) -> StepResult:
    """Validate and run one action in the jail; report what changed."""
    config = workspace.config
    try:
        parsed = action if isinstance(action, AnyAction) else parse_action(action)
        argv = parsed.argv()
        check_allowed(argv, list(config.allowed_binaries))
    except ActionRejected as exc:
        result = StepResult(
            status="disallowed" if exc.failure == "disallowed" else "failed",
            message=str(exc),
            backend=config.backend,
        )
        _log(
            workspace,
            "apply",
            action if isinstance(action, dict | str) else action_to_dict(action),
            result,
        )
        return result
    try:
        result = _run_action(workspace, parsed, argv)
    except JailUnavailable:
        raise  # the machine, not the action: a configuration error
    except HostBudgetExceeded as exc:  # before the command: the tree was already too big
        message = f"workspace: {exc}"[:500]
        result = StepResult(status="limit", message=message, backend=config.backend)
    except Exception as exc:  # noqa: BLE001 - the action's failure (crash), never the caller's
        log.warning("refactor %s: host error on an action", workspace.task_id, exc_info=True)
        message = f"host error: {type(exc).__name__}: {exc}"[:500]
        result = StepResult(status="failed", message=message, backend=config.backend)
    _log(workspace, "apply", action_to_dict(parsed), result)
    return result


def _run_action(workspace: Workspace, parsed: AnyAction, argv: list[str]) -> StepResult:
    """Run a validated action; every host-side look at the tree within the workspace's
    `Budget` (`HostBudgetExceeded` past it). A step over the budget (or `max_files`) is
    refused as `limit` and the workspace put back as it was before the step: the step
    fails alone, and the next one starts from a tree the host can read."""
    config = workspace.config
    if isinstance(parsed, RuleAction):
        (workspace.control / "rule.yml").write_text(parsed.rule_yaml())
    before, links = snapshot_and_links(workspace.tree, workspace.budget)
    done = run_in_jail(
        config,
        workspace.tree,
        workspace.control,
        argv,
        config.limits.action_timeout_s,
        session=workspace.jail,
    )
    try:
        after = workspace.snapshot()
    except HostBudgetExceeded as exc:  # refused before reading what the command left
        restore_tree(workspace.tree, before, links)
        return StepResult(
            status="limit",
            message=f"workspace: {exc}; restored to before the step"[:500],
            exit_code=done.exit_code,
            stdout=done.stdout,
            stderr=done.stderr,
            duration_ms=round(done.duration_ms, 3),
            backend=config.backend,
        )
    changed = changed_files(before, after)
    errors = check_syntax(workspace, changed)
    status: StepStatus
    message = ""
    if done.timed_out:
        status, message = "timeout", f"killed after {config.limits.action_timeout_s}s"
    elif len(after) > config.limits.max_files:
        restore_tree(workspace.tree, before, links)
        status, message = "limit", f"{len(after)} files > max_files {config.limits.max_files}"
    elif errors:
        status, message = "invalid_python", "; ".join(errors)[:500]
    elif done.exit_code != 0 and not (_ast_grep_no_match(argv, done) and not changed):
        status, message = "failed", f"exit code {done.exit_code}"
    elif not changed:
        status = "no_change"
    else:
        status = "ok"
    return StepResult(
        status=status,
        message=message,
        exit_code=done.exit_code,
        stdout=done.stdout,
        stderr=done.stderr,
        files_changed=changed,
        diff=unified_diff(before, after, workspace.budget.max_text_bytes),
        syntax_errors=errors,
        duration_ms=round(done.duration_ms, 3),
        backend=config.backend,
    )


# Changed `.py` bytes a step may have compiled on the host (in the runner's process); a
# step that changed more is checked in the jail. compile() of one 512 KB list literal
# costs the host ~115 MB and 0.5 s: a step of 128 such files (64 MB, max_tree_mb) once
# cost a minute of the actor's CPU.
HOST_COMPILE_BYTES = 256 * 1024
# Run in the jail as `python -I -S -c` (no site, no path from the workspace): compiles,
# never runs, the files listed in the control directory; prints one JSON list.
JAILED_SYNTAX_CHECK = """
import json, os, stat, sys
spec = json.load(open(sys.argv[1]))
limit, errors = spec["max_bytes"], []
for rel in spec["files"]:
    try:
        st = os.lstat(rel)
        if not stat.S_ISREG(st.st_mode):
            continue
        if st.st_size > limit:
            errors.append(f"{rel}: {st.st_size} bytes, over the {limit} checked")
            continue
        with open(rel, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError:
        continue
    try:
        compile(data, rel, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        errors.append(f"{rel}: {exc}")
    except (RecursionError, MemoryError) as exc:
        errors.append(f"{rel}: too deeply nested or too big to compile ({type(exc).__name__})")
print(json.dumps(errors))
"""


def check_syntax(workspace: Workspace, changed: list[str]) -> list[str]:
    """`syntax_errors` of the changed Python files: on the host when they are small (the
    usual step: no jail spawn), else in the workspace's jail, bounded by its memory, CPU
    and timeout like any command; a check that cannot finish there is an error."""
    from verilearn_assets.refactor.verify.jail_policy import CONTROL_IN_JAIL

    tree, limit = workspace.tree, workspace.budget.max_text_bytes
    total = 0
    for rel in changed:
        if rel.endswith(".py"):
            with contextlib.suppress(FileNotFoundError):
                st = (tree / rel).lstat()
                total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    if total <= HOST_COMPILE_BYTES:
        return syntax_errors(tree, changed, limit)
    files = [rel for rel in changed if rel.endswith(".py")]
    spec = workspace.control / "syntax.json"
    spec.write_text(json.dumps({"files": files, "max_bytes": limit}))
    try:
        done = run_in_jail(
            workspace.config,
            tree,
            workspace.control,
            ["python", "-I", "-S", "-c", JAILED_SYNTAX_CHECK, f"{CONTROL_IN_JAIL}/syntax.json"],
            workspace.config.limits.action_timeout_s,
            session=workspace.jail,
        )
    finally:
        spec.unlink(missing_ok=True)
    if done.timed_out:
        return [f"syntax check of {len(files)} files ({total} bytes) timed out in the jail"]
    try:
        errors = json.loads(done.stdout)
        if done.exit_code != 0 or not isinstance(errors, list):
            raise ValueError(f"exit code {done.exit_code}")
    except ValueError as exc:
        why = f"{exc}; {done.stderr.strip()[-200:]}"
        return [f"syntax check of {len(files)} files ({total} bytes) failed in the jail: {why}"]
    return [str(e) for e in errors]


def _ast_grep_no_match(argv: list[str], done: Completed) -> bool:
    """`ast-grep run` exits 1 when nothing matched: not a crash (unless the jail failed)."""
    return argv[0] == "ast-grep" and done.exit_code == 1 and not done.stderr.startswith("bwrap:")


# Test commands (a corpus entry's `test`) may also start with a language's runner
# (`toolchains.RUNNERS`: node, go, cargo, javatest, make); a model's actions may not.
TEST_RUNNERS: tuple[str, ...] = tuple(toolchains.RUNNERS)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?)\b")


def run_tests(
    workspace: Workspace, test_spec: TestSpec | None = None, use_cache: bool = True
) -> TestResult:
    """Run the test command in the jail on a clean copy of the workspace's visible files
    (`clean_copy.visible_files`: nothing in hidden or skipped paths, no bytecode); parse
    pytest's counts. With `config.test_cache` set, files tested before (same command) are
    not tested again. A task's verdict (the original tests too) is `verdict.verify_step`."""
    files = visible_files(workspace, workspace.snapshot())
    return run_on_files(workspace, files, test_spec or TestSpec(), use_cache=use_cache)


def edited_tests_report(workspace: Workspace, spec: TestSpec, result: StepResult) -> dict[str, Any]:
    """For `verilearn refactor apply --test`, which has no task to tell a wanted test edit
    from a cheat: when the action changed test files or test configuration
    (`clean_copy.is_test_path`), which ones (`edited`) and the directory's own tests, as they
    were, run against the changed code on a clean copy (`original`). An action rewriting
    a test into `assert True` or deselecting it then cannot pass unseen. `{}` when no
    test was edited."""
    edited = [p for p in result.files_changed if is_test_path(p)]
    if not edited:
        return {}
    files = clean_files(workspace, workspace.snapshot(), trusted_tests=set())
    original = run_on_files(workspace, files, spec)
    counts = {"status": original.status, "passed": original.passed, "failed": original.failed}
    return {"edited": edited, "original": counts}


def run_on_files(
    workspace: Workspace, files: Snapshot, spec: TestSpec, use_cache: bool = True
) -> TestResult:
    """Run `spec` in the workspace's jail over exactly `files`: the workspace's own tree is
    set aside (renamed, never read by the jail) while a fresh copy of `files` stands in its
    place, and put back after. The cache key is the hash of `files` and the command:
    everything the tests can read that the model could have touched."""
    config = workspace.config
    try:
        check_allowed(spec.argv, [*config.allowed_binaries, *TEST_RUNNERS])
        CommandAction(argv=spec.argv)  # same path rules as an action
        toolchains.for_argv(spec.argv)  # ToolchainMissing: not installed here
    except (ActionRejected, ValueError) as exc:
        result = TestResult(status="disallowed", stderr=str(exc))
        _log(workspace, "tests", spec.model_dump(), result)
        return result
    cache = TestCache(expand_home(config.test_cache)) if use_cache and config.test_cache else None
    key = tree_hash(files) if cache else ""
    if cache is not None and (hit := cache.get(key, spec.argv)) is not None:
        result = hit.model_copy(update={"cached": True})
        _log(workspace, "tests", spec.model_dump(), result)
        return result
    timeout = spec.timeout_s or toolchains.with_limits(config, spec.argv).limits.test_timeout_s
    argv = jail_test_argv(spec.argv)
    with _clean_tree(workspace, files):
        done = run_in_jail(
            config, workspace.tree, workspace.control, argv, timeout, session=workspace.jail
        )
    counts = {"passed": 0, "failed": 0, "errors": 0}
    tail = done.stdout.strip().splitlines()[-3:] if done.stdout.strip() else []
    for line in tail:
        for number, word in _COUNT.findall(line):
            counts["errors" if word.startswith("error") else word] += int(number)
    counts = toolchains.test_counts(spec.argv, done.stdout) or counts  # node, cargo, go
    if done.timed_out:
        status = "timeout"
    elif done.exit_code == 0:
        status = "passed"
    elif counts["failed"] or counts["errors"] or done.exit_code == 1:
        status = "failed"
    else:
        status = "error"
    result = TestResult(
        status=status,
        exit_code=done.exit_code,
        stdout=done.stdout,
        stderr=done.stderr,
        duration_ms=round(done.duration_ms, 3),
        **counts,
    )
    if cache is not None and status in ("passed", "failed"):  # deterministic outcomes only
        cache.put(key, spec.argv, result)
    _log(workspace, "tests", spec.model_dump(), result)
    return result


@contextlib.contextmanager
def _clean_tree(workspace: Workspace, files: Snapshot) -> Iterator[None]:
    """`files` alone in the workspace's tree directory (the inode the jail binds, which a
    Docker container holds for its life) while the body runs; the workspace's own entries
    wait renamed beside it (same file system: no copy) and come back after."""
    held = workspace.root / "held"
    held.mkdir()
    try:
        for entry in os.scandir(workspace.tree):
            os.rename(entry.path, held / entry.name)
        for rel, data in files.items():
            path = workspace.tree / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        yield
    finally:
        remove_tree(workspace.tree, keep_root=True)
        for entry in os.scandir(held):
            os.rename(entry.path, workspace.tree / entry.name)
        held.rmdir()


class TestCache:
    """Test results by (hash of the files tested, command) in SQLite: the tests of a clean
    copy are a function of its files' bytes, so files the generator already tested are not
    tested again by the actor. The table is `clean_tests`: results keyed by a workspace's
    tree hash (the old `tests` table, blind to hidden paths) are never read."""

    __test__ = False

    def __init__(self, path: Path) -> None:
        self.path = path
        with connect_wal(path) as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS clean_tests (tree TEXT, argv TEXT, result JSON, "
                "PRIMARY KEY (tree, argv))"
            )

    def get(self, tree: str, argv: list[str]) -> TestResult | None:
        with sqlite3.connect(self.path, timeout=30) as conn:
            row = conn.execute(
                "SELECT result FROM clean_tests WHERE tree = ? AND argv = ?",
                (tree, json.dumps(argv)),
            ).fetchone()
        return TestResult.model_validate_json(row[0]) if row else None

    def put(self, tree: str, argv: list[str], result: TestResult) -> None:
        with sqlite3.connect(self.path, timeout=30) as conn:
            conn.execute(
                "INSERT OR REPLACE INTO clean_tests VALUES (?, ?, ?)",
                (tree, json.dumps(argv), result.model_dump_json()),
            )


def cleanup(workspace: Workspace) -> None:
    """End the workspace: its container (if any) is reset and pooled (`lifetime: pool`) or
    removed, then its files are removed."""
    config = workspace.config
    session, workspace.jail = workspace.jail, None
    try:
        if session is not None and config.docker.lifetime == "pool":
            from verilearn_assets.core.isolation.docker_pool import release_session

            if release_session(session, workspace.root):
                return  # the emptied directories went with the pooled container
        elif session is not None:
            session.close(wait=not _background_close(config))
    finally:  # whatever happened above, and whatever depth a command built
        if workspace.root.exists():
            remove_tree(workspace.root)


def _background_close(config: RefactorConfig) -> bool:
    return config.docker.prestart or config.docker.lifetime == "pool"


def _log(workspace: Workspace, kind: str, request: Any, result: BaseModel) -> None:
    """One JSON line per run in `<log_dir>/<task_id>.jsonl`, rotated at `log_max_bytes`."""
    config = workspace.config
    directory = expand_home(config.log_dir)
    directory.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in workspace.task_id)[:64]
    path = directory / f"{safe}.jsonl"
    if path.exists() and path.stat().st_size > config.log_max_bytes:
        for i in range(config.log_backups, 0, -1):
            older = path.with_suffix(f".jsonl.{i}")
            newer = path.with_suffix(f".jsonl.{i - 1}") if i > 1 else path
            if newer.exists():
                if i == config.log_backups:
                    older.unlink(missing_ok=True)
                newer.rename(older)
        if config.log_backups == 0:
            path.unlink()
    data = result.model_dump(mode="json")
    data.pop("diff", None)
    line = {
        "time": time.time(),
        "kind": kind,
        "task_id": workspace.task_id,
        "request": request,
        **data,
    }
    with path.open("a") as fh:
        fh.write(json.dumps(line, default=str) + "\n")
