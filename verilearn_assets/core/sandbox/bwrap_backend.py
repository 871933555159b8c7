"""Bubblewrap backend: the same worker in a jail for machines without a Docker daemon.

Each slot is a `bwrap` process with every namespace unshared (no network), a read-only
tmpfs root holding only read-only binds of the Python runtime and data, a tmpfs
workspace, all capabilities dropped and uid 65534 inside. Memory, pids and CPU limits
come from a per-slot cgroup when the host lets us create one (root, v1 or v2); the
task's address-space rlimit applies in every case.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from verilearn_assets.core.sandbox.config import SandboxConfig
from verilearn_assets.core.sandbox.jail import SANDBOX_UID, WORKSPACE, JailSpec

log = logging.getLogger("verilearn.sandbox.bwrap")

CGROUP_ROOT = Path("/sys/fs/cgroup")
ZYGOTE_ALLOWANCE_MB = 512


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@dataclass
class BwrapSlot:
    process: subprocess.Popen[bytes]
    cgroups: list[Path] = field(default_factory=list)
    log_path: str = ""
    host: str = "local"

    @property
    def ident(self) -> str:
        return f"bwrap pid {self.process.pid}"


class CgroupLimits:
    """Creates per-slot cgroups (v2 unified or v1 per-controller) with the pool's limits."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self.v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
        self.usable = self._probe()

    def _probe(self) -> bool:
        if os.geteuid() != 0:
            return False
        roots = [CGROUP_ROOT] if self.v2 else [CGROUP_ROOT / c for c in ("memory", "pids", "cpu")]
        return all(os.access(r, os.W_OK) for r in roots if r.exists()) and all(
            r.exists() for r in roots
        )

    def create(self, name: str) -> list[Path]:
        memory = (self.config.memory_mb + ZYGOTE_ALLOWANCE_MB) * 1024 * 1024
        period = 100_000
        quota = int(self.config.cpus * period)
        if self.v2:
            path = CGROUP_ROOT / name
            path.mkdir(exist_ok=True)
            _write(path / "memory.max", str(memory))
            _write(path / "pids.max", str(self.config.pids))
            _write(path / "cpu.max", f"{quota} {period}")
            return [path]
        paths = []
        for controller, settings in (
            ("memory", {"memory.limit_in_bytes": str(memory)}),
            ("pids", {"pids.max": str(self.config.pids)}),
            ("cpu", {"cpu.cfs_period_us": str(period), "cpu.cfs_quota_us": str(quota)}),
        ):
            path = CGROUP_ROOT / controller / name
            path.mkdir(exist_ok=True)
            for key, value in settings.items():
                _write(path / key, value)
            paths.append(path)
        return paths

    @staticmethod
    def remove(paths: list[Path]) -> None:
        for path in paths:
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # processes still exiting
                    time.sleep(0.02)
            else:
                raise OSError(f"cgroup {path} still busy after its slot stopped")


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise OSError(f"cgroup setting {path} = {value}: {exc}") from exc


class BwrapBackend:
    name = "bwrap"

    def __init__(self, config: SandboxConfig, pool_id: str, runtime_dir: str) -> None:
        self.config = config
        self.pool_id = pool_id
        self.runtime_dir = runtime_dir
        binary = bwrap_path()
        if binary is None:
            raise RuntimeError(
                "bubblewrap (`bwrap`) is not installed: apt-get install "
                "bubblewrap, or use the docker backend"
            )
        self.binary = binary
        self.cgroups = CgroupLimits(config)
        self.hosts: dict[str, None] = {"local": None}  # one machine: this one
        self.weights = {"local": 1}

    def ping(self, host: str) -> tuple[bool, str]:
        return True, "this machine"

    def forget(self, host: str) -> None:
        pass

    def prepare(self, host: str | None = None) -> None:
        if not self.cgroups.usable:
            log.warning(
                "bwrap: cannot create cgroups here (need root and a writable "
                "/sys/fs/cgroup); memory is limited per task by RLIMIT_AS only, "
                "pids and CPU are not limited"
            )

    def command(self, spec: JailSpec) -> list[str]:
        args = [
            self.binary,
            "--unshare-all",
            "--unshare-user",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--uid",
            str(SANDBOX_UID),
            "--gid",
            str(SANDBOX_UID),
            "--cap-drop",
            "ALL",
            "--disable-userns",
            "--clearenv",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(self.config.workspace_mb * 1024 * 1024),
            "--perms",
            "0700",
            "--tmpfs",
            WORKSPACE,
        ]
        for key, value in spec.env.items():
            args += ["--setenv", key, value]
        for host, jail in spec.ro_mounts:
            args += ["--ro-bind", host, jail]
        args += ["--remount-ro", "/", "--chdir", WORKSPACE, "--"]
        return args + spec.argv

    def start_slot(self, index: int, spec: JailSpec, host: str | None = None) -> BwrapSlot:
        cgroups: list[Path] = []
        argv = self.command(spec)
        if self.cgroups.usable:
            cgroups = self.cgroups.create(f"verilearn-sandbox-{self.pool_id}-{index}")
            # Join the cgroups before exec'ing bwrap, so every jailed process is inside.
            procs = [str(p / "cgroup.procs") for p in cgroups]
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
        return BwrapSlot(process=process, cgroups=cgroups, log_path=log_path)

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
        self.cgroups.remove(slot.cgroups)

    def sweep(self, hosts: list[str] | None = None) -> list[tuple[str, str]]:
        return []

    def close(self) -> None:
        pass
