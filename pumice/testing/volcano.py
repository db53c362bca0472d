"""Test harness for the Volcano controllers: a scheme with the Volcano kinds, a Manager running
the controllers over any KubeClient, and an ``eventually`` poller."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pumice.api.scheme import Scheme
from pumice.client.base import KubeClient
from pumice.controllers.volcano import keys, setup
from pumice.runtime.manager import Manager


def volcano_scheme() -> Scheme:
    """The built-in kinds plus Job, PodGroup, Queue, Command and NetworkPolicy."""
    s = Scheme.builtin()
    for rk in (keys.VCJOB, keys.PODGROUP, keys.QUEUE, keys.COMMAND, keys.NETWORKPOLICY):
        s.add(rk)
    return s


async def eventually(fn: Callable[[], Awaitable[Any] | Any], timeout: float = 5.0, interval: float = 0.005) -> Any:
    """Poll ``fn`` until it returns a truthy value (or an awaitable of one); returns it.

    Raises:
        AssertionError: when ``timeout`` seconds of loop time pass first.
    """
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    last: Any = None
    while loop.time() < end:
        last = fn()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met in {timeout}s (last value {last!r})")


@contextlib.asynccontextmanager
async def running_controllers(client: KubeClient, **options: Any) -> AsyncIterator[Manager]:
    """A Manager with the Volcano controllers, started; stopped on exit."""
    mgr = Manager(client)
    setup(mgr, **options)
    task = asyncio.create_task(mgr.start())
    await mgr.wait_started()
    try:
        yield mgr
    finally:
        mgr.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)
