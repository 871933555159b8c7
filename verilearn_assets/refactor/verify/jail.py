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
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
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
    SANDBOX_UID,
    Bind,
    JailSpec,
    Limits,
    Tmpfs,
    outermost,
    python_runtime_paths,
)
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify import toolchains

if TYPE_CHECKING:
    from verilearn_assets.core.isolation.docker_pool import DockerSession

log = logging.getLogger("verilearn.refactor.jail")

WORKSPACE_IN_JAIL = "/workspace"
CONTROL_IN_JAIL = "/run/refactor"
BIN_IN_JAIL = "/opt/refactor/bin"
CGROUP_PREFIX = "verilearn-refactor"  # each command's cgroup: verilearn-refactor-<random>
# Where a verdict's test run keeps bytecode (`-X pycache_prefix`, verdict.PYCACHE_IN_JAIL):
# never next to the workspace's sources. Mounted read-only over it: the runtime's bytecode
# (pytest and what it imports), compiled once by the host (`runtime_pycache`), without
# which every jailed pytest compiled pytest and the stdlib from source (+200% a step).
PYCACHE_IN_JAIL = "/tmp/verilearn-pycache"
_PYCACHES: dict[str, Path] = {}
_PYCACHE_LOCK = threading.Lock()


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

    from verilearn_assets.core.home import expand_home

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
    ro = _ro_paths(config)
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


def _ro_paths(config: RefactorConfig) -> list[str]:
    """System paths as given (bwrap follows a symlinked source such as /lib64) plus the
    Python runtime; nested paths dropped."""
    system = [p for p in config.system_ro_paths if os.path.exists(p)]
    return outermost(system + python_runtime_paths())


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
        from verilearn_assets.refactor.verify.docker_jail import run_once

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


def _is_timeout(exc: Exception) -> bool:
    import requests

    return isinstance(exc, requests.exceptions.ReadTimeout | requests.exceptions.ConnectionError)


def give_to_sandbox_user(workspace: Path) -> None:
    """The commands run as uid 65534: hand them the workspace (we own it, it is a copy).
    Walked iteratively by descriptors (`walk_dirs`): a tree a command built any deep."""
    from verilearn_assets.core.isolation.pid1 import walk_dirs

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
