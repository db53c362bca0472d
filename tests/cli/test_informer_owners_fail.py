"""Review 18 R-3: an informer that stops for good (a MemoryError in a handler) ends its owner.
``pumice up``'s and the node-agent CLI's simulated Ray dashboard informers only logged it and went
on serving from a cache that no longer followed the API; now the component's task raises it (so
``pumice up`` ends) and ``pumice node-agent`` fails. (The dashboard's cache:
tests/dashboard/test_cache_failure.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pumice._util.clock import LoopClock
from pumice.api.scheme import Scheme
from pumice.cli.node_agent import _wait_stopped
from pumice.cli.up import _run_informers
from pumice.client.informer import SharedInformerFactory
from pumice.testing.fake_client import FakeClient

CONFIGMAP = Scheme.builtin().by_api_version_kind("v1", "ConfigMap")


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


async def _dying_factory() -> tuple[FakeClient, SharedInformerFactory]:
    """A factory whose ConfigMap informer's handler runs out of memory on the ConfigMap "b"."""
    fake = FakeClient(clock=LoopClock())
    factory = SharedInformerFactory(fake)

    def out_of_memory(obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "b":
            raise MemoryError("injected")

    assert CONFIGMAP is not None
    factory.informer(CONFIGMAP).add_event_handler(on_add=out_of_memory)
    return fake, factory


async def test_an_informer_of_pumice_up_s_ray_dashboard_that_dies_ends_its_task() -> None:
    fake, factory = await _dying_factory()
    stop = asyncio.Event()
    run = asyncio.ensure_future(_run_informers(factory, stop))
    assert await factory.wait_for_cache_sync(timeout=5)
    await fake.create(_configmap("b"))
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(run, 5)
    assert not stop.is_set() and not any(inf.running for inf in factory.informers())


async def test_pumice_up_s_ray_dashboard_informers_stop_with_pumice_up() -> None:
    _, factory = await _dying_factory()
    stop = asyncio.Event()
    run = asyncio.ensure_future(_run_informers(factory, stop))
    assert await factory.wait_for_cache_sync(timeout=5)
    stop.set()
    await asyncio.wait_for(run, 5)
    assert not any(inf.running for inf in factory.informers())


class _Agent:
    """A node agent that runs until the stop."""

    async def wait_stopped(self, stop: asyncio.Event) -> None:
        await stop.wait()


async def test_an_informer_of_the_node_agent_s_ray_dashboard_that_dies_fails_the_agent() -> None:
    fake, factory = await _dying_factory()
    await factory.start()
    assert await factory.wait_for_cache_sync(timeout=5)
    waiting = asyncio.ensure_future(_wait_stopped(_Agent(), asyncio.Event(), factory))
    await fake.create(_configmap("b"))
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(waiting, 5)
    await factory.stop()
