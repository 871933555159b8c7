"""The Docker backend's pool: long-lived containers, each serving one directory pair (a
workspace read-write, its control files read-only) at a time, PID 1 our supervisor.

Starting a container costs far more than the command it hosts, so a container lives as
long as its directory pair (`lifetime: workspace`): its PID 1 `pid1.py serve` connected to
a one-shot unix socket of the host, each command one JSON line each way over it (no
`docker exec`; PID 1 sweeps every leftover process and `/tmp` before and after the
command, and kills the command's process group on timeout). A `weakref.finalize` removes
it if its session is dropped or the interpreter exits without closing it, and containers
whose owning process died (killed with SIGKILL) are removed by the next session
(`docker.reap_orphans`, shared with the other clients' containers). The
isolation is the client's (`PoolPlan.container_args`, rendered from a `JailSpec` by
`docker.container_kwargs`); the pool adds PID 1 and its socket.

`lifetime: pool` goes one step further: a container outlives its directory pair and
serves the next one with the same plan signature. Starting and removing a container cost
about a third of a second of daemon CPU each; a reset costs a few milliseconds and leaves
the container as a fresh one would be: every process killed, `/tmp` and `/dev/shm`
emptied, the System V IPC objects removed (by PID 1, `pid1.reset`), the directories
emptied by the host. The root file system is read-only, so nothing else can carry over.
A container that fails its reset, lost its PID 1 or was killed is never pooled.
`prestart` starts the next container (a spare) ahead while the current one works.
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
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verilearn_assets.core.isolation import pid1
from verilearn_assets.core.isolation.docker import owner_labels, reap_orphans
from verilearn_assets.core.isolation.pid1 import remove_tree
from verilearn_assets.core.isolation.run import Completed
from verilearn_assets.core.procs import running

log = logging.getLogger("verilearn.isolation.docker_pool")

EXEC_IN_JAIL = "/opt/verilearn/pid1.py"
EXEC_SOURCE = Path(pid1.__file__).resolve()
SOCKET_DIR_IN_JAIL = "/run/jailctl"
HOST_GRACE_S = 30.0  # beyond the command's timeout, the host gives up and kills the container
START_TIMEOUT_S = 60.0
_REAPED: set[str] = set()  # labels whose orphans were reaped by this process
_REAPED_DIRS: set[str] = set()  # roots whose idle directories were reaped


@dataclass(frozen=True)
class PoolPlan:
    """A client's containers. Containers of one `signature` are interchangeable: a pooled
    one serves the next directory pair of that signature. `container_args(client, rw dir,
    ro dir)`: docker-py `run` arguments (the isolation; PID 1 and its socket are the
    pool's); `handover(rw dir)`: make the directory the jail uid's before each command;
    `command_limits(argv)`: a command's address-space limit (MB) and output cap (bytes);
    `root`: where spares and idle containers keep their directories."""

    signature: str
    image: str
    label: str
    name: str
    container_args: Callable[[Any, Path, Path], dict[str, Any]]
    handover: Callable[[Path], None]
    command_limits: Callable[[list[str]], tuple[int, int]]
    root: Path
    lifetime: str = "pool"  # pool | workspace (one container per directory pair)
    prestart: bool = False
    pool_size: int = 4


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


class DockerSession:
    """One long-lived container over one workspace; `run` is one JSON line each way over a
    unix socket to the container's PID 1 (`pid1.py serve`)."""

    def __init__(self, plan: PoolPlan, workspace: Path, control: Path) -> None:
        from verilearn_assets.core.isolation.docker import docker_client

        self.plan = plan
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

        plan = self.plan
        if plan.label not in _REAPED:
            reap_orphans(self.client, plan.label)
            _REAPED.add(plan.label)
        image = ensure_offline_image(self.client, plan.image)
        plan.handover(self.workspace)
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
            kwargs = plan.container_args(self.client, self.workspace, self.control)
            kwargs["volumes"][str(EXEC_SOURCE)] = {"bind": EXEC_IN_JAIL, "mode": "ro"}
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
                labels=owner_labels(plan.label, "workspace"),
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
                    f"{plan.name} container did not connect within {START_TIMEOUT_S}s: {logs}"
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
                f"{plan.name} container socket: pid {pid} uid {uid} connected, "
                f"not the container's PID 1 ({init}, uid 0)"
            )
        self._conn = conn
        self._reader = conn.makefile("rb")

    @property
    def alive(self) -> bool:
        return self.container_id is not None

    def run(self, argv: list[str], timeout_s: float) -> Completed:
        if self.container_id is None:  # the last command wedged and its container was killed
            self._start()
        assert self._conn is not None
        self.plan.handover(self.workspace)  # files the host added since the last command
        memory_mb, cap = self.plan.command_limits(argv)
        spec = {
            "argv": argv,
            "timeout_s": timeout_s,
            "cap": cap,
            "memory_bytes": memory_mb * 1024 * 1024,
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
            log.warning("%s container %s lost (%s): killed", self.plan.name, self.container_id, why)
            self._kill_container()
            timed_out = duration >= timeout_s * 1000
            return Completed(
                -9, "", f"jail: no answer from the container: {why}", duration, timed_out
            )
        report = json.loads(line)
        if "error" in report:  # e.g. what a command left could not be wiped: never reused
            self._kill_container()
            raise RuntimeError(
                f"{self.plan.name} container could not run {argv[:1]}: {report['error']}"
            )
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
            name, container = self.plan.name, self.container_id
            log.warning("%s container %s: reset failed (%s)", name, container, exc)
            return False
        report = json.loads(line) if line else {}
        if not report.get("reset"):
            log.warning(
                "%s container %s: reset refused: %s", self.plan.name, self.container_id, report
            )
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
        _EXECUTOR.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="jail-docker"))
    return _EXECUTOR[0]


