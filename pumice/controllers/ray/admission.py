"""Admission for ray.io objects in pumice's API server.

pumice does not implement KubeRay's Redis-cleanup finalizer for GCS fault tolerance (deleting a
cluster would leave its keys in Redis), so until it does, the API refuses RayClusters (and
RayJobs / RayServices whose cluster spec asks for it) with GCS fault tolerance enabled, through
the ``ray.io/ft-enabled: "true"`` annotation or ``gcsFaultToleranceOptions``, with a 422 that
says why. Objects stored before the rule existed may still be updated.

Mirrors: nothing upstream (KubeRay accepts these and cleans Redis up with a finalizer Job);
``Deviates:`` until the cleanup path exists.
"""

from __future__ import annotations

from typing import Any

from pumice.api.admission import AdmissionError, AdmissionRequest, FieldCause, ObjectReader
from pumice.controllers.ray import constants as c

GCS_FT_REJECTED = (
    "GCS fault tolerance with Redis is not supported by pumice yet: the Redis cleanup on deletion "
    "(KubeRay's redis-cleanup finalizer) is not implemented; remove the ray.io/ft-enabled annotation "
    "and gcsFaultToleranceOptions"
)

# kind -> path from the object to its RayCluster-shaped part (metadata + spec)
_CLUSTER_PATHS: dict[str, tuple[str, ...]] = {
    "RayCluster": (),
    "RayJob": ("spec", "rayClusterSpec"),
    "RayService": ("spec", "rayClusterConfig"),
}


def gcs_ft_causes(kind: str, obj: dict[str, Any]) -> list[FieldCause]:
    """Field causes for every way ``obj`` turns GCS fault tolerance on (empty when it does not).

    ``kind`` is RayCluster, RayJob or RayService; other kinds give no causes.
    """
    path = _CLUSTER_PATHS.get(kind)
    if path is None:
        return []
    causes: list[FieldCause] = []
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    if kind == "RayCluster" and str(ann.get(c.RAY_FT_ENABLED_ANNOTATION, "")).lower() == "true":
        causes.append(FieldCause(f"metadata.annotations[{c.RAY_FT_ENABLED_ANNOTATION}]", GCS_FT_REJECTED,
                                 "FieldValueForbidden"))
    spec: Any = obj
    for part in path:
        spec = (spec or {}).get(part) if isinstance(spec, dict) else None
    if kind == "RayCluster":
        spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("gcsFaultToleranceOptions"):
        field = ".".join([*path, "gcsFaultToleranceOptions"]) if path else "spec.gcsFaultToleranceOptions"
        causes.append(FieldCause(field, GCS_FT_REJECTED, "FieldValueForbidden"))
    return causes


class RejectGcsFaultTolerance:
    """Validating plugin: 422 for ray.io objects that enable GCS fault tolerance (see module)."""

    name = "RayGcsFaultTolerance"

    def handles(self, req: AdmissionRequest) -> bool:
        return (req.kind.group == "ray.io" and req.kind.kind in _CLUSTER_PATHS and not req.subresource
                and req.operation in ("CREATE", "UPDATE"))

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is None:
            return
        causes = gcs_ft_causes(req.kind.kind, req.obj)
        if not causes:
            return
        if req.operation == "UPDATE" and req.old is not None and gcs_ft_causes(req.kind.kind, req.old):
            return  # stored before the rule; do not strand it
        raise AdmissionError(
            f'{req.kind.kind}.ray.io "{req.name}" is invalid: {GCS_FT_REJECTED}',
            code=422, reason="Invalid", causes=causes,
        )


def admission_plugins() -> tuple[list[Any], list[Any]]:
    """(mutating, validating) admission plugins for ray.io objects."""
    return [], [RejectGcsFaultTolerance()]
