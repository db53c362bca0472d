"""The kinds the scheduler cache watches (added to a client's scheme when missing)."""

from __future__ import annotations

from pumice.api.scheme import ResourceKind, Scheme

PODGROUP = ResourceKind("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", True, "podgroup", ("pg", "podgroup-v1beta1"))
QUEUE = ResourceKind("scheduling.volcano.sh", "v1beta1", "Queue", "queues", False, "queue", ("q", "queue-v1beta1"), subresources=("status",))
PRIORITY_CLASS = ResourceKind("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, "priorityclass", ("pc",))


def resolve(scheme: Scheme, name: str, fallback: ResourceKind) -> ResourceKind:
    """The scheme's kind for ``name``, or ``fallback`` (added to the scheme)."""
    rk = scheme.resolve(name)
    if rk is None:
        scheme.add(fallback)
        return fallback
    return rk
