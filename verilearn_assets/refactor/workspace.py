"""Workspaces: a private copy of the code per task run, snapshots and unified diffs.

A workspace is a host directory the jail binds read-write; the source it was copied from is
never touched. Copying refuses a symlink whose target leaves the source tree (naming the
file), so a hostile corpus cannot smuggle a host path into the jail.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verilearn_assets.refactor.config import RefactorConfig, expand_home

SKIP_DIRS = {"__pycache__", ".pytest_cache", ".git", ".mypy_cache", ".ruff_cache"}
Snapshot = dict[str, bytes]


class UnsafeCorpusError(ValueError):
    """The source of a workspace holds something the jail must not see."""


@dataclass
class Workspace:
    task_id: str
    root: Path  # holds `tree` (bound at /workspace) and `control` (the step's rule)
    config: RefactorConfig
    baseline: Snapshot = field(default_factory=dict)
    jail: Any = None  # docker_jail.DockerSession while the workspace's container lives

    @property
    def tree(self) -> Path:
        return self.root / "tree"

    @property
    def control(self) -> Path:
        return self.root / "control"

    def snapshot(self) -> Snapshot:
        return snapshot(self.tree)

    def diff_from_start(self) -> str:
        return unified_diff(self.baseline, self.snapshot())


def workspace_root_path(config: RefactorConfig, task_id: str) -> Path:
    """A fresh, not yet existing directory for one workspace of `task_id`."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in task_id)[:64] or "task"
    return expand_home(config.workspace_root) / f"{safe}-{uuid.uuid4().hex[:8]}"


def new_workspace_root(config: RefactorConfig, task_id: str) -> Path:
    root = workspace_root_path(config, task_id)
    (root / "tree").mkdir(parents=True)
    (root / "control").mkdir()
    return root


def copy_tree(source: Path, dest: Path, exclude: Iterable[Path] = ()) -> None:
    """Copy `source` into `dest` without following a symlink out of `source`.

    Directories in `exclude` are not copied when they lie inside `source`: a user who runs
    `verilearn refactor apply --workspace .` in a repository has the default home
    (`./.verilearn`), and the workspace being written, inside the tree being copied.
    """
    source = source.resolve()
    if not source.is_dir():
        raise UnsafeCorpusError(f"{source}: not a directory")
    skip = {Path(p).resolve() for p in exclude}
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and Path(dirpath, d) not in skip
        )
        rel_dir = Path(dirpath).relative_to(source)
        for name in list(dirnames):
            entry = Path(dirpath) / name
            if entry.is_symlink():
                _check_link(source, entry)
                dirnames.remove(name)  # linked directories are not copied (no loops)
                continue
            (dest / rel_dir / name).mkdir(parents=True, exist_ok=True)
        for name in sorted(filenames):
            entry = Path(dirpath) / name
            if entry.is_symlink():
                target = _check_link(source, entry)
                if not target.is_file():
                    continue
                shutil.copyfile(target, dest / rel_dir / name)
            elif entry.is_file():
                shutil.copyfile(entry, dest / rel_dir / name)


def _check_link(source: Path, entry: Path) -> Path:
    target = entry.resolve()
    if target != source and source not in target.parents:
        raise UnsafeCorpusError(
            f"{entry}: symlink points outside the corpus ({os.readlink(entry)} -> {target})"
        )
    return target


def write_files(files: Mapping[str, str], dest: Path) -> None:
    for rel, text in files.items():
        norm = os.path.normpath(rel)
        if os.path.isabs(rel) or norm.startswith(".."):
            raise UnsafeCorpusError(f"file {rel!r}: path outside the workspace")
        path = dest / norm
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def snapshot(tree: Path) -> Snapshot:
    """Every regular file's bytes, symlinks as their target text (never followed)."""
    out: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(tree).as_posix()
            if path.is_symlink():
                out[rel] = b"symlink -> " + os.readlink(path).encode()
            elif name in filenames and path.is_file():
                out[rel] = path.read_bytes()
    return out


def changed_files(before: Snapshot, after: Snapshot) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def unified_diff(before: Snapshot, after: Snapshot) -> str:
    chunks: list[str] = []
    for rel in changed_files(before, after):
        old = before.get(rel)
        new = after.get(rel)
        chunks.extend(
            difflib.unified_diff(
                (old or b"").decode(errors="replace").splitlines(keepends=True),
                (new or b"").decode(errors="replace").splitlines(keepends=True),
                fromfile="/dev/null" if old is None else f"a/{rel}",
                tofile="/dev/null" if new is None else f"b/{rel}",
            )
        )
    return "".join(
        c if c.endswith("\n") else c + "\n\\ No newline at end of file\n" for c in chunks
    )


def syntax_errors(tree: Path, files: list[str]) -> list[str]:
    """Python files among `files` that no longer parse (compiled, never run)."""
    errors = []
    for rel in files:
        path = tree / rel
        if rel.endswith(".py") and path.is_file() and not path.is_symlink():
            try:
                compile(path.read_bytes(), rel, "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as exc:
                errors.append(f"{rel}: {exc}")
    return errors


def tree_hash(snap: Snapshot) -> str:
    """A short content hash of a whole tree (paths and bytes)."""
    h = hashlib.sha256()
    for rel in sorted(snap):
        h.update(rel.encode() + b"\0" + hashlib.sha256(snap[rel]).digest())
    return h.hexdigest()[:24]
