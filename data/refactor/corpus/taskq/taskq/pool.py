"""Several workers draining one queue concurrently; failures go to a dead-letter list."""
import asyncio
import logging
from typing import Optional

from taskq.queue import JobQueue
from taskq.worker import run_job

log = logging.getLogger(__name__)


class WorkerPool:
    def __init__(self, queue: JobQueue, handler, size: int = 2) -> None:
        if size < 1:
            raise ValueError("pool size %s" % size)
        self.queue = queue
        self.handler = handler
        self.size = size
        self.processed = dict()
        self.dead = list()

    async def worker(self, index: int) -> None:
        self.processed[index] = 0
        while True:
            job = await self.queue.take()
            if job == None:
                return
            try:
                job.result = await run_job(job, self.handler)
            except RuntimeError as exc:
                self.dead.append((job.name, str(exc)))
                print("dead letter %s" % job.name)
                continue
            self.queue.done[job.name] = job.result
            self.processed[index] += 1

    async def run(self) -> dict:
        await asyncio.gather(*[self.worker(i) for i in range(self.size)])
        return self.stats()

    def stats(self) -> dict:
        return dict(done=len(self.queue.done), dead=len(self.dead), workers=self.size)

    def failed(self, name: str) -> Optional[str]:
        for job_name, reason in self.dead:
            if job_name == name:
                return reason
        return None

    def busy_workers(self) -> int:
        return sum([1 for n in self.processed.values() if n > 0])
