"""A cgroup a bwrap jail joins before exec: what bounds the jail as a whole.

`pids.max` against fork bombs, a memory limit over ALL of the jail's memory (its
processes and the pages of its tmpfs mounts, charged to the cgroup of the process that
writes them; no swap), and a CPU quota when asked. The per-process rlimits never see a
fork bomb or tmpfs pages. cgroup v2: one group; v1: one group per hierarchy. Without
them (not root, no delegation) `paths` is empty: `required` makes that an error, else a
warning is logged once and the rlimits are all the jail has.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import uuid
from pathlib import Path

log = logging.getLogger("verilearn.isolation.cgroups")

CGROUP_ROOT = Path("/sys/fs/cgroup")
CPU_PERIOD_US = 100_000
_WARNED: set[str] = set()
PF_EXITING = 0x4  # /proc/<pid>/stat flags: the task is exiting
JOIN_FAILED = 125  # the launcher's exit code when it could not join a cgroup
JOIN_SCRIPT = (
    'while [ "$1" != -- ]; do echo 0 > "$1" || { echo "jail: cannot join the cgroup '
    f'through $1" >&2; exit {JOIN_FAILED}; }}; shift; done; shift; exec "$@"'
)


class JailUnavailable(RuntimeError):
    """The jail cannot be built as configured here (e.g. a required cgroup is missing)."""


class JailCgroup:
    """A throwaway cgroup (named `prefix-<random>` unless `name` is given). `label` names
    the jail in the warning a host without cgroups gets."""

    def __init__(
        self,
        pids: int,
        memory_mb: int,
        required: bool = False,
        *,
        cpus: float | None = None,
        name: str | None = None,
        prefix: str = "verilearn-jail",
        label: str = "jail",
    ) -> None:
        self.paths: list[Path] = []
        memory = str(memory_mb * 1024 * 1024)
        v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
        name = name or f"{prefix}-{uuid.uuid4().hex[:10]}"
        cpu = {} if cpus is None else _cpu_settings(cpus, v2)
        controllers = ("memory", "pids") + (("cpu",) if cpu else ())
        if v2:
            settings = {"memory.max": memory, "memory.swap.max": "0", "pids.max": str(pids)}
            plan = [(CGROUP_ROOT / name, {**settings, **cpu})]
        else:
            swap = CGROUP_ROOT / "memory" / "memory.memsw.limit_in_bytes"
            mem = {"memory.limit_in_bytes": memory}
            if swap.exists():  # set after the limit: memsw may never be under it
                mem["memory.memsw.limit_in_bytes"] = memory
            plan = [
                (CGROUP_ROOT / "pids" / name, {"pids.max": str(pids)}),
                (CGROUP_ROOT / "memory" / name, mem),
            ]
            if cpu:
                plan.append((CGROUP_ROOT / "cpu" / name, cpu))
        why = ""
        if os.geteuid() != 0:
            why = "not root"
        else:
            try:
                if v2:
                    _enable_controllers(CGROUP_ROOT, controllers)
                for path, values in plan:
                    path.mkdir(exist_ok=True)
                    self.paths.append(path)
                    for key, value in values.items():
                        (path / key).write_text(value)
            except OSError as exc:
                why = f"{type(exc).__name__}: {exc}"
                self.remove()
                self.paths = []
        if why:
            message = (
                f"{label}: no memory/pids cgroup ({why}; cgroup "
                f"{'v2' if v2 else 'v1'} under {CGROUP_ROOT}): a jail's memory is bounded "
                "per process only (RLIMIT_AS) and fork bombs end at the timeout"
            )
            if required:
                raise JailUnavailable(message + " (limits.require_cgroup is true)")
            if message not in _WARNED:
                _WARNED.add(message)
                log.warning(message)

    def procs_files(self) -> list[str]:
        return [str(path / "cgroup.procs") for path in self.paths]

    def join_files(self) -> list[str]:
        """The files a process writes `0` into to join this cgroup itself: v1's `tasks`
        (the writing thread alone), v2's `cgroup.procs`. Why not the host writing the
        pid into `cgroup.procs`: moving another process takes the kernel's global
        threadgroup lock for writing, which waits for an RCU grace period (6-18 ms here,
        cgroup v1), once per jail; a single-threaded process moving itself by `tasks`
        does not take it (about 0.1 ms)."""
        name = "cgroup.procs" if (CGROUP_ROOT / "cgroup.controllers").exists() else "tasks"
        return [str(path / name) for path in self.paths]

    def launcher(self, argv: list[str]) -> list[str]:
        """`argv` started through `/bin/sh`, which first joins this cgroup itself
        (`join_files`) and then execs `argv`: `argv` and everything it forks are born in
        the cgroup. A join that fails ends the launcher with `JOIN_FAILED` and a message
        naming the file, before `argv` runs; no cgroup (`paths` empty): `argv` as is."""
        if not self.paths:
            return list(argv)
        return ["/bin/sh", "-c", JOIN_SCRIPT, "verilearn-join", *self.join_files(), "--", *argv]

    def holds(self, pid: int) -> bool:
        """Whether process `pid` is in this cgroup, in every hierarchy it has
        (ProcessLookupError: no such process, or one that has ended: an exiting task
        has left its cgroups)."""
        try:
            with open(f"/proc/{pid}/cgroup") as fh:
                entries = [line.rstrip("\n").split(":", 2) for line in fh if line.count(":") >= 2]
            with open(f"/proc/{pid}/stat") as fh:  # read after: an exit has begun by now
                fields = fh.read().rpartition(")")[2].split()
            state, flags = fields[0], int(fields[6])
        except (FileNotFoundError, IndexError, ValueError) as exc:
            raise ProcessLookupError(pid) from exc
        if state in ("Z", "X", "x") or flags & PF_EXITING:
            raise ProcessLookupError(pid)
        member = {(hierarchy, where) for _, hierarchy, where in entries}
        for path in self.paths:
            where = f"/{path.name}"
            if path.parent == CGROUP_ROOT:  # v2: the unified hierarchy ("0::/name")
                found = ("", where) in member
            else:  # v1: "N:pids:/name" (a hierarchy may hold several controllers)
                found = any(path.parent.name in h.split(",") and w == where for h, w in member)
            if not found:
                return False
        return True

    def remove(self) -> None:
        for path in self.paths:
            _remove_one(path)


def _cpu_settings(cpus: float, v2: bool) -> dict[str, str]:
    quota = int(cpus * CPU_PERIOD_US)
    if v2:
        return {"cpu.max": f"{quota} {CPU_PERIOD_US}"}
    return {"cpu.cfs_period_us": str(CPU_PERIOD_US), "cpu.cfs_quota_us": str(quota)}


def _remove_one(path: Path) -> None:
    # The jail's processes are usually still exiting when bwrap returns: poll finely
    # first (a fixed 20 ms nap here once cost more than the bwrap jail itself).
    pause, deadline = 0.0005, time.monotonic() + 2.0
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                break
            _kill_members(path)
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
    raise OSError(f"cgroup {path} still busy after its jail ended")


def _enable_controllers(parent: Path, controllers: tuple[str, ...]) -> None:
    """cgroup v2: the controllers must be enabled in the parent for a child to use them."""
    enabled = (parent / "cgroup.subtree_control").read_text().split()
    missing = [c for c in controllers if c not in enabled]
    if missing:
        (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))


def _kill_members(path: Path) -> None:
    try:
        members = (path / "cgroup.procs").read_text().split()
    except FileNotFoundError:
        return
    for line in members:
        try:
            os.kill(int(line), signal.SIGKILL)
        except ProcessLookupError:
            pass
