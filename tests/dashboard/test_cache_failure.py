"""Review 18 R-3: an informer of the dashboard's cache that stops for good (a MemoryError in a
handler) ends the dashboard with it, instead of the pages showing a cache that no longer follows
the API."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from pumice._util.clock import LoopClock
from pumice.dashboard.cache import ClusterCache
from pumice.dashboard.server import _serve
from pumice.testing.fake_client import FakeClient


class _Sampler:
    def tick(self) -> None:
        pass

    async def run(self, stop: asyncio.Event) -> None:
        await stop.wait()


class _Server:
    """The HTTP server: serves until cancelled."""

    async def serve(self, sockets: list[socket.socket]) -> None:
        await asyncio.Event().wait()


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


async def test_an_informer_of_the_cache_that_dies_ends_the_dashboard() -> None:
    fake = FakeClient(clock=LoopClock())
    cache = ClusterCache(fake, kinds=["Namespace"])

    def out_of_memory(obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "b":
            raise MemoryError("injected")

    cache.informers["Namespace"].add_event_handler(on_add=out_of_memory)
    ready = asyncio.Event()
    tasks: list[asyncio.Task[Any]] = []
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        serving = asyncio.ensure_future(_serve(cache, _Sampler(), _Server(), sock,  # type: ignore[arg-type]
                                               asyncio.Event(), tasks, lambda _url: ready.set()))
        await asyncio.wait_for(ready.wait(), 5)
        await fake.create(_namespace("b"))
        try:
            with pytest.raises(MemoryError, match="injected"):
                await asyncio.wait_for(serving, 5)
        finally:
            for t in tasks:
                t.cancel()
            await cache.stop()
