"""What the refactor jail holds, whichever backend runs it (bubblewrap in `jail.py`, Docker in
`docker_jail.py`): where the workspace, the control files and the binaries are mounted, the
allowlisted names mapped to binaries, the environment, the read-only runtime paths and its
bytecode cache, and handing the workspace to the jail's user. Both backends import this;
neither imports the other's module back.
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

from verilearn_assets.core.isolation.spec import (
    SANDBOX_UID,
    outermost,
    python_runtime_paths,
)
from verilearn_assets.refactor.config import RefactorConfig
from verilearn_assets.refactor.verify import toolchains

log = logging.getLogger("verilearn.refactor.jail")

WORKSPACE_IN_JAIL = "/workspace"
CONTROL_IN_JAIL = "/run/refactor"
BIN_IN_JAIL = "/opt/refactor/bin"
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


def ro_paths(config: RefactorConfig) -> list[str]:
    """System paths as given (bwrap follows a symlinked source such as /lib64) plus the
    Python runtime; nested paths dropped."""
    system = [p for p in config.system_ro_paths if os.path.exists(p)]
    return outermost(system + python_runtime_paths())


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
