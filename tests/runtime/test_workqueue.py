"""Work queue semantics: dedup, exclusivity, delays, backoff, token bucket, shutdown.

Ports the behaviour checked by client-go util/workqueue queue_test.go, delaying_queue_test.go and
default_rate_limiters_test.go. Delays run on looptime's virtual clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from prometheus_client import REGISTRY

from pumice._util.clock import FakeClock, LoopClock
from pumice.client.workqueue import (
    WORKQUEUE_ADDS,
    WORKQUEUE_RETRIES,
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    QueueShutDown,
    RateLimitingQueue,
    default_controller_rate_limiter,
)


async def test_an_item_added_twice_before_it_is_taken_comes_out_once() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("dedup", clock=LoopClock())
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"
    assert len(q) == 0


async def test_an_item_added_while_processing_is_requeued_only_on_done() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("exclusive", clock=LoopClock())
    q.add("a")
    item = await q.get()
    q.add("a")
    q.add("a")
    assert len(q) == 0, "must not be handed to a second worker while the first holds it"
    q.done(item)
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    assert len(q) == 0


async def test_concurrent_workers_never_hold_the_same_item() -> None:
    q: RateLimitingQueue[int] = RateLimitingQueue("workers", clock=LoopClock())
    holding: set[int] = set()
    overlaps = []
    processed = []

    async def worker() -> None:
        while True:
            try:
                item = await q.get()
            except QueueShutDown:
                return
            if item in holding:
                overlaps.append(item)
            holding.add(item)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            holding.discard(item)
            processed.append(item)
            q.done(item)

    workers = [asyncio.create_task(worker()) for _ in range(8)]
    for _ in range(20):
        for i in range(5):
            q.add(i)
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)
    q.shutdown()
    await asyncio.gather(*workers)
    assert overlaps == []
    assert set(processed) == {0, 1, 2, 3, 4}


async def test_get_waits_for_an_add() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("wait", clock=LoopClock())
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    q.add("x")
    assert await getter == "x"


async def test_an_item_wakes_one_waiting_worker_the_longest_waiting() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("wake-one", clock=LoopClock())
    resumed: list[int] = []
    got: dict[int, str] = {}

    async def worker(i: int) -> None:
        got[i] = await q.get()

    tasks = [asyncio.create_task(worker(i)) for i in range(4)]
    await asyncio.sleep(0)
    waiters = list(q._getters)
    assert len(waiters) == 4

    def note(i: int) -> Callable[[object], None]:
        return lambda _f: resumed.append(i)

    for i, w in enumerate(waiters):
        w.add_done_callback(note(i))
    q.add("x")
    for _ in range(3):
        await asyncio.sleep(0)
    assert got == {0: "x"}, "the longest-waiting worker takes the item"
    assert resumed == [0], "the other idle workers are not woken for it"
    assert [t.done() for t in tasks] == [True, False, False, False]
    q.add("y")
    q.add("z")
    for _ in range(3):
        await asyncio.sleep(0)
    assert got == {0: "x", 1: "y", 2: "z"}
    assert resumed == [0, 1, 2]
    q.shutdown()
    with pytest.raises(QueueShutDown):
        await tasks[3]


async def test_a_worker_cancelled_after_its_wake_up_hands_the_item_on() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("wake-cancel", clock=LoopClock())
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("x")  # wakes ``first``...
    first.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, 1) == "x"


async def test_gets_that_time_out_leave_no_waiter_behind() -> None:
    # review11: a get cancelled while it waited stayed on the waiters' line until the next add
    q: RateLimitingQueue[str] = RateLimitingQueue("get-timeouts", clock=LoopClock())
    for _ in range(100):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(q.get(), 0.01)
    assert len(q._getters) == 0
    waiting = asyncio.create_task(q.get())  # and the line still works
    await asyncio.sleep(0)
    q.add("x")
    assert await asyncio.wait_for(waiting, 1) == "x"


async def test_shutdown_drains_ready_items_then_raises_and_ignores_adds() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("shutdown", clock=LoopClock())
    q.add("a")
    q.shutdown()
    q.add("b")
    assert await q.get() == "a"
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_shutdown_wakes_a_waiting_get() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("shutdown-wake", clock=LoopClock())
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shutdown()
    with pytest.raises(QueueShutDown):
        await getter


@pytest.mark.looptime
async def test_add_after_releases_items_in_ready_time_order() -> None:
    loop = asyncio.get_running_loop()
    q: RateLimitingQueue[str] = RateLimitingQueue("delay-order", clock=LoopClock())
    t0 = loop.time()
    q.add_after("late", 3.0)
    q.add_after("early", 1.0)
    q.add_after("middle", 2.0)
    out = []
    for _ in range(3):
        out.append((await q.get(), round(loop.time() - t0, 3)))
    assert out == [("early", 1.0), ("middle", 2.0), ("late", 3.0)]
    q.shutdown()


@pytest.mark.looptime
async def test_add_after_keeps_the_earliest_ready_time_for_one_item() -> None:
    loop = asyncio.get_running_loop()
    q: RateLimitingQueue[str] = RateLimitingQueue("delay-earliest", clock=LoopClock())
    t0 = loop.time()
    q.add_after("a", 5.0)
    q.add_after("a", 1.0)
    q.add_after("a", 3.0)
    assert await q.get() == "a"
    assert round(loop.time() - t0, 3) == 1.0
    q.done("a")
    await asyncio.sleep(10)
    assert len(q) == 0, "superseded delays must not add the item again"
    q.shutdown()


@pytest.mark.looptime
@pytest.mark.timeout(30)
async def test_a_ready_time_a_rounding_error_away_is_released() -> None:
    """0.035 + 0.04 is 0.07500000000000001 in floats while the virtual clock says 0.075: the
    delay loop slept 1e-17 s again and again without time moving (a controller's fifth retry
    never ran under looptime, e.g. in ``pumice simulate``)."""
    loop = asyncio.get_running_loop()
    q: RateLimitingQueue[str] = RateLimitingQueue("delay-rounding", clock=LoopClock())
    await asyncio.sleep(0.035 - loop.time())
    q.add_after("a", 0.04)
    assert await q.get() == "a"
    assert round(loop.time(), 3) == 0.075
    q.shutdown()


async def test_add_after_zero_adds_now() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("delay-zero", clock=LoopClock())
    q.add_after("a", 0)
    assert len(q) == 1


def test_per_item_backoff_doubles_from_5ms_and_caps_at_1000s() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [rl.when("a") for _ in range(20)]
    assert delays[:5] == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert delays[-1] == 1000.0
    assert max(delays) == 1000.0
    assert rl.num_requeues("a") == 20
    assert rl.when("b") == 0.005, "backoff is per item"
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.005


def test_backoff_stays_capped_after_very_many_failures() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    for _ in range(2000):
        delay = rl.when("a")
    assert delay == 1000.0


def test_token_bucket_allows_a_burst_then_spaces_by_qps() -> None:
    clock = FakeClock()
    rl: BucketRateLimiter[str] = BucketRateLimiter(10.0, 100, clock=clock)
    burst = [rl.when(f"i{i}") for i in range(100)]
    assert burst == [0.0] * 100
    assert rl.when("x") == pytest.approx(0.1)
    assert rl.when("y") == pytest.approx(0.2)
    clock.advance(10.0)
    assert rl.when("z") == 0.0


def test_default_controller_rate_limiter_takes_the_larger_delay() -> None:
    clock = FakeClock()
    rl = default_controller_rate_limiter(clock)
    assert isinstance(rl, MaxOfRateLimiter)
    first = [rl.when("same") for _ in range(3)]
    assert first == [0.005, 0.01, 0.02]
    for i in range(100):
        rl.when(f"other{i}")
    assert rl.when("fresh") >= 0.1 - 1e-9, "global bucket exhausted: its delay dominates 5 ms"
    assert rl.num_requeues("same") == 3


@pytest.mark.looptime
async def test_add_rate_limited_retries_after_the_backoff_and_forget_resets_it() -> None:
    loop = asyncio.get_running_loop()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        "rate-limited", rate_limiter=ItemExponentialFailureRateLimiter(1.0, 8.0), clock=LoopClock()
    )
    times = []
    t0 = loop.time()
    q.add("a")
    for _ in range(5):
        item = await q.get()
        times.append(round(loop.time() - t0, 3))
        q.add_rate_limited(item)
        q.done(item)
    assert times == [0.0, 1.0, 3.0, 7.0, 15.0]
    assert q.num_requeues("a") == 5
    q.forget("a")
    assert q.num_requeues("a") == 0
    q.shutdown()


async def test_metrics_count_adds_depth_and_retries_per_queue_name() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("metrics-q", clock=LoopClock())
    adds0 = WORKQUEUE_ADDS.labels("metrics-q").get()
    retries0 = WORKQUEUE_RETRIES.labels("metrics-q").get()
    q.add("a")
    q.add("a")
    q.add("b")
    assert WORKQUEUE_ADDS.labels("metrics-q").get() - adds0 == 2
    assert REGISTRY.get_sample_value("workqueue_depth", {"name": "metrics-q"}) == 2
    item = await q.get()
    q.add_rate_limited(item)
    q.done(item)
    assert WORKQUEUE_RETRIES.labels("metrics-q").get() - retries0 == 1
    q.shutdown()


async def test_a_queue_that_keeps_no_metrics_counts_nothing_and_reads_no_clock_outside_delays() -> None:
    class NoClock(FakeClock):
        def monotonic(self) -> float:
            raise AssertionError("read the clock")

    q: RateLimitingQueue[str] = RateLimitingQueue("lean-q", clock=NoClock(), keep_metrics=False)
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    item = await q.get()
    q.add(item)  # added again while processing: queued once more on done
    q.done(item)
    assert [await q.get(), await q.get()] == ["b", "a"]
    assert q.started_at("a") is None
    for name in ("workqueue_adds_total", "workqueue_depth"):
        assert REGISTRY.get_sample_value(name, {"name": "lean-q"}) is None
    q.shutdown()


@pytest.mark.looptime
async def test_unfinished_work_metrics_follow_items_in_process() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("unfinished-q", clock=LoopClock())
    assert q.longest_running_seconds() == 0.0
    q.add("a")
    q.add("b")
    a = await q.get()
    await asyncio.sleep(3)
    b = await q.get()
    await asyncio.sleep(1)
    assert round(q.longest_running_seconds(), 3) == 4.0
    assert round(q.unfinished_work_seconds(), 3) == 5.0
    q.done(a)
    q.done(b)
    assert q.unfinished_work_seconds() == 0.0
    q.shutdown()


async def test_a_repeated_done_does_not_queue_an_item_twice() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue("double-done", clock=LoopClock())
    q.add("a")
    item = await q.get()
    q.add("a")
    q.done(item)
    q.done(item)
    assert len(q) == 1
    q.shutdown()
