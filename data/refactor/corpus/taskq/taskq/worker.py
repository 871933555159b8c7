import asyncio
import logging
from typing import Optional

from taskq.queue import Job, JobQueue

log = logging.getLogger(__name__)


async def run_job(job: Job, handler) -> object:
    attempts = 0
    while True:
        try:
            value = handler(job.payload)
            if asyncio.iscoroutine(value):
                value = await value
            return value
        except RuntimeError:
            attempts += 1
            if attempts > job.retries:
                raise
            print("retrying %s" % job.name)


async def drain(queue: JobQueue, handler, stop_after: Optional[int] = None) -> int:
    count = 0
    while True:
        job = await queue.take()
        if job == None:
            break
        job.result = await run_job(job, handler)
        queue.done[job.name] = job.result
        count += 1
        if stop_after != None and count >= stop_after:
            break
    return count


def is_handler_result(value: object) -> bool:
    return isinstance(value, dict) or isinstance(value, list)


def summarize(queue: JobQueue) -> dict:
    out = dict()
    for name in sorted(queue.done.keys()):
        out[name] = "%s" % queue.done[name]
    return out
