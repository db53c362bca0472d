"""The scheduling queue: priority order, unschedulable parking, backoff 1 s doubling to 10 s."""

from __future__ import annotations

from pumice.scheduler.default.queue import SchedulingQueue


def test_higher_priority_pops_first_then_fifo() -> None:
    q = SchedulingQueue()
    q.add("a", "ns", "a", 0, now=0.0)
    q.add("b", "ns", "b", 10, now=1.0)
    q.add("c", "ns", "c", 0, now=2.0)
    order = [q.pop_nowait().uid for _ in range(3)]  # type: ignore[union-attr]
    assert order == ["b", "a", "c"]


def test_failed_pod_waits_for_a_cluster_change_then_backs_off() -> None:
    q = SchedulingQueue()
    q.add("a", "ns", "a", 0, now=0.0)
    assert q.pop_nowait() is not None
    q.failed("a", now=0.0)
    assert q.unschedulable_count == 1
    q.flush(now=5.0)
    assert q.pop_nowait() is None
    q.move_all_to_active_or_backoff(now=0.5)  # within the 1 s backoff
    assert q.backoff_count == 1 and q.pop_nowait() is None
    q.flush(now=1.0)
    assert q.pop_nowait().uid == "a"  # type: ignore[union-attr]


def test_backoff_doubles_up_to_ten_seconds() -> None:
    q = SchedulingQueue()
    assert [q.backoff_duration(n) for n in (1, 2, 3, 4, 5, 6)] == [1, 2, 4, 8, 10, 10]


def test_a_change_during_the_attempt_sends_the_pod_to_backoff_not_unschedulable() -> None:
    q = SchedulingQueue()
    q.add("a", "ns", "a", 0, now=0.0)
    q.pop_nowait()
    q.move_all_to_active_or_backoff(now=0.0)
    q.failed("a", now=0.0)
    assert q.backoff_count == 1 and q.unschedulable_count == 0


def test_unschedulable_pods_retry_after_five_minutes_without_changes() -> None:
    q = SchedulingQueue()
    q.add("a", "ns", "a", 0, now=0.0)
    q.pop_nowait()
    q.failed("a", now=0.0)
    q.flush(now=299.0)
    assert q.pop_nowait() is None
    q.flush(now=300.0)
    assert q.pop_nowait().uid == "a"  # type: ignore[union-attr]


def test_deleted_pod_is_never_popped() -> None:
    q = SchedulingQueue()
    q.add("a", "ns", "a", 0, now=0.0)
    q.delete("a")
    assert q.pop_nowait() is None


async def test_wait_parked_returns_only_once_a_pod_is_parked() -> None:
    """The flush loop waits here while nothing is parked (trial 7 F-5: under pumice simulate's
    virtual clock, one wake-up per idle second made a simulated week cost ~100 s of wall time)."""
    import asyncio

    q = SchedulingQueue()
    waiter = asyncio.create_task(q.wait_parked())
    q.add("a", "ns", "a", 0, now=0.0)
    q.pop_nowait()
    await asyncio.sleep(0)
    assert not waiter.done()  # active or in flight is not parked: flush has nothing to move
    q.failed("a", now=0.0)
    await asyncio.wait_for(waiter, 1)
    assert q.unschedulable_count == 1
    await asyncio.wait_for(q.wait_parked(), 1)  # still parked: at once
