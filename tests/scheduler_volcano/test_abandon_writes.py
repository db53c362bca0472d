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
