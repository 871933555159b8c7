"""The refactor family's Docker jail: its containers' mounts and limits, and which pool.

The containers themselves are the isolation layer's Docker pool
(`core/isolation/docker_pool.py`): one container per workspace (`docker.lifetime:
workspace`) or a pool of them reset between workspaces (`pool`, the default), PID 1 the
isolation layer's supervisor. What is the family's is here: the mounts (the Python
runtime, `ast-grep`, the runners' toolchains, the control files read-only, the workspace
read-write), the limits of the largest runner, the labels, and `lifetime: command` (a
fresh container per command).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verilearn_assets.core.isolation import docker as docker_backend
from verilearn_assets.core.isolation import docker_pool
from verilearn_assets.core.isolation.docker import container_kwargs as jail_kwargs
from verilearn_assets.core.isolation.docker_pool import DockerSession, PoolPlan
from verilearn_assets.core.isolation.seccomp import docker_profile
from verilearn_assets.core.isolation.spec import SANDBOX_UID, Bind, JailSpec, Limits, Tmpfs
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify import toolchains
from verilearn_assets.refactor.verify.jail_policy import (
    BIN_IN_JAIL,
    CONTROL_IN_JAIL,
    PYCACHE_IN_JAIL,
    WORKSPACE_IN_JAIL,
    ast_grep_binary,
    give_to_sandbox_user,
    jail_env,
    ro_paths,
    runtime_pycache,
)

LABEL = "verilearn.refactor"
OWNER_LABEL = docker_backend.owner_label(LABEL)  # <hostname>:<pid> of the process that started it


_DRIVER: dict[int, str] = {}


def cgroup_parent(client: Any, setting: str | None) -> str | None:
    """`auto`: our own group beside Docker's (named for the daemon's cgroup driver)."""
    if setting != "auto":
        return setting
    if not _DRIVER:
        _DRIVER[0] = str(client.info().get("CgroupDriver", "cgroupfs"))
    return "verilearn-refactor.slice" if _DRIVER[0] == "systemd" else "/verilearn-refactor"


# PID 1 (`pid1.py serve`) runs as the container's root with these capabilities only:
# to drop each command to uid 65534 and to sweep what commands leave. A command (another
# uid, no capabilities, the seccomp profile) can neither signal nor trace it.
SUPERVISOR_CAPS = ["SETUID", "SETGID", "KILL"]


def container_kwargs(
    client: Any, config: RefactorConfig, workspace: Path, control: Path, supervised: bool = True
) -> dict[str, Any]:
    """The isolation every refactor container gets, whatever its lifetime. `supervised`:
    PID 1 is `pid1.py serve` (root, `SUPERVISOR_CAPS`), else the command itself
    (`lifetime: command`: uid 65534, no capability)."""
    limits = config.limits
    ro = ro_paths(config)
    binds = [Bind(p, p, runtime=True) for p in ro]
    binds += [
        Bind(ast_grep_binary(), f"{BIN_IN_JAIL}/ast-grep", runtime=True),
        Bind(str(runtime_pycache(config)), PYCACHE_IN_JAIL, runtime=True),
        Bind(str(control), CONTROL_IN_JAIL),
        Bind(str(workspace), WORKSPACE_IN_JAIL, writable=True),
    ]
    for host, inside in toolchains.docker_paths(ro).items():  # node, go, ...
        binds.append(Bind(host, inside, runtime=True))
    memory_mb, pids = toolchains.docker_limits(config)  # the largest runner's
    spec = JailSpec(
        argv=[],
        binds=binds,
        env=toolchains.docker_env(jail_env("docker")),
        # exec: compiled test binaries (go test, cargo test, make test) run from /tmp, as in
        # the bwrap jail's tmpfs (Docker mounts a tmpfs noexec by default)
        tmpfs=[Tmpfs("/tmp", 64, "1777", exec_=True)],
        chdir=WORKSPACE_IN_JAIL,
        uid=0 if supervised else SANDBOX_UID,
        limits=Limits(
            cpu_s=limits.cpu_s,
            file_size_mb=limits.file_size_mb,
            open_files=limits.open_files,
            no_core=True,
            memory_mb=memory_mb,
            pids=pids,
        ),
    )
    parent = cgroup_parent(client, config.docker.cgroup_parent)
    return {
        **({"cgroup_parent": parent} if parent else {}),
        "detach": True,
        **jail_kwargs(spec),
        "ipc_mode": "private",  # its own /dev/shm and System V IPC (reset empties both)
        **({"cap_add": SUPERVISOR_CAPS} if supervised else {}),
        # no ptrace / process_vm_* (and Docker's documented denials): see seccomp.py
        "security_opt": ["no-new-privileges", f"seccomp={docker_profile()}"],
    }


def plan(config: RefactorConfig) -> PoolPlan:
    """The pool's view of a refactor config: containers of equal signature serve any
    workspace of that config."""
    from verilearn_assets.core.home import expand_home

    def command_limits(argv: list[str]) -> tuple[int, int]:
        limits = toolchains.with_limits(config, argv).limits  # its runner's RLIMIT_AS
        return limits.memory_mb, limits.output_cap_bytes

    return PoolPlan(
        signature=config.model_dump_json(
            include={"limits", "docker", "systemro_paths", "workspace_root", "backend"}
        ),
        image=config.docker.offline_image,
        label=LABEL,
        name="refactor",
        container_args=lambda client, ws, control: container_kwargs(client, config, ws, control),
        handover=give_to_sandbox_user,
        command_limits=command_limits,
        root=expand_home(config.workspace_root),
        lifetime=config.docker.lifetime,
        prestart=config.docker.prestart,
        pool_size=config.docker.pool_size,
    )


def open_session(config: RefactorConfig, root: Path) -> DockerSession:
    """A started container over `root/tree` and `root/control` (see `docker_pool`)."""
    return docker_pool.open_session(plan(config), root)


def reap_orphans(client: Any) -> list[str]:
    """Remove refactor workspace containers whose owning process on this host is gone."""
    return docker_backend.reap_orphans(client, LABEL)


def run_once(
    config: RefactorConfig, workspace: Path, control: Path, argv: list[str], timeout_s: float
):  # noqa: ANN201 - jail.Completed
    """`docker.lifetime: command`: a fresh container for this one command
    (`core.isolation.docker.run_once`, with this family's isolation and label)."""
    from verilearn_assets.core.isolation.docker import docker_client
    from verilearn_assets.core.isolation.docker import run_once as run_in_fresh_container

    client = docker_client(timeout=max(30, int(timeout_s) + 10))
    try:
        give_to_sandbox_user(workspace)
        return run_in_fresh_container(
            client,
            config.docker.offline_image,
            container_kwargs(client, config, workspace, control, supervised=False),
            argv,
            {LABEL: "step"},
            timeout_s,
            config.limits.output_cap_bytes,
        )
    finally:
        client.close()
