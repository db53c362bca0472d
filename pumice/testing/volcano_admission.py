"""Test helpers for the Volcano admission plugins: an in-memory :class:`ObjectReader` and a
runner that pushes one request through the mutating then validating chain, as the API server does.
"""

from __future__ import annotations

import builtins
import copy
from typing import Any

from pumice.api.admission import AdmissionRequest, MutatingPlugin, ValidatingPlugin
from pumice.api.scheme import COMMAND, POD_GROUP, QUEUE, VCJOB, ResourceKind, Scheme
from pumice.api.selectors import field_value


class MemoryReader:
    """An ObjectReader over a list of wire-form objects (a fake of the API server's store)."""

    def __init__(self, objects: list[dict[str, Any]] | None = None, scheme: Scheme | None = None) -> None:
        self.scheme = scheme or Scheme.builtin()
        for rk in (VCJOB, POD_GROUP, QUEUE, COMMAND):
            self.scheme.add(rk)
        self.objects: list[dict[str, Any]] = [copy.deepcopy(o) for o in objects or []]

    def add(self, obj: dict[str, Any]) -> None:
        self.objects.append(copy.deepcopy(obj))

    def _matches(self, o: dict[str, Any], kind: ResourceKind) -> bool:
        return o.get("apiVersion") == kind.api_version and o.get("kind") == kind.kind

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        for o in self.objects:
            md = o.get("metadata") or {}
            if self._matches(o, kind) and md.get("name") == name and (
                    not kind.namespaced or md.get("namespace", "default") == (namespace or "default")):
                return copy.deepcopy(o)
        return None

    async def list(self, kind: ResourceKind, namespace: str | None = None) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for o in self.objects if self._matches(o, kind) and (
            namespace is None or (o.get("metadata") or {}).get("namespace") == namespace)]

    async def list_by_field(self, kind: ResourceKind, path: str, value: str,
                            namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        return [o for o in await self.list(kind, namespace) if field_value(o, path) == value]

    def kind(self, api_version: str, kind: str) -> ResourceKind | None:
        return self.scheme.by_api_version_kind(api_version, kind)


async def admit(
    plugins: tuple[list[MutatingPlugin], list[ValidatingPlugin]],
    reader: MemoryReader,
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    name: str | None = None,
    namespace: str | None = None,
) -> dict[str, Any] | None:
    """Run ``obj`` through the chain; returns the mutated object or raises AdmissionError."""
    src = obj or old or {}
    rk = reader.kind(src["apiVersion"], src["kind"])
    assert rk is not None, f"unknown kind {src['apiVersion']} {src['kind']}"
    md = src.get("metadata") or {}
    ns = namespace if namespace is not None else (md.get("namespace", "default") if rk.namespaced else None)
    req = AdmissionRequest(operation=operation, kind=rk, namespace=ns,  # type: ignore[arg-type]
                           name=name or md.get("name", ""), obj=copy.deepcopy(obj), old=copy.deepcopy(old))
    mutating, validating = plugins
    for m in mutating:
        if m.handles(req):
            await m.admit(req, reader)
    for v in validating:
        if v.handles(req):
            await v.validate(req, reader)
    return req.obj


def queue(name: str, state: str = "Open", *, parent: str | None = None, **spec: Any) -> dict[str, Any]:
    """A Queue object in wire form with ``status.state``."""
    s: dict[str, Any] = {"weight": 1, "reclaimable": True, **spec}
    if parent:
        s["parent"] = parent
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": name}, "spec": s, "status": {"state": state}}
