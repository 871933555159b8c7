"""Workspaces: a private copy of the code per task run, snapshots and unified diffs.

A workspace is a host directory the jail binds read-write; the source it was copied from is
never touched. Copying refuses a symlink whose target leaves the source tree (naming the
file), so a hostile corpus cannot smuggle a host path into the jail.

Whatever a jailed command leaves, the host must survive looking at it (issue 25): every
walk here is iterative (a 1,100-deep directory chain once broke `os.walk`'s recursion),
every path is counted and sized by `lstat` against a `Budget` before one byte is read
(120 MB of sparse files once cost the runner +482 MB), files are compiled and diffed on
the host only under a size cap, and `remove_tree` removes any tree by descriptors, one
level at a time. A refusal is a `HostBudgetExceeded`, which the runner turns into the
step's failure, never the caller's.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verilearn_assets.core.home import expand_home
from verilearn_assets.core.isolation.pid1 import remove_tree
from verilearn_assets.refactor.config import Limits, RefactorConfig
from verilearn_assets.refactor.verify import pysource

__all__ = ["remove_tree"]  # re-exported: stdlib-only in core/isolation/pid1.py (runs in containers)

SKIP_DIRS = {"__pycache__", ".pytest_cache", ".git", ".mypy_cache", ".ruff_cache"}
Snapshot = dict[str, bytes]
SYMLINK_MARK = b"symlink -> "  # how a snapshot records a link (its target follows)


MAX_PATH_CHARS = 3800  # below PATH_MAX (4096) with room for the workspace root's prefix


class UnsafeCorpusError(ValueError):
    """The source of a workspace holds something the jail must not see."""


class HostBudgetExceeded(ValueError):
    """A tree is too big, too deep or too many paths for the host to look at; raised
    before anything over the budget is read (the actor and the scorer catch it: the
    step fails, not the loop)."""


@dataclass(frozen=True)
class Budget:
    """What the host reads of one tree: paths (every one: directories, links, the skipped
    directories' contents), bytes of regular files (apparent size: a sparse file costs
    what reading it costs), depth, and the size of a file it compiles or diffs."""

    max_files: int = Limits().max_files
    max_bytes: int = Limits().max_tree_mb * 1024 * 1024
    max_depth: int = Limits().max_depth
    max_text_bytes: int = Limits().max_text_kb * 1024

    @classmethod
    def of(cls, limits: Limits) -> Budget:
        return cls(
            limits.max_files,
            limits.max_tree_mb * 1024 * 1024,
            limits.max_depth,
            limits.max_text_kb * 1024,
        )


@dataclass(frozen=True)
class Entry:
    rel: str  # posix path relative to the tree
    path: str  # absolute host path
    kind: str  # dir | file | link | other (FIFO, socket, device: counted, never read)
    size: int  # lstat size
    skipped: bool  # inside (or is) one of SKIP_DIRS


def scan(
    tree: Path,
    budget: Budget,
    prune: Callable[[str], bool] = lambda path: False,
    count_skipped: bool = True,
) -> list[Entry]:
    """Every path under `tree` by `lstat` (sorted; links never followed), iteratively,
    raising `HostBudgetExceeded` the moment the count, bytes, depth or a path's length
    passes `budget`: a million-entry directory costs one budget's worth of entries.
    Directories for which `prune(abs path)` holds are left out entirely; the skipped
    directories (SKIP_DIRS) are walked and counted unless `count_skipped` is False."""
    out: list[Entry] = []
    count = total = 0
    stack: list[tuple[str, str, int, bool]] = [(str(tree), "", 0, False)]
    while stack:
        dirpath, rel_dir, depth, skipped = stack.pop()
        with os.scandir(dirpath) as it:
            for item in it:
                rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
                st = item.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    kind = "dir"
                elif stat.S_ISREG(st.st_mode):
                    kind = "file"
                elif stat.S_ISLNK(st.st_mode):
                    kind = "link"
                else:
                    kind = "other"
                inside = skipped or (kind == "dir" and item.name in SKIP_DIRS)
                if (inside and not count_skipped) or (kind == "dir" and prune(item.path)):
                    continue
                count += 1
                total += st.st_size if kind == "file" else 0
                if count > budget.max_files:
                    raise HostBudgetExceeded(
                        f"more than {budget.max_files} paths (max_files {budget.max_files}; "
                        "every path counts, skipped directories included)"
                    )
                if total > budget.max_bytes:
                    raise HostBudgetExceeded(
                        f"more than {budget.max_bytes} bytes of files (max_tree_mb "
                        f"{budget.max_bytes >> 20}; sizes by lstat, sparse files in full)"
                    )
                if len(item.path) > MAX_PATH_CHARS:
                    raise HostBudgetExceeded(f"a path longer than {MAX_PATH_CHARS} characters")
                if kind == "dir":
                    if depth + 1 > budget.max_depth:
                        raise HostBudgetExceeded(
                            f"directories nested deeper than {budget.max_depth} "
                            f"(max_depth {budget.max_depth}) at {rel[:120]}…"
                        )
                    stack.append((item.path, rel, depth + 1, inside))
                out.append(Entry(rel, item.path, kind, st.st_size, inside))
    out.sort(key=lambda e: e.rel)
    return out


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

    @property
    def budget(self) -> Budget:
        return Budget.of(self.config.limits)

    def snapshot(self) -> Snapshot:
        return snapshot(self.tree, self.budget)

    def diff_from_start(self) -> str:
        return unified_diff(self.baseline, self.snapshot(), self.budget.max_text_bytes)


def workspace_root_path(config: RefactorConfig, task_id: str) -> Path:
    """A fresh, not yet existing directory for one workspace of `task_id`."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in task_id)[:64] or "task"
    return expand_home(config.workspace_root) / f"{safe}-{uuid.uuid4().hex[:8]}"


