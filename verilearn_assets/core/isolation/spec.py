"""What a jail is, whatever runs it: one `JailSpec` read by the bubblewrap and Docker backends.

A client (the Python cell pool, the refactor command runner, the DafnyServer pool) says
which host paths it sees and where, which it may write, its tmpfs mounts, limits, uid and
environment; `bwrap.bwrap_argv` and `docker.container_kwargs` render the same spec for
their backend, so a hostile-input property holds for every client once it holds here.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

SANDBOX_UID = 65534  # nobody: every jailed process runs as it unless a spec says otherwise


@dataclass(frozen=True)
class Bind:
    """A host path seen at `inside`. `runtime`: it brings the host's interpreter, libraries
    or tools, which a prebuilt image has of its own (the Docker backend may leave it out)."""

    host: str
    inside: str
    writable: bool = False
    runtime: bool = False


@dataclass(frozen=True)
class Tmpfs:
    """A private, size-capped tmpfs. `owned`: owned by the spec's uid (Docker only; bwrap
    creates it as the jail's uid already). `exec_`: Docker mounts tmpfs noexec otherwise."""

    path: str
    size_mb: int | None = None
    mode: str | None = None
    owned: bool = False
    exec_: bool = False


@dataclass(frozen=True)
class Limits:
    """Resource limits; None leaves one unset. `address_space_mb`, `cpu_s`, `file_size_mb`,
    `open_files` are per-process rlimits (and `no_core` RLIMIT_CORE 0); `memory_mb`, `pids`
    and `cpus` bound the whole jail (a cgroup under bwrap, the container under Docker)."""

    cpu_s: int | None = None
    address_space_mb: int | None = None
    file_size_mb: int | None = None
    open_files: int | None = None
    no_core: bool = False
    memory_mb: int | None = None
    pids: int | None = None
    cpus: float | None = None


@dataclass(frozen=True)
class JailSpec:
    """One jail: command, mounts, environment, limits, uid, network.

    `uid` None keeps the caller's uid (no user namespace of the jail's own: Dafny's bwrap
    jail, which runs nothing of the candidate's); `root_tmpfs_mb` sizes the jail's root tmpfs;
    `read_only_root` remounts it read-only once the binds are in place; `as_pid_1` makes
    the command the pid namespace's init (it reaps, and cannot be signalled from inside).
    """

    argv: list[str]
    binds: list[Bind] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    tmpfs: list[Tmpfs] = field(default_factory=list)
    symlinks: list[tuple[str, str]] = field(default_factory=list)  # (target, link)
    chdir: str = "/"
    uid: int | None = SANDBOX_UID
    network: bool = False
    root_tmpfs_mb: int | None = None
    read_only_root: bool = False
    as_pid_1: bool = False
    limits: Limits = field(default_factory=Limits)
    time_limit_s: float | None = None

    def without_runtime(self) -> JailSpec:
        """The spec for an image that brings its own runtime: data binds only."""
        return replace(self, binds=[b for b in self.binds if not b.runtime])


def outermost(paths: list[str]) -> list[str]:
    """Drop duplicates and paths nested inside another listed path (shortest first)."""
    out: list[str] = []
    for path in sorted({os.path.normpath(p) for p in paths if p}, key=len):
        if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in out):
            out.append(path)
    return out


def python_runtime_paths() -> list[str]:
    """Directories holding the running interpreter and its packages (deduplicated).

    Derived at run time (`sys.prefix`, `sys.base_prefix`, the real executable), so a fresh
    clone at another path, a venv or a bare interpreter all work: jails mount them
    read-only at the same path and so run exactly the host's pinned libraries."""
    candidates = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        str(Path(os.path.realpath(sys.executable)).parent.parent),
    ]
    return outermost([os.path.realpath(p) for p in candidates] + candidates)
