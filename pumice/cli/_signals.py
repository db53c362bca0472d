"""Signal handling shared by the long-running ``pumice`` subcommands.

A component always stops on SIGTERM or SIGINT, whatever it is waiting on (an informer in its
retry backoff against a server that answers 403, a cache sync that never completes): the first
signal sets the stop Event for a graceful shutdown; if the task that asked for it is still running
``grace`` seconds later it is cancelled, and a second signal cancels it at once. The cancellation
ends ``asyncio.run`` with :class:`asyncio.CancelledError`, which ``pumice``'s command group turns
into one line and exit status 1.

Mirrors: client-go's SetupSignalHandler (first signal: stop channel; second: os.Exit(1)).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

__all__ = ["DEFAULT_GRACE", "stop_on_signals"]

log = logging.getLogger(__name__)

#: seconds a component has between the first signal and its cancellation
DEFAULT_GRACE = 5.0


def stop_on_signals(*, grace: float = DEFAULT_GRACE) -> asyncio.Event:
    """An Event the running loop sets on SIGINT or SIGTERM (where the loop supports signal
    handlers; elsewhere it is only set by the caller). Call from inside the task that runs the
    component: that task is cancelled ``grace`` seconds after the first signal if it has not
    returned by then, and at once on a second signal."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    deadline: asyncio.TimerHandle | None = None

    def cancel(why: str) -> None:
        if task is not None and not task.done():
            log.warning("%s: cancelling", why)
            task.cancel(why)

    def on_signal(sig: signal.Signals) -> None:
        nonlocal deadline
        if stop.is_set():
            cancel(f"second {sig.name}")
            return
        stop.set()
        if task is not None:
            deadline = loop.call_later(grace, cancel, f"still running {grace:g} s after {sig.name}")
            task.add_done_callback(lambda _: deadline.cancel() if deadline is not None else None)

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, on_signal, sig)
    return stop
