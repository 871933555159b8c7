"""The sandbox pool: N warm slots shared by many coroutines, with back-pressure.

A slot is one jail (Docker container or bwrap process) running the zygote worker. Tasks
borrow a slot, get a pristine forked namespace, run cells, and give the slot back. A slot
whose worker stops answering is replaced; `run_program` retries once on a fresh slot and
raises `SandboxError` only when the retry fails too.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from verilearn_assets.core.records import HookRecord, canonical_json
from verilearn_assets.core.sandbox import protocol
from verilearn_assets.core.sandbox.config import SandboxConfig
from verilearn_assets.core.sandbox.jail import TABLES_DIR_IN_JAIL, host_jail_spec

log = logging.getLogger("verilearn.sandbox")

Status = Literal["ok", "error", "timeout", "killed"]
HOST_GRACE_S = 10.0  # on top of the cell timeout, before the host declares a slot dead


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the code it ran): the message says how."""


class SlotDiedError(SandboxError):
    """A slot's worker stopped answering; the pool replaces the slot."""


class CellResult(BaseModel):
    status: Status
    stdout: str
    stderr: str
    value_repr: str | None = None
    submissions: list[str] = []  # canonical JSON, in order
    hooks: list[HookRecord] = []
    # Records the worker sent that failed validation, as one reason each: typed so that
    # consumers count them without parsing stderr (which also gets a note, for humans).
    malformed_submissions: list[str] = []
    malformed_hooks: list[str] = []
    duration_ms: float


class TaskResult(BaseModel):
    status: Status  # the first non-ok cell's status, else "ok"
    stdout: str
    stderr: str
    answer: str | None  # the last submission (canonical JSON)
    submissions: list[str]
    hooks: list[HookRecord]
    malformed_submissions: list[str] = []
    malformed_hooks: list[str] = []
    duration_ms: float
    cells: list[CellResult]
    attempts: int = 1

    @classmethod
    def from_cells(
        cls, cells: list[CellResult], duration_ms: float, attempts: int = 1
    ) -> TaskResult:
        status: Status = next((c.status for c in cells if c.status != "ok"), "ok")
        submissions = [s for c in cells for s in c.submissions]
        return cls(
            status=status,
            stdout="".join(c.stdout for c in cells),
            stderr="".join(c.stderr for c in cells),
            answer=submissions[-1] if submissions else None,
            submissions=submissions,
            hooks=[h for c in cells for h in c.hooks],
            malformed_submissions=[m for c in cells for m in c.malformed_submissions],
            malformed_hooks=[m for c in cells for m in c.malformed_hooks],
            duration_ms=duration_ms,
            cells=cells,
            attempts=attempts,
        )


def _validation_reason(exc: ValidationError) -> str:
    """Every failed field of a record with its message, e.g. `code_line: Field required`."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in exc.errors()
    )


def _cell_from_reply(reply: dict[str, Any]) -> CellResult:
    """Validate the worker's reply as data.

    Cell code can forge records on the event channel, so a malformed submission or hook
    is dropped, its reason kept in `malformed_submissions` / `malformed_hooks`, and a
    note appended to stderr for whoever reads the trace.
    """
    notes: list[str] = []
    submissions: list[str] = []
    malformed_submissions: list[str] = []
    for i, raw in enumerate(reply.get("submissions") or []):
        try:
            submissions.append(canonical_json(json.loads(raw)))
        except (TypeError, ValueError) as exc:
            reason = f"submission {i}: {exc}"
            malformed_submissions.append(reason)
            notes.append(f"[sandbox] dropped a malformed {reason}")
    hooks: list[HookRecord] = []
    malformed_hooks: list[str] = []
    for i, raw in enumerate(reply.get("hooks") or []):
        try:
            hooks.append(HookRecord.model_validate(raw))
        except ValidationError as exc:
            reason = f"hook {i}: {_validation_reason(exc)}"
            malformed_hooks.append(reason)
            notes.append(f"[sandbox] dropped a malformed {reason}")
    status = reply.get("status")
    if status not in ("ok", "error", "timeout", "killed"):
        raise SandboxError(f"worker replied with an unknown cell status {status!r}")
    stderr = str(reply.get("stderr", "")) + "".join(n + "\n" for n in notes)
    value_repr = reply.get("value_repr")
    return CellResult(
        status=status,
        stdout=str(reply.get("stdout", "")),
        stderr=stderr,
        value_repr=None if value_repr is None else str(value_repr),
        submissions=submissions,
        hooks=hooks,
        malformed_submissions=malformed_submissions,
        malformed_hooks=malformed_hooks,
        duration_ms=float(reply.get("duration_ms", 0.0)),
    )


@dataclass
class Slot:
    index: int
    handle: Any = None
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    dead: bool = True
    tasks: int = 0
    busy: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    async def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One round trip; any failure marks the slot dead and raises SlotDiedError."""
        if self.dead or self.reader is None or self.writer is None:
            raise SlotDiedError(f"slot {self.index} is not running")
        try:
            self.writer.write(protocol.encode(message))
            await self.writer.drain()
            header = await asyncio.wait_for(self.reader.readexactly(protocol.HEADER.size), timeout)
            (length,) = protocol.HEADER.unpack(header)
            body = await asyncio.wait_for(
                self.reader.readexactly(protocol.check_length(length)), timeout
            )
            return protocol.decode_body(body)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, protocol.ProtocolError) as exc:
            self.dead = True
            why = "did not answer in time" if isinstance(exc, TimeoutError) else repr(exc)
            raise SlotDiedError(f"slot {self.index} worker {why} (op {message.get('op')})") from exc