def new_workspace_root(config: RefactorConfig, task_id: str) -> Path:
    root = workspace_root_path(config, task_id)
    (root / "tree").mkdir(parents=True)
    (root / "control").mkdir()
    return root


def copy_tree(
    source: Path, dest: Path, exclude: Iterable[Path] = (), budget: Budget | None = None
) -> None:
    """Copy `source` into `dest` without following a symlink out of `source`.

    Directories in `exclude` are not copied when they lie inside `source`: a user who runs
    `verilearn refactor apply --workspace .` in a repository has the default home
    (`./.verilearn`), and the workspace being written, inside the tree being copied.
    What is copied (every path, bytes by `lstat`) must fit `budget` before one byte is
    read; the skipped directories are neither copied nor counted.
    """
    source = source.resolve()
    if not source.is_dir():
        raise UnsafeCorpusError(f"{source}: not a directory")
    skip = {str(Path(p).resolve()) for p in exclude}
    try:
        entries = scan(source, budget or Budget(), prune=skip.__contains__, count_skipped=False)
    except HostBudgetExceeded as exc:
        raise HostBudgetExceeded(f"{source}: too big to copy: {exc}") from exc
    for entry in entries:
        target = dest / entry.rel
        if entry.kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
        elif entry.kind == "link":
            linked = _check_link(source, Path(entry.path))
            if linked.is_file():  # linked directories are not copied (no loops)
                shutil.copyfile(linked, target)
        elif entry.kind == "file":
            shutil.copyfile(entry.path, target)


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


def snapshot(tree: Path, budget: Budget | None = None) -> Snapshot:
    """Every regular file's bytes, symlinks as their target text (never followed), outside
    the skipped directories. Nothing is read until every path of the tree (skipped
    directories included) has fit `budget` by `lstat`: `HostBudgetExceeded` otherwise."""
    return snapshot_and_links(tree, budget)[0]


