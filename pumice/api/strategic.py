"""Strategic merge patch for built-in kinds (``application/strategic-merge-patch+json``).

Maps merge key by key (``null`` deletes a key). Lists replace, unless the field declares a patch
strategy: lists of objects with a patch merge key merge element by element (``containers`` by
``name``, ``ports`` by ``containerPort``, ``conditions`` by ``type``, ``ownerReferences`` by
``uid``...), and merge-strategy lists of primitives (``finalizers``) take the union. Directives:

* ``{"$patch": "replace"}`` in a map replaces the map; as a list element, replaces the list;
* ``{"$patch": "delete"}`` in a map deletes the map; as a list element with the merge key
  (``{"name": "c", "$patch": "delete"}``), deletes every element with that key, before the
  patch's other elements merge (two container ports 53, UDP and TCP, both go: upstream's
  behaviour, which client-side ``kubectl apply`` relies on);
* ``"$retainKeys": [...]`` drops every key of the merged map not listed;
* ``"$deleteFromPrimitiveList/<field>": [...]`` removes those values from a primitive list;
* ``"$setElementOrder/<field>": [...]`` orders the merged list (elements listed first, in that
  order, the others after in their previous order).

The patch strategies come from a table of the built-in types (``_TYPES``), the ``patchStrategy``
and ``patchMergeKey`` struct tags of k8s.io/api.

Mirrors: k8s.io/apimachinery pkg/util/strategicpatch/patch.go (StrategicMergePatch).

Deviates: ``$setElementOrder`` places unlisted elements after the listed ones rather than
interleaving them; merge keys are single fields (Service ports merge by ``port``).
"""

from __future__ import annotations

import copy
from typing import Any

from pumice._util.gostrings import sprint_v

# field -> (child type, strategy, merge key); strategy "merge" | "retainKeys" | "merge,retainKeys" | None
FieldInfo = tuple[str | None, str | None, str | None]

_TYPES: dict[str, dict[str, FieldInfo]] = {
    "ObjectMeta": {
        "ownerReferences": (None, "merge", "uid"),
        "finalizers": (None, "merge", None),
    },
    "PodTemplateSpec": {"metadata": ("ObjectMeta", None, None), "spec": ("PodSpec", None, None)},
    "PodSpec": {
        "containers": ("Container", "merge", "name"),
        "initContainers": ("Container", "merge", "name"),
        "ephemeralContainers": ("Container", "merge", "name"),
        "volumes": ("Volume", "merge,retainKeys", "name"),
        "imagePullSecrets": (None, "merge", "name"),
        "hostAliases": (None, "merge", "ip"),
        "schedulingGates": (None, "merge", "name"),
        "resourceClaims": (None, "merge,retainKeys", "name"),
        "topologySpreadConstraints": (None, "merge", "topologyKey"),
        "affinity": ("Affinity", None, None),
    },
    "Affinity": {},
    "Volume": {},
    "Container": {
        "ports": (None, "merge", "containerPort"),
        "env": (None, "merge", "name"),
        "volumeMounts": (None, "merge", "mountPath"),
        "volumeDevices": (None, "merge", "devicePath"),
        "resources": ("ResourceRequirements", None, None),
    },
    "ResourceRequirements": {},
    "PodStatus": {
        "conditions": (None, "merge", "type"),
        "podIPs": (None, "merge", "ip"),
        "hostIPs": (None, "merge", "ip"),
        "resourceClaimStatuses": (None, "merge,retainKeys", "name"),
    },
    "NodeSpec": {"podCIDRs": (None, "merge", None)},
    "NodeStatus": {
        "conditions": (None, "merge", "type"),
        "addresses": (None, "merge", "type"),
    },
    "ServiceSpec": {"ports": (None, "merge", "port")},
    "ServiceStatus": {"conditions": (None, "merge", "type")},
    "NamespaceStatus": {"conditions": (None, "merge", "type")},
    "DeploymentSpec": {
        "template": ("PodTemplateSpec", None, None),
        "strategy": (None, "retainKeys", None),
    },
    "DeploymentStatus": {"conditions": (None, "merge", "type")},
    "ReplicaSetSpec": {"template": ("PodTemplateSpec", None, None)},
    "ReplicaSetStatus": {"conditions": (None, "merge", "type")},
    "JobSpec": {"template": ("PodTemplateSpec", None, None)},
    "JobStatus": {"conditions": (None, "merge", "type")},
    "EventSeries": {},
}

_KIND_ROOTS: dict[str, dict[str, FieldInfo]] = {
    "Pod": {"spec": ("PodSpec", None, None), "status": ("PodStatus", None, None)},
    "PodTemplate": {"template": ("PodTemplateSpec", None, None)},
    "Node": {"spec": ("NodeSpec", None, None), "status": ("NodeStatus", None, None)},
    "Service": {"spec": ("ServiceSpec", None, None), "status": ("ServiceStatus", None, None)},
    "Namespace": {"status": ("NamespaceStatus", None, None)},
    "Deployment": {"spec": ("DeploymentSpec", None, None), "status": ("DeploymentStatus", None, None)},
    "ReplicaSet": {"spec": ("ReplicaSetSpec", None, None), "status": ("ReplicaSetStatus", None, None)},
    "Job": {"spec": ("JobSpec", None, None), "status": ("JobStatus", None, None)},
}

