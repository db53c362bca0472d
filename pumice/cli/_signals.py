"""Signal handling shared by the long-running ``pumice`` subcommands."""

from __future__ import annotations

import asyncio
import contextlib
import signal


def stop_on_signals() -> asyncio.Event:
    """An Event the running loop sets on SIGINT or SIGTERM (where the loop supports signal
    handlers; elsewhere it is only set by the caller). Call from inside the loop."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop
