"""The reconciler contract: a name-only :class:`Request` in, a :class:`Result` out, errors raised.

Controllers do not handle events; events only put a :class:`Request` (namespace + name) in the
controller's work queue, and the reconciler reads the whole current state for that name each time
(level-based). How the controller treats the outcome of ``reconcile``:

=================================  ===========================================================
outcome                            what the controller does
=================================  ===========================================================
raises :class:`TerminalError`      ``forget`` (no retry); counts an error
raises any other exception         ``add_rate_limited`` (per-item backoff 5 ms .. 1000 s)
returns ``Result(requeue_after=s)``  ``forget`` then ``add_after(req, s)`` (s > 0)
returns ``Result()`` / None        ``forget``
=================================  ===========================================================

There is no bare "requeue" flag (deprecated upstream): poll with ``requeue_after`` and a reason.

Mirrors: controller-runtime pkg/reconcile/reconcile.go and
pkg/internal/controller/controller.go reconcileHandler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

__all__ = ["Reconciler", "Request", "Result", "TerminalError"]


class Request(NamedTuple):
    """Which object to reconcile: ``namespace`` (``""`` for cluster-scoped kinds) and ``name``.

    Hashable and ordered (by namespace, then name); this is the work-queue item. A named tuple:
    its hash, equality and order are the tuple's own, in C (every event and every work-queue
    step hashes it several times), with the values and hash of ``(namespace, name)``.
    """

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def for_object(cls, obj: Mapping[str, Any]) -> Request:
        """The Request naming ``obj`` (from its metadata; cluster-scoped: namespace ``""``)."""
        md = obj.get("metadata") or {}
        return cls(str(md.get("namespace") or ""), str(md.get("name", "")))


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next.

    Attributes:
        requeue_after: seconds after which to reconcile again even without an event (e.g. to poll
            the Ray dashboard or to check a deadline); None or <= 0 means "no requeue".
    """

    requeue_after: float | None = None


class TerminalError(Exception):
    """A permanent failure: the controller logs and counts it but does not retry.

    Wrap the cause: ``raise TerminalError("bad spec: ...") from e``. A later event on the object
    still triggers a new reconcile.

    Mirrors: controller-runtime pkg/reconcile/reconcile.go TerminalError.
    """


@runtime_checkable
class Reconciler(Protocol):
    """Anything with ``async def reconcile(self, req: Request) -> Result``.

    Contract: idempotent and level-based; a second run with no change in the world writes
    nothing. Raise on failure (see the module table); return ``Result(requeue_after=...)`` only
    with a reason. Returning None is treated as ``Result()``.
    """

    async def reconcile(self, req: Request) -> Result: ...
