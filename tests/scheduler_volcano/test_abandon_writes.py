"""A stop is not held up by the writes a session queued (trial 13 F-2: a wide job's session close
queues a PodScheduled condition per Pending Pod, thousands, and a stop waited for all of them):
once ``SchedulerCache.abandon_writes`` answers True, a queued write that has not started is
dropped; one that started runs to its end; without a stop every write is sent."""

from __future__ import annotations

import asyncio

from pumice._util.clock import LoopClock
from pumice.api import scheme
from pumice.scheduler.volcano.cache.live import SchedulerCache
from pumice.testing.cluster import local_cluster


def _cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


async def test_writes_queued_before_a_stop_that_have_not_started_are_dropped() -> None:
    async with local_cluster() as c:
        cache = SchedulerCache(c.client, clock=LoopClock())
        stopping = False
        cache.abandon_writes = lambda: stopping
        for i in range(3):
            cache._spawn(c.client.create(_cm(f"before-{i}")))
        await cache.flush()  # no stop: every queued write is sent
        for i in range(100):
            cache._spawn(c.client.create(_cm(f"queued-{i}")))
        stopping = True  # the stop comes before any of them has had its turn
        await cache.flush()
        names = {cm["metadata"]["name"] for cm in (await c.client.list(scheme.CONFIG_MAP, "default")).items}
        assert {f"before-{i}" for i in range(3)} <= names
        assert not any(n.startswith("queued-") for n in names)
        assert not cache.pending_writes


async def test_a_write_that_started_before_the_stop_finishes() -> None:
    async with local_cluster() as c:
        cache = SchedulerCache(c.client, clock=LoopClock())
        stopping = False
        cache.abandon_writes = lambda: stopping
        started = asyncio.Event()

        async def write() -> None:
            started.set()
            await asyncio.sleep(0.01)
            await c.client.create(_cm("started"))

        cache._spawn(write())
        await started.wait()
        stopping = True
        await cache.flush()
        assert [cm["metadata"]["name"] for cm in (await c.client.list(scheme.CONFIG_MAP, "default")).items
                if cm["metadata"]["name"] == "started"] == ["started"]


async def test_a_newer_condition_for_a_pod_replaces_its_queued_write() -> None:
    """Trial 14 F-4/F-6: a wide gang's Pending Pods carry its Pending count in their message, so
    sessions that outpace the API server queued one condition write and one FailedScheduling Event
    per Pod per session (gigabytes of backlog, minutes of API latency). A write not yet started
    now takes the newest condition: one write per Pod, the last condition, as a sequence would leave."""
    from pumice.testing.volcano import pod

    async with local_cluster() as c:
        await c.client.create({**pod("p0", namespace="default", requests="10m,1Mi"), "apiVersion": "v1", "kind": "Pod"})
        cache = SchedulerCache(c.client, clock=LoopClock())
        assert await cache.start(timeout=10)
        try:
            before = (await c.client.get(scheme.POD, "p0", "default"))["metadata"]["resourceVersion"]
            for n in (850, 853, 859):  # three sessions' closes before the first write had its turn
                cache.task_unschedulable("default/p0", "Unschedulable", f"pod group is not ready, {n} Pending")
            assert len(cache.pending_writes) == 2  # one condition write and one Event, not six writes
            await cache.flush()
            got = await c.client.get(scheme.POD, "p0", "default")
            conds = [x for x in got["status"]["conditions"] if x["type"] == "PodScheduled"]
            assert [x["message"] for x in conds] == ["pod group is not ready, 859 Pending"]
            assert int(got["metadata"]["resourceVersion"]) > int(before)
            events = [e for e in (await c.client.list(scheme.EVENT, "default")).items
                      if e["involvedObject"]["name"] == "p0" and e["reason"] == "FailedScheduling"]
            assert [e["message"] for e in events] == ["pod group is not ready, 859 Pending"]
            # once written, a newer condition is written again
            cache.task_unschedulable("default/p0", "Unschedulable", "pod group is not ready, 860 Pending")
            await cache.flush()
            got = await c.client.get(scheme.POD, "p0", "default")
            assert [x["message"] for x in got["status"]["conditions"] if x["type"] == "PodScheduled"] == \
                ["pod group is not ready, 860 Pending"]
        finally:
            await cache.stop()


async def _pending_pods(c: object, n: int) -> list[str]:
    from pumice.testing.volcano import pod

    for i in range(n):
        await c.client.create({**pod(f"p{i}", namespace="default", requests="10m,1Mi"),  # type: ignore[attr-defined]
                               "apiVersion": "v1", "kind": "Pod"})
    return [f"default/p{i}" for i in range(n)]


class _InFlight:
    """Counts the client's PATCH (or another ``verb``'s) requests in flight (each takes a
    millisecond, as over a socket: the in-process transport to an in-memory store would answer
    without yielding)."""

    def __init__(self, client: object, verb: str = "patch") -> None:
        self.now = self.most = 0
        self._call = getattr(client, verb)
        setattr(client, verb, self.call)

    async def call(self, *args: object, **kwargs: object) -> object:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0.001)
            return await self._call(*args, **kwargs)
        finally:
            self.now -= 1


def _conditions(pods: list[dict]) -> dict[str, str]:
    return {p["metadata"]["name"]: c["message"] for p in pods for c in (p.get("status") or {}).get("conditions") or []
            if c["type"] == "PodScheduled"}


