"""The sandbox pool: N warm slots shared by many coroutines, with back-pressure.

A slot is one jail (Docker container or bwrap process) running the zygote worker. Tasks
borrow a slot, get a pristine forked namespace, run cells, and give the slot back. A slot
whose worker stops answering is replaced; `run_program` retries once on a fresh slot and
raises `SandboxError` only when the retry fails too.

Several Docker hosts (`docker.hosts`): each slot has a home host (spread by weight) and
runs there while it is healthy, else on the least-loaded healthy host. Hosts are pinged
at start and every `health_interval_s`; a host that stops answering is drained: its
in-flight tasks fail with `HostDrainedError` and are re-run elsewhere (a drain does not
use up the one retry for a dying slot), its slots move. A host that answers again is
swept of this pool's leftover containers and its slots move back on their next task.

`docker.transport: attach` (hosts on other machines): a slot's frames go over its
container's attach stream (attach.py) instead of a unix socket, and a task's table is
sent in `begin` (by content hash first; its bytes only when the worker lacks them)
instead of being staged in a bind-mounted directory.
"""

from __future__ import annotations

import asyncio
import base64
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
from verilearn_assets.core.sandbox.jail import (
    TABLES_DIR_IN_JAIL,
    host_jail_spec,
    stdio_jail_spec,
)

log = logging.getLogger("verilearn.sandbox")

Status = Literal["ok", "error", "timeout", "killed"]
HOST_GRACE_S = 10.0  # on top of the cell timeout, before the host declares a slot dead


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the code it ran): the message says how."""


class SlotDiedError(SandboxError):
    """A slot's worker stopped answering; the pool replaces the slot."""


