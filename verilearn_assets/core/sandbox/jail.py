"""What every slot needs regardless of backend: mounts, environment and the worker argv.

Paths are derived at run time from the running interpreter (`sys.prefix`,
`sys.base_prefix`, the real executable), so a fresh clone at another path, a venv or a
bare interpreter all work. The host Python runtime is mounted read-only at the same path,
which makes the sandbox use exactly the host's pinned libraries.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from verilearn_assets.core.sandbox.config import SandboxConfig

WORKER_DIR_IN_JAIL = "/opt/verilearn/sandbox"
CTL_DIR_IN_JAIL = "/run/verilearn"
TABLES_DIR_IN_JAIL = "/data/tables"
WORKSPACE = "/workspace"
SANDBOX_UID = 65534
LABEL = "verilearn.sandbox.pool"


def python_runtime_paths() -> list[str]:
    """Directories holding the running interpreter and its packages (deduplicated)."""
    candidates = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        str(Path(os.path.realpath(sys.executable)).parent.parent),
    ]
    return _outermost([os.path.realpath(p) for p in candidates] + candidates)


def _outermost(paths: list[str]) -> list[str]:
    """Drop duplicates and paths nested inside another listed path."""
    out: list[str] = []
    for path in sorted({os.path.normpath(p) for p in paths if p}, key=len):
        if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in out):
            out.append(path)
    return out


@dataclass
class JailSpec:
    """Read-only mounts (host -> jail), environment and command of one slot.

    `runtime_mounts` bring the interpreter, libraries and worker code (a prebuilt image
    has its own); `data_mounts` (control socket, tables, extra mounts) are always needed.
    """

    runtime_mounts: list[tuple[str, str]]
    data_mounts: list[tuple[str, str]]
    env: dict[str, str]
    argv: list[str]

    @property
    def ro_mounts(self) -> list[tuple[str, str]]:
        return self.runtime_mounts + self.data_mounts


def worker_settings(config: SandboxConfig) -> dict[str, object]:
    return {
        "workspace": WORKSPACE,
        "memory_mb": config.memory_mb,
        "workspace_mb": config.workspace_mb,
        "cell_timeout_s": config.cell_timeout_s,
        "output_cap_bytes": config.output_cap_bytes,
        "value_repr_chars": config.value_repr_chars,
        "hook_summary_chars": config.hook_summary_chars,
        "submission_cap_bytes": config.submission_cap_bytes,
        "preload": config.preload,
    }


def sandbox_env(config: SandboxConfig) -> dict[str, str]:
    """A clean environment: nothing from the host except the passthrough allowlist."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": WORKSPACE,
        "TMPDIR": WORKSPACE,
        "LANG": "C.UTF-8",
        "USER": "sandbox",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
    }
    for name in config.env_passthrough:
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def worker_argv(
    config: SandboxConfig, python: str = sys.executable, worker_dir: str = WORKER_DIR_IN_JAIL
) -> list[str]:
    """The worker's command line; its channel follows `docker.transport` (bwrap: socket)."""
    channel = (
        ["--stdio"]
        if config.docker.transport == "attach" and config.backend != "bwrap"
        else ["--socket", f"{CTL_DIR_IN_JAIL}/ctl.sock"]
    )
    return [
        python,
        "-I",
        "-B",
        f"{worker_dir}/worker.py",
        *channel,
        "--config",
        json.dumps(worker_settings(config)),
    ]


def _runtime_mounts(config: SandboxConfig) -> list[tuple[str, str]]:
    worker_host_dir = str(Path(__file__).resolve().parent)
    mounts: list[tuple[str, str]] = []
    system = [p for p in config.system_ro_paths if os.path.exists(p)]
    for path in _outermost(system + python_runtime_paths()):
        mounts.append((path, path))
    for binary in config.allowed_binaries:
        if not os.path.exists(binary):
            raise ValueError(f"sandbox config: allowed binary {binary} does not exist")
        mounts.append((binary, binary))
    mounts.append((worker_host_dir, WORKER_DIR_IN_JAIL))
    return mounts


def stdio_jail_spec(config: SandboxConfig) -> JailSpec:
    """Spec for a Docker slot on the attach transport: no data mounts at all (tables
    travel in `begin`); the runtime mounts serve only offline mode on a local host."""
    return JailSpec(
        runtime_mounts=_runtime_mounts(config),
        data_mounts=[],
        env=sandbox_env(config),
        argv=worker_argv(config),
    )


def host_jail_spec(
    config: SandboxConfig, ctl_host_dir: str, tables_host_dir: str, extra_ro_mounts: list[str]
) -> JailSpec:
    """Spec for a jail that runs the host's own interpreter (bwrap, Docker offline mode)."""
    mounts = _runtime_mounts(config)
    data: list[tuple[str, str]] = []
    for path in extra_ro_mounts:
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            raise ValueError(f"sandbox: extra read-only mount {path} is not a directory")
        data.append((real, real))
    data += [(ctl_host_dir, CTL_DIR_IN_JAIL), (tables_host_dir, TABLES_DIR_IN_JAIL)]
    argv = [
        sys.executable,
        "-I",
        "-B",
        f"{WORKER_DIR_IN_JAIL}/worker.py",
        "--socket",
        f"{CTL_DIR_IN_JAIL}/ctl.sock",
        "--config",
        json.dumps(worker_settings(config)),
    ]
    return JailSpec(runtime_mounts=mounts, data_mounts=data, env=sandbox_env(config), argv=argv)
