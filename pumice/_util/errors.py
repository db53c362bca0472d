"""Which exceptions mean a bug in pumice rather than a failure a user or the cluster caused.

A failed API call, a missing object, bad input or an unreachable peer is an expected failure: it
is reported in one line (CLI) or logged in one line and retried (controllers). An exception of one
of :data:`BUG_TYPES` is a programming error: the CLI marks it internal, the controllers log its
traceback.
"""

from __future__ import annotations

BUG_TYPES: tuple[type[BaseException], ...] = (
    AttributeError, AssertionError, IndexError, KeyError, LookupError, NameError, NotImplementedError,
    RecursionError, RuntimeError, TypeError, ZeroDivisionError,
)


def is_bug(e: BaseException) -> bool:
    """True for an exception only a bug raises. Not bugs: pumice's own exception classes (some
    derive from ``RuntimeError``), ``UnicodeError`` (a ``ValueError`` about input) and a plain
    ``LookupError`` (what the controllers raise for an object that is not there yet)."""
    kind = type(e)
    return (isinstance(e, BUG_TYPES) and not kind.__module__.startswith("pumice")
            and not isinstance(e, UnicodeError) and kind is not LookupError)
