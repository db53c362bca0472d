"""Helpers the Ray controllers' ``setup_with_manager`` classmethods share.

Mirrors: the ``SetupWithManager`` functions of kuberay ray-operator/controllers/ray.
"""

from __future__ import annotations

from typing import Any

from pumice.runtime.predicates import (
    AnnotationChangedPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    or_,
)

__all__ = ["PRIMARY_PREDICATE", "event_recorder", "informer_store"]

PRIMARY_PREDICATE = or_(GenerationChangedPredicate, LabelChangedPredicate, AnnotationChangedPredicate)
"""The RayCluster and RayService primary watch: spec, label and annotation changes only. Upstream
filters out the controller's own status writes (it requeues itself 2 s after a status change)."""


def event_recorder(mgr: Any, component: str) -> Any:
    """``mgr.event_recorder(component)``, or None for a manager without events (tests)."""
    fn = getattr(mgr, "event_recorder", None)
    return fn(component) if fn is not None else None


def informer_store(mgr: Any, kind: Any) -> Any | None:
    """The informer store of ``kind`` on ``mgr`` (None when the manager has no informers)."""
    informers = getattr(mgr, "informers", None)
    if informers is None:
        return None
    lister = informers.informer(kind).lister
    return lister() if callable(lister) else lister
