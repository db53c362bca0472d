"""Which exceptions mean a bug in pumice rather than a failure a user or the cluster caused.

A failed API call, a missing object, bad input or an unreachable peer is an expected failure: it
is reported in one line (CLI) or logged in one line and retried (controllers). An exception of one
of :data:`BUG_TYPES` is a programming error: the CLI marks it internal, the controllers log its
traceback.
"""

from __future__ import annotations

import errno

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
