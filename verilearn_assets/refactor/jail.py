"""Run one command in a jail over a host workspace: bubblewrap, Docker, or none (debug).

Under bubblewrap each step is a short-lived process (Docker: see `docker_jail.py`, one
container per workspace, each step sent over a unix socket to its PID 1): the workspace is
bound read-write at `/workspace`, the step's control files (the rule) read-only at
`/run/refactor`, the Python runtime and the `ast-grep` binary read-only at their host
paths, nothing else. No network (every namespace unshared / `network_mode=none`), all
capabilities dropped, rlimits on CPU time, address space, file size and open files, and a
pids cgroup (or Docker's pids limit) against fork bombs. A timeout kills the whole jail:
the pid namespace dies with its first process, so a forked daemon cannot outlive the step.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from verilearn_assets.core.sandbox.jail import SANDBOX_UID, python_runtime_paths
from verilearn_assets.refactor import toolchains
from verilearn_assets.refactor.config import RefactorConfig

if TYPE_CHECKING:
    from verilearn_assets.refactor.docker_jail import DockerSession

log = logging.getLogger("verilearn.refactor.jail")

WORKSPACE_IN_JAIL = "/workspace"
CONTROL_IN_JAIL = "/run/refactor"
BIN_IN_JAIL = "/opt/refactor/bin"
CGROUP_ROOT = Path("/sys/fs/cgroup")
# Where a verdict's test run keeps bytecode (`-X pycache_prefix`, verdict.PYCACHE_IN_JAIL):
# never next to the workspace's sources. Mounted read-only over it: the runtime's bytecode
# (pytest and what it imports), compiled once by the host (`runtime_pycache`), without
# which every jailed pytest compiled pytest and the stdlib from source (+200% a step).
PYCACHE_IN_JAIL = "/tmp/verilearn-pycache"
_PYCACHES: dict[str, Path] = {}
_PYCACHE_LOCK = threading.Lock()


@dataclass
class Completed:
    exit_code: int
    stdout: str
    stderr: str
    duration_ms: float
    timed_out: bool


def ast_grep_binary() -> str:
    """The pinned `ast-grep` next to the running interpreter, else on PATH (never `sg`)."""
    beside = Path(sys.executable).parent / "ast-grep"
    if beside.is_file():
        return str(beside)
    found = shutil.which("ast-grep")
    if found is None:
        raise RuntimeError("ast-grep is not installed: pip install ast-grep-cli==0.51.1")
    return found


def resolve_argv(argv: list[str], backend: str) -> list[str]:
    """Map the allowlisted names to real binaries (as the jail sees them)."""
    name, rest = argv[0], argv[1:]
    if name == "ast-grep":
        binary = ast_grep_binary() if backend == "none" else f"{BIN_IN_JAIL}/ast-grep"
        return [binary, *rest]
    if name == "python":
        return [sys.executable, "-B", *rest]
    if name == "pytest":
        return [sys.executable, "-B", "-m", "pytest", "-p", "no:cacheprovider", *rest]
    if (runner := toolchains.resolve(argv, backend)) is not None:  # node, go, cargo, ...
        return runner
    raise ValueError(f"binary {name!r} has no mapping (allowlist checked first)")


def jail_env(backend: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin" if backend == "none" else BIN_IN_JAIL,
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "NO_COLOR": "1",
        # the host venv's third-party pytest plugins are not the repository's: skip them
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


def runtime_pycache(config: RefactorConfig) -> Path:
    """The host directory mounted read-only at `PYCACHE_IN_JAIL`: bytecode of the runtime
    (the whole standard library, linked from its own `__pycache__`, and pytest as a trivial
    run imports it), written by the host (never by a jailed command: the jail sees it
    read-only), once per home and interpreter. Stdlib modules a repository's tests import
    beyond pytest's (asyncio, ssl, ...) were otherwise compiled from source by every
    jailed run (benchmarks/refactor.py: about 40 ms of a 240 ms step)."""
    import hashlib

    from verilearn_assets.refactor.config import expand_home

    where = hashlib.sha256(sys.executable.encode()).hexdigest()[:10]
    tag = f"{sys.implementation.cache_tag}-{where}"
    cache = expand_home(config.workspace_root).parent / f"pycache-v2-{tag}"
    with _PYCACHE_LOCK:
        if str(cache) in _PYCACHES:
            return cache
        if not cache.is_dir():
            cache.parent.mkdir(parents=True, exist_ok=True)
            building = Path(tempfile.mkdtemp(prefix=".pycache-", dir=cache.parent))
            building.chmod(0o755)  # read by the commands' uid (mkdtemp makes it 0700)
            _link_stdlib_bytecode(building)
            _warm_pycache(building)
            try:
                os.rename(building, cache)
            except OSError:  # another process built it meanwhile
                shutil.rmtree(building, ignore_errors=True)
        _PYCACHES[str(cache)] = cache
    return cache


def _link_stdlib_bytecode(cache: Path) -> None:
    """The standard library's own bytecode (`dir/__pycache__/m.<tag>.pyc`) placed where
    `-X pycache_prefix=cache` looks for it (`cache/<abs dir>/m.<tag>.pyc`): hard links
    (a copy across file systems or where linking is refused). The header still ties each
    file to its source's mtime and size: a stale one is recompiled in memory, never used."""
    import sysconfig

    tag = f".{sys.implementation.cache_tag}.pyc"
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for dirpath, dirnames, filenames in os.walk(stdlib):
        if dirpath == str(stdlib):  # not the base interpreter's own packages or tests
            dirnames[:] = [d for d in dirnames if d not in ("site-packages", "test")]
        if os.path.basename(dirpath) != "__pycache__":
            continue
        target = cache / os.path.dirname(dirpath).lstrip("/")
        for name in filenames:
            if not name.endswith(tag) or name.count(".") != 2:  # no opt-1/opt-2 variants
                continue
            target.mkdir(parents=True, exist_ok=True)
            try:
                os.link(os.path.join(dirpath, name), target / name)
            except OSError:
                shutil.copyfile(os.path.join(dirpath, name), target / name)
    for dirpath, _dirnames, _filenames in os.walk(cache):
        os.chmod(dirpath, 0o755)  # the commands' uid walks it