async def test_at_most_task_updater_workers_condition_writes_run_at_once_and_close_waits_for_all() -> None:
    """Trial 14 F-4: a session's close queued a condition write per Pending Pod, all of them at
    once on the API server (a wide gang: thousands per session, each session). Upstream writes a
    job's tasks' conditions with taskUpdaterWorker (16) workers, and its session close returns
    once they are written; here :meth:`SchedulerCache.wait_close_writes` is that wait."""
    from pumice.scheduler.volcano.cache.live import TASK_UPDATER_WORKERS

    async with local_cluster() as c:
        keys = await _pending_pods(c, 40)
        cache = SchedulerCache(c.client, clock=LoopClock())
        assert await cache.start(timeout=10)
        try:
            patches = _InFlight(c.client)
            for k in keys:
                cache.task_unschedulable(k, "Unschedulable", "pod group is not ready, 40 Pending")
            await cache.wait_close_writes()
            assert patches.most == TASK_UPDATER_WORKERS
            got = _conditions((await c.client.list(scheme.POD, "default")).items)
            assert got == {f"p{i}": "pod group is not ready, 40 Pending" for i in range(40)}
        finally:
            await cache.stop()


async def test_a_stop_drops_the_queued_condition_writes_and_waits_only_for_those_running() -> None:
    """Trial 14 F-5: a stop during a wide gang's churn waited for (or abandoned) thousands of
    condition writes already sent. Now only the writes the workers have started run to their end;
    the queued rest are dropped and counted."""
    from pumice.scheduler.volcano.cache.live import TASK_UPDATER_WORKERS

    async with local_cluster() as c:
        keys = await _pending_pods(c, 40)
        cache = SchedulerCache(c.client, clock=LoopClock())
        stopping = False
        cache.abandon_writes = lambda: stopping
        assert await cache.start(timeout=10)
        try:
            _InFlight(c.client)
            for k in keys:
                cache.task_unschedulable(k, "Unschedulable", "pod group is not ready, 40 Pending")
            await asyncio.sleep(0)  # the workers take their first write each
            stopping = True
            await cache.flush()
            written = _conditions((await c.client.list(scheme.POD, "default")).items)
            assert len(written) == TASK_UPDATER_WORKERS
            # each of the 40 conditions and 40 Events was written or dropped: each worker took one
            assert cache.dropped_writes == (40 - TASK_UPDATER_WORKERS) * 2
            assert not cache.pending_writes
        finally:
            await cache.stop()


async def test_a_condition_write_that_failed_is_written_again_by_the_next_session(caplog: object) -> None:
    """Upstream's job updater logs a failed taskUnschedulable write and the next session, seeing
    the Pod's condition unchanged, writes it again. pumice remembered the condition as written
    (last_pod_conditions) and logged the failure at DEBUG: a transient API error left the Pod
    without its PodScheduled condition for good."""
    import logging

    from pumice.client.base import ApiError
    from pumice.testing.volcano import pod

    async with local_cluster() as c:
        await c.client.create({**pod("p0", namespace="default", requests="10m,1Mi"), "apiVersion": "v1", "kind": "Pod"})
        cache = SchedulerCache(c.client, clock=LoopClock())
        assert await cache.start(timeout=10)
        real_patch, failures = c.client.patch, [ApiError(503, "ServiceUnavailable", "the server is shutting down")]

        async def patch(*args: object, **kwargs: object) -> object:
            if kwargs.get("subresource") == "status" and failures:
                raise failures.pop()
            return await real_patch(*args, **kwargs)

        c.client.patch = patch  # type: ignore[method-assign]
        try:
            with caplog.at_level(logging.WARNING, logger="pumice.scheduler.volcano"):  # type: ignore[attr-defined]
                cache.task_unschedulable("default/p0", "Unschedulable", "pod group is not ready, 1 Pending")
                await cache.flush()
            assert "failed to update unschedulable task status default/p0" in caplog.text  # type: ignore[attr-defined]
            cache.task_unschedulable("default/p0", "Unschedulable", "pod group is not ready, 1 Pending")
            await cache.flush()
            got = await c.client.get(scheme.POD, "p0", "default")
            assert [x["message"] for x in got["status"]["conditions"] if x["type"] == "PodScheduled"] == \
                ["pod group is not ready, 1 Pending"]
        finally:
            await cache.stop()


async def test_failed_scheduling_events_are_written_by_as_many_workers_as_the_conditions() -> None:
    """A wide gang's FailedScheduling Events drained at 6-12 per second: one worker wrote them one
    at a time, each request queued on the API server behind the 16 condition workers' requests.
    They now take as many workers (and recorder writers) as the conditions, each Pod's newest
    Event still replacing a queued older one."""
    from pumice.scheduler.volcano.cache.live import TASK_UPDATER_WORKERS

    async with local_cluster() as c:
        keys = await _pending_pods(c, 40)
        cache = SchedulerCache(c.client, clock=LoopClock())
        assert await cache.start(timeout=10)
        try:
            creates = _InFlight(c.client, "create")
            for k in keys:
                cache.task_unschedulable(k, "Unschedulable", "pod group is not ready, 40 Pending")
            await cache.flush()
            assert creates.most == TASK_UPDATER_WORKERS
            events = (await c.client.list(scheme.EVENT, "default")).items
            assert sorted(e["involvedObject"]["name"] for e in events if e["reason"] == "FailedScheduling") == \
                sorted(f"p{i}" for i in range(40))
        finally:
            await cache.stop()
