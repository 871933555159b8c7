"""The Docker backend: one container per workspace (default) or one per command.

Starting a container costs far more than the ast-grep or pytest run it hosts, so a
workspace keeps one container for its life: started by `prepare_workspace`, its PID 1
`pid1.py serve` connected to a one-shot unix socket of the host, each command one JSON
line each way over it (no `docker exec`; PID 1 sweeps every leftover process and `/tmp`
before and after the command, and kills the command's process group on timeout), removed
by `cleanup`. A `weakref.finalize` removes it if the workspace is dropped or the interpreter
exits without `cleanup`, and containers whose owning process died (killed with SIGKILL) are
removed by the next session. Isolation is the per-command container's: no network,
read-only root, a `/tmp` tmpfs, pids and memory limits, uid 65534, every capability
dropped, no new privileges, a private IPC namespace.

`docker.lifetime: pool` (the default) goes one step further: a container outlives its
workspace and serves the next one with the same settings. Starting and removing a
container cost about a third of a second of daemon CPU each, more than a whole step; a
reset between workspaces costs a few milliseconds and leaves the container as a fresh one
would be: every process killed, `/tmp` and `/dev/shm` emptied, the System V IPC objects
removed (by PID 1, `pid1.reset`), the workspace directory emptied by the host. The
root file system is read-only, so nothing else can carry over. A container that fails
its reset, lost its PID 1 or was killed is never pooled. `workspace` keeps one container
per workspace (started ahead with `prestart`); `command` a fresh container per command
(the benchmark compares all three).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import uuid
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from verilearn_assets.core.isolation import pid1
from verilearn_assets.core.isolation.docker import container_kwargs as jail_kwargs
from verilearn_assets.core.isolation.pid1 import remove_tree
from verilearn_assets.core.isolation.seccomp import docker_profile
from verilearn_assets.core.isolation.spec import SANDBOX_UID, Bind, JailSpec, Limits, Tmpfs
from verilearn_assets.core.procs import running
from verilearn_assets.refactor import toolchains
from verilearn_assets.refactor.config import RefactorConfig

log = logging.getLogger("verilearn.refactor.docker")

LABEL = "verilearn.refactor"
OWNER_LABEL = "verilearn.refactor.owner"  # <hostname>:<pid> of the process that started it
EXEC_IN_JAIL = "/opt/refactor/jail_exec.py"
EXEC_SOURCE = Path(pid1.__file__).resolve()
SOCKET_DIR_IN_JAIL = "/run/jailctl"
HOST_GRACE_S = 30.0  # beyond the command's timeout, the host gives up and kills the container
START_TIMEOUT_S = 60.0
_reaped_once = False
_reaped_dirs = False


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


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
    from verilearn_assets.refactor.jail import (
        BIN_IN_JAIL,
        CONTROL_IN_JAIL,
        PYCACHE_IN_JAIL,
        WORKSPACE_IN_JAIL,
        _ro_paths,
        ast_grep_binary,
        jail_env,
        runtime_pycache,
    )

    limits = config.limits
    ro = _ro_paths(config)
    binds = [Bind(p, p, runtime=True) for p in ro]
    binds += [
        Bind(ast_grep_binary(), f"{BIN_IN_JAIL}/ast-grep", runtime=True),
        Bind(str(EXEC_SOURCE), EXEC_IN_JAIL, runtime=True),
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


def _remove_container(container_id: str) -> None:
    """Force-remove one container (used by `close` and by the finalizer: no `self`)."""
    import docker

    from verilearn_assets.core.isolation.docker import docker_client

    client = docker_client(timeout=60)
    try:
        client.api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        pass
    finally:
        client.close()


def reap_orphans(client: Any) -> list[str]:
    """Remove workspace containers whose owning process on this host is gone."""
    host = socket.gethostname()
    removed = []
    for c in client.containers.list(all=True, filters={"label": f"{LABEL}=workspace"}):
        owner_host, _, pid = c.labels.get(OWNER_LABEL, "").rpartition(":")
        if owner_host != host or not pid.isdigit() or running(int(pid)):
            continue
        c.remove(force=True)
        removed.append(c.short_id)
    if removed:
        log.warning("removed %d refactor containers left by dead processes", len(removed))
    return removed


class DockerSession:
    """One long-lived container over one workspace; `run` is one JSON line each way over a
    unix socket to the container's PID 1 (`pid1.py serve`)."""

    def __init__(self, config: RefactorConfig, workspace: Path, control: Path) -> None:
        from verilearn_assets.core.isolation.docker import docker_client

        self.config = config
        self.workspace = workspace
        self.control = control
        self.client = docker_client(timeout=60)
        self.container_id: str | None = None
        self._conn: socket.socket | None = None
        self._reader: Any = None
        self._finalizer: weakref.finalize | None = None
        self.started = 0  # containers started over the session's life (1 unless one died)
        self.from_spare = False  # started ahead of its workspace (docker.prestart)
        self.served = 1  # workspaces this container has served (lifetime: pool)
        self._start()

    def _start(self) -> None:
        from verilearn_assets.core.isolation.docker import ensure_offline_image
        from verilearn_assets.refactor.jail import give_to_sandbox_user

        global _reaped_once
        if not _reaped_once:
            reap_orphans(self.client)
            _reaped_once = True
        image = ensure_offline_image(self.client, self.config.docker.offline_image)
        give_to_sandbox_user(self.workspace)
        # A one-shot socket in a short private directory (unix paths are capped at 108
        # bytes), bound read-only into the container; removed once init has connected.
        rendezvous = Path(tempfile.mkdtemp(prefix="vlr-"))
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(rendezvous / "s"))
            os.chmod(rendezvous, 0o755)
            os.chmod(rendezvous / "s", 0o777)
            listener.listen(1)
            listener.settimeout(START_TIMEOUT_S)
            kwargs = container_kwargs(self.client, self.config, self.workspace, self.control)
            kwargs["volumes"][str(rendezvous)] = {"bind": SOCKET_DIR_IN_JAIL, "mode": "ro"}
            container = self.client.containers.run(
                image,
                command=[
                    sys.executable,
                    "-I",
                    "-S",
                    "-B",
                    EXEC_IN_JAIL,
                    "serve",
                    f"{SOCKET_DIR_IN_JAIL}/s",
                ],
                labels={LABEL: "workspace", OWNER_LABEL: _owner()},
                init=False,  # pid1.py serve is PID 1 and reaps
                **kwargs,
            )
            self.container_id = container.id
            self._finalizer = weakref.finalize(self, _remove_container, container.id)
            self.started += 1
            try:
                conn, _ = listener.accept()
            except TimeoutError as exc:
                logs = container.logs().decode(errors="replace")[-2000:]
                self._kill_container()
                raise RuntimeError(
                    f"refactor container did not connect within {START_TIMEOUT_S}s: {logs}"
                ) from exc
        finally:
            listener.close()
            shutil.rmtree(rendezvous, ignore_errors=True)
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _ = struct.unpack("3i", creds)
        container.reload()
        init = container.attrs["State"]["Pid"]
        if uid != 0 or pid != init:  # only the container's PID 1 may hold the line
            conn.close()
            self._kill_container()
            raise RuntimeError(
                f"refactor container socket: pid {pid} uid {uid} connected, "
                f"not the container's PID 1 ({init}, uid 0)"
            )
        self._conn = conn
        self._reader = conn.makefile("rb")

    @property
    def alive(self) -> bool:
        return self.container_id is not None

    def run(self, argv: list[str], timeout_s: float):  # noqa: ANN201 - jail.Completed
        from verilearn_assets.core.isolation.run import Completed
        from verilearn_assets.refactor.jail import give_to_sandbox_user

        if self.container_id is None:  # the last command wedged and its container was killed
            self._start()
        assert self._conn is not None
        give_to_sandbox_user(self.workspace)  # files the host added since the last command
        limits = toolchains.with_limits(self.config, argv).limits  # its runner's RLIMIT_AS
        spec = {
            "argv": argv,
            "timeout_s": timeout_s,
            "cap": limits.output_cap_bytes,
            "memory_bytes": limits.memory_mb * 1024 * 1024,
        }
        start = time.perf_counter()
        self._conn.settimeout(timeout_s + HOST_GRACE_S)
        try:
            self._conn.sendall(json.dumps(spec).encode() + b"\n")
            line = self._reader.readline()
        except (TimeoutError, OSError) as exc:
            line, why = b"", f"{type(exc).__name__}: {exc}"
        else:
            why = "the connection closed"
        duration = (time.perf_counter() - start) * 1000
        if not line:  # wedged, or init died (OOM, daemon trouble): a fresh container next
            log.warning("refactor container %s lost (%s): killed", self.container_id, why)
            self._kill_container()
            timed_out = duration >= timeout_s * 1000
            return Completed(
                -9, "", f"jail: no answer from the container: {why}", duration, timed_out
            )
        report = json.loads(line)
        if "error" in report:  # e.g. what a command left could not be wiped: never reused
            self._kill_container()
            raise RuntimeError(f"refactor container could not run {argv[:1]}: {report['error']}")
        return Completed(
            int(report["exit_code"]),
            report["stdout"],
            report["stderr"],
            float(report["duration_ms"]),
            bool(report["timed_out"]),
        )

    def reset(self) -> bool:
        """Ask PID 1 to sweep processes, `/tmp`, `/dev/shm` and System V IPC before the
        container serves another workspace; False when it could not (then never pool it)."""
        if self._conn is None or self.container_id is None:
            return False
        self._conn.settimeout(HOST_GRACE_S)
        try:
            self._conn.sendall(b'{"reset": true}\n')
            line = self._reader.readline()
        except (TimeoutError, OSError) as exc:
            log.warning("refactor container %s: reset failed (%s)", self.container_id, exc)
            return False
        report = json.loads(line) if line else {}
        if not report.get("reset"):
            log.warning("refactor container %s: reset refused: %s", self.container_id, report)
            return False
        return True

    def _kill_container(self) -> None:
        if self._conn is not None:
            self._reader.close()
            self._conn.close()
            self._conn = self._reader = None
        if self._finalizer is not None:
            self._finalizer()  # removes the container, once
        self.container_id = None

    def rebind(self, workspace: Path, control: Path) -> None:
        """The workspace directories were renamed (a spare taken): same inodes, new paths."""
        self.workspace, self.control = workspace, control

    def close(self, wait: bool = True) -> None:
        """End the container. Closing the socket ends PID 1 and with it every process
        inside at once; with `wait=False` the removal itself finishes in the background
        (`drain()` waits for it; the interpreter waits for it at exit)."""
        try:
            if not wait and self._finalizer is not None and self._finalizer.alive:
                self._finalizer.detach()
                container_id = self.container_id
                self.container_id = None
                if self._conn is not None:
                    self._reader.close()
                    self._conn.close()
                    self._conn = self._reader = None
                with _LOCK:
                    _REMOVALS.append(_background().submit(_remove_container, container_id))
            else:
                self._kill_container()
        finally:
            self.client.close()


