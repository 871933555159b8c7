"""A long-lived jailed process spoken to over its stdin and stdout, on either backend.

A client that holds a conversation with one jailed program (the DafnyServer pool: a verb
in, an answer out, hundreds of times) needs more than `run.run_jailed`'s one command with
captured output: a process it can write to and read lines from, with the spec's limits
for the process's whole life, and a kill that leaves nothing behind. `start_process`
gives one, whatever the backend:

- `bwrap`: the spec rendered by `bwrap.bwrap_argv`, started held at `--block-fd`
  (`run.BwrapGate`), put in a cgroup of its own (memory, pids) with the spec's rlimits,
  then released; killing it kills bwrap's session and removes the cgroup;
- `docker`: a container from `docker.container_kwargs(spec)` (no network, read-only
  root, no capability, the limits as the container's), its stdin open and its
  multiplexed stdout/stderr attached before it starts (`docker.attach_stdio`), with the
  daemon's init as PID 1 as bwrap has its own; labelled with its owner so a later
  process removes it if this one dies unannounced (`docker.reap_orphans`);
- `none`: the command as it is (hosts without user namespaces or Docker).

Output arrives as lines (stdout and stderr merged, in order for bwrap and none; in the
order Docker delivers its frames for docker) on `lines`, ending with None at EOF, read
by a thread per process so a caller can wait with a deadline.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import subprocess
import threading
import weakref
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Literal

from verilearn_assets.core.isolation.spec import JailSpec

log = logging.getLogger("verilearn.isolation.process")

Backend = Literal["bwrap", "docker", "none"]
ADMIT_TIMEOUT_S = 30.0  # bwrap reports its sandbox child's pid at once; this is a safety net


class JailedProcess:
    """One jailed process: `write` to its stdin, `lines` from its stdout and stderr."""

    def __init__(self, backend: Backend, ident: str) -> None:
        self.backend = backend
        self.ident = ident
        self.lines: queue.Queue[str | None] = queue.Queue()

    def write(self, data: bytes) -> None:
        raise NotImplementedError

    def close_stdin(self) -> None:
        raise NotImplementedError

    def alive(self) -> bool:
        raise NotImplementedError

    def exit_code(self, timeout_s: float = 30.0) -> int | None:
        """The exit status once it ended (None if it did not within `timeout_s`)."""
        raise NotImplementedError

    def kill(self) -> None:
        """End every process of the jail and release what the jail held; idempotent."""
        raise NotImplementedError

    def _pump(self, chunks: Iterator[bytes]) -> None:
        """Split a byte stream into lines onto `lines`, then None."""
        pending = b""
        try:
            for chunk in chunks:
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    self.lines.put(raw.decode("utf-8", errors="replace"))
        except (OSError, ValueError):  # the stream was closed under the reader: a kill
            pass
        finally:
            if pending:
                self.lines.put(pending.decode("utf-8", errors="replace"))
            self.lines.put(None)


class _Popened(JailedProcess):
    """bwrap or none: a host process group (bwrap's session holds the whole jail)."""

    def __init__(self, backend: Backend, process: subprocess.Popen, cgroup: Any = None) -> None:
        super().__init__(backend, f"{backend} pid {process.pid}")
        self.process = process
        self.cgroup = cgroup
        self.pid = process.pid
        assert process.stdout is not None
        stream = process.stdout
        threading.Thread(
            target=self._pump, args=(iter(lambda: stream.read1(1 << 16), b""),), daemon=True
        ).start()

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def close_stdin(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()

    def alive(self) -> bool:
        return self.process.poll() is None

    def exit_code(self, timeout_s: float = 30.0) -> int | None:
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None


def _start_popen(spec: JailSpec, backend: Backend, binary: str | None, label: str) -> _Popened:
    from verilearn_assets.core.isolation.bwrap import bwrap_argv
    from verilearn_assets.core.isolation.cgroups import JailCgroup
    from verilearn_assets.core.isolation.run import BwrapGate, rlimit_values

    pipes: dict[str, Any] = {
        "stdin": subprocess.PIPE,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.STDOUT,
        "start_new_session": True,
    }
    if backend == "none":
        return _Popened(backend, subprocess.Popen(spec.argv, **pipes))
    limits = spec.limits
    cgroup = JailCgroup(limits.pids or 0, limits.memory_mb or 0, cpus=limits.cpus, label=label)
    # RLIMIT_NPROC counts every process of the uid on the host: only a jail with a uid of
    # its own may have it (else a busy login would leave the jail no fork at all)
    rlimits = rlimit_values(limits if spec.uid is not None else replace(limits, pids=None))
    gate = BwrapGate()
    try:
        process = subprocess.Popen(
            bwrap_argv(spec, binary, extra=gate.args()),
            env={"PATH": "/usr/bin:/bin"},
            pass_fds=gate.child_fds(),
            **pipes,
        )
        try:
            gate.admit(process, rlimits, cgroup.procs_files(), ADMIT_TIMEOUT_S)
        except BaseException:
            process.kill()
            process.wait()
            raise
    except BaseException:
        cgroup.remove()
        raise
    finally:
        gate.close()
    return _Popened(backend, process, cgroup)


class _Contained(JailedProcess):
    """docker: one container, PID 1 the daemon's init, stdio over the attach socket."""

    def __init__(self, client: Any, container: Any, attached: Any) -> None:
        super().__init__("docker", f"container {container.short_id}")
        from verilearn_assets.core.isolation.docker import demux_stdio

        self.client = client
        self.container = container
        self.attached = attached
        self.sock = getattr(attached, "_sock", attached)
        self._ended = threading.Event()
        self._finalizer = weakref.finalize(self, _remove_container, client, container.id)

        def pump() -> None:
            try:
                self._pump(demux_stdio(self.sock))
            finally:
                self._ended.set()

        threading.Thread(target=pump, daemon=True).start()

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(1)  # SHUT_WR: the program reads EOF

    def alive(self) -> bool:
        return self._finalizer.alive and not self._ended.is_set()

    def exit_code(self, timeout_s: float = 30.0) -> int | None:
        try:
            return int(self.container.wait(timeout=timeout_s)["StatusCode"])
        except Exception:  # requests' ReadTimeout, or the container is already gone
            return None

    def kill(self) -> None:
        if self._finalizer.alive:
            with contextlib.suppress(OSError):
                self.sock.shutdown(2)  # SHUT_RDWR: wakes the reader blocked in recv
            with contextlib.suppress(OSError):
                self.sock.close()
            self._finalizer()  # removes the container (force), once


def _remove_container(client: Any, container_id: str) -> None:
    import docker

    try:
        client.api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # 409: the daemon is removing it already
            log.warning("could not remove container %s: %s", container_id[:12], exc)


def start_process(
    spec: JailSpec,
    backend: Backend,
    *,
    image: str | None = None,
    label: str | None = None,
    docker_client: Any = None,
    bwrap_binary: str | None = None,
    cgroup_label: str = "jail",
) -> JailedProcess:
    """Start `spec` on `backend` (see the module doc). docker needs `image` (imported as an
    empty scratch image if missing), `label` (the containers' owner label; orphans of dead
    owners are removed the first time a label is used) and a `docker_client`; bwrap names
    the jail as `cgroup_label` in the warning a host without cgroups gets."""
    if backend != "docker":
        return _start_popen(spec, backend, bwrap_binary, cgroup_label)
    from verilearn_assets.core.isolation.docker import (
        attach_stdio,
        container_kwargs,
        ensure_offline_image,
        owner_labels,
        reap_orphans_once,
    )

    if image is None or label is None or docker_client is None:
        raise ValueError("start_process(docker): image, label and docker_client are required")
    reap_orphans_once(docker_client, label)
    ensure_offline_image(docker_client, image)
    container = docker_client.containers.create(
        image,
        command=spec.argv,
        labels=owner_labels(label, "process"),
        init=True,  # the daemon's init reaps and is PID 1, as bwrap's own is
        stdin_open=True,
        tty=False,
        **container_kwargs(spec),
    )
    try:
        attached = attach_stdio(docker_client, container)
    except BaseException:
        _remove_container(docker_client, container.id)
        raise
    return _Contained(docker_client, container, attached)
