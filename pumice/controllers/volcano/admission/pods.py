"""Admission for Pods scheduled by Volcano.

- :class:`PodMutator` (``mutatepod.volcano.sh``, CREATE): the ``volcano-admission.conf`` resource
  groups. A Pod that matches a group (by namespace, or by annotation ``key: value``; a group without
  an ``object`` matches the annotation ``volcano.sh/resource-group: <group>``) gets the group's
  nodeSelector labels, tolerations, affinity and schedulerName. With no groups configured (the
  shipped default) it changes nothing.
- :class:`PodValidator` (``validatepod.volcano.sh``, CREATE): for Pods with a Volcano
  schedulerName, at most one of ``volcano.sh/jdb-min-available`` / ``volcano.sh/jdb-max-unavailable``,
  each a positive integer or a percentage between 1% and 99%.

Mirrors: volcano pkg/webhooks/admission/pods/mutate/mutate_pod.go, annotation.go, namespace.go and
pkg/webhooks/admission/pods/validate/admit_pod.go.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pumice.api.admission import AdmissionRequest, ObjectReader
from pumice.controllers.volcano import keys
from pumice.controllers.volcano.admission._common import deny, is_kind

MUTATE_WEBHOOK = "mutatepod.volcano.sh"
VALIDATE_WEBHOOK = "validatepod.volcano.sh"
RESOURCE_GROUP_ANNOTATION = "volcano.sh/resource-group"


def _is_pod(req: AdmissionRequest) -> bool:
    return is_kind(req, "", "pods")


@dataclass(frozen=True)
class ResourceGroup:
    """One ``resourceGroups`` entry of ``volcano-admission.conf`` (upstream keys)."""

    resourceGroup: str
    object_key: str = "annotation"
    object_value: tuple[str, ...] = ()
    schedulerName: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()
    affinity: dict[str, Any] | None = None

    @classmethod
    def from_conf(cls, d: dict[str, Any]) -> ResourceGroup:
        known = {"resourceGroup", "object", "schedulerName", "labels", "tolerations", "affinity"}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown resourceGroups keys {sorted(unknown)}; known: {sorted(known)}")
        obj = d.get("object") or {}
        return cls(resourceGroup=str(d["resourceGroup"]), object_key=str(obj.get("key", "annotation")),
                   object_value=tuple(obj.get("value") or ()), schedulerName=str(d.get("schedulerName", "")),
                   labels=dict(d.get("labels") or {}), tolerations=tuple(d.get("tolerations") or ()),
                   affinity=d.get("affinity"))

    def matches(self, pod: dict[str, Any], namespace: str) -> bool:
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        if self.object_key == "namespace":
            return namespace in self.object_value
        if not self.object_value:
            return ann.get(RESOURCE_GROUP_ANNOTATION) == self.resourceGroup
        for kv in self.object_value:
            k, _, v = kv.partition(":")
            if ann.get(k.strip()) == v.strip():
                return True
        return False


def load_admission_conf(text: str) -> list[ResourceGroup]:
    """The ``resourceGroups`` of a ``volcano-admission.conf`` (YAML text; empty or all-comment
    text gives none).

    Raises:
        ValueError: not a mapping, ``resourceGroups`` not a list, or an entry with unknown keys or
            without ``resourceGroup``.
    """
    from pumice.api import yamlsafe

    data = yamlsafe.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError("volcano-admission.conf: expected a mapping with resourceGroups")
    groups = data.get("resourceGroups") or []
    if not isinstance(groups, list):
        raise ValueError("volcano-admission.conf: resourceGroups must be a list")
    out = []
    for i, g in enumerate(groups):
        if not isinstance(g, dict) or "resourceGroup" not in g:
            raise ValueError(f"volcano-admission.conf: resourceGroups[{i}] needs a resourceGroup name")
        try:
            out.append(ResourceGroup.from_conf(g))
        except ValueError as e:
            raise ValueError(f"volcano-admission.conf: resourceGroups[{i}]: {e}") from e
    return out


class PodMutator:
    name = MUTATE_WEBHOOK

    def __init__(self, resource_groups: list[ResourceGroup] | None = None) -> None:
        self.resource_groups = list(resource_groups or [])

    def handles(self, req: AdmissionRequest) -> bool:
        return _is_pod(req) and req.operation == "CREATE" and bool(self.resource_groups)

    async def admit(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        pod = req.obj
        if pod is None:
            return
        for group in self.resource_groups:
            if not group.matches(pod, req.namespace or ""):
                continue
            spec = pod.setdefault("spec", {})
            if group.labels:
                spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **group.labels}
            if group.tolerations:
                spec["tolerations"] = [*(spec.get("tolerations") or []), *copy.deepcopy(group.tolerations)]
            if group.affinity:
                spec["affinity"] = copy.deepcopy(group.affinity)
            if group.schedulerName:
                spec["schedulerName"] = group.schedulerName
            return


def _validate_int_percentage(key: str, value: str) -> str:
    v = value.strip()
    if v.isdigit() or (v.startswith("-") and v[1:].isdigit()):
        if int(v) <= 0:
            return f'invalid value <"{value}"> for {key}, it must be a positive integer'
        return ""
    s = v.replace("%", "")
    try:
        n = int(s)
    except ValueError:
        return f'invalid value strconv.Atoi: parsing "{s}": invalid syntax for {key}'
    if n <= 0 or n >= 100:
        return (f'invalid value <"{value}"> for {key}, it must be a valid percentage which between '
                "1% ~ 99%")
    return ""


class PodValidator:
    name = VALIDATE_WEBHOOK

    def __init__(self, scheduler_names: tuple[str, ...] = (keys.DEFAULT_SCHEDULER_NAME,)) -> None:
        self.scheduler_names = scheduler_names

    def handles(self, req: AdmissionRequest) -> bool:
        return _is_pod(req) and req.operation == "CREATE"

    async def validate(self, req: AdmissionRequest, reader: ObjectReader) -> None:
        pod = req.obj or {}
        if (pod.get("spec") or {}).get("schedulerName") not in self.scheduler_names:
            return
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        found = 0
        jdb_keys = [keys.JDB_MIN_AVAILABLE, keys.JDB_MAX_UNAVAILABLE]
        for k in jdb_keys:
            if k in ann:
                found += 1
                msg = _validate_int_percentage(k, str(ann[k]))
                if msg:
                    raise deny(self.name, msg)
        if found > 1:
            raise deny(self.name, f"not allow configure multiple annotations <[{' '.join(jdb_keys)}]> at same time")