# --- containers started ahead (spares) and removed behind (background removals) ---
#
# Starting and removing a container are daemon round-trips of several hundred
# milliseconds. With `docker.prestart`, the container for the *next* workspace starts
# while the current one works, over a fresh empty directory that `open_session` renames
# into place (a bind mount follows the directory, not its name): still one container per
# workspace, never reused. At most one spare exists (for the last config seen).

_LOCK = threading.Lock()
_EXECUTOR: list[ThreadPoolExecutor] = []
_REMOVALS: list[Future] = []
_SPARE: dict[str, Any] = {}  # signature, future (-> (session, root))


def _background() -> ThreadPoolExecutor:
    if not _EXECUTOR:
        _EXECUTOR.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="refactor-docker"))
    return _EXECUTOR[0]


def _signature(config: RefactorConfig) -> str:
    return config.model_dump_json(
        include={"limits", "docker", "system_ro_paths", "workspace_root", "backend"}
    )


def _new_session(config: RefactorConfig, root: Path) -> DockerSession:
    (root / "tree").mkdir(parents=True)
    (root / "control").mkdir()
    try:
        return DockerSession(config, root / "tree", root / "control")
    except BaseException:
        _remove_root(root)
        raise


def _make_spare(config: RefactorConfig) -> tuple[DockerSession, Path]:
    from verilearn_assets.refactor.config import expand_home

    root = expand_home(config.workspace_root) / f".spare-{uuid.uuid4().hex[:12]}"
    return _new_session(config, root), root