def _warm_pycache(cache: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "test_warm.py").write_text("def test_warm():\n    assert 1\n")
        done = subprocess.run(
            [
                sys.executable,
                "-X",
                f"pycache_prefix={cache}",
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                scratch,
            ],  # fmt: skip
            cwd=scratch,
            env={"PATH": "/usr/bin:/bin", "HOME": scratch, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            capture_output=True,
            timeout=300,
            check=False,
        )
    if done.returncode != 0:  # no cache: the jail still works, compiling as it goes
        log.warning("refactor jail: warming the runtime bytecode failed: %s", done.stdout[-500:])


def _cap(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    half = cap // 2
    return f"{text[:half]}\n…[{len(text) - cap} characters cut]…\n{text[-half:]}"


class JailUnavailable(RuntimeError):
    """The jail cannot be built as configured here (e.g. `require_cgroup` without cgroups)."""


_WARNED: set[str] = set()


class JailCgroup:
    """A throwaway cgroup a bwrap jail joins before exec: `pids.max` against fork bombs and
    a memory limit over ALL of the jail's memory (its processes and the pages of its tmpfs
    mounts, charged to the cgroup of the process that writes them), beside the per-process
    RLIMIT_AS. cgroup v2: one group with `memory.max`, `memory.swap.max` 0 and `pids.max`;
    v1: one group in each of the `memory` and `pids` hierarchies. Without them (not root,
    no delegation) `paths` is empty: `require_cgroup` makes that an error, else a warning
    is logged once and the rlimits are all the jail has."""

    def __init__(self, pids: int, memory_mb: int, required: bool = False) -> None:
        self.paths: list[Path] = []
        memory = str(memory_mb * 1024 * 1024)
        v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
        name = f"verilearn-refactor-{uuid.uuid4().hex[:10]}"
        if v2:
            plan = [(CGROUP_ROOT / name, {"memory.max": memory, "memory.swap.max": "0",
                                          "pids.max": str(pids)})]  # fmt: skip
        else:
            swap = CGROUP_ROOT / "memory" / "memory.memsw.limit_in_bytes"
            mem = {"memory.limit_in_bytes": memory}
            if swap.exists():  # set after the limit: memsw may never be under it
                mem["memory.memsw.limit_in_bytes"] = memory
            plan = [
                (CGROUP_ROOT / "pids" / name, {"pids.max": str(pids)}),
                (CGROUP_ROOT / "memory" / name, mem),
            ]
        why = ""
        if os.geteuid() != 0:
            why = "not root"
        else:
            try:
                if v2:
                    _enable_controllers(CGROUP_ROOT, ("memory", "pids"))
                for path, settings in plan:
                    path.mkdir()
                    self.paths.append(path)
                    for key, value in settings.items():
                        (path / key).write_text(value)
            except OSError as exc:
                why = f"{type(exc).__name__}: {exc}"
                self.remove()
                self.paths = []
        if why:
            message = (
                f"refactor jail: no memory/pids cgroup ({why}; cgroup "
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

    def remove(self) -> None:
        for path in self.paths:
            self._remove_one(path)

    def _remove_one(self, path: Path) -> None:
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


def _rlimits(config: RefactorConfig) -> list[tuple[int, tuple[int, int]]]:
    """The jail's rlimits: CPU time, address space, file size, open files, no core dumps
    (and processes per host uid where that is enforced: not for root)."""
    limits = config.limits
    mem = limits.memory_mb * 1024 * 1024
    size = limits.file_size_mb * 1024 * 1024
    out = [
        (resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (size, size)),
        (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    if os.geteuid() != 0:
        out.append((resource.RLIMIT_NPROC, (limits.pids, limits.pids)))
    return out


def _limiter(config: RefactorConfig, procs_files: list[str]):  # noqa: ANN202
    rlimits = _rlimits(config)

    def apply() -> None:  # runs in the child between fork and exec
        for procs_file in procs_files:
            with open(procs_file, "w") as fh:
                fh.write(str(os.getpid()))
        for which, value in rlimits:
            resource.setrlimit(which, value)

    return apply


class BwrapGate:
    """Limits for a bwrap jail set from the host while bwrap waits, instead of in a
    `preexec_fn`: a `preexec_fn` makes `subprocess` fork the whole Python process and run
    Python in the child (no vfork), which cost 2-8 ms of a jailed command, twice a step.

    bwrap writes its sandbox child's pid to `--info-fd` and then blocks on `--block-fd`
    before it loads the seccomp filter and forks the command (bubblewrap's `--block-fd`):
    both bwrap processes are put in the jail's cgroups and given its rlimits, and only
    then released; every process of the command descends from them. If anything fails
    on the way, bwrap is killed (its sandbox child dies with it: `--die-with-parent`)
    before the block is lifted."""

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

    def admit(self, process: subprocess.Popen, config: RefactorConfig, procs: list[str],
              timeout_s: float) -> None:  # fmt: skip
        """After the spawn: close bwrap's ends, move and limit it and its sandbox child,
        release the block. Whatever goes wrong, bwrap is dead before the block's write end
        closes (an EOF releases it too); a bwrap that ended on its own (a bad mount) is
        left to say why through its exit code and stderr."""
        self._close(self.info_write)
        self._close(self.block_read)
        child = None
        try:
            child = self._child_pid(timeout_s)
            if child is None:  # bwrap ended before its sandbox existed
                return
            try:
                for pid in (process.pid, child):
                    for procs_file in procs:
                        with open(procs_file, "w") as fh:
                            fh.write(str(pid))
                    for which, value in _rlimits(config):
                        resource.prlimit(pid, which, value)
            except ProcessLookupError:  # bwrap died during its setup: nothing ran
                _stop(process, child)
                return
            os.write(self.block_write, b"1")
        except BaseException:
            _stop(process, child)
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


def _stop(process: subprocess.Popen, child: int | None) -> None:
    """Kill a bwrap jail and wait for it (its sandbox child is in another session)."""
    if child is not None:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _kill_group(process.pid)
    process.wait(timeout=30)


def bwrap_command(
    config: RefactorConfig,
    workspace: Path,
    control: Path,
    argv: list[str],
    seccomp_fd: int | None = None,
    gate: BwrapGate | None = None,
) -> list[str]:
    """The bwrap command line: every tmpfs the jail can write (its root, /tmp, /dev/shm)
    sized (`--size`, bwrap >= 0.5) and the seccomp filter of `seccomp.py` read from
    `seccomp_fd` (inherited by bwrap) and loaded just before `argv` runs; with `gate`,
    bwrap waits for its limits (`BwrapGate`)."""
    binary = shutil.which("bwrap")
    if binary is None:
        raise RuntimeError("bubblewrap (`bwrap`) is not installed: apt-get install bubblewrap")
    size = str(config.limits.tmpfs_mb * 1024 * 1024)
    args = [
        binary,
        "--size",
        size,
        "--tmpfs",
        "/",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",  # no nested user namespaces from inside the jail
        "--die-with-parent",
        "--new-session",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        size,
        "--tmpfs",
        "/dev/shm",
        "--size",
        size,
        "--tmpfs",
        "/tmp",
    ]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    if gate is not None:
        args += gate.args()
    for key, value in {**jail_env("bwrap"), **toolchains.env_for(argv)}.items():
        args += ["--setenv", key, value]
    for path in _ro_paths(config):
        args += ["--ro-bind", path, path]
    for path in toolchains.ro_paths_for(argv, _ro_paths(config)):  # the runner's toolchain
        args += ["--ro-bind", path, path]
    for host, inside in toolchains.binds_for(argv).items():
        args += ["--ro-bind", host, inside]
    args += ["--ro-bind", ast_grep_binary(), f"{BIN_IN_JAIL}/ast-grep"]
    args += ["--ro-bind", str(runtime_pycache(config)), PYCACHE_IN_JAIL]
    args += ["--ro-bind", str(control), CONTROL_IN_JAIL]
    args += ["--bind", str(workspace), WORKSPACE_IN_JAIL]
    args += ["--chdir", WORKSPACE_IN_JAIL, "--", *argv]
    return args


def _ro_paths(config: RefactorConfig) -> list[str]:
    """System paths as given (bwrap follows a symlinked source such as /lib64) plus the
    Python runtime; nested paths dropped."""
    system = [p for p in config.system_ro_paths if os.path.exists(p)]
    out: list[str] = []
    for path in sorted(set(system) | set(python_runtime_paths()), key=len):
        if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in out):
            out.append(path)
    return out


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
        from verilearn_assets.refactor.docker_jail import run_once

        if session is not None:
            return session.run(resolved, timeout_s)
        return run_once(config, workspace, control, resolved, timeout_s)
    if backend == "bwrap":
        from verilearn_assets.core.isolation.seccomp import bpf_fd

        fd = bpf_fd()
        gate = BwrapGate()
        try:
            command = bwrap_command(config, workspace, control, resolved, fd, gate)
            env = {"PATH": "/usr/bin:/bin"}
            return _run_local(config, command, None, env, timeout_s, (fd,), gate)
        finally:
            os.close(fd)
            gate.close()
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
    limits = config.limits
    cgroup = JailCgroup(limits.pids, limits.memory_mb, limits.require_cgroup)
    procs = cgroup.procs_files()
    start = time.perf_counter()
    timed_out = False
    # Output goes to files: a forked child holding a pipe open cannot stall the reader.
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
                preexec_fn=None if gate else _limiter(config, procs),  # noqa: PLW1509
            )
            if gate is not None:
                gate.admit(process, config, procs, timeout_s)
            try:
                code = _wait_exit(process, timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(process.pid)
                code = process.wait(timeout=30)
            _kill_group(process.pid)  # daemons left in the session (none backend)
        finally:
            cgroup.remove()
        duration = (time.perf_counter() - start) * 1000
        out.seek(0)
        err.seek(0)
        cap = config.limits.output_cap_bytes
        stdout = _cap(out.read().decode(errors="replace"), cap)
        stderr = _cap(err.read().decode(errors="replace"), cap)
    return Completed(code, stdout, stderr, duration, timed_out)


def _wait_exit(process: subprocess.Popen, timeout_s: float) -> int:
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


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _is_timeout(exc: Exception) -> bool:
    import requests

    return isinstance(exc, requests.exceptions.ReadTimeout | requests.exceptions.ConnectionError)


def give_to_sandbox_user(workspace: Path) -> None:
    """The commands run as uid 65534: hand them the workspace (we own it, it is a copy).
    Walked iteratively by descriptors (`walk_dirs`): a tree a command built any deep."""
    from verilearn_assets.refactor.jail_exec import walk_dirs

    if os.geteuid() != 0:

        def share(fd: int, names: list[str]) -> None:
            for name in names:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode):
                    mode = 0o777 if stat.S_ISDIR(st.st_mode) else 0o666
                    os.chmod(name, mode, dir_fd=fd)  # not a link: checked above

        walk_dirs(workspace, share)
        os.chmod(workspace, 0o777)
        return

    def give(fd: int, names: list[str]) -> None:
        for name in names:
            os.chown(name, SANDBOX_UID, SANDBOX_UID, dir_fd=fd, follow_symlinks=False)

    os.chown(workspace, SANDBOX_UID, SANDBOX_UID)
    walk_dirs(workspace, give)
