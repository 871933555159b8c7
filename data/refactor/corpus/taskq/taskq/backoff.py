"""Retry policies: how long to wait before a failed call is tried again.

The sleep function is a parameter, so a caller (or a test) decides what waiting means.
"""
import asyncio
import logging
from typing import Optional

log = logging.getLogger(__name__)


class Backoff:
    def __init__(self, base: float = 0.1, factor: float = 2.0, cap: Optional[float] = None) -> None:
        if base < 0 or factor < 1:
            raise ValueError("bad backoff: base %s" % base)
        self.base = base
        self.factor = factor
        self.cap = cap

    def delay(self, attempt: int) -> float:
        wait = self.base * self.factor ** (attempt - 1)
        if self.cap != None:
            wait = min(wait, self.cap)
        return wait

    def schedule(self, attempts: int) -> list:
        return [self.delay(n) for n in range(1, attempts + 1)]


def parse_policy(text: str) -> Backoff:
    """`base=0.5, factor=3, cap=10` in any order; missing keys keep their defaults."""
    fields = dict()
    for part in text.split(","):
        key, _, value = part.partition("=")
        if key.strip():
            fields[key.strip()] = float(value)
    unknown = sorted(k for k in fields if k not in ("base", "factor", "cap"))
    if unknown:
        raise ValueError("unknown policy key %s" % unknown[0])
    return Backoff(**fields)


async def retry(call, attempts: int, policy: Optional[Backoff] = None, sleep=None) -> object:
    if attempts < 1:
        raise ValueError("attempts must be positive, got %s" % attempts)
    policy = policy if policy != None else Backoff()
    pause = sleep if sleep != None else asyncio.sleep
    attempt = 1
    while True:
        try:
            return await call()
        except (RuntimeError, TimeoutError):
            if attempt == attempts:
                raise
            print("attempt %s failed" % attempt)
            await pause(policy.delay(attempt))
            attempt += 1
