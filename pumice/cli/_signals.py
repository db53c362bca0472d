"""Signal handling shared by the long-running ``pumice`` subcommands.

A component always stops on SIGTERM or SIGINT, whatever it is waiting on (an informer in its
retry backoff against a server that answers 403, a cache sync that never completes): the first
signal sets the stop Event for a graceful shutdown; if the task that asked for it is still running
``grace`` seconds later it is cancelled, and a second signal cancels it at once. The cancellation
ends ``asyncio.run`` with :class:`asyncio.CancelledError`, which ``pumice``'s command group turns
into one line and exit status 1.

:func:`interrupt_on_signals` is the same two-step contract for a command whose work is one long
synchronous call (``pumice simulate``: a looptime loop that may be busy in a CPU-bound scheduling
session for a while): the first signal calls a function at once, from the signal handler, not
from an event loop that may not get control; a second signal ends the process at once.

Mirrors: client-go's SetupSignalHandler (first signal: stop channel; second: os.Exit(1)).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["DEFAULT_GRACE", "Interrupted", "interrupt_on_signals", "raise_on_signals", "stop_on_signals"]

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


@contextlib.contextmanager
def interrupt_on_signals(on_first: Callable[[signal.Signals], None],
                         last_words: Callable[[], str | None] | None = None) -> Iterator[list[signal.Signals]]:
    """While the block runs, the first SIGINT or SIGTERM calls ``on_first(signal)`` (from the
    signal handler, in the main thread, between two bytecodes: keep it short and non-blocking,
    e.g. :meth:`pumice.simulate.runner.StopFlag.set`); a second one ends the process at once
    with status 128 + its number (130 for SIGINT), quietly: ``os._exit``, no traceback, no
    clean-up, as client-go's second signal does, after writing the line ``last_words()``
    returns, if any, to stderr (e.g. that an output being written is incomplete, and where).
    The handlers in place before are restored on exit. Yields the list of signals received
    (empty, or the first one).

    Must be entered from the main thread (Python delivers signals there only).
    """
    got: list[signal.Signals] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        if got:
            words = last_words() if last_words is not None else None
            if words:
                os.write(2, f"{sig.name} again: {words}\n".encode(errors="replace"))
            os._exit(128 + signum)
        got.append(sig)
        on_first(sig)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield got
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM received inside :func:`raise_on_signals`; :attr:`signal` says which. A
    KeyboardInterrupt, so what handles Ctrl-C handles SIGTERM there the same way."""

    def __init__(self, sig: signal.Signals) -> None:
        super().__init__(sig.name)
        self.signal = sig


@contextlib.contextmanager
def raise_on_signals() -> Iterator[None]:
    """While the block runs, SIGINT or SIGTERM raises :class:`Interrupted` in the main thread,
    also out of a blocking system call: opening a FIFO that no writer opened waits in ``open()``
    for good, and Python resumes a call a signal interrupted unless the handler raised. Installed
    also when the process started with SIGINT ignored (a background job of a shell script), as
    Go's ``signal.Notify`` and so client-go's SetupSignalHandler are. The handlers in place
    before are restored on exit.

    Must be entered from the main thread (Python delivers signals there only).

    Raises:
        Interrupted: a SIGINT or SIGTERM arrived.
    """
    def handler(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signal.Signals(signum))

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
