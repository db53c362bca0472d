"""The LimitRanger and ResourceQuota admission plugins.

LimitRanger (Pods, on create): for every LimitRange of the namespace, a ``Container`` limit fills
in the containers' missing ``resources.limits`` (``default``) and ``resources.requests``
(``defaultRequest``, else the default limit) and says so in the annotation
``kubernetes.io/limit-ranger``, then refuses a container below ``min``, above
``max``, or beyond ``maxLimitRequestRatio``; a ``Pod`` limit checks the sums. Refusals are 403
``<kind> "<name>" is forbidden: maximum cpu usage per Container is 1, but limit is 2``.

ResourceQuota (every namespaced create): the object's usage (:mod:`pumice.api.quota`) is added to
what the namespace uses now; a quota whose ``spec.hard`` would be exceeded refuses with 403
``exceeded quota: <quota>, requested: pods=1, used: pods=2, limited: pods=2``; a quota that limits
``requests.cpu`` (etc.) refuses Pods that do not state it (``failed quota: <quota>: must specify
requests.cpu``).

Mirrors: kubernetes plugin/pkg/admission/limitranger/admission.go (PodMutateLimitFunc,
PodValidateLimitFunc, minConstraint/maxConstraint/limitRequestRatioConstraint messages) and
staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go (checkRequest and
its messages). Deviates: usage is counted from the store at admission time (no quota status
reservation), so concurrent creates may both pass.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

from pumice.api import Obj, quantity
from pumice.api.admission import AdmissionError, AdmissionRequest, ObjectReader, forbidden
from pumice.api.quantity import resource_string
from pumice.api.quota import Formats, format_list, object_usage, sum_usage
from pumice.apiserver.defaults import limit_range

__all__ = ["LIMIT_RANGER_ANNOTATION", "LimitRanger", "ResourceQuota"]

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"
"""The Pod annotation saying which requests and limits LimitRanger set (limitRangerAnnotation)."""



def _q(v: Any) -> Fraction:
    return quantity.parse_quantity(v)


class LimitRanger:
    name = "LimitRanger"

    def handles(self, req: AdmissionRequest) -> bool:
        return req.kind.group == "" and req.kind.plural == "pods" and req.operation == "CREATE" and \
            not req.subresource

    async def _ranges(self, req: AdmissionRequest, reader: ObjectReader) -> list[Obj]:
        rk = reader.kind("v1", "LimitRange")
        if rk is None or req.namespace is None:
            return []
        return await reader.list(rk, req.namespace)

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        """Fill in each container's missing requests and limits from every LimitRange of the
        namespace (its ``Container`` items' ``defaultRequest`` and ``default``, after the
        LimitRange's own defaulting), and say what was set in the Pod's
        ``kubernetes.io/limit-ranger`` annotation: ``LimitRanger plugin set: cpu, memory request
        for container a; cpu limit for init container i`` (containers first, then init
        containers; with several LimitRanges, the last one that set something writes it)."""
        if req.obj is None:
            return
        spec = req.obj.setdefault("spec", {})
        for lr in await self._ranges(req, reader):
            lr = copy.deepcopy(lr)
            limit_range(lr)  # a LimitRange stored before pumice defaulted them
            default_requests: dict[str, Any] = {}
            default_limits: dict[str, Any] = {}
            for limit in (lr.get("spec") or {}).get("limits") or []:
                if limit.get("type") == "Container":
                    default_requests.update(limit.get("defaultRequest") or {})
                    default_limits.update(limit.get("default") or {})
            notes: list[str] = []
            for prefix, key in (("container", "containers"), ("init container", "initContainers")):
                for c in spec.get(key) or []:
                    notes += _merge_container_resources(c, default_requests, default_limits, prefix)
            if notes:
                md = req.obj.setdefault("metadata", {})
                md["annotations"] = {**(md.get("annotations") or {}),
                                     LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: " + "; ".join(notes)}

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is None:
            return
        spec = req.obj.get("spec") or {}
        containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        for lr in await self._ranges(req, reader):
            for limit in (lr.get("spec") or {}).get("limits") or []:
                typ = limit.get("type")
                if typ == "Container":
                    for c in containers:
                        res = c.get("resources") or {}
                        self._check("Container", limit, res.get("requests") or {}, res.get("limits") or {}, req)
                elif typ == "Pod":
                    sums: dict[str, dict[str, Fraction]] = {"requests": {}, "limits": {}}
                    for c in spec.get("containers") or []:
                        for section in ("requests", "limits"):
                            for name, v in ((c.get("resources") or {}).get(section) or {}).items():
                                sums[section][name] = sums[section].get(name, Fraction(0)) + _q(v)
                    self._check("Pod", limit, sums["requests"], sums["limits"], req)

    @staticmethod
    def _check(scope: str, limit: Obj, requests: dict[str, Any], limits: dict[str, Any],
               req: AdmissionRequest) -> None:
        def deny(msg: str) -> None:
            raise AdmissionError(f'{req.kind.plural} "{req.name}" is forbidden: {msg}', code=403)

        for name, lo in (limit.get("min") or {}).items():
            if name not in requests:
                deny(f"minimum {name} usage per {scope} is {lo}.  No request is specified")
            if _q(requests[name]) < _q(lo):
                deny(f"minimum {name} usage per {scope} is {lo}, but request is {_fmt(name, requests[name])}")
        for name, hi in (limit.get("max") or {}).items():
            if name not in limits:
                deny(f"maximum {name} usage per {scope} is {hi}.  No limit is specified")
            if _q(limits[name]) > _q(hi):
                deny(f"maximum {name} usage per {scope} is {hi}, but limit is {_fmt(name, limits[name])}")
        for name, ratio in (limit.get("maxLimitRequestRatio") or {}).items():
            if name in limits and name in requests and _q(requests[name]) > 0:
                actual = _q(limits[name]) / _q(requests[name])
                if actual > _q(ratio):
                    deny(f"{name} max limit to request ratio per {scope} is {ratio}, but provided ratio is "
                         f"{float(actual):.6f}")


def _merge_container_resources(c: Obj, default_requests: dict[str, Any], default_limits: dict[str, Any],
                               prefix: str) -> list[str]:
    """Set ``c``'s missing requests and limits from the defaults; returns what was set, as the
    annotation's parts (``cpu, memory request for container a``, ``cpu limit for container a``).

    Mirrors: kubernetes plugin/pkg/admission/limitranger/admission.go mergeContainerResources."""
    res = c.setdefault("resources", {})
    notes: list[str] = []
    for section, defaults, what in (("requests", default_requests, "request"), ("limits", default_limits, "limit")):
        have = res.get(section) or {}
        added = sorted(k for k in defaults if k not in have)
        if added:
            res[section] = {**have, **{k: defaults[k] for k in added}}
            notes.append(f"{', '.join(added)} {what} for {prefix} {c.get('name', '')}")
    return notes


def _fmt(name: str, v: Any) -> str:
    return v if isinstance(v, str) else resource_string(name, _q(v))


class ResourceQuota:
    name = "ResourceQuota"

    def handles(self, req: AdmissionRequest) -> bool:
        return req.kind.namespaced and req.operation == "CREATE" and not req.subresource

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        if req.obj is None or req.namespace is None:
            return
        rq = reader.kind("v1", "ResourceQuota")
        if rq is None:
            return
        quotas = await reader.list(rq, req.namespace)
        if not quotas:
            return
        wanted_formats: Formats = {}
        wanted = object_usage(req.kind.group, req.kind.plural, req.obj, wanted_formats)
        if not wanted:
            return
        used_formats: Formats = {}
        used = await _namespace_usage(reader, req.namespace, {k for q in quotas for k in (q.get("spec") or {})
                                                              .get("hard") or {}}, used_formats)
        for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
            hard_text = (quota.get("spec") or {}).get("hard") or {}
            hard = {k: _q(v) for k, v in hard_text.items()}
            qname = quota["metadata"]["name"]
            if req.kind.plural == "pods" and req.kind.group == "":
                missing = [k for k in hard if k in ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory",
                                                     "cpu", "memory") and k not in wanted]
                if missing:
                    raise forbidden(req, f"failed quota: {qname}: must specify {','.join(sorted(missing))}")
            over = {k for k in hard if k in wanted and used.get(k, Fraction(0)) + wanted[k] > hard[k]}
            if over:
                raise forbidden(req, f"exceeded quota: {qname}, "
                                     f"requested: {format_list({k: wanted[k] for k in over}, wanted_formats)}, "
                                     f"used: {format_list({k: used.get(k, Fraction(0)) for k in over}, used_formats)}, "
                                     f"limited: {','.join(f'{k}={hard_text[k]}' for k in sorted(over))}")


_COUNTED = (("", "v1", "Pod"), ("", "v1", "Service"), ("", "v1", "ConfigMap"), ("", "v1", "Secret"),
            ("", "v1", "PersistentVolumeClaim"), ("", "v1", "ReplicationController"), ("", "v1", "ResourceQuota"))


async def _namespace_usage(reader: ObjectReader, namespace: str, names: set[str],
                           formats: Formats) -> dict[str, Fraction]:
    """Usage of the names a quota of ``namespace`` tracks; ``formats`` gets each sum's format."""
    kinds = list(_COUNTED)
    for n in names:
        if n.startswith("count/"):
            plural, _, group = n[len("count/"):].partition(".")
            kinds.append((group, "", plural))
    total: dict[str, Fraction] = {}
    seen: set[tuple[str, str]] = set()
    for group, version, kind_or_plural in kinds:
        if version:
            rk = reader.kind(version if not group else f"{group}/{version}", kind_or_plural)
        else:
            rk = next((k for k in _served(reader) if k.group == group and k.plural == kind_or_plural), None)
        if rk is None or (rk.group, rk.plural) in seen:
            continue
        seen.add((rk.group, rk.plural))
        for obj in await reader.list(rk, namespace):
            if (obj.get("metadata") or {}).get("deletionTimestamp") and rk.plural != "pods":
                continue
            obj_formats: Formats = {}
            sum_usage(total, formats, object_usage(rk.group, rk.plural, obj, obj_formats), obj_formats, names)
    return total


def _served(reader: ObjectReader) -> list[Any]:
    scheme = getattr(reader, "scheme", None)
    return list(scheme) if scheme is not None else []
