"""Run one short-lived command in a bwrap jail, its limits set from the host.

`run_jailed(spec)` renders the spec (`bwrap.bwrap_argv`) with the seccomp filter, starts
bwrap in the jail's cgroup (through `JailCgroup.launcher`: born in it), held at
`--block-fd` (`BwrapGate`) while the host gives it its rlimits, releases it, and waits
up to the spec's time limit; a timeout kills the whole jail (the pid namespace dies with
its first process, so a forked daemon cannot outlive the command). Output goes to
files, capped: a forked child holding a pipe open cannot stall the reader.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from verilearn_assets.core.isolation.bwrap import bwrap_argv
from verilearn_assets.core.isolation.cgroups import JailCgroup, JailUnavailable
from verilearn_assets.core.isolation.spec import JailSpec, Limits


@dataclass
class Completed:
    exit_code: int
    stdout: str
    stderr: str
    duration_ms: float
    timed_out: bool


Rlimits = list[tuple[int, tuple[int, int]]]


def rlimit_values(limits: Limits) -> Rlimits:
    """The per-process rlimits of `limits` (and processes per host uid where that is
    enforced: not for root)."""
    out: Rlimits = []

    def put(which: int, value: int | None) -> None:
        if value is not None:
            out.append((which, (value, value)))

    def mb(value: int | None) -> int | None:
        return None if value is None else value * 1024 * 1024

    put(resource.RLIMIT_CPU, limits.cpu_s)
    put(resource.RLIMIT_AS, mb(limits.address_space_mb))
    put(resource.RLIMIT_FSIZE, mb(limits.file_size_mb))
    put(resource.RLIMIT_NOFILE, limits.open_files)
    if limits.no_core:
        put(resource.RLIMIT_CORE, 0)
    if os.geteuid() != 0:
        put(resource.RLIMIT_NPROC, limits.pids)
    return out


def cap_output(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    half = cap // 2
    return f"{text[:half]}\n…[{len(text) - cap} characters cut]…\n{text[-half:]}"


class BwrapGate:
    """Limits for a bwrap jail set from the host while bwrap waits, instead of in a
    `preexec_fn`: a `preexec_fn` makes `subprocess` fork the whole Python process and run
    Python in the child (no vfork), which cost 2-8 ms of a jailed command, twice a step.

    bwrap writes its sandbox child's pid to `--info-fd` and then blocks on `--block-fd`
    before it loads the seccomp filter and forks the command (bubblewrap's `--block-fd`):
    both bwrap processes, already in the jail's cgroups (`JailCgroup.launcher`; else
    moved there from the host), are given its rlimits, and only then released; every
    process of the command descends from them. If anything fails on the way, bwrap is
    killed (its sandbox child dies with it: `--die-with-parent`) before the block is
    lifted."""

    def __init__(self) -> None:
        self.info_read, self.info_write = os.pipe()
        self.block_read, self.block_write = os.pipe()
        self._open = {self.info_read, self.info_write, self.block_read, self.block_write}

    def _close(self, fd: int) -> None:
        """Close `fd` once: a number closed here may be reused by another thread's open."""
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

    def args(self) -> list[str]:
        return ["--info-fd", str(self.info_write), "--block-fd", str(self.block_read)]

    def child_fds(self) -> tuple[int, int]:
        return self.info_write, self.block_read

    def admit(
        self,
        process: subprocess.Popen,
        rlimits: Rlimits,
        procs: list[str],
        timeout_s: float,
        joined: JailCgroup | None = None,
    ) -> None:
        """After the spawn: close bwrap's ends, move (`procs`) and limit it and its sandbox
        child, release the block. With `joined` (bwrap started through
        `JailCgroup.launcher`, born in the cgroup: nothing to move), the sandbox child is
        checked to be in it first. Whatever goes wrong, bwrap is dead before the block's
        write end closes (an EOF releases it too); a bwrap that ended on its own (a bad
        mount) is left to say why through its exit code and stderr."""
        self._close(self.info_write)
        self._close(self.block_read)
        child = None
        try:
            child = self._child_pid(timeout_s)
            if child is None:  # bwrap ended before its sandbox existed
                return
            try:
                if joined is not None and joined.paths and not joined.holds(child):
                    raise JailUnavailable(f"bwrap's sandbox child is not in {joined.paths}")
                for pid in (process.pid, child):
                    for procs_file in procs:
                        with open(procs_file, "w") as fh:
                            fh.write(str(pid))
                    for which, value in rlimits:
                        resource.prlimit(pid, which, value)
            except ProcessLookupError:  # bwrap died during its setup: nothing ran
                stop(process, child)
                return
            try:
                os.write(self.block_write, b"1")
            except BrokenPipeError:  # bwrap ended during its setup since: it says why
                return
        except BaseException:
            stop(process, child)
            raise
        finally:
            self._close(self.info_read)
            self._close(self.block_write)

    def _child_pid(self, timeout_s: float) -> int | None:
        """bwrap's sandbox child pid, None if bwrap ended first. `poll`, not `select`: a
        busy host process (Dagster, the GRPO trainer) may hold descriptors above 1024."""
        poller = select.poll()
        poller.register(self.info_read, select.POLLIN | select.POLLHUP)
        data, deadline = b"", time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                raise subprocess.TimeoutExpired("bwrap --info-fd", timeout_s)
            chunk = os.read(self.info_read, 4096)
            data += chunk
            try:
                return int(json.loads(data)["child-pid"])
            except ValueError:
                if not chunk:
                    return None

    def close(self) -> None:
        """The fds `admit` did not close (a spawn that failed: no bwrap ever read them)."""
        for fd in list(self._open):
            self._close(fd)


