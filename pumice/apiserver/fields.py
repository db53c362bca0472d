"""Unknown-field detection for built-in kinds, from lightkube's typed models.

kube-apiserver decodes built-in objects into Go structs: unknown JSON fields are dropped
(``fieldValidation=Ignore``), reported as warnings (``Warn``) or rejected (``Strict``, kubectl's
default). pumice keeps objects as dicts, so it walks each object along the matching
``lightkube.models`` msgspec Struct and finds (and removes) the keys the type does not have.

Paths are reported as upstream does: ``spec.containers[0].bogus``, ``metadata.labels`` keys are
never unknown (maps take any key).

Mirrors: k8s.io/apimachinery pkg/runtime/serializer/json (strict decoding errors).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pumice.api.scheme import ResourceKind

__all__ = ["model_for", "object_meta_tree", "unknown_fields"]

_MODULES = {
    "": "core_v1",
    "apps": "apps_v1",
    "batch": "batch_v1",
    "coordination.k8s.io": "coordination_v1",
    "scheduling.k8s.io": "scheduling_v1",
    "rbac.authorization.k8s.io": "rbac_v1",
    "events.k8s.io": "events_v1",
    "discovery.k8s.io": "discovery_v1",
    "apiextensions.k8s.io": "apiextensions_v1",
    "policy": "policy_v1",
    "autoscaling": "autoscaling_v1",
}


@dataclass(eq=False)
class _Struct:
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class _List:
    item: Any


@dataclass(eq=False)
class _Map:
    value: Any


_memo: dict[type, _Struct] = {}
_models: dict[tuple[str, str, str], Any] = {}


def _node(t: Any) -> Any:
    """A compact walk tree for a msgspec type: _Struct, _List, _Map, or None (any value)."""
    if isinstance(t, msgspec.inspect.StructType):
        cached = _memo.get(t.cls)
        if cached is not None:
            return cached
        node = _memo[t.cls] = _Struct()
        for f in t.fields:
            node.fields[f.encode_name] = _node(f.type)
        return node
    if isinstance(t, msgspec.inspect.UnionType):
        members = [m for m in t.types if not isinstance(m, msgspec.inspect.NoneType)]
        return _node(members[0]) if len(members) == 1 else None
    if isinstance(t, msgspec.inspect.ListType | msgspec.inspect.SetType | msgspec.inspect.VarTupleType):
        item = _node(t.item_type)
        return None if item is None else _List(item)
    if isinstance(t, msgspec.inspect.DictType):
        value = _node(t.value_type)
        return None if value is None else _Map(value)
    return None


def model_for(rk: ResourceKind) -> Any:
    """The walk tree of a built-in kind's lightkube model, or None (no model: nothing checked)."""
    key = (rk.group, rk.version, rk.kind)
    if key in _models:
        return _models[key]
    tree = None
    module_name = _MODULES.get(rk.group)
    if module_name is not None and module_name.endswith("_" + rk.version):
        try:
            module = importlib.import_module(f"lightkube.models.{module_name}")
            cls = getattr(module, rk.kind, None)
            if cls is not None:
                tree = _node(msgspec.inspect.type_info(cls))
        except (ImportError, TypeError, ValueError):
            tree = None
    _models[key] = tree
    return tree


def object_meta_tree() -> Any:
    """The walk tree of metav1.ObjectMeta (checked for custom resources too)."""
    from lightkube.models.meta_v1 import ObjectMeta

    return _node(msgspec.inspect.type_info(ObjectMeta))


def unknown_fields(tree: Any, obj: Any, *, remove: bool) -> list[str]:
    """Paths of fields of ``obj`` the model does not have (removed from ``obj`` when ``remove``)."""
    out: list[str] = []
    _walk(tree, obj, "", out, remove)
    return out


def _walk(node: Any, value: Any, path: str, out: list[str], remove: bool) -> None:
    if node is None:
        return
    if isinstance(node, _Struct):
        if not isinstance(value, dict):
            return
        fields = node.fields
        for k in list(value):
            if k in fields:
                child = fields[k]
                if child is not None:
                    _walk(child, value[k], f"{path}.{k}" if path else k, out, remove)
            else:
                out.append(f"{path}.{k}" if path else k)
                if remove:
                    del value[k]
    elif isinstance(node, _List):
        if isinstance(value, list):
            for i, item in enumerate(value):
                _walk(node.item, item, f"{path}[{i}]", out, remove)
    elif isinstance(node, _Map) and isinstance(value, dict):
        for k, item in value.items():
            _walk(node.value, item, f"{path}[{k}]", out, remove)
