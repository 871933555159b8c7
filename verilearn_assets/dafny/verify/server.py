"""Long-lived `DafnyServer.exe` processes, so mono/.NET start-up is paid once per process.

Protocol (Dafny 2.3): a verb line (`verify`, `version`, `quit`), a base64 line of JSON
`{args, filename, source, sourceIsFile}`, then `[[DAFNY-CLIENT: EOM]]` after *every* verb
(else the server waits forever). The answer ends with a line holding
`[[DAFNY-SERVER: EOM]]`; `[SUCCESS]` there only means the request was handled.

A pool hands one idle process to each request. A process that dies mid-request is started
again and the request retried once; one that does not answer within the wall-clock
timeout is killed and restarted, and the request is reported as `timeout`. A fresh
process's first request gets `STARTUP_GRACE_S` more (mono start-up and JIT under load).
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import queue
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from verilearn_assets.dafny.verify import jail as jails
from verilearn_assets.dafny.verify.toolchain import Toolchain, ToolchainError

STARTUP_GRACE_S = 20.0  # added to a fresh process's first request (mono start + JIT)
CLIENT_EOM = "[[DAFNY-CLIENT: EOM]]"
SERVER_EOM = "[[DAFNY-SERVER: EOM]]"


_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dafny-spawn")


def spawn(argv: list[str], **kwargs: object) -> subprocess.Popen:
    """Popen from one long-lived thread: a jail dies with the thread that started it, and
    requests run on short-lived worker threads."""
    return _SPAWNER.submit(subprocess.Popen, argv, **kwargs).result()


class ServerDied(RuntimeError):
    """The process exited (or its pipe closed) before answering."""


class ServerHung(RuntimeError):
    """No complete answer within the wall-clock timeout."""


@dataclass
class Reply:
    text: str
    handled: bool  # [SUCCESS] (vs [FAILURE]: the server caught an exception)


class DafnyServerProcess:
    """One jailed DafnyServer.exe with a reader thread feeding a line queue."""

    def __init__(self, toolchain: Toolchain, jail: str) -> None:
        if not toolchain.server_exe or not toolchain.runtime:
            raise RuntimeError("DafnyServer.exe or mono not found: use mode=cli")
        self.toolchain = toolchain
        self.jail = jail
        self.requests = 0  # since the last (re)start
        self.started = 0
        self._start()

    def _start(self) -> None:
        argv = jails.wrap(
            [self.toolchain.runtime or "mono", self.toolchain.server_exe or ""],
            self.toolchain,
            self.jail,
        )
        self.process = spawn(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(self.process, self.lines), daemon=True).start()
        self.started += 1
        self.requests = 0

    @staticmethod
    def _read(process: subprocess.Popen, lines: queue.Queue) -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            lines.put(raw.decode("utf-8", errors="replace").rstrip("\n"))
        lines.put(None)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def restart(self) -> None:
        self.kill()
        self._start()

    def kill(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()

    def request(self, verb: str, task: dict, timeout_s: float) -> Reply:
        payload = base64.b64encode(json.dumps(task).encode()).decode()
        message = f"{verb}\n{payload}\n{CLIENT_EOM}\n".encode()
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(message)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ServerDied(f"dafny server pid {self.pid}: write failed: {exc}") from exc
        self.requests += 1
        deadline = time.monotonic() + timeout_s
        out: list[str] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerHung(f"dafny server pid {self.pid}: no answer in {timeout_s:.0f}s")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise ServerDied(
                    f"dafny server pid {self.pid} exited ({self.process.poll()}) mid-request"
                )
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

    def __init__(self, toolchain: Toolchain, jail: str, size: int, max_requests: int = 500) -> None:
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
        self.all = [DafnyServerProcess(toolchain, jail) for _ in range(size)]
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

    def pids(self) -> list[int]:
        return [p.pid for p in self.all]

    def close(self) -> None:
        for proc in self.all:
            proc.close()
        atexit.unregister(self.close)
