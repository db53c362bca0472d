"""The Volcano scheduler's cache does not hand out a snapshot once one of its informers stopped
for good (a MemoryError, FATAL_TYPES): the cycle raises it and the scheduler ends, instead of
scheduling on objects that no longer follow the API."""

from __future__ import annotations

import asyncio

import pytest

from pumice._util.clock import LoopClock
from pumice.scheduler.volcano.cache.live import SchedulerCache
from pumice.testing.cluster import local_cluster


async def test_a_snapshot_after_an_informer_ran_out_of_memory_raises_it() -> None:
    async with local_cluster() as c:
        cache = SchedulerCache(c.client, clock=LoopClock())

        def out_of_memory(obj: dict) -> None:
            if obj["metadata"]["name"] == "boom":
                raise MemoryError("injected")

        cache.informers["Namespace"].add_event_handler(on_add=out_of_memory)
        await cache.start()
        cache.snapshot()  # fine so far
        await c.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "boom"}})
        for _ in range(100):
            if cache.factory.failure is not None:
                break
            await asyncio.sleep(0.01)
        with pytest.raises(MemoryError, match="injected"):
            cache.snapshot()
        await cache.stop()