def _new_session(plan: PoolPlan, root: Path) -> DockerSession:
    (root / "tree").mkdir(parents=True)
    (root / "control").mkdir()
    try:
        return DockerSession(plan, root / "tree", root / "control")
    except BaseException:
        _remove_root(root)
        raise


def _make_spare(plan: PoolPlan) -> tuple[DockerSession, Path]:
    root = plan.root / f".spare-{uuid.uuid4().hex[:12]}"
    return _new_session(plan, root), root


def open_session(plan: PoolPlan, root: Path) -> DockerSession:
    """A started container over `root/tree` and `root/control` (created here; `root` must
    not exist): the spare started ahead for this config if there is one, else a new one.
    With `docker.prestart` the next workspace's spare then starts in the background."""
    signature = plan.signature
    if plan.lifetime == "pool":
        return _open_pooled(plan, root, signature)
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
            log.warning(
                "%s: the spare container failed to start (%s); starting one", plan.name, exc
            )
        else:
            session = _moved(session, spare_root, root, "spare", wait=True)
            if session is not None:
                session.from_spare = True
    if session is None:
        session = _new_session(plan, root)
    if plan.prestart:
        with _LOCK:
            if "future" not in _SPARE:
                _SPARE["signature"] = signature
                _SPARE["future"] = _background().submit(_make_spare, plan)
    return session


def _open_pooled(plan: PoolPlan, root: Path, signature: str) -> DockerSession:
    """An idle container of the pool with these settings, moved under `root`; else a new
    one (the pool fills as workspaces are cleaned up)."""
    if str(plan.root) not in _REAPED_DIRS:
        reap_idle_dirs(plan.root)
        _REAPED_DIRS.add(str(plan.root))
    while (idle := _take_idle(signature)) is not None:
        session = _moved(*idle, root, "pooled", wait=False)
        if session is not None:
            session.served += 1
            return session
    return _new_session(plan, root)


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
        log.warning("%s: %s %s not movable to %s (%s)", session.plan.name, what, src, root, exc)
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
        log.warning("jail pool: could not remove %s: %s", root, exc)


def _empty_dir(directory: Path) -> None:
    """Remove what `directory` holds, keeping the directory itself (its inode is mounted);
    iteratively, whatever depth a command built."""
    remove_tree(directory, keep_root=True)


def release_session(session: DockerSession, root: Path) -> bool:
    """`lifetime: pool`: reset the container and keep it, over its emptied directories, for
    the next workspace. True when `root` was taken (renamed away, or removed with the
    container when the pool filled meanwhile); False when the session was closed instead
    (a failed reset, a dead container, a full pool) and `root` is the caller's to remove."""
    plan = session.plan
    if not session.alive or not session.reset():
        session.close(wait=False)
        return False
    with _LOCK:
        full = len(_IDLE) >= plan.pool_size
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
        log.warning("%s container %s not pooled: %s", plan.name, session.container_id, exc)
        session.close(wait=False)
        return False
    session.rebind(idle_root / "tree", idle_root / "control")
    with _LOCK:  # checked again where it is added: another thread may have filled it
        kept = len(_IDLE) < plan.pool_size
        if kept:
            _IDLE.append((plan.signature, session, idle_root))
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