def snapshot_and_links(tree: Path, budget: Budget | None = None) -> tuple[Snapshot, set[str]]:
    """`snapshot` and which of its paths are symlinks (a file may hold the same bytes as
    a link's record): enough to put the tree back with `restore_tree`."""
    entries = scan(tree, budget or Budget())
    out: Snapshot = {}
    links: set[str] = set()
    for entry in entries:
        if entry.skipped:
            continue
        if entry.kind == "link":
            out[entry.rel] = SYMLINK_MARK + os.readlink(entry.path).encode()
            links.add(entry.rel)
        elif entry.kind == "file":
            out[entry.rel] = _read_at_most(entry.path, entry.size)
    return out, links


def restore_tree(tree: Path, snap: Snapshot, links: set[str]) -> None:
    """Put `tree` back to `snap` (from `snapshot_and_links`): everything it holds now is
    removed (any depth, any count: `remove_tree`), the files and links rewritten. The
    directory itself stays (a Docker container binds its inode)."""
    remove_tree(tree, keep_root=True)
    for rel, data in snap.items():
        path = tree / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel in links:
            os.symlink(data[len(SYMLINK_MARK) :].decode(errors="surrogateescape"), path)
        else:
            path.write_bytes(data)


def _read_at_most(path: str, size: int) -> bytes:
    """The file's bytes, refusing one that grew past its `lstat` size since (never a FIFO:
    only regular files get here, opened without following a link)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        chunks, left = [], size + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > size:
        raise HostBudgetExceeded(f"{path}: grew past its {size} bytes while being read")
    return data


def changed_files(before: Snapshot, after: Snapshot) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def unified_diff(
    before: Snapshot, after: Snapshot, max_text_bytes: int = Budget.max_text_bytes
) -> str:
    """Line diffs of the changed files; a side over `max_text_bytes` is not diffed line by
    line on the host (a marker hunk says so: difflib is quadratic on a hostile file)."""
    chunks: list[str] = []
    for rel in changed_files(before, after):
        old = before.get(rel)
        new = after.get(rel)
        fromfile = "/dev/null" if old is None else f"a/{rel}"
        tofile = "/dev/null" if new is None else f"b/{rel}"
        sizes = (len(old or b""), len(new or b""))
        if max(sizes) > max_text_bytes:
            chunks += [
                f"--- {fromfile}\n",
                f"+++ {tofile}\n",
                f"@@ not diffed: {sizes[0]} -> {sizes[1]} bytes (over {max_text_bytes}) @@\n",
            ]
            continue
        chunks.extend(
            difflib.unified_diff(
                (old or b"").decode(errors="replace").splitlines(keepends=True),
                (new or b"").decode(errors="replace").splitlines(keepends=True),
                fromfile=fromfile,
                tofile=tofile,
            )
        )
    return "".join(
        c if c.endswith("\n") else c + "\n\\ No newline at end of file\n" for c in chunks
    )


def syntax_errors(
    tree: Path, files: list[str], max_text_bytes: int = Budget.max_text_bytes
) -> list[str]:
    """Python files among `files` that no longer parse (compiled, never run). A file over
    `max_text_bytes` is not compiled on the host and counts as an error, and so does one
    whose compilation exhausts the recursion limit or memory (`1 + 1 + …` nested
    100,000 deep): the host's answer is a refusal, not a crash."""
    errors = []
    for rel in files:
        path = tree / rel
        if not rel.endswith(".py"):
            continue
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if st.st_size > max_text_bytes:
            errors.append(f"{rel}: {st.st_size} bytes, over the {max_text_bytes} checked")
            continue
        try:
            pysource.compile_check(_read_at_most(str(path), st.st_size), rel)
        except (SyntaxError, ValueError) as exc:
            errors.append(f"{rel}: {exc}")
        except (RecursionError, MemoryError) as exc:
            errors.append(f"{rel}: too deeply nested or too big to compile ({type(exc).__name__})")
    return errors


def tree_hash(snap: Snapshot) -> str:
    """A short content hash of a whole tree (paths and bytes)."""
    h = hashlib.sha256()
    for rel in sorted(snap):
        h.update(rel.encode() + b"\0" + hashlib.sha256(snap[rel]).digest())
    return h.hexdigest()[:24]
