"""Helpers the Ray controllers' ``setup_with_manager`` classmethods share.

Mirrors: the ``SetupWithManager`` functions of kuberay ray-operator/controllers/ray.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pumice.api import Obj
from pumice.runtime.predicates import (
    AnnotationChangedPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    or_,
)

__all__ = ["PRIMARY_PREDICATE", "NamespacedStores", "event_recorder", "informer_store"]

PRIMARY_PREDICATE = or_(GenerationChangedPredicate, LabelChangedPredicate, AnnotationChangedPredicate)
"""The RayCluster and RayService primary watch: spec, label and annotation changes only. Upstream
filters out the controller's own status writes (it requeues itself 2 s after a status change)."""


def event_recorder(mgr: Any, component: str) -> Any:
    """``mgr.event_recorder(component)``, or None for a manager without events (tests)."""
    fn = getattr(mgr, "event_recorder", None)
    return fn(component) if fn is not None else None


def informer_store(mgr: Any, kind: Any, namespaces: Iterable[str] | None = None) -> Any | None:
    """The informer store of ``kind`` on ``mgr`` (None when the manager has no informers); with
    ``namespaces``, a :class:`NamespacedStores` over one informer per namespace (no informer of
    every namespace is made, so the operator needs no cluster-wide list permission)."""
    informers = getattr(mgr, "informers", None)
    if informers is None:
        return None
    if namespaces is not None:
        return NamespacedStores({ns: _lister(informers.informer(kind, ns)) for ns in namespaces})
    return _lister(informers.informer(kind))


def _lister(inf: Any) -> Any:
    lister = inf.lister
    return lister() if callable(lister) else lister


class NamespacedStores:
    """Read-only view of per-namespace informer stores as one store of those namespaces: ``get``
    and ``by_index`` (results sorted by key, as :meth:`pumice.client.informer.Store.by_index`).

    Args:
        stores: namespace -> that namespace's informer store.
    """

    def __init__(self, stores: Mapping[str, Any]) -> None:
        self.stores = dict(sorted(stores.items()))

    def get(self, namespace: str | None, name: str) -> Obj | None:
        store = self.stores.get(namespace or "")
        return None if store is None else store.get(namespace, name)

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        return [obj for store in self.stores.values() for obj in store.by_index(index_name, value)]