class Task:
    """One pristine task on a slot: cells share state with each other, nothing else."""

    def __init__(self, pool: SandboxPool, slot: Slot) -> None:
        self._pool = pool
        self._slot = slot
        self.cells: list[CellResult] = []

    async def run_cell(self, code: str, timeout_s: float | None = None) -> CellResult:
        timeout = float(timeout_s or self._pool.config.cell_timeout_s)
        reply = await self._slot.request(
            {"op": "cell", "code": code, "timeout": timeout}, timeout + HOST_GRACE_S
        )
        if "status" not in reply:
            raise SandboxError(f"slot {self._slot.index}: {reply.get('error', reply)}")
        result = _cell_from_reply(reply)
        self.cells.append(result)
        return result


class SandboxPool:
    """Async access to N sandbox slots (see module doc)."""

    def __init__(
        self,
        config: SandboxConfig,
        *,
        pool_id: str | None = None,
        extra_ro_mounts: Sequence[str] = (),
    ) -> None:
        self.config = config
        self.pool_id = pool_id or uuid.uuid4().hex[:10]
        self.extra_ro_mounts = [os.path.realpath(p) for p in extra_ro_mounts]
        self.backend = resolve_backend(config.backend)
        self._impl: Any = None
        self._slots: list[Slot] = []
        self._free: asyncio.Queue[Slot] | None = None
        self._runtime_dir = ""
        self._tables_dir = ""
        self._log_path = config.resolved_log_path()
        self._started = False

    # --- lifecycle
    async def start(self) -> None:
        if self._started:
            return
        self._runtime_dir = tempfile.mkdtemp(prefix=f"verilearn-sandbox-{self.pool_id}-")
        os.chmod(self._runtime_dir, 0o755)
        self._tables_dir = os.path.join(self._runtime_dir, "tables")
        os.mkdir(self._tables_dir, 0o755)
        if self.backend == "docker":
            from verilearn_assets.core.sandbox.docker_backend import DockerBackend

            self._impl = DockerBackend(self.config, self.pool_id)
        else:
            from verilearn_assets.core.sandbox.bwrap_backend import BwrapBackend

            self._impl = BwrapBackend(self.config, self.pool_id, self._runtime_dir)
        await asyncio.to_thread(self._impl.prepare)
        self._free = asyncio.Queue()
        self._slots = [Slot(index=i) for i in range(self.config.slots)]
        self._started = True
        try:
            await asyncio.gather(*(self._launch(s) for s in self._slots))
        except BaseException:
            await self.stop()
            raise
        for slot in self._slots:
            self._free.put_nowait(slot)
        log.info("sandbox pool %s: %d %s slots ready", self.pool_id, len(self._slots), self.backend)

    async def stop(self) -> None:
        """Stop every slot; failures are logged with the slot's id and skipped."""
        if not self._started:
            return
        self._started = False
        for slot in self._slots:
            if slot.writer is not None:
                slot.writer.close()
            if slot.handle is None:
                continue
            try:
                await asyncio.to_thread(self._impl.kill_slot, slot.handle)
            except Exception as exc:  # logged and skipped: stop the rest regardless
                log.error(
                    "sandbox pool %s: failed to stop %s: %s", self.pool_id, slot.handle.ident, exc
                )
            slot.handle = None
        try:
            for ident, error in await asyncio.to_thread(self._impl.sweep):
                log.error(
                    "sandbox pool %s: failed to remove container %s: %s", self.pool_id, ident, error
                )
        finally:
            self._impl.close()
            shutil.rmtree(self._runtime_dir, ignore_errors=True)

    async def __aenter__(self) -> SandboxPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _launch(self, slot: Slot) -> None:
        """Start a slot's jail and wait for its worker to connect to our socket."""
        ctl = os.path.join(self._runtime_dir, f"ctl-{slot.index}-{uuid.uuid4().hex[:6]}")
        os.mkdir(ctl, 0o755)
        sock_path = os.path.join(ctl, "ctl.sock")
        connected: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            asyncio.get_running_loop().create_future()
        )

        def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if connected.done():
                writer.close()  # only the first connection (the worker) is served
            else:
                connected.set_result((reader, writer))

        server = await asyncio.start_unix_server(
            on_connect, path=sock_path, limit=protocol.MAX_FRAME
        )
        os.chmod(sock_path, 0o777)
        spec = host_jail_spec(self.config, ctl, self._tables_dir, self.extra_ro_mounts)
        try:
            slot.handle = await asyncio.to_thread(self._impl.start_slot, slot.index, spec)
            if not self._started:  # stop() ran meanwhile: don't leak a fresh jail
                await asyncio.to_thread(self._impl.kill_slot, slot.handle)
                slot.handle = None
                raise SandboxError("sandbox pool was stopped while a slot was starting")
            reader, writer = await self._await_worker(slot, connected)
            header = await asyncio.wait_for(reader.readexactly(protocol.HEADER.size), 30)
            (length,) = protocol.HEADER.unpack(header)
            slot.info = protocol.decode_body(await reader.readexactly(length))
        finally:
            server.close()
            with contextlib.suppress(OSError):
                os.unlink(sock_path)
        slot.reader, slot.writer, slot.dead = reader, writer, False

    async def _await_worker(self, slot: Slot, connected: asyncio.Future[Any]) -> Any:
        """Wait for the worker's connection; fail fast with the jail's log if it exits."""
        deadline = time.monotonic() + self.config.start_timeout_s
        while True:
            done, _ = await asyncio.wait({connected}, timeout=0.25)
            if done:
                return connected.result()
            alive = await asyncio.to_thread(self._impl.is_alive, slot.handle)
            if not alive or time.monotonic() > deadline:
                logs = await asyncio.to_thread(self._impl.logs, slot.handle)
                why = (
                    "exited"
                    if not alive
                    else (f"did not start within {self.config.start_timeout_s:g}s")
                )
                raise SandboxError(f"{self.backend} slot {slot.index} {why}; log:\n{logs}")

    async def _replace(self, slot: Slot) -> None:
        log.warning("sandbox pool %s: replacing dead slot %d", self.pool_id, slot.index)
        if slot.writer is not None:
            slot.writer.close()
        if slot.handle is not None:
            try:
                await asyncio.to_thread(self._impl.kill_slot, slot.handle)
            except Exception as exc:  # the replacement matters more; say what leaked
                log.error(
                    "sandbox pool %s: failed to stop dead %s: %s",
                    self.pool_id,
                    slot.handle.ident,
                    exc,
                )
            slot.handle = None
        await self._launch(slot)

    # --- tables
    def _jail_table_path(self, table_path: str | None) -> str | None:
        """Where the jail sees the table: an extra mount, or a read-only staged link/copy."""
        if table_path is None:
            return None
        real = os.path.realpath(table_path)
        if not os.path.isfile(real):
            raise FileNotFoundError(f"sandbox: table {table_path} does not exist")
        for root in self.extra_ro_mounts:
            if real.startswith(root.rstrip("/") + "/"):
                return real
        st = os.stat(real)
        key = hashlib.sha256(f"{real}\0{st.st_mtime_ns}\0{st.st_size}".encode()).hexdigest()
        name = key[:20] + "".join(Path(real).suffixes[-2:])
        target = os.path.join(self._tables_dir, name)
        if not os.path.exists(target):
            tmp = f"{target}.{uuid.uuid4().hex[:6]}.tmp"
            try:
                if not st.st_mode & 0o004:
                    raise PermissionError("not world-readable: copy instead of link")
                os.link(real, tmp)
            except OSError:
                shutil.copyfile(real, tmp)
                os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        return f"{TABLES_DIR_IN_JAIL}/{name}"

    # --- tasks
    async def _acquire(self) -> Slot:
        if not self._started or self._free is None:
            raise SandboxError("sandbox pool is not started (use `async with pool` or start())")
        return await self._free.get()

    async def _begin(self, slot: Slot, table: str | None, table_path: str | None) -> None:
        for attempt in (1, 2):
            if slot.dead:
                await self._replace(slot)
            try:
                reply = await slot.request(
                    {"op": "begin", "table": table}, self.config.start_timeout_s
                )
            except SlotDiedError:
                if attempt == 2:
                    raise
                continue
            if not reply.get("ok"):
                raise ValueError(f"sandbox: cannot load table {table_path}: {reply.get('error')}")
            return

    @contextlib.asynccontextmanager
    async def task(self, table_path: str | None) -> AsyncIterator[Task]:
        """A fresh pristine task on a free slot (waits while every slot is busy)."""
        jail_table = await asyncio.to_thread(self._jail_table_path, table_path)
        slot = await self._acquire()
        t0 = time.perf_counter()
        task: Task | None = None
        try:
            await self._begin(slot, jail_table, table_path)
            slot.tasks += 1
            slot.busy = True
            task = Task(self, slot)
            yield task
        finally:
            slot.busy = False
            if not slot.dead:
                try:
                    await slot.request({"op": "end"}, HOST_GRACE_S)
                except SlotDiedError as exc:
                    log.warning("sandbox pool %s: %s", self.pool_id, exc)
            if task is not None:
                self._log_task(slot, table_path, task.cells, (time.perf_counter() - t0) * 1e3)
            assert self._free is not None
            self._free.put_nowait(slot)

    async def run_program(
        self, cells: str | list[str], table_path: str | None, timeout_s: float | None = None
    ) -> TaskResult:
        """Run cells in order as one fresh task (stops at the first failing cell).

        If the slot dies under the program it is replaced and the program re-run once;
        `SandboxError` is raised only when the second attempt dies too.
        """
        program = [cells] if isinstance(cells, str) else list(cells)
        last: SlotDiedError | None = None
        for attempt in (1, 2):
            t0 = time.perf_counter()
            try:
                async with self.task(table_path) as task:
                    results = []
                    for code in program:
                        result = await task.run_cell(code, timeout_s)
                        results.append(result)
                        if result.status != "ok":
                            break
                return TaskResult.from_cells(
                    results, (time.perf_counter() - t0) * 1e3, attempts=attempt
                )
            except SlotDiedError as exc:
                last = exc
                log.warning("sandbox pool %s: attempt %d failed: %s", self.pool_id, attempt, exc)
        raise SandboxError(f"sandbox slot died on both attempts: {last}")

    # --- introspection used by tests and the CLI
    def slot_handles(self) -> list[Any]:
        return [s.handle for s in self._slots]

    def busy_slots(self) -> list[int]:
        """Indices of the slots running a task right now."""
        return [s.index for s in self._slots if s.busy]

    def kill_slot_for_test(self, index: int) -> None:
        """Kill one slot's jail from the outside (fault injection in tests)."""
        handle = self._slots[index].handle
        if handle is not None:
            self._impl.kill_slot(handle)

    def _log_task(
        self, slot: Slot, table_path: str | None, cells: list[CellResult], duration_ms: float
    ) -> None:
        if self._log_path is None:
            return
        status = next((c.status for c in cells if c.status != "ok"), "ok")
        submissions = [s for c in cells for s in c.submissions]
        line = canonical_json(
            {
                "ts": time.time(),
                "pool": self.pool_id,
                "backend": self.backend,
                "slot": slot.index,
                "table": table_path,
                "status": status,
                "cells": len(cells),
                "statuses": [c.status for c in cells],
                "answer": submissions[-1] if submissions else None,
                "submissions": len(submissions),
                "hooks": sum(len(c.hooks) for c in cells),
                "malformed_hooks": sum(len(c.malformed_hooks) for c in cells),
                "malformed_submissions": sum(len(c.malformed_submissions) for c in cells),
                "duration_ms": round(duration_ms, 3),
            }
        )
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self._log_path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def resolve_backend(choice: str) -> str:
    """`auto` -> docker when a daemon answers, else bwrap; the choice is logged."""
    from verilearn_assets.core.sandbox.docker_backend import docker_available

    if choice == "docker":
        ok, why = docker_available()
        if not ok:
            raise SandboxError(f"sandbox backend docker requested but {why}")
        return "docker"
    if choice == "bwrap":
        return "bwrap"
    ok, why = docker_available()
    picked = "docker" if ok else "bwrap"
    log.info("sandbox backend auto -> %s (%s)", picked, why)
    return picked


def run_programs_sync(
    config: SandboxConfig, jobs: list[tuple[str | list[str], str | None]]
) -> list[TaskResult]:
    """Start a pool, run every (cells, table_path) job concurrently, stop the pool."""

    async def main() -> list[TaskResult]:
        async with SandboxPool(config) as pool:
            return list(await asyncio.gather(*(pool.run_program(c, t) for c, t in jobs)))

    return asyncio.run(main())
