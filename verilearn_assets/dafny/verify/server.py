"""Long-lived `DafnyServer.exe` processes, so mono/.NET start-up is paid once per process.

Protocol (Dafny 2.3): a verb line (`verify`, `version`, `quit`), a base64 line of JSON
`{args, filename, source, sourceIsFile}`, then `[[DAFNY-CLIENT: EOM]]` after *every* verb
(else the server waits forever). The answer ends with a line holding
`[[DAFNY-SERVER: EOM]]`; `[SUCCESS]` there only means the request was handled.

Each process lives in the Dafny jail (`jail.start`: bwrap or a Docker container, with the
jail's memory, task and CPU limits for the process's whole life). A pool hands one idle
process to each request. A process that dies mid-request (a crash, or a limit reached) is
started again and the request retried once; one that does not answer within the wall-clock
timeout is killed and restarted, and the request is reported as `timeout`. A fresh
process's first request gets `STARTUP_GRACE_S` more (mono start-up and JIT under load).
"""

from __future__ import annotations

import atexit
import base64
import json
import queue
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from verilearn_assets.core.isolation.process import JailedProcess
from verilearn_assets.dafny.verify import jail as jails
from verilearn_assets.dafny.verify.toolchain import Toolchain, ToolchainError

STARTUP_GRACE_S = 20.0  # added to a fresh process's first request (mono start + JIT)
CLIENT_EOM = "[[DAFNY-CLIENT: EOM]]"
SERVER_EOM = "[[DAFNY-SERVER: EOM]]"


_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dafny-spawn")
T = TypeVar("T")


def spawn(start: Callable[[], T]) -> T:
    """Start a jail from one long-lived thread: a bwrap jail dies with the thread that
    started it, and requests run on short-lived worker threads."""
    return _SPAWNER.submit(start).result()


class ServerDied(RuntimeError):
    """The process exited (or its pipe closed) before answering."""


class ServerHung(RuntimeError):
    """No complete answer within the wall-clock timeout."""


@dataclass
class Reply:
    text: str
    handled: bool  # [SUCCESS] (vs [FAILURE]: the server caught an exception)


class DafnyServerProcess:
    """One jailed DafnyServer.exe (`jail.start`: its stdout lines on a queue), within the
    jail's limits for its whole life."""

    def __init__(
        self, toolchain: Toolchain, jail: str, limits: jails.JailLimits | None = None
    ) -> None:
        if not toolchain.server_exe or not toolchain.runtime:
            raise RuntimeError("DafnyServer.exe or mono not found: use mode=cli")
        self.toolchain = toolchain
        self.jail = jail
        self.limits = limits or jails.JailLimits()
        self.requests = 0  # since the last (re)start
        self.started = 0
        self._start()

    def _start(self) -> None:
        argv = [self.toolchain.runtime or "mono", self.toolchain.server_exe or ""]
        self.process: JailedProcess = spawn(
            lambda: jails.start(argv, self.toolchain, self.jail, self.limits)  # type: ignore[arg-type]
        )
        self.lines = self.process.lines
        self.started += 1
        self.requests = 0

    @property
    def pid(self) -> int | None:
        """The host pid of the jail (bwrap, none); None for a container."""
        return getattr(self.process, "pid", None)

    @property
    def ident(self) -> str:
        return self.process.ident

    def alive(self) -> bool:
        return self.process.alive()

    def restart(self) -> None:
        self.kill()
        self._start()

    def kill(self) -> None:
        self.process.kill()

    def request(self, verb: str, task: dict, timeout_s: float) -> Reply:
        payload = base64.b64encode(json.dumps(task).encode()).decode()
        message = f"{verb}\n{payload}\n{CLIENT_EOM}\n".encode()
        try:
            self.process.write(message)
        except (BrokenPipeError, OSError, ValueError, AssertionError) as exc:
            raise ServerDied(f"dafny server {self.ident}: write failed: {exc}") from exc
        self.requests += 1
        deadline = time.monotonic() + timeout_s
        out: list[str] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerHung(f"dafny server {self.ident}: no answer in {timeout_s:.0f}s")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                code = self.process.exit_code(timeout_s=5)
                raise ServerDied(f"dafny server {self.ident} exited ({code}) mid-request")
            if SERVER_EOM in line:
                return Reply("\n".join(out), handled="[SUCCESS]" in line)
            out.append(line)

    def close(self) -> None:
        if self.alive():
            try:
                self.request("quit", {}, timeout_s=2)
            except (ServerDied, ServerHung):
                pass
        self.kill()


class ServerPool:
    """N long-lived servers; `run` borrows one, restarts it on death or hang."""

    def __init__(
        self,
        toolchain: Toolchain,
        jail: str,
        size: int,
        max_requests: int = 500,
        limits: jails.JailLimits | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"dafny server pool: size must be >= 1, got {size}")
        if toolchain.dialect != "2":
            raise ToolchainError(
                f"dafny server pool: Dafny {toolchain.dafny_version} ({toolchain.dafny}) is a "
                f"{toolchain.dialect}.x toolchain; the pool speaks the DafnyServer.exe protocol "
                "of Dafny 2.x only: use `--mode cli` (VerifierConfig(mode='cli'))"
            )
        self.toolchain = toolchain
        self.jail = jail
        self.size = size
        self.max_requests = max_requests
        self.recycled = 0
        self.idle: queue.Queue[DafnyServerProcess] = queue.Queue()
        self.all = [DafnyServerProcess(toolchain, jail, limits) for _ in range(size)]
        for proc in self.all:
            self.idle.put(proc)
        self.restarts = 0
        self.retries = 0
        atexit.register(self.close)  # servers outlive the thread that started them

    def run(self, task: dict, timeout_s: float) -> Reply:
        """Verify one task; raises ServerHung (process restarted) or ServerDied (twice)."""
        proc = self.idle.get()
        if proc.requests >= self.max_requests:  # bound a long-lived process's memory
            proc.restart()
            self.recycled += 1
        try:
            for attempt in (1, 2):
                if not proc.alive():
                    proc.restart()
                    self.restarts += 1
                grace = STARTUP_GRACE_S if proc.requests == 0 else 0.0
                try:
                    return proc.request("verify", task, timeout_s + grace)
                except ServerDied:
                    proc.restart()
                    self.restarts += 1
                    if attempt == 2:
                        raise
                    self.retries += 1
                except ServerHung:
                    proc.restart()
                    self.restarts += 1
                    raise
            raise AssertionError("unreachable")
        finally:
            self.idle.put(proc)

    def pids(self) -> list[int | None]:
        """The servers' host pids (None for a container: see `idents`)."""
        return [p.pid for p in self.all]

    def idents(self) -> list[str]:
        """Which jail each server runs in (`bwrap pid N`, `container ID`, ...)."""
        return [p.ident for p in self.all]

    def close(self) -> None:
        for proc in self.all:
            proc.close()
        atexit.unregister(self.close)