def open_session(config: RefactorConfig, root: Path) -> DockerSession:
    """A started container over `root/tree` and `root/control` (created here; `root` must
    not exist): the spare started ahead for this config if there is one, else a new one.
    With `docker.prestart` the next workspace's spare then starts in the background."""
    signature = _signature(config)
    if config.docker.lifetime == "pool":
        return _open_pooled(config, root, signature)
    with _LOCK:
        spare = _SPARE.pop("future", None) if _SPARE.get("signature") == signature else None
        stale = None if spare is not None else _SPARE.pop("future", None)
        _SPARE.clear()
    if stale is not None:
        stale.add_done_callback(_discard)
    session = None
    if spare is not None:
        try:
            session, spare_root = spare.result()
        except Exception as exc:  # the synchronous start below raises if it persists
            log.warning("refactor: the spare container failed to start (%s); starting one", exc)
        else:
            session = _moved(session, spare_root, root, "spare", wait=True)
            if session is not None:
                session.from_spare = True
    if session is None:
        session = _new_session(config, root)
    if config.docker.prestart:
        with _LOCK:
            if "future" not in _SPARE:
                _SPARE["signature"] = signature
                _SPARE["future"] = _background().submit(_make_spare, config)
    return session


def _open_pooled(config: RefactorConfig, root: Path, signature: str) -> DockerSession:
    """An idle container of the pool with these settings, moved under `root`; else a new
    one (the pool fills as workspaces are cleaned up)."""
    global _reaped_dirs
    if not _reaped_dirs:
        from verilearn_assets.refactor.config import expand_home

        reap_idle_dirs(expand_home(config.workspace_root))
        _reaped_dirs = True
    while (idle := _take_idle(signature)) is not None:
        session = _moved(*idle, root, "pooled", wait=False)
        if session is not None:
            session.served += 1
            return session
    return _new_session(config, root)


