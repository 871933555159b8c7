"""VllmClient against the real vLLM CPU server (tiny random-weight model).

Random weights make the text gibberish; what is checked is the serving path: token counts
agree with the server's tokenizer, seeds reproduce, caps hold, failures are retried or named.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from llm_proxy import CountingProxy, InFlightGauge, ScriptedReply

from verilearn_assets.core.llm.client import (
    VllmClient,
    VllmRequestError,
    VllmUnavailableError,
)
from verilearn_assets.core.llm.launcher import free_port

pytestmark = pytest.mark.vllm

HELLO = [{"role": "user", "content": "Summarise what a hash table does."}]


def test_chat_round_trip_counts_tokens_and_latency(vllm_server) -> None:
    cfg = vllm_server.config()

    async def run():
        async with VllmClient(cfg) as client:
            result = await client.chat(HELLO, seed=7, max_tokens=12)
            return result, client.stats()

    result, stats = asyncio.run(run())
    # The server's own tokenizer says how long the templated prompt is.
    tokenized = httpx.post(
        f"{vllm_server.base_url}/tokenize",
        json={"model": vllm_server.model, "messages": HELLO, "add_generation_prompt": True},
        timeout=30,
    ).json()
    assert result.prompt_tokens == tokenized["count"] > 0
    assert 1 <= result.completion_tokens <= 12
    if result.finish_reason == "length":
        assert result.completion_tokens == 12
    assert result.text
    assert result.latency_ms > 0
    assert result.server == vllm_server.base_url
    assert result.seed == 7 and result.attempts == 1
    assert stats["requests"] == 1 and stats["retries"] == 0
    assert stats["prompt_tokens"] == result.prompt_tokens
    assert stats["completion_tokens"] == result.completion_tokens
    assert stats["servers"][vllm_server.base_url]["healthy"] is True


def test_same_seed_reproduces_text_and_other_seeds_differ(vllm_server) -> None:
    cfg = vllm_server.config(sampling={"temperature": 1.0, "max_tokens": 16})

    async def run():
        async with VllmClient(cfg) as client:
            return await asyncio.gather(
                client.chat(HELLO, seed=11),
                client.chat(HELLO, seed=11),
                client.chat(HELLO, seed=12),
                client.chat(HELLO, seed=13),
            )

    a, b, c, d = asyncio.run(run())
    assert a.text == b.text and a.completion_tokens == b.completion_tokens
    # Near-uniform sampling over a 2k vocabulary: two other seeds cannot both repeat `a`.
    assert not (c.text == a.text and d.text == a.text)
    assert [r.seed for r in (a, b, c, d)] == [11, 11, 12, 13]


def test_caps_hold_and_requests_spread_over_servers(vllm_server) -> None:
    """Two proxies = two servers. The proxies, not the client, measure concurrency."""
    total = InFlightGauge()
    with (
        CountingProxy(vllm_server.base_url, shared=total, hold_s=0.4) as p1,
        CountingProxy(vllm_server.base_url, shared=total, hold_s=0.4) as p2,
    ):
        cfg = vllm_server.config(
            base_urls=[p1.url, p2.url], max_concurrency_per_server=2, max_concurrency=3
        )

        async def run():
            async with VllmClient(cfg) as client:
                results = await asyncio.gather(
                    *(client.chat(HELLO, seed=i, max_tokens=6) for i in range(14))
                )
                return results, client.stats()

        results, stats = asyncio.run(run())

    assert len(results) == 14
    assert p1.chat_requests + p2.chat_requests == 14
    assert p1.chat_requests > 0 and p2.chat_requests > 0  # spread, not all on one
    assert p1.local.peak <= 2 and p2.local.peak <= 2  # per-server cap
    assert total.peak <= 3  # global cap
    assert total.peak == 3  # and the servers were kept busy up to it
    assert stats["peak_in_flight"] == 3
    assert {r.server for r in results} == {p1.url, p2.url}


def test_503_then_success_is_retried(vllm_server) -> None:
    script = [ScriptedReply(503), ScriptedReply(503)]
    with CountingProxy(vllm_server.base_url, script=script) as proxy:
        cfg = vllm_server.config(base_urls=[proxy.url])

        async def run():
            async with VllmClient(cfg) as client:
                return await client.chat(HELLO, seed=3), client.stats()

        result, stats = asyncio.run(run())
    assert result.attempts == 3
    assert proxy.chat_requests == 3 and proxy.scripted_sent == 2
    assert stats["retries"] == 2 and stats["servers"][proxy.url]["failures"] == 2
    assert result.completion_tokens > 0


def test_429_retry_after_is_honoured(vllm_server) -> None:
    script = [ScriptedReply(429, {"Retry-After": "1"})]
    with CountingProxy(vllm_server.base_url, script=script) as proxy:
        cfg = vllm_server.config(
            base_urls=[proxy.url], retry={"initial_backoff_s": 0.01, "max_backoff_s": 2}
        )

        async def run():
            async with VllmClient(cfg) as client:
                started = time.monotonic()
                result = await client.chat(HELLO, seed=4)
                return result, time.monotonic() - started

        result, elapsed = asyncio.run(run())
    assert result.attempts == 2 and proxy.chat_requests == 2
    assert elapsed >= 1.0  # the server's hint, not the 10 ms backoff


def test_5xx_for_good_names_the_server_after_the_last_attempt(vllm_server) -> None:
    script = [ScriptedReply(500)] * 10
    with CountingProxy(vllm_server.base_url, script=script) as proxy:
        cfg = vllm_server.config(base_urls=[proxy.url], retry={"max_attempts": 3})

        async def run():
            async with VllmClient(cfg) as client:
                with pytest.raises(VllmUnavailableError) as err:
                    await client.chat(HELLO)
                return err.value, client.stats()

        error, stats = asyncio.run(run())
    assert proxy.chat_requests == 3
    assert "after 3 attempt(s)" in str(error) and proxy.url in str(error)
    assert "HTTP 500" in str(error)
    assert stats["failed_requests"] == 1


def test_bad_request_is_not_retried(vllm_server) -> None:
    with CountingProxy(vllm_server.base_url) as proxy:
        cfg = vllm_server.config(base_urls=[proxy.url])

        async def run():
            async with VllmClient(cfg) as client:
                with pytest.raises(VllmRequestError) as err:
                    await client.chat(HELLO, max_tokens=10_000)  # beyond max_model_len
                return err.value

        error = asyncio.run(run())
    assert proxy.chat_requests == 1
    assert proxy.url in str(error) and "HTTP 400" in str(error)


def test_unknown_model_is_caught_at_start(vllm_server) -> None:
    cfg = vllm_server.config(model="no-such-model")

    async def run():
        client = VllmClient(cfg)
        with pytest.raises(VllmRequestError) as err:
            await client.start()
        await client.close()
        return err.value

    error = asyncio.run(run())
    assert "no-such-model" in str(error) and vllm_server.model in str(error)


def test_no_server_listening_fails_the_health_check_naming_it() -> None:
    from verilearn_assets.core.llm.config import VllmConfig

    url = f"http://127.0.0.1:{free_port()}"
    cfg = VllmConfig(model="m", base_urls=[url], timeouts={"health_s": 1, "connect_s": 1})

    async def run():
        with pytest.raises(VllmUnavailableError) as err:
            await VllmClient(cfg).start()
        return err.value

    error = asyncio.run(run())
    assert url in str(error) and "health" in str(error)
