"""Async client for one or more OpenAI-compatible vLLM servers.

Why hand-rolled over the openai SDK: we need per-server in-flight accounting (to keep every
server saturated but not flooded), the server's URL in every error, and a health probe after a
failure; the SDK hides which host answered and retries on its own schedule.

Flow of one `chat` call: wait for a slot under both the global cap and a per-server cap (the
least-loaded healthy server wins), POST `/v1/chat/completions`, release the slot, and on a
connection error, timeout, 429 or 5xx probe `/health`, back off exponentially with jitter and
try again (preferring another server). After the last attempt a `VllmUnavailableError` names
the server(s) and the last failure.
"""

from __future__ import annotations

import asyncio
import logging
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from verilearn_assets.core.llm.budget_records import BudgetCounts
from verilearn_assets.core.llm.config import VllmConfig
from verilearn_assets.core.llm.fit import ContextBudget, ContextOverflow, for_server
from verilearn_assets.core.llm.segments import BudgetMessage, plain

log = logging.getLogger(__name__)
_REPO_ROOT = Path(__file__).resolve().parents[3]


class ChatResult(BaseModel):
    """One answered request: what came back and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    server: str
    finish_reason: str | None
    seed: int | None
    attempts: int = 1
    model: str = ""


class VllmError(RuntimeError):
    """Base for every error this client raises."""


class VllmRequestError(VllmError):
    """The server refused the request itself (4xx other than 429) or answered garbage.

    Not retried: sending the same body again would fail the same way.
    """


class VllmContextOverflow(VllmRequestError, ContextOverflow):
    """The server refused the request because prompt plus `max_tokens` exceed its window.

    A property of the item, not of the server: never retried; callers end the item with
    failure class `context_overflow` and go on.
    """


# vLLM words it "This model's maximum context length is N tokens. However, you requested
# M tokens ..." (older) or "... maximum context length is N tokens and your request has M
# input tokens" (newer); other OpenAI-compatible servers say "context length" too.
_LENGTH_400 = re.compile(
    r"maximum context length|context length (is|of)|prompt is too long|too many tokens", re.I
)


def is_length_error(status: int, text: str) -> bool:
    """Is an HTTP answer the server saying the request is too long for its window?"""
    return status == 400 and bool(_LENGTH_400.search(text))


class VllmUnavailableError(VllmError):
    """No server answered after the last attempt (or none was healthy at start-up)."""


class _RetryableFailure(Exception):
    """Internal: a failure worth another attempt (transport error, timeout, 429, 5xx)."""

    def __init__(self, server: str, reason: str, retry_after: float | None = None) -> None:
        super().__init__(f"{server}: {reason}")
        self.server = server
        self.reason = reason
        self.retry_after = retry_after


@dataclass
class _Server:
    url: str
    healthy: bool = True
    in_flight: int = 0
    peak_in_flight: int = 0
    requests: int = 0
    failures: int = 0
    last_error: str | None = None
    last_probe: float = 0.0


@dataclass
class _Counters:
    in_flight: int = 0
    peak_in_flight: int = 0
    retries: int = 0
    failed_requests: int = 0
    first_start: float | None = None
    last_end: float | None = None
    probes: set[asyncio.Task[bool]] = field(default_factory=set)


def _retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP-date; our own backoff is good enough then


class VllmClient:
    """Spread chat requests over `cfg.base_urls` under a global and a per-server cap."""

    def __init__(self, cfg: VllmConfig) -> None:
        if not cfg.base_urls:
            raise VllmError(
                "no vLLM server configured: set base_urls (or launch: true with a "
                "local model) in configs/vllm.yaml"
            )
        self.cfg = cfg
        self.usage: list[ChatResult] = []
        self._servers = [_Server(url) for url in cfg.base_urls]
        self._global_cap = cfg.global_cap
        self._slot_freed = asyncio.Condition()
        self._counters = _Counters()
        self._rotation = 0
        self._http: httpx.AsyncClient | None = None
        self.models: dict[str, dict[str, Any]] = {}  # /v1/models entries by model id
        self._budgets: dict[int, ContextBudget | None] = {}

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Open the connection pool and check `/health` and the served model on every server.

        Servers that fail are marked unhealthy (and re-probed later); if none passes, raise.
        """
        t = self.cfg.timeouts
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(t.request_s, connect=t.connect_s),
            limits=httpx.Limits(
                max_connections=self._global_cap + len(self._servers),
                max_keepalive_connections=self._global_cap + len(self._servers),
            ),
            headers={"Authorization": f"Bearer {self.cfg.api_key}"},
        )
        await asyncio.gather(*(self._probe(s) for s in self._servers))
        if not any(s.healthy for s in self._servers):
            await self.close()
            detail = "; ".join(f"{s.url}: {s.last_error}" for s in self._servers)
            raise VllmUnavailableError(f"no vLLM server passed the health check: {detail}")
        for server in self._servers:
            if server.healthy:
                await self._check_model(server)

    async def close(self) -> None:
        for task in list(self._counters.probes):
            task.cancel()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def __aenter__(self) -> VllmClient:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- health
    async def _probe(self, server: _Server) -> bool:
        """GET /health; records the verdict on the server."""
        http = self._require_http()
        server.last_probe = time.monotonic()
        try:
            resp = await http.get(f"{server.url}/health", timeout=self.cfg.timeouts.health_s)
            ok = resp.status_code == 200
            reason = None if ok else f"/health answered HTTP {resp.status_code}"
        except httpx.HTTPError as exc:
            ok, reason = False, f"/health failed: {type(exc).__name__}: {exc}"
        if ok != server.healthy:
            log.warning("vLLM server %s is now %s", server.url, "healthy" if ok else "DOWN")
        server.healthy = ok
        if reason:
            server.last_error = reason
        async with self._slot_freed:
            self._slot_freed.notify_all()  # a recovered server can take waiting requests
        return ok

    async def _check_model(self, server: _Server) -> None:
        """Fail fast when the configured model is not what the server serves."""
        http = self._require_http()
        resp = await http.get(f"{server.url}/v1/models", timeout=self.cfg.timeouts.health_s)
        if resp.status_code != 200:
            raise VllmRequestError(f"{server.url}: GET /v1/models answered HTTP {resp.status_code}")
        entries = [m for m in resp.json().get("data", []) if isinstance(m, dict)]
        served = [m.get("id") for m in entries]
        self.models.update({str(m.get("id")): m for m in entries})
        if self.cfg.model not in served:
            raise VllmRequestError(
                f"{server.url}: model {self.cfg.model!r} is not served there (serves {served})"
            )

    def _schedule_reprobes(self) -> None:
        """Re-probe servers that were down, at most once per `health_recheck_s` each."""
        now = time.monotonic()
        for server in self._servers:
            stale = now - server.last_probe >= self.cfg.timeouts.health_recheck_s
            if not server.healthy and stale:
                server.last_probe = now
                task = asyncio.create_task(self._probe(server))
                self._counters.probes.add(task)
                task.add_done_callback(self._counters.probes.discard)

    # ---------------------------------------------------------------- slots
    def _pick(self, avoid: str | None) -> _Server | None:
        cap = self.cfg.max_concurrency_per_server
        if self._counters.in_flight >= self._global_cap:
            return None
        healthy = [s for s in self._servers if s.healthy]
        # All down: keep trying them anyway; the attempt itself is the probe.
        pool = healthy or self._servers
        open_ = [s for s in pool if s.in_flight < cap]
        preferred = [s for s in open_ if s.url != avoid] or open_
        if not preferred:
            return None
        n = len(self._servers)
        start = self._rotation
        self._rotation = (self._rotation + 1) % n

        def order(s: _Server) -> tuple[int, int]:
            return (s.in_flight, (self._servers.index(s) - start) % n)

        return min(preferred, key=order)

    async def _acquire(self, avoid: str | None) -> _Server:
        async with self._slot_freed:
            while True:
                self._schedule_reprobes()
                server = self._pick(avoid)
                if server is not None:
                    break
                await self._slot_freed.wait()
            server.in_flight += 1
            server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
            c = self._counters
            c.in_flight += 1
            c.peak_in_flight = max(c.peak_in_flight, c.in_flight)
            return server

    async def _release(self, server: _Server) -> None:
        async with self._slot_freed:
            server.in_flight -= 1
            self._counters.in_flight -= 1
            self._slot_freed.notify_all()

    # ---------------------------------------------------------------- requests
    async def chat(
        self, messages: list[dict[str, Any]], *, seed: int | None = None, **sampling: Any
    ) -> ChatResult:
        """One chat completion; `sampling` overrides `cfg.sampling` key by key."""
        body: dict[str, Any] = {
            "model": self.cfg.model,
            "messages": messages,
            **self.cfg.sampling.as_request(),
            **sampling,
        }
        if seed is not None:
            body["seed"] = seed
        if self._counters.first_start is None:
            self._counters.first_start = time.monotonic()

        r = self.cfg.retry
        stop = stop_after_attempt(r.max_attempts)
        if r.max_elapsed_s is not None:
            stop = stop | stop_after_delay(r.max_elapsed_s)
        backoff = wait_exponential_jitter(
            multiplier=r.initial_backoff_s, max=r.max_backoff_s, jitter=r.jitter_s
        )

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            hinted = getattr(exc, "retry_after", None) or 0.0
            return min(max(backoff(state), hinted), r.max_backoff_s + r.jitter_s)

        def before_sleep(state: RetryCallState) -> None:
            self._counters.retries += 1
            exc = state.outcome.exception() if state.outcome else None
            log.info("retrying vLLM request (attempt %d failed: %s)", state.attempt_number, exc)

        attempts = 0
        servers_tried: list[str] = []
        last_failed: str | None = None
        try:
            async for attempt in AsyncRetrying(
                stop=stop,
                wait=wait,
                retry=retry_if_exception_type(_RetryableFailure),
                before_sleep=before_sleep,
                reraise=True,
            ):
                with attempt:
                    attempts += 1
                    try:
                        result = await self._attempt(body, seed, last_failed, servers_tried)
                    except _RetryableFailure as exc:
                        last_failed = exc.server
                        raise
        except _RetryableFailure as exc:
            self._counters.failed_requests += 1
            tried = ", ".join(dict.fromkeys(servers_tried))
            raise VllmUnavailableError(
                f"vLLM request failed after {attempts} attempt(s); last error from "
                f"{exc.server}: {exc.reason} (servers tried: {tried})"
            ) from exc
        except VllmError:
            self._counters.failed_requests += 1
            raise
        result = result.model_copy(update={"attempts": attempts})
        self.usage.append(result)
        self._counters.last_end = time.monotonic()
        return result

    async def chat_budgeted(
        self,
        messages: Sequence[BudgetMessage],
        counts: BudgetCounts | None = None,
        *,
        seed: int | None = None,
        **sampling: Any,
    ) -> ChatResult:
        """`chat` with the prompt fitted to the window first (docs/context_budget.md).

        The fit's losses are added to `counts`. A prompt that does not fit even compressed
        raises `ContextOverflow` without a request; a server 400 for length raises
        `VllmContextOverflow` (counted as an overflow too). Neither is retried: the caller
        ends that one item with failure class `context_overflow`.
        """
        counts = counts if counts is not None else BudgetCounts()
        max_tokens = sampling.get("max_tokens") or self.cfg.sampling.max_tokens
        budget = self.budget(max_tokens)
        if budget is None:  # neither the server nor the config names a window
            sent = plain(messages)
        else:
            fit = budget.fit(messages)
            counts.add(fit)
            if fit.overflow:
                raise ContextOverflow(fit.reason)
            sent = fit.messages
        try:
            return await self.chat(sent, seed=seed, **sampling)
        except VllmContextOverflow:
            counts.overflows += 1
            raise

    async def _attempt(
        self, body: dict[str, Any], seed: int | None, avoid: str | None, tried: list[str]
    ) -> ChatResult:
        http = self._require_http()
        server = await self._acquire(avoid)
        tried.append(server.url)
        server.requests += 1
        started = time.perf_counter()
        try:
            resp = await http.post(f"{server.url}/v1/chat/completions", json=body)
        except httpx.TransportError as exc:  # connect/read errors and timeouts
            failure = _RetryableFailure(server.url, f"{type(exc).__name__}: {exc}".rstrip(": "))
        else:
            failure = None
        finally:
            await self._release(server)
        latency_ms = (time.perf_counter() - started) * 1000.0

        if failure is None and (resp.status_code == 429 or resp.status_code >= 500):
            failure = _RetryableFailure(
                server.url,
                f"HTTP {resp.status_code}: {resp.text[:300]}",
                retry_after=_retry_after_seconds(resp),
            )
        if failure is not None:
            server.failures += 1
            server.last_error = failure.reason
            await self._probe(server)  # is it the request or the server? mark it down if so
            raise failure
        server.healthy = True
        if is_length_error(resp.status_code, resp.text):
            raise VllmContextOverflow(
                f"{server.url}: the request does not fit the model's window "
                f"(HTTP 400): {resp.text[:500]}"
            )
        if resp.status_code >= 400:
            raise VllmRequestError(
                f"{server.url}: HTTP {resp.status_code} for chat completion: {resp.text[:500]}"
            )
        return self._parse(server.url, resp, latency_ms, seed)

    def _parse(
        self, server: str, resp: httpx.Response, latency_ms: float, seed: int | None
    ) -> ChatResult:
        try:
            data = resp.json()
            choice = data["choices"][0]
            usage = data["usage"]
            return ChatResult(
                text=choice["message"]["content"] or "",
                prompt_tokens=int(usage["prompt_tokens"]),
                completion_tokens=int(usage["completion_tokens"]),
                latency_ms=latency_ms,
                server=server,
                finish_reason=choice.get("finish_reason"),
                seed=seed,
                model=str(data.get("model", self.cfg.model)),
            )
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise VllmRequestError(
                f"{server}: malformed chat completion ({type(exc).__name__}: {exc}): "
                f"{resp.text[:300]}"
            ) from exc

    def budget(self, max_tokens: int | None = None) -> ContextBudget | None:
        """The context budget for requests sending `max_tokens` (default: the config's).

        Window from the server's `/v1/models` entry (after `start()`) or `budget` in the
        config; None when neither says, and then prompts go out unfitted.
        """
        max_tokens = max_tokens or self.cfg.sampling.max_tokens
        if not self.models:
            raise VllmError("VllmClient.budget() needs start() first (it reads /v1/models)")
        if max_tokens not in self._budgets:
            cfg = self.cfg.budget
            local = None
            if self.cfg.launch:  # the launcher resolves a relative model path from the repo
                local = Path(self.cfg.server.model_path)
                local = local if local.is_absolute() else _REPO_ROOT / local
            self._budgets[max_tokens] = for_server(
                self.models.get(self.cfg.model), max_tokens, cfg, local_model_dir=local
            )
        return self._budgets[max_tokens]

    def _require_http(self) -> httpx.AsyncClient:
        if self._http is None:
            raise VllmError("VllmClient used before start() (or after close())")
        return self._http

    # ---------------------------------------------------------------- reporting
    def stats(self) -> dict[str, Any]:
        """Totals over `usage` plus in-flight peaks: what a run report needs."""
        c = self._counters
        lat = sorted(r.latency_ms for r in self.usage)
        completion = sum(r.completion_tokens for r in self.usage)
        wall = (c.last_end - c.first_start) if c.first_start and c.last_end else 0.0
        return {
            "requests": len(self.usage),
            "failed_requests": c.failed_requests,
            "retries": c.retries,
            "prompt_tokens": sum(r.prompt_tokens for r in self.usage),
            "completion_tokens": completion,
            "latency_ms_mean": statistics.fmean(lat) if lat else None,
            "latency_ms_p50": lat[len(lat) // 2] if lat else None,
            "latency_ms_max": lat[-1] if lat else None,
            "wall_s": wall,
            "completion_tokens_per_s": completion / wall if wall > 0 else None,
            "global_cap": self._global_cap,
            "peak_in_flight": c.peak_in_flight,
            "servers": {
                s.url: {
                    "healthy": s.healthy,
                    "requests": s.requests,
                    "failures": s.failures,
                    "in_flight": s.in_flight,
                    "peak_in_flight": s.peak_in_flight,
                    "last_error": s.last_error,
                }
                for s in self._servers
            },
        }
