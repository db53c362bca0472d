"""A MemoryError in the default scheduler (FATAL_TYPES) ends it: run() raises it, instead of the
scheduling loop or an informer ending alone while run() waits on for a stop."""

from __future__ import annotations

import asyncio

import pytest

from pumice.scheduler.default.scheduler import DefaultScheduler
from pumice.testing.cluster import local_cluster


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}


async def test_a_memory_error_in_a_scheduling_cycle_ends_run(monkeypatch: pytest.MonkeyPatch) -> None:
    async def out_of_memory(self: DefaultScheduler) -> None:
        raise MemoryError("injected")

    monkeypatch.setattr(DefaultScheduler, "schedule_one", out_of_memory)
    async with local_cluster(install_crds=False) as cluster:
        sched = DefaultScheduler(cluster.new_client(), seed=1)
        with pytest.raises(MemoryError, match="injected"):
            await asyncio.wait_for(sched.run(), 30)


async def test_a_memory_error_in_an_informer_it_owns_ends_run() -> None:
    async with local_cluster(install_crds=False) as cluster:
        sched = DefaultScheduler(cluster.new_client(), seed=1)

        def out_of_memory(obj: dict) -> None:
            raise MemoryError("injected")

        sched._pods.add_event_handler(on_add=out_of_memory)
        await cluster.client.create(_pod("p"))  # listed at start: the informer ends before it syncs
        run = asyncio.ensure_future(sched.run())
        with pytest.raises(MemoryError, match="injected"):
            await asyncio.wait_for(run, 30)
