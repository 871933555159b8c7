"""Verdicts from a clean place: what a step earns is decided on a fresh copy of the
workspace's visible files with the task's original tests, never on the workspace itself.

Why: the workspace is the model's. Whatever it leaves where the snapshot, the diff and the
tree hash do not look (`__pycache__`, `.git`, dot-directories: an unchecked-hash `.pyc`
imported without a look at its source), and whatever it does to the tests (deleting the
test it should have updated, `assert True`, a `conftest.py` or `pytest.ini` that skips or
deselects, a `sitecustomize.py` or `.pth`), must not reach the verdict. So:

- **scope**: a step that changed a file outside the task's files (`task.files`, the files
  the reference run changed) earns nothing (`out_of_scope`); a test file the task does
  change must equal its target form (the same per-file diff as the task's target diff)
  unless the whole tree is a reference tree (`tests_edited`). Both are computed from the
  recorded diff, so the gate recomputes them (`scope_failure`);
- **clean copy** (`clean_copy.py`): the tests run on the visible files only (no dot-path, no skipped
  directory, no bytecode, extension module or `.pth`, no symlink), test files and test
  configuration taken from the corpus copy (`workspace.baseline`) unless the scope check
  proved the workspace's equal to the task's; the test command runs with
  `-X pycache_prefix=/tmp/…` (bytecode read and written only in the jail's own tmp) and `-B`;
- the cache (`runner.TestCache`) is keyed by the hash of exactly those files and the command
  (`runner.run_on_files`), so one workspace's hidden state cannot answer for another's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from verilearn_assets.refactor.records import RefactorTask
from verilearn_assets.refactor.verify.clean_copy import clean_files, is_test_path
from verilearn_assets.refactor.verify.runner import TestResult, TestSpec, run_on_files
from verilearn_assets.refactor.verify.workspace import (
    Snapshot,
    Workspace,
    changed_files,
    tree_hash,
    unified_diff,
)

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def file_diffs(diff: str) -> dict[str, str]:
    """A unified diff (as `workspace.unified_diff` writes it) split per file: path → its
    headers and hunks. Hunk lengths are followed, so a removed line that reads `-- x`
    is never taken for a file header."""
    out: dict[str, str] = {}
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if not (lines[i].startswith("--- ") and i + 1 < len(lines)):
            i += 1
            continue
        old, new = lines[i][4:].rstrip("\n"), lines[i + 1][4:].rstrip("\n")
        path = new[2:] if new.startswith("b/") else old[2:] if old.startswith("a/") else new
        chunk = [lines[i], lines[i + 1]]
        i += 2
        while i < len(lines) and lines[i].startswith("@@ not diffed"):  # over the size cap
            chunk.append(lines[i])
            i += 1
        while i < len(lines) and (m := _HUNK.match(lines[i])):
            left = int(m.group(1)) if m.group(1) is not None else 1
            right = int(m.group(2)) if m.group(2) is not None else 1
            chunk.append(lines[i])
            i += 1
            while i < len(lines) and (left > 0 or right > 0 or lines[i].startswith("\\")):
                line = lines[i]
                if line.startswith(" "):
                    left, right = left - 1, right - 1
                elif line.startswith("-"):
                    left -= 1
                elif line.startswith("+"):
                    right -= 1
                chunk.append(line)
                i += 1
        out[path] = "".join(chunk)
    return out


def reached(task: RefactorTask, tree: str) -> bool:
    """The tree is the task's target or the reference tree after one of its steps."""
    return tree == task.target_tree or tree in task.step_trees


def scope_failure(
    task: RefactorTask, diff_from_start: str, tree: str
) -> tuple[str | None, list[str]]:
    """(`out_of_scope` | `tests_edited` | None, the paths at fault), from the step's diff
    from the start: pure, so the gate recomputes it from the stored step."""
    chunks = file_diffs(diff_from_start)
    outside = sorted(set(chunks) - set(task.files))
    if outside:
        return "out_of_scope", outside
    if reached(task, tree):
        return None, []
    target = file_diffs(task.target_diff)
    edited = sorted(p for p in chunks if is_test_path(p) and chunks[p] != target.get(p))
    return ("tests_edited", edited) if edited else (None, [])


@dataclass
class Verdict:
    """A step's verdict: its scope and, when in scope, the tests on the clean copy."""

    scope: str | None
    scope_paths: list[str] = field(default_factory=list)
    tests: TestResult | None = None
    tree: str = ""
    diff: str = ""

    @property
    def status(self) -> str | None:
        return self.tests.status if self.tests is not None else None

    def record(self) -> dict[str, Any]:
        """What a trajectory step stores under `tests` (the gate recomputes from it)."""
        data: dict[str, Any] = (
            self.tests.model_dump(mode="json", exclude={"stdout", "stderr"})
            if self.tests is not None
            else {"status": "not_run"}
        )
        data["clean"] = True
        data["scope"] = self.scope
        data["scope_paths"] = self.scope_paths[:50]
        return data


def verify_step(
    workspace: Workspace,
    task: RefactorTask,
    spec: TestSpec | None = None,
    use_cache: bool = True,
    snap: Snapshot | None = None,
) -> Verdict:
    """Check the step's scope, then run the task's tests on a clean copy of its tree."""
    spec = spec or TestSpec(argv=list(task.test_command))
    snap = workspace.snapshot() if snap is None else snap
    tree = tree_hash(snap)
    diff = unified_diff(workspace.baseline, snap, workspace.budget.max_text_bytes)
    scope, paths = scope_failure(task, diff, tree)
    if scope is None:  # the diff decodes bytes leniently: the bytes themselves, too
        outside = sorted(set(changed_files(workspace.baseline, snap)) - set(task.files))
        if outside:
            scope, paths = "out_of_scope", outside
    if scope is not None:
        return Verdict(scope, paths, None, tree, diff)
    changed = set(changed_files(workspace.baseline, snap))
    trusted = {p for p in changed if is_test_path(p)}  # proved equal to the task's above
    files = clean_files(workspace, snap, trusted)
    result = run_on_files(workspace, files, spec, use_cache=use_cache)
    return Verdict(None, [], result, tree, diff)
