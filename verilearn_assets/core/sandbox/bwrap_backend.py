"""Bubblewrap backend: the same worker in a jail for machines without a Docker daemon.

Each slot is a long-lived `bwrap` process rendered from the slot's `JailSpec` by the
isolation layer (`core/isolation/bwrap.py`): every namespace unshared (no network), a
read-only tmpfs root holding only read-only binds of the Python runtime and data, a tmpfs
workspace, all capabilities dropped and uid 65534 inside. Memory, pids and CPU limits
come from a per-slot cgroup (`core/isolation/cgroups.py`) when the host lets us create
one (root, v1 or v2); the task's address-space rlimit applies in every case.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from verilearn_assets.core.isolation.bwrap import bwrap_argv, require_bwrap
from verilearn_assets.core.isolation.cgroups import JailCgroup
from verilearn_assets.core.isolation.spec import JailSpec
from verilearn_assets.core.sandbox.config import SandboxConfig


@dataclass
class BwrapSlot:
    process: subprocess.Popen[bytes]
    cgroup: JailCgroup | None = None
    log_path: str = ""
    host: str = "local"

    @property
    def ident(self) -> str:
        return f"bwrap pid {self.process.pid}"


class BwrapBackend:
    name = "bwrap"

    def __init__(self, config: SandboxConfig, pool_id: str, runtime_dir: str) -> None:
        self.config = config
        self.pool_id = pool_id
        self.runtime_dir = runtime_dir
        self.binary = require_bwrap(": apt-get install bubblewrap, or use the docker backend")
        self.hosts: dict[str, None] = {"local": None}  # one machine: this one
        self.weights = {"local": 1}

    def ping(self, host: str) -> tuple[bool, str]:
        return True, "this machine"

    def forget(self, host: str) -> None:
        pass

    def prepare(self, host: str | None = None) -> None:
        """Nothing to prepare: a host without cgroups is warned about by the first slot."""

    def command(self, spec: JailSpec) -> list[str]:
        return bwrap_argv(spec, self.binary)

    def start_slot(self, index: int, spec: JailSpec, host: str | None = None) -> BwrapSlot:
        argv = self.command(spec)
        limits = spec.limits
        cgroup = JailCgroup(
            limits.pids or 0,
            limits.memory_mb or 0,
            cpus=limits.cpus,
            name=f"verilearn-sandbox-{self.pool_id}-{index}",
            label="sandbox bwrap (memory is limited per task by RLIMIT_AS, CPU not at all)",
        )
        if cgroup.paths:
            # Join the cgroups before exec'ing bwrap, so every jailed process is inside.
            procs = cgroup.procs_files()
            script = (
                'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 97; '
                'shift; done; shift; exec "$@"'
            )
            argv = ["/bin/sh", "-c", script, "sh", *procs, "--", *argv]
        log_path = os.path.join(self.runtime_dir, f"slot-{index}.log")
        with open(log_path, "ab") as log_file:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,
            )
        return BwrapSlot(process=process, cgroup=cgroup, log_path=log_path)

    def is_alive(self, slot: BwrapSlot) -> bool:
        return slot.process.poll() is None

    def logs(self, slot: BwrapSlot) -> str:
        try:
            return Path(slot.log_path).read_text(errors="replace")[-4000:]
        except OSError as exc:
            return f"<no log: {exc}>"

    def kill_slot(self, slot: BwrapSlot) -> None:
        if slot.process.poll() is None:
            try:
                os.killpg(slot.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        slot.process.wait(timeout=10)
        if slot.cgroup is not None:
            slot.cgroup.remove()

    def sweep(self, hosts: list[str] | None = None) -> list[tuple[str, str]]:
        return []

    def close(self) -> None:
        pass
