"""Memos of checks that are pure functions of a value's JSON.

Used by the API server's write path (type checks, pruning, validation) to skip a check of a
value that passed the same check before: a status or metadata write sends the same spec again.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["FixedPoints"]


class FixedPoints:
    """A bounded set of ``(kind, JSON encoding)`` keys of values a normalising check passed and
    left exactly as they were (the oldest key is dropped first beyond ``limit``). The encoding
    tells apart what ``==`` does not (``1``, ``1.0`` and ``true``; key order), so a value with the
    same key would pass the same check unchanged again: the check is a function of the JSON.
    :meth:`usable` says whether an encoding may be a key: not one with ``null`` in it, which is
    also what a NaN or an infinity (a YAML body can carry them) encodes to."""

    @staticmethod
    def usable(encoded: bytes) -> bool:
        """Whether the JSON ``encoded`` may be part of a key (it has no ``null``)."""
        return b"null" not in encoded

    def __init__(self, limit: int = 4096) -> None:
        # an OrderedDict drops its oldest key in O(1); a plain dict's next(iter()) walks over the
        # slots its earlier deletions left at the front, up to thousands per add on a full memo
        self._keys: OrderedDict[tuple[Any, bytes], None] = OrderedDict()
        self._limit = limit

    def __contains__(self, key: tuple[Any, bytes]) -> bool:
        return key in self._keys

    def add(self, key: tuple[Any, bytes]) -> None:
        """Remember ``key`` (``(check, JSON encoding)``), forgetting the oldest key at the limit."""
        keys = self._keys
        if len(keys) >= self._limit:
            keys.popitem(last=False)
        keys[key] = None

    def clear(self) -> None:
        """Forget every key (what the checks depend on changed, e.g. the served CRDs)."""
        self._keys.clear()
