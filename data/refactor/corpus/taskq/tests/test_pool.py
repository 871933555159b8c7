import asyncio

import pytest

from taskq.pool import WorkerPool
from taskq.queue import Job, JobQueue
from taskq.store import load_results, save_results, saved_queues


def fill(names, retries=0):
    queue = JobQueue()

    async def put_all():
        for name in names:
            await queue.put(Job(name, {"n": len(name)}, retries=retries))

    asyncio.run(put_all())
    return queue


async def measure(payload):
    await asyncio.sleep(0)
    if payload["n"] > 4:
        raise RuntimeError("too long")
    return payload["n"] * 2


def test_pool_drains_and_dead_letters():
    queue = fill(["a", "bb", "ccc", "toolong", "dd"])
    pool = WorkerPool(queue, measure, size=3)
    stats = asyncio.run(pool.run())
    assert stats == {"done": 4, "dead": 1, "workers": 3}
    assert queue.done == {"a": 2, "bb": 4, "ccc": 6, "dd": 4}
    assert pool.failed("toolong") == "too long"
    assert pool.failed("a") is None
    assert pool.busy_workers() >= 2
    assert queue.peek() is None


def test_retries_count_per_job():
    calls = {}

    def once_flaky(payload):
        calls[payload["n"]] = calls.get(payload["n"], 0) + 1
        if calls[payload["n"]] == 1:
            raise RuntimeError("first try")
        return "ok"

    queue = fill(["x", "yy"], retries=1)
    assert asyncio.run(WorkerPool(queue, once_flaky, size=1).run())["done"] == 2
    assert calls == {1: 2, 2: 2}


def test_results_round_trip(tmp_path):
    directory = str(tmp_path / "results")
    path = save_results(directory, "nightly", {"b": 2, "a": 1})
    assert path.endswith("nightly.json")
    assert load_results(directory, "nightly") == {"a": 1, "b": 2}
    assert load_results(directory, "weekly", default={}) == {}
    save_results(directory, "adhoc", {})
    assert saved_queues(directory) == ["adhoc", "nightly"]
    with pytest.raises(FileNotFoundError, match="weekly.json"):
        load_results(directory, "weekly")