def _moved(
    session: DockerSession, src: Path, root: Path, what: str, wait: bool
) -> DockerSession | None:
    """A started container's directories (`src`) renamed to the workspace's `root`: its
    bind mounts follow. None when they cannot move (another file system: the home
    moved); that container is then closed and its directories removed."""
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, root)
    except OSError as exc:
        log.warning("refactor: %s %s not movable to %s (%s)", what, src, root, exc)
        session.close(wait=wait)
        _remove_root(src)
        return None
    session.rebind(root / "tree", root / "control")
    return session


def _discard(future: Future) -> None:
    try:
        session, root = future.result()
    except Exception:  # a spare that never started has nothing to remove
        return
    try:
        session.close()
    finally:
        _remove_root(root)


# --- lifetime: pool: containers kept between workspaces ---
#
# An idle container waits over its own emptied directories (`.pool-<pid>-<id>` under the
# workspace root; a bind mount follows the directory, not its name) until `open_session`
# renames them into the next workspace's place.

_IDLE: list[tuple[str, DockerSession, Path]] = []  # (signature, session, root)
POOL_PREFIX = ".pool-"


def _take_idle(signature: str) -> tuple[DockerSession, Path] | None:
    with _LOCK:
        for i, (sig, session, root) in enumerate(_IDLE):
            if sig == signature:
                del _IDLE[i]
                return session, root
    return None


def _remove_root(root: Path) -> None:
    """Remove a workspace root (iteratively: whatever a command built); a failure is
    logged, as the caller is already on its way out."""
    try:
        remove_tree(root)
    except OSError as exc:
        log.warning("refactor: could not remove %s: %s", root, exc)


def _empty_dir(directory: Path) -> None:
    """Remove what `directory` holds, keeping the directory itself (its inode is mounted);
    iteratively, whatever depth a command built."""
    remove_tree(directory, keep_root=True)


