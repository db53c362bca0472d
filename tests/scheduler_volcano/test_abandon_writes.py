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