SUPPORTED_KINDS = frozenset({
    *_KIND_ROOTS, "ConfigMap", "Secret", "Endpoints", "ServiceAccount", "Event", "Lease",
    "PriorityClass", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "EndpointSlice",
    "CustomResourceDefinition",
})

_DIRECTIVE = "$patch"
_RETAIN = "$retainKeys"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_ORDER = "$setElementOrder/"


class MergeError(ValueError):
    """A failure strategicpatch reports as a plain Go error (not a Status): kube-apiserver answers
    it with 500, no reason, the text as the message (responsewriters.ErrorToAPIStatus), e.g.
    ``map: map[image:b3] does not contain declared merge key: name``."""


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str | None) -> None:
    """The patch list's elements (deletions and other directives aside) must appear in the
    ``$setElementOrder`` list, in the same relative order.

    Mirrors: strategicpatch patch.go validatePatchWithSetOrderList.

    Raises:
        MergeError: ``The order in patch list:\n<%v>\n doesn't match $setElementOrder list:\n<%v>\n``,
            or an element without the merge key (ErrNoMergeKey).
    """
    if not order or not patch_list:
        return
    items = [p for p in patch_list if not (merge_key and isinstance(p, dict) and p.get(_DIRECTIVE) == "delete")]
    pi = oi = 0
    while pi < len(items) and oi < len(order):
        item = items[pi]
        if isinstance(item, dict) and _DIRECTIVE in item:
            pi += 1
            continue
        if merge_key:
            for side in (item, order[oi]):
                if not isinstance(side, dict):
                    raise MergeError(f"expected a map[string]interface {{}}, but received a {_go_type(side)}")
                if merge_key not in side:
                    raise MergeError(f"map: {sprint_v(side)} does not contain declared merge key: {merge_key}")
            same = item[merge_key] == order[oi][merge_key]
        else:
            same = item == order[oi]
        if same:
            pi += 1
        oi += 1
    if pi < len(items) and oi >= len(order):
        raise MergeError(f"The order in patch list:\n{sprint_v(patch_list)}\n doesn't match $setElementOrder list:\n"
                         f"{sprint_v(order)}\n")


def _go_type(value: Any) -> str:
    """reflect.TypeOf of a decoded JSON value, as ErrBadArgType prints it."""
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def _root_fields(kind: str) -> dict[str, FieldInfo]:
    return {"metadata": ("ObjectMeta", None, None), **_KIND_ROOTS.get(kind, {})}


def strategic_merge_patch(original: dict[str, Any], patch: dict[str, Any], kind: str) -> dict[str, Any]:
    """Apply a strategic merge patch to a built-in object.

    Args:
        original: the stored object (wire-form dict); not modified.
        patch: the decoded patch document (a JSON object).
        kind: the object's kind (``"Pod"``, ``"Deployment"``...), which selects the patch strategies.

    Returns:
        A new dict: ``original`` with ``patch`` applied.

    Raises:
        ValueError: the patch is not an object, uses an unknown ``$patch`` value, a merge-list
            element lacks its merge key, or a directive's value has the wrong shape.
    """
    if not isinstance(patch, dict):
        raise ValueError(f"strategic merge patch must be a JSON object, got {type(patch).__name__}")
    result = _merge_map(copy.deepcopy(original) if isinstance(original, dict) else {}, patch,
                        _root_fields(kind), path="")
    return result if result is not None else {}


