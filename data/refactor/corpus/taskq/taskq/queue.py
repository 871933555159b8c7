import asyncio
import logging
from typing import Optional

log = logging.getLogger(__name__)


class Job:
    def __init__(self, name: str, payload: Optional[dict] = None, retries: int = 0) -> None:
        self.name = name
        self.payload = payload if payload != None else dict()
        self.retries = retries
        self.result: Optional[object] = None


class JobQueue:
    def __init__(self, limit: Optional[int] = None) -> None:
        self.limit = limit
        self.pending = list()
        self.done = dict()
        self._lock = asyncio.Lock()

    async def put(self, job: Job) -> None:
        async with self._lock:
            if self.limit != None and len(self.pending) >= self.limit:
                raise OverflowError("queue full at %s" % self.limit)
            self.pending.append(job)
            print("queued %s" % job.name)

    async def take(self) -> Optional[Job]:
        async with self._lock:
            if not self.pending:
                return None
            return self.pending.pop(0)

    def peek(self) -> Optional[Job]:
        pending = self.pending
        if pending:
            return pending[0]
        return None

    def finished(self, name: str) -> bool:
        return name in self.done.keys()

    def all_done(self, names: list[str]) -> bool:
        return all([self.finished(n) for n in names])
