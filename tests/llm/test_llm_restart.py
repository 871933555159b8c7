"""Stop the real vLLM server in the middle of a request loop, then bring it back.

While it is down a client with few attempts must fail with an error naming the server;
the patient client's loop must finish with every request answered once it is back.
"""

from __future__ import annotations

import asyncio

import pytest

from verilearn_assets.core.llm.client import VllmClient, VllmUnavailableError

pytestmark = pytest.mark.vllm

PROMPT = [{"role": "user", "content": "Count to three."}]
REQUESTS = 12


def test_requests_survive_a_server_restart(vllm_server) -> None:
    server = vllm_server.server
    patient = vllm_server.config(
        retry={
            "max_attempts": 1000,
            "initial_backoff_s": 0.2,
            "max_backoff_s": 1.0,
            "jitter_s": 0.2,
            "max_elapsed_s": 600,
        },
        timeouts={"health_recheck_s": 0.5},
        max_concurrency_per_server=2,
    )
    impatient = vllm_server.config(retry={"max_attempts": 3})

    async def run():
        quick = VllmClient(impatient)
        await quick.start()  # healthy now; it will see the server go away
        async with VllmClient(patient) as client:
            done = 0
            stopped = asyncio.Event()

            async def worker(seeds: list[int]):
                """One answered request, then the rest once the server is down: every
                later request meets the stopped (then restarting) server."""
                nonlocal done
                out = []
                for seed in seeds:
                    out.append(await client.chat(PROMPT, seed=seed, max_tokens=4))
                    done += 1
                    await stopped.wait()
                return out

            loop_task = asyncio.gather(
                worker(list(range(0, REQUESTS, 2))), worker(list(range(1, REQUESTS, 2)))
            )
            while done < 2:  # the loop is really running before we pull the plug
                await asyncio.sleep(0.05)
            await asyncio.to_thread(server.stop)
            stopped.set()

            # Down for good, as far as a 3-attempt client can tell: a clear error.
            with pytest.raises(VllmUnavailableError) as down:
                await quick.chat(PROMPT, seed=99)
            await quick.close()
            with pytest.raises(VllmUnavailableError) as not_started:
                await VllmClient(impatient).start()

            restart_s = await asyncio.to_thread(_restart, server)
            results = [r for batch in await loop_task for r in batch]
            return results, client.stats(), restart_s, down.value, not_started.value

    results, stats, restart_s, down, not_started = asyncio.run(run())
    assert "after 3 attempt(s)" in str(down) and vllm_server.base_url in str(down)
    assert vllm_server.base_url in str(not_started) and "health" in str(not_started)
    assert len(results) == REQUESTS
    assert all(r.completion_tokens > 0 for r in results)
    assert stats["retries"] > 0 and any(r.attempts > 1 for r in results)
    assert stats["failed_requests"] == 0
    print(f"\nrestart took {restart_s:.1f}s; retries {stats['retries']}")


def _restart(server) -> float:
    server.start()  # same port as before
    return server.wait_healthy()