class HostDrainedError(SlotDiedError):
    """The slot's Docker host stopped answering: the task is re-run on another host."""


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
    host: str | None = None  # where the successful attempt ran (Docker host label)

    @classmethod
    def from_cells(
        cls,
        cells: list[CellResult],
        duration_ms: float,
        attempts: int = 1,
        host: str | None = None,
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
            host=host,
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
class HostState:
    """Health of one host as the pool last saw it."""

    weight: int
    healthy: bool = True
    reason: str = ""
    drains: int = 0


def spread(slots: int, weights: dict[str, int]) -> list[str]:
    """Home host of each slot: interleaved, each host's share proportional to its weight."""
    counts = dict.fromkeys(weights, 0)
    homes = []
    for _ in range(slots):
        host = min(weights, key=lambda h: ((counts[h] + 1) / weights[h], list(weights).index(h)))
        counts[host] += 1
        homes.append(host)
    return homes


@dataclass
class Slot:
    index: int
    home: str = "local"  # the host this slot runs on while that host is healthy
    host: str | None = None  # where its current jail runs
    handle: Any = None
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    dead: bool = True
    tasks: int = 0
    busy: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    channel: Any = None  # AttachChannel on the attach transport (reader/writer unused)

    def close_channel(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.channel is not None:
            self.channel.close()

    async def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One round trip; any failure marks the slot dead and raises SlotDiedError."""
        if self.channel is not None:
            return await self._attach_request(message, timeout)
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

    async def _attach_request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        if self.dead:
            raise SlotDiedError(f"slot {self.index} is not running")
        try:
            return await self.channel.request(message, timeout)
        except (TimeoutError, OSError, protocol.ProtocolError) as exc:
            self.dead = True
            why = "did not answer in time" if isinstance(exc, TimeoutError) else repr(exc)
            raise SlotDiedError(f"slot {self.index} worker {why} (op {message.get('op')})") from exc


class Task:
    """One pristine task on a slot: cells share state with each other, nothing else."""

    def __init__(self, pool: SandboxPool, slot: Slot) -> None:
        self._pool = pool
        self._slot = slot
        self.host = slot.host
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
        self.backend = resolve_backend(config.backend, config)
        self.attach = self.backend == "docker" and config.docker.transport == "attach"
        if self.attach and self.extra_ro_mounts:
            hosts = ", ".join(h.label for h in config.docker.hosts) or "the local daemon"
            raise SandboxError(
                f"sandbox config docker.transport: attach (hosts: {hosts}) cannot serve "
                f"extra_ro_mounts {self.extra_ro_mounts}: the attach transport bind-mounts "
                "nothing from this machine; use transport: socket on local hosts for this pool"
            )
        self._table_refs: dict[tuple[str, int, int], dict[str, Any]] = {}
        self._impl: Any = None
        self._hosts: dict[str, HostState] = {}
        self._monitor: asyncio.Task[None] | None = None
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
        weights: dict[str, int] = self._impl.weights
        self._hosts = {h: HostState(weight=w) for h, w in weights.items()}
        if len(self._hosts) == 1:
            await asyncio.to_thread(self._impl.prepare)
        else:
            await self._check_hosts_at_start()
        self._free = asyncio.Queue()
        homes = spread(self.config.slots, weights)
        self._slots = [Slot(index=i, home=homes[i]) for i in range(self.config.slots)]
        self._started = True
        try:
            await asyncio.gather(*(self._launch_somewhere(s) for s in self._slots))
        except BaseException:
            await self.stop()
            raise
        for slot in self._slots:
            self._free.put_nowait(slot)
        if len(self._hosts) > 1:
            self._monitor = asyncio.create_task(self._watch_hosts())
        log.info(
            "sandbox pool %s: %d %s slots ready (%s)",
            self.pool_id,
            len(self._slots),
            self.backend,
            ", ".join(f"{h}: {n}" for h, n in self.slots_per_host().items()),
        )

    async def _check_hosts_at_start(self) -> None:
        """Ping every host; prepare the image on those that answer; drain the rest."""
        hosts = list(self._hosts)
        answers = await asyncio.gather(*(asyncio.to_thread(self._impl.ping, h) for h in hosts))
        for host, (ok, why) in zip(hosts, answers, strict=True):
            if ok:
                await asyncio.to_thread(self._impl.prepare, host)
            else:
                self._drain(host, why)
        if not any(state.healthy for state in self._hosts.values()):
            raise SandboxError(f"sandbox pool {self.pool_id}: {self._no_host_reason()}")

    async def stop(self) -> None:
        """Stop every slot; failures are logged with the slot's id and skipped."""
        if not self._started:
            return
        self._started = False
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor
            self._monitor = None
        for slot in self._slots:
            slot.close_channel()
            if slot.host is not None and not self._hosts[slot.host].healthy:
                slot.handle = None  # unreachable daemon: its return sweeps the container
            if slot.handle is None:
                continue
            try:
                await asyncio.to_thread(self._impl.kill_slot, slot.handle)
            except Exception as exc:  # logged and skipped: stop the rest regardless
                log.error(
                    "sandbox pool %s: failed to stop %s: %s", self.pool_id, slot.handle.ident, exc
                )
            slot.handle = None
        drained = [h for h, state in self._hosts.items() if not state.healthy]
        if drained:
            log.warning(
                "sandbox pool %s: not sweeping drained hosts %s (unreachable)",
                self.pool_id,
                drained,
            )
        healthy = [h for h, state in self._hosts.items() if state.healthy]
        try:
            for ident, error in await asyncio.to_thread(self._impl.sweep, healthy):
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

    # --- hosts
    def _no_host_reason(self) -> str:
        drained = ", ".join(f"{h} ({s.reason})" for h, s in self._hosts.items())
        return f"every Docker host is drained: {drained}"

    def _target_host(self, slot: Slot) -> str:
        """The slot's home when healthy, else the healthy host with the lowest load/weight."""
        home = self._hosts.get(slot.home)
        if home is not None and home.healthy:
            return slot.home
        healthy = [h for h, s in self._hosts.items() if s.healthy]
        if not healthy:
            raise SandboxError(f"sandbox pool {self.pool_id}: {self._no_host_reason()}")
        load = {h: sum(1 for s in self._slots if s.host == h and s is not slot) for h in healthy}
        return min(healthy, key=lambda h: (load[h] / self._hosts[h].weight, h))

    def _should_move(self, slot: Slot) -> bool:
        """A slot on a drained host, or away from its home that is healthy again, moves."""
        if slot.host is None or len(self._hosts) == 1:
            return False
        if not self._hosts[slot.host].healthy:
            return True
        return slot.host != slot.home and self._hosts[slot.home].healthy

    def _drain(self, host: str, reason: str) -> None:
        """Stop handing out the host's slots and fail its in-flight tasks (they re-run)."""
        state = self._hosts[host]
        if not state.healthy:
            return
        state.healthy, state.reason = False, reason
        state.drains += 1
        log.warning("sandbox pool %s: draining Docker host %s: %s", self.pool_id, host, reason)
        for slot in self._slots:
            if slot.host == host:
                slot.dead = True
                slot.close_channel()  # a pending read sees EOF -> SlotDiedError
        self._impl.forget(host)

    async def _host_ok(self, host: str | None) -> bool:
        """Ping a host now (multi-host pools only); a failed ping drains it."""
        if host is None or len(self._hosts) == 1:
            return True
        if not self._hosts[host].healthy:
            return False
        ok, why = await asyncio.to_thread(self._impl.ping, host)
        if not ok:
            self._drain(host, why)
        return ok

    async def _recover(self, host: str) -> None:
        """A drained host answers again: sweep our leftovers there, then use it again."""
        try:
            await asyncio.to_thread(self._impl.prepare, host)
            failures = await asyncio.to_thread(self._impl.sweep, [host])
        except Exception as exc:  # stays drained; the next health check tries again
            log.warning("sandbox pool %s: host %s answers but: %s", self.pool_id, host, exc)
            return
        if failures:
            log.warning("sandbox pool %s: host %s sweep: %s", self.pool_id, host, failures)
            return
        state = self._hosts[host]
        state.healthy, state.reason = True, ""
        log.info("sandbox pool %s: Docker host %s is back", self.pool_id, host)

    async def _watch_hosts(self) -> None:
        """Periodic health check of every host (runs while the pool is started)."""
        interval = self.config.docker.health_interval_s
        hosts = list(self._hosts)
        while self._started:
            await asyncio.sleep(interval)
            try:
                answers = await asyncio.gather(
                    *(asyncio.to_thread(self._impl.ping, h) for h in hosts)
                )
                for host, (ok, why) in zip(hosts, answers, strict=True):
                    if not ok:
                        self._drain(host, why)
                    elif not self._hosts[host].healthy:
                        await self._recover(host)
            except Exception:  # a failed round must not end the health checks
                log.exception("sandbox pool %s: host health check failed", self.pool_id)

    async def _launch_somewhere(self, slot: Slot) -> None:
        """Launch on the slot's target host; a host that fails and stops answering is
        drained and the next healthy one tried."""
        for _ in range(len(self._hosts)):
            host = self._target_host(slot)
            try:
                await self._launch(slot, host)
                return
            except Exception:
                if await self._host_ok(host):
                    raise  # the host is fine: the failure is the slot's, say so
        raise SandboxError(f"sandbox pool {self.pool_id}: {self._no_host_reason()}")

    async def _launch(self, slot: Slot, host: str) -> None:
        """Start a slot's jail on `host` and wait for its worker to connect to our socket."""
        if self.attach:
            await self._launch_attached(slot, host)
            return
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
            slot.handle = await asyncio.to_thread(self._impl.start_slot, slot.index, spec, host)
            slot.host = host
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

    async def _launch_attached(self, slot: Slot, host: str) -> None:
        """Start a slot's container attached to its stdin/stdout; read the worker's hello."""
        from verilearn_assets.core.sandbox.attach import AttachChannel

        spec = stdio_jail_spec(self.config)
        slot.handle = await asyncio.to_thread(self._impl.start_slot, slot.index, spec, host)
        slot.host = host
        channel = AttachChannel(slot.handle.attached, f"slot {slot.index} on {host}")
        if not self._started:  # stop() ran meanwhile: don't leak a fresh jail
            channel.close()
            await asyncio.to_thread(self._impl.kill_slot, slot.handle)
            slot.handle = None
            raise SandboxError("sandbox pool was stopped while a slot was starting")
        try:
            slot.info = await channel.request(None, self.config.start_timeout_s)
        except (TimeoutError, OSError, protocol.ProtocolError) as exc:
            channel.close()
            logs = await asyncio.to_thread(self._impl.logs, slot.handle)
            raise SandboxError(
                f"{self.backend} slot {slot.index} on {host} did not say hello over its attach "
                f"stream ({exc!r}); log:\n{logs}"
            ) from exc
        slot.channel, slot.reader, slot.writer, slot.dead = channel, None, None, False

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
        slot.close_channel()
        if slot.handle is not None and slot.host is not None and not self._hosts[slot.host].healthy:
            slot.handle = None  # its daemon is gone: the sweep on its return removes it
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
        slot.host = None
        await self._launch_somewhere(slot)

    # --- tables
    def _table_ref(self, table_path: str) -> dict[str, Any]:
        """What `begin` names a table by on the attach transport: its content hash."""
        real = os.path.realpath(table_path)
        if not os.path.isfile(real):
            raise FileNotFoundError(f"sandbox: table {table_path} does not exist")
        st = os.stat(real)
        key = (real, st.st_mtime_ns, st.st_size)
        if key not in self._table_refs:
            encoded = (st.st_size + 2) // 3 * 4
            if encoded + 4096 > protocol.MAX_FRAME:
                raise ValueError(
                    f"sandbox: table {table_path} ({st.st_size} bytes) is too large to send "
                    f"in a begin frame (cap {protocol.MAX_FRAME} bytes after base64) on "
                    "docker.transport: attach"
                )
            with open(real, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            self._table_refs[key] = {
                "sha256": digest,
                "size": st.st_size,
                "name": os.path.basename(real),
                "path": real,
            }
        return self._table_refs[key]

    @staticmethod
    def _table_bytes(ref: dict[str, Any]) -> str:
        with open(ref["path"], "rb") as fh:
            raw = fh.read()
        if hashlib.sha256(raw).hexdigest() != ref["sha256"]:
            raise ValueError(f"sandbox: table {ref['path']} changed while being sent")
        return base64.b64encode(raw).decode()

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

    async def _begin(self, slot: Slot, table: Any, table_path: str | None) -> None:
        for attempt in (1, 2):
            if self._should_move(slot):
                slot.dead = True
            if slot.dead:
                await self._replace(slot)
            try:
                if self.attach:
                    reply = await self._begin_attached(slot, table)
                else:
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

    async def _begin_attached(self, slot: Slot, ref: dict[str, Any] | None) -> dict[str, Any]:
        """`begin` naming the table by hash; its bytes follow only if the worker asks."""
        timeout = self.config.start_timeout_s
        if ref is None:
            return await slot.request({"op": "begin", "table": None}, timeout)
        named = {k: ref[k] for k in ("sha256", "size", "name")}
        message: dict[str, Any] = {"op": "begin", "table": None, "table_ref": named}
        reply = await slot.request(message, timeout)
        if reply.get("need_table"):
            message["table_b64"] = await asyncio.to_thread(self._table_bytes, ref)
            reply = await slot.request(message, timeout)
        return reply

    @contextlib.asynccontextmanager
    async def task(self, table_path: str | None) -> AsyncIterator[Task]:
        """A fresh pristine task on a free slot (waits while every slot is busy)."""
        if self.attach:
            jail_table: Any = None
            if table_path is not None:
                jail_table = await asyncio.to_thread(self._table_ref, table_path)
        else:
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
        except SlotDiedError as exc:
            if isinstance(exc, HostDrainedError) or await self._host_ok(slot.host):
                raise
            raise HostDrainedError(f"Docker host {slot.host} went away: {exc}") from exc
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
        deaths = drains = 0
        attempt = 0
        while deaths < 2:
            attempt += 1
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
                    results, (time.perf_counter() - t0) * 1e3, attempts=attempt, host=task.host
                )
            except HostDrainedError as exc:
                last, drains = exc, drains + 1
                log.warning(
                    "sandbox pool %s: attempt %d lost its host: %s", self.pool_id, attempt, exc
                )
                if drains > len(self._hosts):
                    raise SandboxError(
                        f"sandbox: every host went away under the task: {exc}"
                    ) from exc
            except SlotDiedError as exc:
                last, deaths = exc, deaths + 1
                log.warning("sandbox pool %s: attempt %d failed: %s", self.pool_id, attempt, exc)
        raise SandboxError(f"sandbox slot died on both attempts: {last}")

    # --- introspection used by tests and the CLI
    def slot_handles(self) -> list[Any]:
        return [s.handle for s in self._slots]

    def host_status(self) -> dict[str, str]:
        """`healthy`, or `drained: <why>`, per host."""
        return {
            h: "healthy" if s.healthy else f"drained: {s.reason}" for h, s in self._hosts.items()
        }

    def slots_per_host(self) -> dict[str, int]:
        """How many slots run on each host right now."""
        counts = dict.fromkeys(self._hosts, 0)
        for slot in self._slots:
            if slot.host is not None and slot.handle is not None:
                counts[slot.host] += 1
        return counts

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
                "host": slot.host,
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


def resolve_backend(choice: str, config: SandboxConfig | None = None) -> str:
    """`auto` -> docker when a daemon answers (any of `docker.hosts`, when listed), else
    bwrap; the choice is logged."""
    from verilearn_assets.core.isolation.docker import docker_available
    from verilearn_assets.core.sandbox.docker_backend import hosts_available

    if config is not None and config.docker.hosts and choice != "bwrap":
        ok, why = hosts_available(config)
        if choice == "docker" and not ok:
            raise SandboxError(f"sandbox backend docker requested but {why}")
        if choice == "auto":
            log.info("sandbox backend auto -> %s (%s)", "docker" if ok else "bwrap", why)
        return "docker" if ok else "bwrap"
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