def _merge_map(orig: dict[str, Any], patch: dict[str, Any], fields: dict[str, FieldInfo],
               path: str) -> dict[str, Any] | None:
    """Merge ``patch`` into ``orig`` (owned, mutated); None means the map was deleted."""
    directive = patch.get(_DIRECTIVE)
    if directive is not None:
        if directive == "replace":
            return _strip_directives(copy.deepcopy({k: v for k, v in patch.items() if k != _DIRECTIVE}))
        if directive == "delete":
            return None
        if directive != "merge":
            raise ValueError(f"unknown patch type: {directive!r} in map at {path or '<root>'}")

    for key, value in patch.items():  # the ordered lists are checked first (mergePatchIntoOriginal)
        if key.startswith(_ORDER) and isinstance(value, list) and isinstance(patch.get(key[len(_ORDER):]), list):
            _check_order(patch[key[len(_ORDER):]], value, fields.get(key[len(_ORDER):], (None, None, None))[2])
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN):
            continue
        if key.startswith(_ORDER):
            if not isinstance(value, list):
                raise ValueError(f"{key} at {path or '<root>'} must be a list")
            orders[key[len(_ORDER):]] = value
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE):]
            if not isinstance(value, list):
                raise ValueError(f"{key} at {path or '<root>'} must be a list")
            current = orig.get(field)
            if isinstance(current, list):
                orig[field] = [v for v in current if v not in value]
            continue
        if key.startswith("$"):
            raise ValueError(f"unknown patch directive {key!r} at {path or '<root>'}")
        child_path = f"{path}.{key}" if path else key
        if value is None:
            orig.pop(key, None)
            continue
        child_type, strategy, merge_key = fields.get(key, (None, None, None))
        child_fields = _TYPES.get(child_type or "", {})
        current = orig.get(key)
        if isinstance(value, dict):
            if isinstance(current, dict):
                merged = _merge_map(current, value, child_fields, child_path)
            else:
                merged = _merge_map({}, value, child_fields, child_path)
            if merged is None:
                orig.pop(key, None)
            else:
                orig[key] = merged
        elif isinstance(value, list):
            if strategy and "merge" in strategy.split(","):
                orig[key] = _merge_list(current if isinstance(current, list) else [], value,
                                        child_fields, merge_key, child_path)
            else:
                orig[key] = _strip_directives(copy.deepcopy(value))
        else:
            orig[key] = value

    for field, order in orders.items():
        if isinstance(orig.get(field), list):
            _, _, merge_key = fields.get(field, (None, None, None))
            orig[field] = _apply_order(orig[field], order, merge_key)

    retain = patch.get(_RETAIN)
    if retain is not None:
        if not isinstance(retain, list):
            raise ValueError(f"$retainKeys at {path or '<root>'} must be a list")
        for key in list(orig):
            if key not in retain:
                del orig[key]
    return orig


def _merge_list(orig: list[Any], patch: list[Any], item_fields: dict[str, FieldInfo],
                merge_key: str | None, path: str) -> list[Any]:
    if any(isinstance(p, dict) and p.get(_DIRECTIVE) == "replace" for p in patch):
        return _strip_directives(copy.deepcopy([p for p in patch
                                                if not (isinstance(p, dict) and _DIRECTIVE in p)]))
    if merge_key is None:
        # a merge list of primitives: union, original order first
        if any(isinstance(p, dict) for p in patch):
            raise ValueError(f"{path}: merge list of primitives cannot contain objects")
        out = list(orig)
        for p in patch:
            if p not in out:
                out.append(p)
        return out
    out = copy.deepcopy(orig)
    for item in patch:
        if not isinstance(item, dict):
            raise ValueError(f"{path}: elements of a list merged by {merge_key!r} must be objects, got {sprint_v(item)}")
        if merge_key not in item:  # mergepatch.ErrNoMergeKey prints the element with Go's %v
            raise MergeError(f"map: {sprint_v(item)} does not contain declared merge key: {merge_key}")
        directive = item.get(_DIRECTIVE)
        if directive == "delete":  # first, and every element with that key (deleteMatchingEntries)
            key_value = item[merge_key]
            out = [o for o in out if not (isinstance(o, dict) and o.get(merge_key) == key_value)]
        elif directive not in (None, "merge", "replace"):
            raise ValueError(f"{path}: unknown patch type: {directive!r}")
    for item in patch:
        if item.get(_DIRECTIVE) == "delete":
            continue
        key_value = item[merge_key]
        index = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(merge_key) == key_value), None)
        elem_path = f"{path}[{merge_key}={key_value}]"
        if index is None:
            merged = _merge_map({}, item, item_fields, elem_path)
            if merged is not None:
                out.append(merged)
        else:
            merged = _merge_map(out[index], item, item_fields, elem_path)
            if merged is None:
                del out[index]
            else:
                out[index] = merged
    return out


def _apply_order(items: list[Any], order: list[Any], merge_key: str | None) -> list[Any]:
    def ident(x: Any) -> Any:
        if merge_key is not None and isinstance(x, dict):
            return x.get(merge_key)
        return x

    wanted = [ident(o) for o in order]
    listed = sorted((x for x in items if ident(x) in wanted), key=lambda x: wanted.index(ident(x)))
    rest = [x for x in items if ident(x) not in wanted]
    return listed + rest


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items()
                if not (isinstance(k, str) and k.startswith("$"))}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def merge_info(kind: str, path: tuple[str, ...]) -> FieldInfo:
    """The ``(child type, strategy, merge key)`` of a field path of a built-in kind, e.g.
    ``merge_info("Pod", ("spec", "containers"))`` -> ``("Container", "merge", "name")``;
    ``(None, None, None)`` when the path is unknown (atomic list / plain map)."""
    fields = _root_fields(kind)
    info: FieldInfo = (None, None, None)
    for part in path:
        info = fields.get(part, (None, None, None))
        fields = _TYPES.get(info[0] or "", {})
    return info
