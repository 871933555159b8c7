import asyncio
import unittest

import pytest

from taskq.backoff import Backoff, parse_policy, retry


class BackoffTest(unittest.TestCase):
    def setUp(self):
        self.waits = []
        self.calls = 0

    async def record(self, seconds):
        self.waits.append(seconds)

    async def flaky(self):
        self.calls += 1
        if self.calls < 3:
            raise TimeoutError("slow")
        return self.calls

    def test_delays(self):
        policy = Backoff(base=1, factor=3, cap=5)
        self.assertEqual(policy.schedule(4), [1, 3, 5, 5])
        self.assertEqual(Backoff().delay(1), 0.1)
        with pytest.raises(ValueError):
            Backoff(factor=0.5)

    def test_parse_policy(self):
        policy = parse_policy("factor=2, base=0.5")
        self.assertEqual(policy.schedule(3), [0.5, 1.0, 2.0])
        self.assertEqual(parse_policy("cap=1").cap, 1.0)
        with pytest.raises(ValueError):
            parse_policy("base=1, jitter=2")

    def test_retry_waits_between_attempts(self):
        result = asyncio.run(retry(self.flaky, 3, Backoff(base=2), sleep=self.record))
        self.assertEqual(result, 3)
        self.assertEqual(self.waits, [2, 4])

    def test_retry_gives_up(self):
        with pytest.raises(TimeoutError):
            asyncio.run(retry(self.flaky, 2, sleep=self.record))
        self.assertEqual(self.calls, 2)
        self.assertTrue(len(self.waits) == 1)
        with pytest.raises(ValueError):
            asyncio.run(retry(self.flaky, 0))
