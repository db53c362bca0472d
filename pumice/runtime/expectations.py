"""Controller expectations: don't act again until the cache has seen your own creates/deletes.

A controller that creates N Pods records ``expect_creations(key, N)``; the Pod informer's add
handler calls ``creation_observed(key)`` for each Pod it sees; until ``satisfied(key)`` the
controller must not compute "how many Pods are missing" from its (lagging) cache, or it would
create duplicates. Deletions are tracked by Pod UID (``expect_deletions(key, uids)`` /
``deletion_observed(key, uid)``) so that a delete event is only counted once. An expectation older
than 5 minutes counts as satisfied (a lost watch event must not wedge the controller forever).

Keys are the controller's object keys (``"<namespace>/<name>"``). Time comes from the clock.

Mirrors: kubernetes pkg/controller/controller_utils.go ControllerExpectations and
UIDTrackingControllerExpectations (ExpectationsTimeout = 5 minutes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pumice._util.clock import Clock, default_clock

EXPECTATIONS_TIMEOUT = 300.0
"""Seconds after which unmet expectations count as satisfied (upstream ExpectationsTimeout)."""

__all__ = ["EXPECTATIONS_TIMEOUT", "Expectations"]


@dataclass
class _Record:
    add: int
    delete: int
    timestamp: float
    uids: set[str] = field(default_factory=set)

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.delete <= 0


class Expectations:
    """Pending creations/deletions per controller key.

    Args:
        clock: time source (monotonic seconds) for the timeout.
        timeout: seconds before an unmet expectation expires (default 300).
    """

    def __init__(self, clock: Clock | None = None, *, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self.clock = clock or default_clock()
        self.timeout = timeout
        self._records: dict[str, _Record] = {}

    def satisfied(self, key: str) -> bool:
        """True when nothing is pending for ``key``, all expected events were observed, or the
        expectation is older than the timeout. A key never set is satisfied (the controller may
        act: e.g. after a restart)."""
        rec = self._records.get(key)
        if rec is None or rec.fulfilled():
            return True
        return self.clock.monotonic() - rec.timestamp > self.timeout

    def expect_creations(self, key: str, n: int) -> None:
        """Expect ``n`` creations (replaces the record; deletions reset to 0).

        Raises:
            ValueError: when ``n < 0``.
        """
        if n < 0:
            raise ValueError(f"cannot expect {n} creations")
        self._records[key] = _Record(n, 0, self.clock.monotonic())

    def expect_deletions(self, key: str, uids: Iterable[str]) -> None:
        """Expect the deletion of the objects with these UIDs (replaces the record, as upstream's
        UIDTrackingControllerExpectations.ExpectDeletions)."""
        uid_set = set(uids)
        self._records[key] = _Record(0, len(uid_set), self.clock.monotonic(), uid_set)

    def raise_expectations(self, key: str, add: int = 0, delete: int = 0) -> None:
        """Add to the pending counts (creating the record if absent)."""
        rec = self._records.get(key)
        if rec is None:
            self._records[key] = _Record(add, delete, self.clock.monotonic())
        else:
            rec.add += add
            rec.delete += delete

    def creation_observed(self, key: str) -> None:
        """One expected creation was seen (or a create call failed: lower it the same way)."""
        rec = self._records.get(key)
        if rec is not None:
            rec.add -= 1

    def deletion_observed(self, key: str, uid: str) -> None:
        """The object with ``uid`` was seen deleted; counted once per UID."""
        rec = self._records.get(key)
        if rec is not None and uid in rec.uids:
            rec.uids.discard(uid)
            rec.delete -= 1

    def pending(self, key: str) -> tuple[int, int]:
        """(creations, deletions) still expected for ``key`` ((0, 0) when none)."""
        rec = self._records.get(key)
        return (max(rec.add, 0), max(rec.delete, 0)) if rec is not None else (0, 0)

    def delete(self, key: str) -> None:
        """Forget ``key`` (its object was deleted)."""
        self._records.pop(key, None)
