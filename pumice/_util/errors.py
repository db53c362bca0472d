"""Which exceptions mean a bug in pumice rather than a failure a user or the cluster caused.

A failed API call, a missing object, bad input or an unreachable peer is an expected failure: it
is reported in one line (CLI) or logged in one line and retried (controllers). An exception of one
of :data:`BUG_TYPES` is a programming error: the CLI marks it internal, the controllers log its
traceback.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Callable
from typing import Any

BUG_TYPES: tuple[type[BaseException], ...] = (
    AttributeError, AssertionError, IndexError, KeyError, LookupError, NameError, NotImplementedError,
    RecursionError, RuntimeError, TypeError, ZeroDivisionError,
)


#: exceptions after which the process cannot go on as it was, so a loop that retries failures (a
#: controller's reconcile, a scheduler's cycle) re-raises them instead: the component ends, and the
#: program with it (``pumice simulate``: ComponentFailed, exit 1; ``pumice up``: the component's
#: failure stops it). Retrying an out-of-memory reconcile with backoff only spins, never advancing.
#: Mirrors Go's runtime, where running out of memory is ``fatal error: runtime: out of memory``
#: and ends the process: no recover() can retry it.
FATAL_TYPES: tuple[type[BaseException], ...] = (MemoryError,)


def watch_task(task: asyncio.Task[Any], *, owner: str, logger: logging.Logger,
               on_fatal: Callable[[BaseException], None], what: str | None = None) -> None:
    """The one rule for the end of a task nobody awaits (a write, a binding cycle, a Pod worker, a
    job's clean-up), added as its done callback: a normal end or a cancel is nothing; a
    :data:`FATAL_TYPES` error is handed to ``on_fatal`` (the owner fails with it: it ends, and
    the program with it); any other exception is logged at ERROR as ``<owner>: <what> failed:
    <Type>: <message>`` with its traceback, and the owner goes on (an error the task did not
    catch is never lost: the callback's ``exception()`` marks it retrieved, so asyncio would not
    report it).

    Args:
        task: the task to watch.
        owner: who runs it, the log line's prefix (``node agent``, ``job j1``).
        logger: where the line goes.
        on_fatal: called with a FATAL_TYPES error, from the done callback (so it must not block).
        what: the task's description in the line; default its name.
    """
    def ended(t: asyncio.Task[Any]) -> None:
        if t.cancelled() or (e := t.exception()) is None:
            return
        if isinstance(e, FATAL_TYPES):
            on_fatal(e)
            return
        logger.error("%s: %s failed: %s: %s", owner, what or t.get_name(), type(e).__name__, e, exc_info=e)

    task.add_done_callback(ended)


def is_bug(e: BaseException) -> bool:
    """True for an exception only a bug raises. Not bugs: pumice's own exception classes (some
    derive from ``RuntimeError``), ``UnicodeError`` (a ``ValueError`` about input) and a plain
    ``LookupError`` (what the controllers raise for an object that is not there yet)."""
    kind = type(e)
    return (isinstance(e, BUG_TYPES) and not kind.__module__.startswith("pumice")
            and not isinstance(e, UnicodeError) and kind is not LookupError)


def dial_error(hostport: str, e: BaseException) -> str | None:
    """Go's net.Dial error text for a failed TCP connection to ``hostport`` (``host:port``):
    ``dial tcp 127.0.0.1:1: connect: connection refused``, ``... connect: no route to host``,
    ``... i/o timeout``; None when ``e`` (or an exception it was raised from) is none of these."""
    cause: BaseException | None = e
    while cause is not None:
        code = getattr(cause, "errno", None)
        if isinstance(cause, ConnectionRefusedError) or code == errno.ECONNREFUSED:
            return f"dial tcp {hostport}: connect: connection refused"
        if code == errno.EHOSTUNREACH:
            return f"dial tcp {hostport}: connect: no route to host"
        if code == errno.ENETUNREACH:
            return f"dial tcp {hostport}: connect: network is unreachable"
        if isinstance(cause, TimeoutError):
            return f"dial tcp {hostport}: i/o timeout"
        cause = cause.__cause__ or cause.__context__
    return None