def release_session(session: DockerSession, root: Path) -> bool:
    """`lifetime: pool`: reset the container and keep it, over its emptied directories, for
    the next workspace. True when `root` was taken (renamed away, or removed with the
    container when the pool filled meanwhile); False when the session was closed instead
    (a failed reset, a dead container, a full pool) and `root` is the caller's to remove."""
    config = session.config
    if not session.alive or not session.reset():
        session.close(wait=False)
        return False
    with _LOCK:
        full = len(_IDLE) >= config.docker.pool_size
    if full:
        session.close(wait=False)
        return False
    try:
        _empty_dir(root / "tree")
        _empty_dir(root / "control")
        for extra in os.scandir(root):
            if extra.name not in ("tree", "control"):
                raise OSError(f"{extra.path}: unexpected in a workspace root")
        idle_root = root.parent / f"{POOL_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        os.rename(root, idle_root)
    except OSError as exc:
        log.warning("refactor container %s not pooled: %s", session.container_id, exc)
        session.close(wait=False)
        return False
    session.rebind(idle_root / "tree", idle_root / "control")
    with _LOCK:  # checked again where it is added: another thread may have filled it
        kept = len(_IDLE) < config.docker.pool_size
        if kept:
            _IDLE.append((_signature(config), session, idle_root))
    if not kept:
        session.close(wait=False)
        _remove_root(idle_root)
    return True


def reap_idle_dirs(workspace_root: Path) -> list[str]:
    """Idle-pool directories left by processes that died (their containers are reaped by
    `reap_orphans`)."""
    removed = []
    if not workspace_root.is_dir():
        return removed
    for entry in workspace_root.iterdir():
        pid = entry.name[len(POOL_PREFIX) :].partition("-")[0]
        if entry.name.startswith(POOL_PREFIX) and pid.isdigit() and not running(int(pid)):
            remove_tree(entry)
            removed.append(entry.name)
    return removed


def drain() -> None:
    """Remove the idle spare and the pooled containers, and wait for every background
    removal (tests, exit)."""
    with _LOCK:
        spare = _SPARE.pop("future", None)
        _SPARE.clear()
        idle = list(_IDLE)
        _IDLE.clear()
    if spare is not None:
        _discard(spare)
    for _, session, root in idle:
        try:
            session.close()  # here and now: at exit the background executor is gone
        finally:
            _remove_root(root)
    wait_removals()


def settle() -> None:
    """Wait until no background work is in flight: the spare (kept) started, every removal
    done. The benchmark charges that work to the Docker steps that caused it."""
    with _LOCK:
        spare = _SPARE.get("future")
    if spare is not None:
        try:
            spare.result()
        except Exception:  # noqa: BLE001 - open_session starts one itself and says why
            pass
    wait_removals()


def wait_removals() -> None:
    """Wait for every background removal."""
    while True:
        with _LOCK:
            pending = list(_REMOVALS)
            _REMOVALS.clear()
        if not pending:
            return
        for future in pending:
            future.result()


atexit.register(drain)


def run_once(
    config: RefactorConfig, workspace: Path, control: Path, argv: list[str], timeout_s: float
):  # noqa: ANN201 - jail.Completed
    """`docker.lifetime: command`: a fresh container for this one command."""
    import docker

    from verilearn_assets.core.isolation.docker import docker_client, ensure_offline_image
    from verilearn_assets.core.isolation.run import Completed, cap_output
    from verilearn_assets.refactor.jail import _is_timeout, give_to_sandbox_user

    limits = config.limits
    client = docker_client(timeout=max(30, int(timeout_s) + 10))
    try:
        image = ensure_offline_image(client, config.docker.offline_image)
        give_to_sandbox_user(workspace)
        start = time.perf_counter()
        container = client.containers.run(
            image,
            command=argv,
            labels={LABEL: "step"},
            **container_kwargs(client, config, workspace, control, supervised=False),
        )
        timed_out = False
        try:
            try:
                code = int(container.wait(timeout=timeout_s)["StatusCode"])
            except Exception as exc:  # requests' ReadTimeout / ConnectionError on timeout
                if not _is_timeout(exc):
                    raise
                timed_out = True
                container.kill()
                code = int(container.wait(timeout=30)["StatusCode"])
            duration = (time.perf_counter() - start) * 1000
            cap = limits.output_cap_bytes
            out = container.logs(stdout=True, stderr=False).decode(errors="replace")
            err = container.logs(stdout=False, stderr=True).decode(errors="replace")
            stdout, stderr = cap_output(out, cap), cap_output(err, cap)
        finally:
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass
        return Completed(code, stdout, stderr, duration, timed_out)
    finally:
        client.close()