def stop(process: subprocess.Popen, child: int | None) -> None:
    """Kill a bwrap jail and wait for it (its sandbox child is in another session)."""
    if child is not None:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    kill_group(process.pid)
    process.wait(timeout=30)


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _limiter(rlimits: Rlimits, join_files: list[str]) -> Callable[[], None]:
    def apply() -> None:  # runs in the child between fork and exec
        for join_file in join_files:  # itself: no global cgroup lock (`join_files`)
            with open(join_file, "w") as fh:
                fh.write("0")
        for which, value in rlimits:
            resource.setrlimit(which, value)

    return apply


def run_command(
    command: list[str],
    limits: Limits,
    *,
    cwd: str | None,
    env: dict[str, str],
    timeout_s: float,
    output_cap_bytes: int,
    pass_fds: tuple[int, ...] = (),
    gate: BwrapGate | None = None,
    require_cgroup: bool = False,
    cgroup_prefix: str = "verilearn-jail",
    label: str = "jail",
) -> Completed:
    """Run `command` (a bwrap command line with `gate`; else any, limited in a
    `preexec_fn`) in a fresh cgroup of `limits`; kill its session when it ends."""
    cgroup = JailCgroup(
        limits.pids or 0, limits.memory_mb or 0, require_cgroup, prefix=cgroup_prefix, label=label
    )
    rlimits = rlimit_values(limits)
    if gate is not None:  # bwrap born in the cgroup (`JailCgroup.launcher`)
        command = cgroup.launcher(command)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                pass_fds=pass_fds + (gate.child_fds() if gate else ()),
                preexec_fn=None if gate else _limiter(rlimits, cgroup.join_files()),  # noqa: PLW1509
            )
            if gate is not None:
                gate.admit(process, rlimits, [], timeout_s, joined=cgroup)
            timed_out = False
            try:
                code = wait_exit(process, timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(process.pid)
                code = process.wait(timeout=30)
            kill_group(process.pid)  # daemons left in the session (no jail)
        finally:
            cgroup.remove()
        duration = (time.perf_counter() - start) * 1000
        out.seek(0)
        err.seek(0)
        stdout = cap_output(out.read().decode(errors="replace"), output_cap_bytes)
        stderr = cap_output(err.read().decode(errors="replace"), output_cap_bytes)
    return Completed(code, stdout, stderr, duration, timed_out)


def run_jailed(
    spec: JailSpec,
    *,
    output_cap_bytes: int,
    seccomp: bool = True,
    require_cgroup: bool = False,
    cgroup_prefix: str = "verilearn-jail",
    label: str = "jail",
) -> Completed:
    """Run `spec` once under bwrap (with the seccomp filter unless told otherwise) until it
    ends or its `time_limit_s` passes."""
    from verilearn_assets.core.isolation.seccomp import bpf_fd

    if spec.time_limit_s is None:
        raise ValueError("run_jailed: a short-lived jail needs a time limit")
    fd = bpf_fd() if seccomp else None
    gate = BwrapGate()
    try:
        command = bwrap_argv(spec, seccomp_fd=fd, extra=gate.args())
        return run_command(
            command,
            spec.limits,
            cwd=None,
            env={"PATH": "/usr/bin:/bin"},
            timeout_s=spec.time_limit_s,
            output_cap_bytes=output_cap_bytes,
            pass_fds=() if fd is None else (fd,),
            gate=gate,
            require_cgroup=require_cgroup,
            cgroup_prefix=cgroup_prefix,
            label=label,
        )
    finally:
        if fd is not None:
            os.close(fd)
        gate.close()


def wait_exit(process: subprocess.Popen, timeout_s: float) -> int:
    """Wait for `process` to end, waking the moment it does (a pidfd). `Popen.wait(timeout)`
    polls with sleeps growing to 50 ms and so oversleeps a short command by up to 50 ms:
    about 10% of a whole refactor step (benchmarks/refactor.py)."""
    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfd here: the polling wait
        return process.wait(timeout=timeout_s)
    try:
        if not select.select([fd], [], [], timeout_s)[0]:
            raise subprocess.TimeoutExpired(process.args, timeout_s)
    finally:
        os.close(fd)
    return process.wait()
