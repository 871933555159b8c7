"""Running Dafny in a jail: no network, read-only system, private /tmp, bounded resources.

A candidate program is untrusted text. Verification (`/compile:0`) runs no program code,
but Dafny, Boogie and z3 parse attacker-chosen input, so we give them nothing to reach:
only `/usr`, `/etc` (mono's config) and the z3 binary are seen, read-only, `/tmp` is a
size-capped tmpfs, there is no network, and the jail as a whole is bounded
(`JailLimits`: memory, processes and threads, CPU seconds per process), so a proof
obligation that makes z3 or Boogie balloon ends in a crash verdict, not a host out of
memory. The jail is a `JailSpec` of the isolation layer (`core/isolation`), started by
its `process.start_process` on one of its backends:

- `bwrap`: every namespace unshared, `/lib`, `/lib64`, `/bin` as symlinks into `/usr`
  (a merged-usr host), memory and tasks bounded by a cgroup, CPU seconds by RLIMIT_CPU
  (a host that gives no cgroup, i.e. not root, leaves only the latter: mono reserves far
  more address space than it uses, so RLIMIT_AS is no stand-in; a warning says so);
- `docker`: a container from the empty scratch image that sees the same (`/lib`,
  `/lib64`, `/bin` bound where the host has symlinks, as Docker cannot make them in a
  read-only root), the limits as the container's, the daemon's init as PID 1;
- `none`: Dafny runs directly, unlimited (hosts with neither).

`auto` takes bwrap when installed, else Docker when a daemon answers, else none.
"""

from __future__ import annotations

import os
import queue
import shutil
import threading
import time
from typing import Any, Literal

from pydantic import Field

from verilearn_assets.core.config import StrictConfig
from verilearn_assets.core.isolation.process import JailedProcess, start_process
from verilearn_assets.core.isolation.spec import SANDBOX_UID, Bind, JailSpec, Limits, Tmpfs
from verilearn_assets.dafny.verify.toolchain import Toolchain

JailMode = Literal["auto", "bwrap", "docker", "none"]
Jail = Literal["bwrap", "docker", "none"]
Z3_IN_JAIL = "/opt/verilearn/z3"
INPUT_IN_JAIL = "/in"
LABEL = "verilearn.dafny"  # the Dafny jail's containers (with their owner: orphans reaped)
OUTPUT_CAP_BYTES = 1 << 20  # what `run` keeps of a command's output (the verdict needs less)
MERGED_USR = ("/lib", "/lib64", "/bin")


class JailLimits(StrictConfig):
    """What one jail (a server process with its z3 children, or one CLI run) may use.

    The defaults leave real verification ample room: one server verifying the bundled
    corpus three times over peaked at 133 MB and 17 tasks (mono's threads and z3;
    measured from its cgroup, bwrap), so 2 GB leaves a long-lived process's heap and a
    hard proof obligation's z3 room, and 256 tasks a busy thread pool. `cpu_s` is per
    process (RLIMIT_CPU): a z3 is bounded per proof obligation by `vc_time_limit_s`
    already; a server that reaches it is killed and its request retried once on a fresh
    one."""

    memory_mb: int = Field(default=2048, ge=256)  # whole jail, tmpfs pages included; no swap
    pids: int = Field(default=256, ge=16)  # processes and threads of the whole jail
    cpu_s: int = Field(default=3600, ge=10)  # CPU seconds per process (RLIMIT_CPU)
    tmp_mb: int = Field(default=256, ge=16)  # the private /tmp
    docker_image: str = "verilearn-sandbox-scratch:1"  # empty scratch image (no registry)


def resolve_jail(mode: JailMode) -> Jail:
    if mode == "none":
        return "none"
    if mode in ("auto", "bwrap") and shutil.which("bwrap"):
        return "bwrap"
    if mode == "bwrap":
        raise RuntimeError("dafny verifier: jail=bwrap but bubblewrap is not installed")
    from verilearn_assets.core.isolation.docker import docker_available

    ok, why = docker_available()
    if ok:
        return "docker"
    if mode == "docker":
        raise RuntimeError(f"dafny verifier: jail=docker but {why}")
    return "none"


def z3_path(toolchain: Toolchain, jail: str) -> str:
    """Where the verifier sees z3 (the same binary, mounted at a fixed path in a jail)."""
    return toolchain.z3 if jail == "none" else Z3_IN_JAIL


def input_path(jail: str, host_dir: str) -> str:
    """Where a jailed verifier sees the host directory of its input files."""
    return host_dir if jail == "none" else INPUT_IN_JAIL


