"""Run one command in a jail over a host workspace: bubblewrap, Docker, or none (debug).

Under bubblewrap each step is a short-lived process (Docker: see `docker_jail.py`, one
container per workspace, each step sent over a unix socket to its PID 1): the workspace is
bound read-write at `/workspace`, the step's control files (the rule) read-only at
`/run/refactor`, the Python runtime and the `ast-grep` binary read-only at their host
paths, nothing else. No network (every namespace unshared / `network_mode=none`), all
capabilities dropped, rlimits on CPU time, address space, file size and open files, and a
pids cgroup (or Docker's pids limit) against fork bombs. A timeout kills the whole jail:
the pid namespace dies with its first process, so a forked daemon cannot outlive the step.
The jail itself is the isolation layer's (`core/isolation`); what is the refactor
family's is here: the allowlisted names and their binaries, the mounts, the bytecode cache.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from verilearn_assets.core.isolation.bwrap import bwrap_argv
from verilearn_assets.core.isolation.run import (
    BwrapGate,
    Completed,
    run_command,
    run_jailed,
)
from verilearn_assets.core.isolation.spec import (
    Bind,
    JailSpec,
    Limits,
    Tmpfs,
)
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify import toolchains
from verilearn_assets.refactor.verify.docker_jail import run_once
from verilearn_assets.refactor.verify.jail_policy import (
    BIN_IN_JAIL,
    CONTROL_IN_JAIL,
    PYCACHE_IN_JAIL,
    WORKSPACE_IN_JAIL,
    ast_grep_binary,
    jail_env,
    resolve_argv,
    ro_paths,
    runtime_pycache,
)

if TYPE_CHECKING:
    from verilearn_assets.core.isolation.docker_pool import DockerSession

log = logging.getLogger("verilearn.refactor.jail")

CGROUP_PREFIX = "verilearn-refactor"  # each command's cgroup: verilearn-refactor-<random>


def command_limits(config: RefactorConfig) -> Limits:
    """The refactor limits as the isolation layer's: the address-space rlimit and the
    jail's memory cgroup are both `memory_mb`."""
    limits = config.limits
    return Limits(
        cpu_s=limits.cpu_s,
        address_space_mb=limits.memory_mb,
        file_size_mb=limits.file_size_mb,
        open_files=limits.open_files,
        no_core=True,
        memory_mb=limits.memory_mb,
        pids=limits.pids,
    )


def jail_spec(
    config: RefactorConfig, workspace: Path, control: Path, argv: list[str], timeout_s: float
) -> JailSpec:
    """One command's bwrap jail: every tmpfs it can write (its root, /tmp, /dev/shm) sized,
    the runtime, the runner's toolchain and `ast-grep` read-only, the control files
    read-only at `CONTROL_IN_JAIL`, the workspace read-write at `WORKSPACE_IN_JAIL`."""
    size = config.limits.tmpfs_mb
    ro = ro_paths(config)
    binds = [Bind(path, path, runtime=True) for path in ro]
    binds += [Bind(path, path, runtime=True) for path in toolchains.ro_paths_for(argv, ro)]
    binds += [Bind(h, inside, runtime=True) for h, inside in toolchains.binds_for(argv).items()]
    binds += [
        Bind(ast_grep_binary(), f"{BIN_IN_JAIL}/ast-grep", runtime=True),
        Bind(str(runtime_pycache(config)), PYCACHE_IN_JAIL, runtime=True),
        Bind(str(control), CONTROL_IN_JAIL),
        Bind(str(workspace), WORKSPACE_IN_JAIL, writable=True),
    ]
    return JailSpec(
        argv=argv,
        binds=binds,
        env={**jail_env("bwrap"), **toolchains.env_for(argv)},
        tmpfs=[Tmpfs("/dev/shm", size), Tmpfs("/tmp", size)],
        chdir=WORKSPACE_IN_JAIL,
        root_tmpfs_mb=size,
        limits=command_limits(config),
        time_limit_s=timeout_s,
    )


def bwrap_command(
    config: RefactorConfig,
    workspace: Path,
    control: Path,
    argv: list[str],
    seccomp_fd: int | None = None,
    gate: BwrapGate | None = None,
) -> list[str]:
    """The bwrap command line of `jail_spec` (the seccomp filter read from `seccomp_fd`;
    with `gate`, bwrap waits for its limits: `BwrapGate`)."""
    spec = jail_spec(config, workspace, control, argv, 0)
    return bwrap_argv(spec, seccomp_fd=seccomp_fd, extra=gate.args() if gate else None)


def run_in_jail(
    config: RefactorConfig,
    workspace: Path,
    control: Path,
    argv: list[str],
    timeout_s: float,
    session: DockerSession | None = None,
) -> Completed:
    """Run the already-allowlisted `argv` on `workspace` with the configured backend
    (Docker: in the workspace's container when `session` is given, else a fresh one)."""
    config = toolchains.with_limits(config, argv)  # a language runner's own limits
    backend = config.backend
    resolved = resolve_argv(argv, backend)
    if backend == "docker":
        if session is not None:
            return session.run(resolved, timeout_s)
        return run_once(config, workspace, control, resolved, timeout_s)
    if backend == "bwrap":
        return run_jailed(
            jail_spec(config, workspace, control, resolved, timeout_s),
            output_cap_bytes=config.limits.output_cap_bytes,
            require_cgroup=config.limits.require_cgroup,
            cgroup_prefix=CGROUP_PREFIX,
            label="refactor jail",
        )
    # none: local debugging only; the rule path is rewritten to the host control dir
    command = [
        str(control) + a[len(CONTROL_IN_JAIL) :] if a.startswith(CONTROL_IN_JAIL) else a
        for a in resolved
    ]
    env = {**jail_env("none"), **toolchains.env_for(resolved)}
    return _run_local(config, command, str(workspace), env, timeout_s)


def _run_local(
    config: RefactorConfig,
    command: list[str],
    cwd: str | None,
    env: dict[str, str],
    timeout_s: float,
    pass_fds: tuple[int, ...] = (),
    gate: BwrapGate | None = None,
) -> Completed:
    """`command` (a bwrap command line, or the `none` backend's bare one) with the
    refactor limits."""
    return run_command(
        command,
        command_limits(config),
        cwd=cwd,
        env=env,
        timeout_s=timeout_s,
        output_cap_bytes=config.limits.output_cap_bytes,
        pass_fds=pass_fds,
        gate=gate,
        require_cgroup=config.limits.require_cgroup,
        cgroup_prefix=CGROUP_PREFIX,
        label="refactor jail",
    )
