"""A line of coroutines waiting for items, woken one per item, oldest first.

Both of pumice's hand-out queues need it: a watcher's event queue
(:class:`pumice.apiserver.store.WatchQueue`) and a controller's work queue
(:class:`pumice.client.workqueue.RateLimitingQueue`). Waking one waiter per item instead of every idle
one (what an :class:`asyncio.Event` would do) is what :class:`asyncio.Queue` does, and what
client-go's work queue does (``sync.Cond.Signal`` on ``Add``).

Use, with ``items`` the caller's ready items (any sized container)::

    while not items:
        waiter = line.enter()
        try:
            await waiter
        except BaseException:
            line.leave(waiter, items)
            raise
    item = items.popleft()

and ``line.wake_one()`` after each item made ready.

Mirrors: asyncio.queues.Queue's ``_getters`` handling (3.11).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sized

__all__ = ["WaiterLine"]


class WaiterLine(deque["asyncio.Future[None]"]):
    """Waiting coroutines' futures, oldest first (a deque, so ``if line:`` costs no Python call
    on the hot path of every put). Not thread-safe (one event loop)."""

    __slots__ = ()

    def enter(self) -> asyncio.Future[None]:
        """A new future at the end of the line, for the caller to await.

        Raises:
            RuntimeError: no running event loop.
        """
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.append(waiter)
        return waiter

    def leave(self, waiter: asyncio.Future[None], items: Sized) -> None:
        """Take ``waiter`` off the line after its await raised (cancelled or otherwise).

        Not yet woken: it leaves the line, so a caller whose waits time out again and again leaves
        nothing behind. Woken, then cancelled before it ran: its wake-up passes to the next waiter
        while ``items`` still holds something, so no item waits with a waiter idle."""
        if waiter.cancel() or waiter.cancelled():
            try:
                self.remove(waiter)
            except ValueError:
                pass  # already taken off the line by wake_one
        elif items:
            self.wake_one()

    def wake_one(self) -> None:
        """Wake the longest-waiting coroutine still waiting (none: nothing happens)."""
        while self:
            waiter = self.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def wake_all(self) -> None:
        """Wake every waiting coroutine (shutdown)."""
        while self:
            self.wake_one()
