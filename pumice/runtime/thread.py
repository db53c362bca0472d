"""A component on its own thread and event loop, awaited from the caller's loop.

``pumice up`` runs its components as tasks of one asyncio loop. A component whose work is long
synchronous Python (a Volcano scheduling session, like upstream's one goroutine per cycle) would
hold that loop, and with it the API server, for as long as it runs; on its own thread the API
server answers between the component's bytecodes (the interpreter switches threads every
``sys.getswitchinterval()``, 5 ms by default). The component then talks to the API server as a
separate process would: through a client that is safe from its loop (HTTPS, or the in-process
transport given the server's loop, see :mod:`pumice.client.transport`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["run_in_thread"]

log = logging.getLogger(__name__)


async def run_in_thread(main: Callable[[asyncio.Event], Awaitable[None]], *, stop_event: asyncio.Event,
                        name: str, join_timeout: float = 15.0) -> None:
    """Run ``main(stop)`` on a new daemon thread with its own event loop (``asyncio.run``) and
    return when it returns, or once ``stop_event`` (of the caller's loop) is set and the thread has
    ended. ``stop`` is an Event of the thread's loop, set from ``stop_event``; ``main`` must return
    soon after it is set (a component's ``stop_event``).

    If the thread has not ended ``join_timeout`` seconds after ``stop`` was set, that is logged
    and the call returns (the daemon thread ends with the process). The wait is at most twice
    ``join_timeout``: once for a thread that has not yet started its loop, once for it to end.

    Args:
        main: the component, a coroutine function of its stop Event.
        stop_event: the caller's stop Event.
        name: the thread's name (in logs, py-spy dumps and the warning above).
        join_timeout: seconds to wait for the thread after asking it to stop.
    Raises:
        whatever ``main`` raised, re-raised in the caller's task.
    """
    outer = asyncio.get_running_loop()
    finished: asyncio.Future[None] = outer.create_future()
    started = threading.Event()
    inner: dict[str, Any] = {}

    def report(exc: BaseException | None) -> None:
        if not finished.done():
            finished.set_exception(exc) if exc is not None else finished.set_result(None)

    def target() -> None:
        async def run() -> None:
            inner["loop"], inner["stop"] = asyncio.get_running_loop(), asyncio.Event()
            started.set()
            await main(inner["stop"])

        try:
            asyncio.run(run())
            outcome: BaseException | None = None
        except BaseException as e:
            outcome = e
        finally:
            started.set()
        try:
            outer.call_soon_threadsafe(report, outcome)
        except RuntimeError:  # the caller's loop already closed: nobody is left to re-raise it
            if outcome is not None and not isinstance(outcome, (KeyboardInterrupt, SystemExit)):
                log.error("thread %s ended with %s: %s after its caller's loop closed", name,
                          type(outcome).__name__, outcome)

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    stop_waiter = asyncio.create_task(stop_event.wait())
    waiters: list[asyncio.Future[Any]] = [finished, stop_waiter]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop_waiter.cancel()
        await asyncio.to_thread(started.wait, join_timeout)
        if "loop" in inner:
            with contextlib.suppress(RuntimeError):  # its loop already closed
                inner["loop"].call_soon_threadsafe(inner["stop"].set)
        await asyncio.to_thread(thread.join, join_timeout)
        if thread.is_alive():
            log.warning("thread %s still runs %g s after it was asked to stop; leaving it (a daemon thread)",
                        name, join_timeout)
    if finished.done():
        finished.result()