def jail_spec(
    argv: list[str],
    toolchain: Toolchain,
    jail: Jail = "bwrap",
    input_dir: str | None = None,
    limits: JailLimits | None = None,
) -> JailSpec:
    """Dafny's jail: `/usr` and `/etc` (mono's config) and z3, read-only; a private `/tmp`;
    the limits; no capability left. Under Docker the verifier runs as `SANDBOX_UID` (the
    caller's uid would be root's when the caller is root, and nothing in the container
    needs it; its /tmp is that uid's). Under bwrap the caller's uid is kept (no user
    namespace of the jail's own): the verifier runs no program code."""
    limits = limits or JailLimits()
    binds = [
        Bind("/usr", "/usr", runtime=True),
        Bind("/etc", "/etc", runtime=True),
        Bind(os.path.realpath(toolchain.z3), Z3_IN_JAIL, runtime=True),
    ]
    symlinks = [("usr/lib", "/lib"), ("usr/lib64", "/lib64"), ("usr/bin", "/bin")]
    if jail == "docker":
        symlinks = []
        for path in MERGED_USR:
            if os.path.isdir(path):  # a host symlink into /usr, or a directory of its own
                binds.append(Bind(os.path.realpath(path), path, runtime=True))
    if input_dir is not None:
        binds.append(Bind(input_dir, INPUT_IN_JAIL))
    return JailSpec(
        argv=argv,
        binds=binds,
        env={"HOME": "/tmp", "PATH": "/usr/bin:/bin"},
        tmpfs=[Tmpfs("/tmp", limits.tmp_mb, owned=jail == "docker")],
        symlinks=symlinks,
        chdir="/tmp",
        uid=SANDBOX_UID if jail == "docker" else None,
        limits=Limits(cpu_s=limits.cpu_s, memory_mb=limits.memory_mb, pids=limits.pids),
    )


_DOCKER: dict[str, Any] = {}
_DOCKER_LOCK = threading.Lock()


def _docker_client() -> Any:
    """One client per process for the Dafny jail's containers."""
    from verilearn_assets.core.isolation.docker import docker_client

    with _DOCKER_LOCK:
        if "client" not in _DOCKER:
            _DOCKER["client"] = docker_client(timeout=120)
        return _DOCKER["client"]


def start(
    argv: list[str],
    toolchain: Toolchain,
    jail: Jail,
    limits: JailLimits | None = None,
    input_dir: str | None = None,
) -> JailedProcess:
    """`argv` started in the jail, stdin open, stdout and stderr merged into its `lines`.

    Under bwrap, `--die-with-parent` kills every process of the jail when bwrap dies; it
    is tied to the *thread* that started bwrap (PR_SET_PDEATHSIG), so long-lived servers
    are started from one thread that lives as long as the interpreter (`server.spawn`)."""
    limits = limits or JailLimits()
    spec = jail_spec(argv, toolchain, jail, input_dir, limits)
    if jail == "docker":
        if input_dir is not None:  # read-only to the jail's uid, which is not the caller's
            os.chmod(input_dir, 0o755)
        return start_process(
            spec, "docker", image=limits.docker_image, label=LABEL, docker_client=_docker_client()
        )
    if jail == "none":
        return start_process(spec, "none")
    from verilearn_assets.core.isolation.bwrap import require_bwrap

    label = "dafny jail (no memory or task limit: only cpu_s applies)"
    return start_process(spec, "bwrap", bwrap_binary=require_bwrap(), cgroup_label=label)


def run(
    argv: list[str],
    toolchain: Toolchain,
    jail: Jail,
    timeout_s: float,
    limits: JailLimits | None = None,
    input_dir: str | None = None,
) -> tuple[int | None, str, bool]:
    """`argv` run to its end in the jail: (exit code, merged output, timed out). At
    `timeout_s` the whole jail is killed (exit code None); nothing it started outlives
    it. The output is kept up to `OUTPUT_CAP_BYTES` (its tail is dropped)."""
    process = start(argv, toolchain, jail, limits, input_dir)
    deadline = time.monotonic() + timeout_s
    out: list[str] = []
    kept = 0
    timed_out = False
    try:
        process.close_stdin()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            try:
                line = process.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                break
            if kept < OUTPUT_CAP_BYTES:
                out.append(line)
                kept += len(line) + 1
        code = None if timed_out else process.exit_code()
    finally:
        process.kill()
    return code, "\n".join(out), timed_out
