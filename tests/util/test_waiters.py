"""pumice._util.waiters.WaiterLine: one waiter woken per item, oldest first; cancelled waiters
leave the line; a wake-up given to a waiter cancelled before it ran passes on. The two queues that
use it (store.WatchQueue, workqueue.RateLimitingQueue) are checked the same way through their own API."""

from __future__ import annotations

import asyncio
from collections import deque

import pytest

from pumice._util.waiters import WaiterLine
from pumice.apiserver.store import WatchQueue
from pumice.client.workqueue import QueueShutDown, RateLimitingQueue


async def _take(line: WaiterLine, items: deque[str], got: list[str], who: str) -> None:
    while not items:
        waiter = line.enter()
        try:
            await waiter
        except BaseException:
            line.leave(waiter, items)
            raise
    got.append(f"{who}:{items.popleft()}")


async def test_one_item_wakes_the_oldest_waiter_only() -> None:
    line, items, got = WaiterLine(), deque[str](), []
    tasks = [asyncio.create_task(_take(line, items, got, w)) for w in ("a", "b", "c")]
    await asyncio.sleep(0)
    assert len(line) == 3
    items.append("x")
    line.wake_one()
    await asyncio.sleep(0)
    assert got == ["a:x"]
    assert len(line) == 2  # b and c still wait; nobody was woken for nothing
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert not line


async def test_cancelled_waiters_leave_the_line() -> None:
    line, items = WaiterLine(), deque[str]()
    for _ in range(100):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(_take(line, items, [], "t"), 0.001)
    assert len(line) == 0


async def test_a_wake_up_given_to_a_cancelled_waiter_passes_on() -> None:
    line, items, got = WaiterLine(), deque[str](), []
    first = asyncio.create_task(_take(line, items, got, "a"))
    second = asyncio.create_task(_take(line, items, got, "b"))
    await asyncio.sleep(0)
    items.append("x")
    line.wake_one()  # a's future is done, but a has not run yet
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    await asyncio.sleep(0)
    assert got == ["b:x"]
    await second


async def test_both_queues_hand_each_item_to_one_getter() -> None:
    wq: WatchQueue[int] = WatchQueue()
    getters = [asyncio.create_task(wq.get()) for _ in range(3)]
    await asyncio.sleep(0)
    wq.put_nowait(1)
    await asyncio.sleep(0)
    assert [g.done() for g in getters] == [True, False, False]
    assert getters[0].result() == 1
    for g in getters[1:]:
        g.cancel()
    await asyncio.gather(*getters[1:], return_exceptions=True)

    q: RateLimitingQueue[str] = RateLimitingQueue("waiters-test")
    workers = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.add("k")
    await asyncio.sleep(0)
    assert [w.done() for w in workers] == [True, False, False]
    q.shutdown()
    done = await asyncio.gather(*workers, return_exceptions=True)
    assert done[0] == "k"
    assert all(isinstance(e, QueueShutDown) for e in done[1:])
