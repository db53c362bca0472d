"""ResourceQuota usage: what an object costs against a quota's ``spec.hard``, and the total a
namespace uses. Shared by the API server's ResourceQuota admission and the resource quota
controller (``status.used``).

Tracked names: ``pods``, ``services``, ``configmaps``, ``secrets``, ``persistentvolumeclaims``,
``replicationcontrollers``, ``resourcequotas``, ``count/<resource>[.<group>]``, and for Pods that
are not terminal ``requests.cpu`` / ``cpu``, ``requests.memory`` / ``memory``, ``limits.cpu``,
``limits.memory``; for claims ``requests.storage``.

Mirrors: kubernetes pkg/quota/v1/evaluator/core (pods.go PodUsageFunc, services.go,
persistent_volume_claims.go) and pkg/quota/v1/generic (object count evaluators).
"""

from __future__ import annotations

from fractions import Fraction

from pumice.api import Obj, quantity

__all__ = ["format_list", "object_usage", "pod_usage"]


_OBJECT_COUNTS = {("", "pods"): "pods", ("", "services"): "services", ("", "configmaps"): "configmaps",
                  ("", "secrets"): "secrets", ("", "persistentvolumeclaims"): "persistentvolumeclaims",
                  ("", "replicationcontrollers"): "replicationcontrollers", ("", "resourcequotas"): "resourcequotas"}


def _sum(containers: list[Obj], section: str, resource: str) -> Fraction:
    total = Fraction(0)
    for c in containers:
        q = ((c.get("resources") or {}).get(section) or {}).get(resource)
        if q is None and section == "requests":
            q = ((c.get("resources") or {}).get("limits") or {}).get(resource)
        if q is not None:
            total += quantity.parse_quantity(q)
    return total


def pod_usage(pod: Obj) -> dict[str, Fraction]:
    """Compute usage of a Pod (nothing once it is Succeeded or Failed); init containers count by
    their maximum, as PodRequests does."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return {}
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or [])
    inits = list(spec.get("initContainers") or [])
    out: dict[str, Fraction] = {}
    for section in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            v = max([_sum(containers, section, resource), *(_sum([c], section, resource) for c in inits)])
            if v:
                out[f"{section}.{resource}"] = v
                if section == "requests":
                    out[resource] = v
    return out


def object_usage(group: str, plural: str, obj: Obj) -> dict[str, Fraction]:
    """What one object of ``group``/``plural`` uses: its count and, for Pods and claims, resources."""
    out: dict[str, Fraction] = {}
    if group == "" and plural == "pods" and (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return out
    name = _OBJECT_COUNTS.get((group, plural))
    if name:
        out[name] = Fraction(1)
    out[f"count/{plural}.{group}" if group else f"count/{plural}"] = Fraction(1)
    if group == "" and plural == "pods":
        out.update(pod_usage(obj))
    if group == "" and plural == "persistentvolumeclaims":
        storage = (((obj.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
        if storage is not None:
            out["requests.storage"] = quantity.parse_quantity(storage)
    return out


def format_list(values: dict[str, Fraction]) -> str:
    """``name=value,name=value`` sorted by name, as quota messages print resource lists."""
    return ",".join(f"{k}={quantity.resource_string(k, v)}" for k, v in sorted(values.items()))
