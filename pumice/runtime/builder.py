"""Fluent wiring of a controller: ``for_``, ``owns``, ``watches``, options, ``complete``.

::

    mgr.controller("raycluster") \\
        .for_(RAYCLUSTER, predicates=[GenerationChangedPredicate()]) \\
        .owns(POD) \\
        .owns(SERVICE) \\
        .watches(NODE, map_fn=lambda node: [...]) \\
        .with_options(max_concurrent_reconciles=4) \\
        .complete(RayClusterReconciler(mgr.client, ...))

- ``for_(kind)``: reconcile the object itself (exactly once per builder);
- ``owns(kind)``: an event on an object of ``kind`` enqueues its *controller* owner when the owner
  is of the ``for_`` kind (group + kind compared);
- ``watches(kind, map_fn)``: an event enqueues whatever ``map_fn(obj)`` returns (on updates, for
  the old and the new object);
- predicates: per watch (all must pass) and ``with_event_filter`` for all watches.

Kinds are :class:`~pumice.api.scheme.ResourceKind` or names the client's scheme resolves
(``"pods"``, ``"rayclusters.ray.io"``). Errors (no ``for_``, ``for_`` twice, unknown kind,
duplicate controller name) raise ``ValueError`` at :meth:`Builder.complete`, not earlier.

Mirrors: controller-runtime pkg/builder/controller.go.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pumice.api.scheme import ResourceKind
from pumice.client.workqueue import RateLimiter
from pumice.runtime.controller import Controller, MapFunc, Watch, enqueue_for_object, enqueue_for_owner
from pumice.runtime.predicates import Predicate, PredicateLike, normalize
from pumice.runtime.reconcile import Reconciler, Request

if TYPE_CHECKING:
    from pumice.runtime.manager import Manager

__all__ = ["Builder"]

Predicates = Iterable[PredicateLike] | PredicateLike | None


@dataclass
class _Pending:
    role: str  # "for" | "owns" | "watches"
    kind: ResourceKind | str
    predicates: list[Predicate]
    map_fn: MapFunc | None = None


class Builder:
    """Collects the wiring of one controller; :meth:`complete` builds and registers it.

    Obtain with ``mgr.controller(name)``.
    """

    def __init__(self, mgr: Manager, name: str) -> None:
        self._mgr = mgr
        self._name = name
        self._pending: list[_Pending] = []
        self._filters: list[Predicate] = []
        self._max_concurrent = 1
        self._rate_limiter: RateLimiter[Request] | None = None
        self._errors: list[str] = []
        self._namespaces: tuple[str, ...] | None = None

    def for_(self, kind: ResourceKind | str, predicates: Predicates = None) -> Builder:
        """Reconcile objects of ``kind``: each event enqueues the object's own Request."""
        if any(p.role == "for" for p in self._pending):
            self._errors.append("for_() called more than once")
        self._pending.append(_Pending("for", kind, normalize(predicates)))
        return self

    def owns(self, kind: ResourceKind | str, predicates: Predicates = None) -> Builder:
        """Watch ``kind`` and enqueue the controller owner (of the ``for_`` kind) of each object."""
        self._pending.append(_Pending("owns", kind, normalize(predicates)))
        return self

    def watches(self, kind: ResourceKind | str, map_fn: MapFunc, predicates: Predicates = None) -> Builder:
        """Watch ``kind`` and enqueue ``map_fn(obj)`` (an iterable of Requests) for each event."""
        if not callable(map_fn):
            self._errors.append(f"watches({kind!r}): map_fn is not callable")
        self._pending.append(_Pending("watches", kind, normalize(predicates), map_fn))
        return self

    def with_event_filter(self, predicate: PredicateLike) -> Builder:
        """A predicate applied to every watch of this controller."""
        self._filters.extend(normalize(predicate))
        return self

    def in_namespaces(self, namespaces: Iterable[str]) -> Builder:
        """Watch namespaced kinds in ``namespaces`` only: one informer per kind and namespace
        (listing and watching ``/namespaces/<ns>/...``, so a namespace-scoped Role suffices), as a
        controller-runtime manager whose cache has ``DefaultNamespaces``. Cluster-scoped kinds are
        still watched whole."""
        self._namespaces = tuple(sorted(set(namespaces)))
        if not self._namespaces:
            self._errors.append("in_namespaces() needs at least one namespace")
        return self

    def with_options(
        self, *, max_concurrent_reconciles: int | None = None, rate_limiter: RateLimiter[Request] | None = None
    ) -> Builder:
        """Controller options: number of workers (default 1) and the queue's rate limiter."""
        if max_concurrent_reconciles is not None:
            if max_concurrent_reconciles < 1:
                self._errors.append(f"max_concurrent_reconciles must be >= 1, got {max_concurrent_reconciles}")
            self._max_concurrent = max_concurrent_reconciles
        if rate_limiter is not None:
            self._rate_limiter = rate_limiter
        return self

    def complete(self, reconciler: Reconciler) -> Controller:
        """Build the controller, register it with the manager, and return it.

        Raises:
            ValueError: on wiring errors (listed together), an unknown kind, or a controller name
                already used in this manager.
            TypeError: when ``reconciler`` has no ``reconcile`` coroutine method.
        """
        if not callable(getattr(reconciler, "reconcile", None)):
            raise TypeError(f"{reconciler!r} has no reconcile(req) method")
        errors = list(self._errors)
        fors = [p for p in self._pending if p.role == "for"]
        if not fors:
            errors.append("for_() was not called")
        if errors:
            raise ValueError(f"controller {self._name!r}: " + "; ".join(errors))
        informers = self._mgr.informers
        for_kind = informers._resolve(fors[0].kind)
        watches: list[Watch] = []
        for p in self._pending:
            namespaces: tuple[str | None, ...] = (None,)
            if self._namespaces is not None and informers._resolve(p.kind).namespaced:
                namespaces = self._namespaces
            for ns in namespaces:
                inf = informers.informer(p.kind, ns)
                preds = [*self._filters, *p.predicates]
                if p.role == "for":
                    watches.append(Watch(inf, enqueue_for_object, preds, map_old=False))
                elif p.role == "owns":
                    watches.append(Watch(inf, enqueue_for_owner(for_kind), preds))
                else:
                    assert p.map_fn is not None
                    watches.append(Watch(inf, p.map_fn, preds))
        ctrl = Controller(
            self._name, reconciler, watches,
            max_concurrent_reconciles=self._max_concurrent,
            rate_limiter=self._rate_limiter,
            clock=self._mgr.clock,
            keep_metrics=self._mgr.keep_metrics,
        )
        self._mgr.add_controller(ctrl)
        return ctrl
