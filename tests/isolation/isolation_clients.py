"""The three clients of the isolation layer, each driven the way its family drives it, so
one hostile program can be thrown at every client on every backend it supports:

- `cells`: the Python cell pool (analysis), one task per program;
- `commands`: the refactor command runner, `python -c` as an allowlisted command action;
- `dafny`: the DafnyServer jail (`dafny/verify/jail.py`, its limits included): Dafny runs
  no candidate code, so the probe is a Python process started the way, and in exactly the
  jail, the server gets (`jail.start`), its stdout and stderr merged as the server's are.

A probe is Python source that prints one JSON object as its last line of stdout.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends import require_backend

# (client, backend) pairs: every backend a client supports
CLIENTS = [
    ("cells", "bwrap"),
    ("cells", "docker"),
    ("commands", "bwrap"),
    ("commands", "docker"),
    ("dafny", "bwrap"),
    ("dafny", "docker"),
]
LIMITED = list(CLIENTS)  # clients whose jail has limits: every one
MEMORY_MB = 256
PIDS = 48


@dataclass
class Outcome:
    """What a probe did: `timed_out` when its client killed it at the time limit."""

    timed_out: bool
    stdout: str
    stderr: str

    def report(self) -> dict[str, Any]:
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert lines, (self.stdout, self.stderr)
        return json.loads(lines[-1])


class CellClient:
    """One warm cell pool for the module, driven from a background event loop."""

    def __init__(self, backend: str, tmp: Path) -> None:
        from verilearn_assets.core.sandbox.config import SandboxConfig
        from verilearn_assets.core.sandbox.pool import SandboxPool

        config = SandboxConfig(
            backend=backend, slots=1, cell_timeout_s=5.0, memory_mb=MEMORY_MB, pids=PIDS,
            cpus=0.5, output_cap_bytes=20000, log_path=str(tmp / "cells.jsonl"),
        )  # fmt: skip
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.pool = SandboxPool(config)
        self._run(self.pool.start())

    def _run(self, coro: Any, timeout: float = 180) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def run(self, code: str, timeout_s: float) -> Outcome:
        result = self._run(self.pool.run_program(code, None, timeout_s))
        return Outcome(result.status == "timeout", result.stdout, result.stderr)

    def close(self) -> None:
        try:
            self._run(self.pool.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


class CommandClient:
    """The refactor runner on one workspace per probe (its own container under Docker)."""

    def __init__(self, backend: str, tmp: Path) -> None:
        from verilearn_assets.refactor.config import load_refactor_config

        base = load_refactor_config()
        self.config = base.model_copy(
            update={
                "backend": backend,
                "workspace_root": str(tmp / "workspaces"),
                "log_dir": str(tmp / "logs"),
                "test_cache": str(tmp / "test_cache.sqlite"),
                "limits": base.limits.model_copy(
                    update={"memory_mb": MEMORY_MB, "pids": PIDS, "action_timeout_s": 20}
                ),
            }
        )
        self.count = 0

    def run(self, code: str, timeout_s: float) -> Outcome:
        from verilearn_assets.refactor.verify.runner import apply_action, cleanup, prepare_workspace

        self.count += 1
        config = self.config.model_copy(
            update={"limits": self.config.limits.model_copy(update={"action_timeout_s": timeout_s})}
        )
        ws = prepare_workspace(f"t-iso-{self.count}", {"mod.py": "x = 1\n"}, config)
        try:
            step = apply_action(ws, {"kind": "command", "argv": ["python", "-c", code]})
        finally:
            cleanup(ws)
        return Outcome(step.status == "timeout", step.stdout, step.stderr)

    def close(self) -> None:
        from verilearn_assets.core.isolation.docker_pool import drain

        drain()


class DafnyClient:
    """A probe in the jail the DafnyServer pool gets (system Python: `/usr` is mounted),
    with the suite's memory and pids limits; `timeout_s` is the pool's wall clock."""

    def __init__(self, backend: str, tmp: Path) -> None:
        from verilearn_assets.dafny.verify.jail import JailLimits
        from verilearn_assets.dafny.verify.toolchain import detect

        self.backend = backend
        self.toolchain = detect()
        self.limits = JailLimits(memory_mb=MEMORY_MB, pids=PIDS)

    def run(self, code: str, timeout_s: float) -> Outcome:
        from verilearn_assets.dafny.verify.jail import run

        argv = ["/usr/bin/python3", "-I", "-c", code]
        _, output, timed_out = run(argv, self.toolchain, self.backend, timeout_s, self.limits)
        return Outcome(timed_out, output, "")

    def close(self) -> None:
        pass


@dataclass
class Jailed:
    client: str
    backend: str
    runner: CellClient | CommandClient | DafnyClient

    def run(self, code: str, timeout_s: float = 20) -> Outcome:
        return self.runner.run(code, timeout_s)

    @property
    def pids_limit(self) -> int:
        """The jail's pids limit: a refactor container gets its largest runner's."""
        if isinstance(self.runner, CommandClient) and self.backend == "docker":
            from verilearn_assets.refactor.verify.toolchains import docker_limits

            return docker_limits(self.runner.config)[1]
        return PIDS


def open_client(client: str, backend: str, tmp: Path) -> Iterator[Jailed]:
    require_backend(backend)
    kind = {"cells": CellClient, "commands": CommandClient, "dafny": DafnyClient}[client]
    runner = kind(backend, tmp)
    try:
        yield Jailed(client, backend, runner)
    finally:
        runner.close()
