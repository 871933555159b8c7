import asyncio

from taskq.queue import Job, JobQueue
from taskq.worker import drain, run_job


def test_retries_then_succeeds():
    calls = []

    def flaky(payload):
        calls.append(1)
        if len(calls) < 2:
            raise RuntimeError("once")
        return "ok"

    assert asyncio.run(run_job(Job("j", retries=1), flaky)) == "ok"
    assert len(calls) == 2


def test_async_handler_and_stop_after():
    queue = JobQueue()

    async def handler(payload):
        await asyncio.sleep(0)
        return len(payload)

    async def scenario():
        for name in "xyz":
            await queue.put(Job(name))
        return await drain(queue, handler, stop_after=2)

    assert asyncio.run(scenario()) == 2
    assert queue.finished("x") and not queue.finished("z")
