"""ResourceQuota usage: what an object costs against a quota's ``spec.hard``, and the total a
namespace uses. Shared by the API server's ResourceQuota admission and the resource quota
controller (``status.used``).

Tracked names: ``pods``, ``services``, ``configmaps``, ``secrets``, ``persistentvolumeclaims``,
``replicationcontrollers``, ``resourcequotas``, ``count/<resource>[.<group>]``, and for Pods that
are not terminal ``requests.cpu`` / ``cpu``, ``requests.memory`` / ``memory``, ``limits.cpu``,
``limits.memory``; for claims ``requests.storage``.

Amounts are exact Fractions; a caller that prints them passes a ``formats`` dict, which gets the
Quantity format of each amount as upstream's sums keep it (:func:`pumice.api.quantity.add_format`:
a sum has the format of its first non-zero operand), so a memory sum of ``1G`` requests prints
``2G``, not a byte count (:func:`sum_usage`, :func:`format_list`).

Mirrors: kubernetes pkg/quota/v1/evaluator/core (pods.go PodUsageFunc, services.go,
persistent_volume_claims.go), pkg/quota/v1/generic (object count evaluators, CalculateUsageStats:
each tracked sum starts as a zero DecimalSI Quantity) and pkg/quota/v1 resources.go Add;
component-helpers resource helpers.go PodRequests (addResourceList, maxResourceList).
"""

from __future__ import annotations

from collections.abc import Container
from fractions import Fraction

from pumice.api import Obj, quantity

__all__ = ["Formats", "format_list", "object_usage", "pod_usage", "sum_usage", "usage_string"]

Formats = dict[str, tuple[str, bool]]
"""resource name -> (Quantity format, amount is zero) of a sum (:func:`pumice.api.quantity.add_format`)."""


_OBJECT_COUNTS = {("", "pods"): "pods", ("", "services"): "services", ("", "configmaps"): "configmaps",
                  ("", "secrets"): "secrets", ("", "persistentvolumeclaims"): "persistentvolumeclaims",
                  ("", "replicationcontrollers"): "replicationcontrollers", ("", "resourcequotas"): "resourcequotas"}


def _sum(containers: list[Obj], section: str, resource: str) -> tuple[Fraction, tuple[str, bool] | None]:
    """The sum of the containers' ``section`` amounts of ``resource`` (requests fall back to the
    limits) and its (format, is zero), None when no container has one."""
    total, fmt = Fraction(0), None
    for c in containers:
        q = ((c.get("resources") or {}).get(section) or {}).get(resource)
        if q is None and section == "requests":
            q = ((c.get("resources") or {}).get("limits") or {}).get(resource)
        if q is not None:
            v = quantity.parse_quantity(q)
            total += v
            fmt = quantity.add_format(fmt, quantity.quantity_format(q), v == 0)
    return total, fmt


def pod_usage(pod: Obj, formats: Formats | None = None) -> dict[str, Fraction]:
    """Compute usage of a Pod (nothing once it is Succeeded or Failed); init containers count by
    their maximum, as PodRequests does (a larger init container's amount replaces the sum, with
    its format). ``formats``, when given, gets each amount's format."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return {}
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or [])
    inits = list(spec.get("initContainers") or [])
    out: dict[str, Fraction] = {}
    for section in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            v, fmt = _sum(containers, section, resource)
            for c in inits:
                iv, ifmt = _sum([c], section, resource)
                if iv > v:
                    v, fmt = iv, ifmt
            if v:
                out[f"{section}.{resource}"] = v
                if formats is not None and fmt is not None:
                    formats[f"{section}.{resource}"] = fmt
                if section == "requests":
                    out[resource] = v
                    if formats is not None and fmt is not None:
                        formats[resource] = fmt
    return out


def object_usage(group: str, plural: str, obj: Obj, formats: Formats | None = None) -> dict[str, Fraction]:
    """What one object of ``group``/``plural`` uses: its count and, for Pods and claims, resources;
    ``formats``, when given, gets the format of each amount that is not a count (DecimalSI)."""
    out: dict[str, Fraction] = {}
    if group == "" and plural == "pods" and (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return out
    name = _OBJECT_COUNTS.get((group, plural))
    if name:
        out[name] = Fraction(1)
    out[f"count/{plural}.{group}" if group else f"count/{plural}"] = Fraction(1)
    if group == "" and plural == "pods":
        out.update(pod_usage(obj, formats))
    if group == "" and plural == "persistentvolumeclaims":
        storage = (((obj.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
        if storage is not None:
            out["requests.storage"] = v = quantity.parse_quantity(storage)
            if formats is not None:
                formats["requests.storage"] = (quantity.quantity_format(storage), v == 0)
    return out


def sum_usage(total: dict[str, Fraction], formats: Formats, usage: dict[str, Fraction],
              usage_formats: Formats, names: Container[str] | None = None) -> None:
    """Add ``usage`` (with its formats) into ``total`` and ``formats`` in place, only the
    ``names`` given (all when None); a name not in ``total`` starts as a zero DecimalSI sum.

    Mirrors: pkg/quota/v1 resources.go Add (the receiver's format unless it is zero)."""
    for k, v in usage.items():
        if names is not None and k not in names:
            continue
        total[k] = total.get(k, Fraction(0)) + v
        cur = formats.get(k, (quantity.DECIMAL_SI, True))
        fmt = usage_formats.get(k, (quantity.DECIMAL_SI, v == 0))
        formats[k] = quantity.add_format(cur, fmt[0], v == 0)


def format_list(values: dict[str, Fraction], formats: Formats | None = None) -> str:
    """``name=value,name=value`` sorted by name, as quota messages print resource lists: each
    amount in its format from ``formats`` (else :func:`pumice.api.quantity.resource_format`)."""
    return ",".join(f"{k}={usage_string(k, v, formats)}" for k, v in sorted(values.items()))


def usage_string(name: str, amount: Fraction, formats: Formats | None = None) -> str:
    """``amount`` of ``name`` as Quantity.String() writes it in its format from ``formats`` (else
    :func:`pumice.api.quantity.resource_format`'s)."""
    fmt = (formats or {}).get(name)
    return quantity.canonical_string(amount, fmt[0]) if fmt else quantity.resource_string(name, amount)
