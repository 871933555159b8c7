"""A slot's jail as the isolation layer's `JailSpec`: mounts, environment, limits, worker argv.

The host Python runtime (`python_runtime_paths`) is mounted read-only at the same path,
which makes the sandbox use exactly the host's pinned libraries; those binds are marked
`runtime`, which a prebuilt image leaves out. The workspace is a private tmpfs owned by
the sandbox uid; the worker is the jail's PID 1 (the kernel shields it from its cells).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from verilearn_assets.core.isolation.spec import (
    Bind,
    JailSpec,
    Limits,
    Tmpfs,
    outermost,
    python_runtime_paths,
)
from verilearn_assets.core.sandbox.config import SandboxConfig

WORKER_DIR_IN_JAIL = "/opt/verilearn/sandbox"
CTL_DIR_IN_JAIL = "/run/verilearn"
TABLES_DIR_IN_JAIL = "/data/tables"
WORKSPACE = "/workspace"
LABEL = "verilearn.sandbox.pool"
ZYGOTE_ALLOWANCE_MB = 512  # the zygote's libraries and cached tables, besides the task


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


def _runtime_binds(config: SandboxConfig) -> list[Bind]:
    worker_host_dir = str(Path(__file__).resolve().parent)
    binds: list[Bind] = []
    system = [p for p in config.system_ro_paths if os.path.exists(p)]
    for path in outermost(system + python_runtime_paths()):
        binds.append(Bind(path, path, runtime=True))
    for binary in config.allowed_binaries:
        if not os.path.exists(binary):
            raise ValueError(f"sandbox config: allowed binary {binary} does not exist")
        binds.append(Bind(binary, binary, runtime=True))
    binds.append(Bind(worker_host_dir, WORKER_DIR_IN_JAIL, runtime=True))
    return binds


def _slot_spec(config: SandboxConfig, binds: list[Bind], argv: list[str]) -> JailSpec:
    return JailSpec(
        argv=argv,
        binds=binds,
        env=sandbox_env(config),
        tmpfs=[Tmpfs(WORKSPACE, config.workspace_mb, "0700", owned=True)],
        chdir=WORKSPACE,
        read_only_root=True,
        as_pid_1=True,
        limits=Limits(
            memory_mb=config.memory_mb + ZYGOTE_ALLOWANCE_MB, pids=config.pids, cpus=config.cpus
        ),
    )


def stdio_jail_spec(config: SandboxConfig) -> JailSpec:
    """Spec for a Docker slot on the attach transport: no data mounts at all (tables
    travel in `begin`); the runtime mounts serve only offline mode on a local host."""
    return _slot_spec(config, _runtime_binds(config), worker_argv(config))


def host_jail_spec(
    config: SandboxConfig, ctl_host_dir: str, tables_host_dir: str, extra_ro_mounts: list[str]
) -> JailSpec:
    """Spec for a jail that runs the host's own interpreter (bwrap, Docker offline mode)."""
    data: list[Bind] = []
    for path in extra_ro_mounts:
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            raise ValueError(f"sandbox: extra read-only mount {path} is not a directory")
        data.append(Bind(real, real))
    data += [Bind(ctl_host_dir, CTL_DIR_IN_JAIL), Bind(tables_host_dir, TABLES_DIR_IN_JAIL)]
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
    return _slot_spec(config, _runtime_binds(config) + data, argv)
