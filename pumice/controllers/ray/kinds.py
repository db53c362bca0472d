"""The kinds the KubeRay controllers read and write.

Built-in kinds come from :meth:`pumice.api.scheme.Scheme.builtin`; the ray.io and Volcano kinds
are declared here (the API server serves them once their CRDs are installed).
"""

from __future__ import annotations

from pumice.api.scheme import ResourceKind, Scheme

_BUILTIN = Scheme.builtin()


def _builtin(api_version: str, kind: str) -> ResourceKind:
    rk = _BUILTIN.by_api_version_kind(api_version, kind)
    if rk is None:  # pragma: no cover - the builtin table always has these
        raise LookupError(f"{api_version} {kind} is not a built-in kind")
    return rk


POD = _builtin("v1", "Pod")
SERVICE = _builtin("v1", "Service")
EVENT = _builtin("v1", "Event")
JOB = _builtin("batch/v1", "Job")
RAY_CLUSTER = ResourceKind("ray.io", "v1", "RayCluster", "rayclusters", short_names=("rc",),
                           categories=("all",), subresources=("status",))
RAY_JOB = ResourceKind("ray.io", "v1", "RayJob", "rayjobs", categories=("all",), subresources=("status",))
RAY_SERVICE = ResourceKind("ray.io", "v1", "RayService", "rayservices", categories=("all",),
                           subresources=("status",))
POD_GROUP = ResourceKind("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", short_names=("pg", "podgroup-v1beta1"),
                         subresources=("status",))
