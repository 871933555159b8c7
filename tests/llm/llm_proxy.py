"""A real loopback HTTP proxy in front of the vLLM server, for the client tests.

It forwards every request upstream and, independently of the client under test, counts how
many chat requests are in flight through it (and through a group of proxies together), and
can answer scripted statuses (503, 429 ...) before it starts forwarding. Two proxies in front
of one vLLM server look like two servers to the client.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from verilearn_assets.core.llm.launcher import free_port

CHAT_PATH = "/v1/chat/completions"


@dataclass
class InFlightGauge:
    """Thread-safe in-flight counter with a peak; shared by proxies to see a global total."""

    current: int = 0
    peak: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self) -> None:
        with self.lock:
            self.current += 1
            self.peak = max(self.peak, self.current)

    def leave(self) -> None:
        with self.lock:
            self.current -= 1


@dataclass
class ScriptedReply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)


class CountingProxy:
    """Forward to `upstream`; answer `script` replies to the first chat requests."""

    def __init__(
        self,
        upstream: str,
        *,
        script: list[ScriptedReply] | None = None,
        shared: InFlightGauge | None = None,
        hold_s: float = 0.0,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.script = list(script or [])
        self.local = InFlightGauge()
        self.shared = shared
        # Keeps each chat request in flight at least this long, so overlap between
        # concurrent requests does not hinge on how fast the tiny model answers.
        self.hold_s = hold_s
        self.chat_requests = 0
        self.scripted_sent = 0
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        app = Starlette(
            routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])],
        )
        self._server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._lock = threading.Lock()

    async def _handle(self, request: Request) -> Response:
        path = request.url.path
        is_chat = path == CHAT_PATH
        if is_chat:
            with self._lock:
                self.chat_requests += 1
                scripted = self.script.pop(0) if self.script else None
                if scripted:
                    self.scripted_sent += 1
            if scripted is not None:
                return Response(
                    f'{{"error": "scripted {scripted.status}"}}',
                    status_code=scripted.status,
                    headers=scripted.headers,
                    media_type="application/json",
                )
            self.local.enter()
            if self.shared:
                self.shared.enter()
        try:
            if is_chat and self.hold_s:
                await asyncio.sleep(self.hold_s)
            async with httpx.AsyncClient(timeout=120) as client:
                upstream = await client.request(
                    request.method,
                    f"{self.upstream}{path}",
                    content=await request.body(),
                    headers={"content-type": request.headers.get("content-type", "")},
                )
            return Response(
                upstream.content,
                status_code=upstream.status_code,
                media_type=upstream.headers.get("content-type"),
            )
        except httpx.TransportError as exc:
            return Response(f"upstream unreachable: {exc}", status_code=502)
        finally:
            if is_chat:
                self.local.leave()
                if self.shared:
                    self.shared.leave()

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"test proxy on {self.url} did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
