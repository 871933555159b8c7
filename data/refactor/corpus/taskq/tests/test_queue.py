import asyncio
import unittest

import pytest

from taskq.queue import Job, JobQueue
from taskq.worker import drain, is_handler_result, summarize


class QueueTest(unittest.TestCase):
    def setUp(self):
        self.queue = JobQueue(limit=3)

    def test_put_and_drain(self):
        async def scenario():
            await self.queue.put(Job("a", {"x": 1}))
            await self.queue.put(Job("b", {"x": 2}))
            return await drain(self.queue, lambda p: p["x"] * 10)

        self.assertEqual(asyncio.run(scenario()), 2)
        self.assertEqual(summarize(self.queue), {"a": "10", "b": "20"})
        self.assertTrue(self.queue.all_done(["a", "b"]))

    def test_limit(self):
        async def scenario():
            for name in "abcd":
                await self.queue.put(Job(name))

        with pytest.raises(OverflowError):
            asyncio.run(scenario())

    def test_peek(self):
        self.assertEqual(self.queue.peek(), None)
        asyncio.run(self.queue.put(Job("p")))
        self.assertEqual(self.queue.peek().name, "p")

    def test_kinds(self):
        self.assertTrue(is_handler_result({}))
        self.assertTrue(is_handler_result([]))
        self.assertFalse(is_handler_result(1))
