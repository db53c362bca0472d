"""Small accessors and helpers over wire-form objects (plain dicts).

Shapes: ``obj`` is a Kubernetes object as JSON (``{"apiVersion", "kind", "metadata", ...}``).
Conditions follow metav1.Condition / the core condition shape: ``type``, ``status`` ("True",
"False", "Unknown"), ``reason``, ``message``, ``lastTransitionTime``. The condition helpers here
(:func:`find_condition`, :func:`get_condition`, :func:`is_condition_true`, :func:`set_condition`,
:func:`with_condition`, :func:`remove_condition`) are the only ones in pumice.
"""

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from pumice.api import Obj

if TYPE_CHECKING:
    from pumice.api.scheme import ResourceKind

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def deep_copy(obj: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, strings, numbers, booleans, None), through
    msgspec's JSON codec: several times faster than :func:`copy.deepcopy` on wire objects.
    Anything JSON cannot carry (a tuple, a set, a non-string key) is copied by ``copy.deepcopy``
    instead, so the result always equals the input."""
    try:
        out = _decode(_encode(obj))
    except (TypeError, msgspec.EncodeError):
        return copy.deepcopy(obj)
    if out != obj:
        return copy.deepcopy(obj)
    return out


def meta(obj: Obj) -> Obj:
    """``obj["metadata"]``, created when missing."""
    return obj.setdefault("metadata", {})


def name(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def namespace(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("namespace", "") or "")


def uid(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("uid", ""))


def key(obj: Obj) -> str:
    """``"<namespace>/<name>"`` (``"<name>"`` for cluster-scoped objects), as client-go's
    MetaNamespaceKeyFunc."""
    ns = namespace(obj)
    return f"{ns}/{name(obj)}" if ns else name(obj)


def labels(obj: Obj) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def annotations(obj: Obj) -> dict[str, str]:
    return obj.get("metadata", {}).get("annotations") or {}


def resource_version(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion", ""))


def is_deleting(obj: Obj) -> bool:
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))


def owner_references(obj: Obj) -> list[Obj]:
    return obj.get("metadata", {}).get("ownerReferences") or []


def controller_of(obj: Obj) -> Obj | None:
    """The ownerReference with ``controller: true``, or None."""
    for ref in owner_references(obj):
        if ref.get("controller"):
            return ref
    return None


def owner_reference(owner: Obj, *, controller: bool = True, block_owner_deletion: bool = True,
                    default: "ResourceKind | None" = None) -> Obj:
    """An ownerReference pointing at ``owner`` (by default a controller reference that blocks the
    owner's foreground deletion).

    ``default`` gives the apiVersion and kind when ``owner`` lacks them (pure builders handed a
    bare object); without it they must be present (KeyError otherwise).
    """
    if default is None:
        api_version, kind = owner["apiVersion"], owner["kind"]
    else:
        api_version, kind = owner.get("apiVersion", default.api_version), owner.get("kind", default.kind)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name(owner),
        "uid": uid(owner),
        "controller": controller,
        "blockOwnerDeletion": block_owner_deletion,
    }


def find_condition(conditions: Sequence[Obj] | None, ctype: str) -> Obj | None:
    """The condition of type ``ctype`` in a conditions list (None when absent).

    Mirrors: k8s.io/apimachinery pkg/api/meta conditions.go FindStatusCondition.
    """
    for c in conditions or ():
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def get_condition(obj_or_status: Obj, ctype: str) -> Obj | None:
    """The condition of type ``ctype`` from ``obj["status"]["conditions"]``, or from
    ``status["conditions"]`` when given a status dict (one with a ``conditions`` key, or without
    ``status`` and ``metadata``)."""
    if "conditions" in obj_or_status or not ("status" in obj_or_status or "metadata" in obj_or_status):
        status = obj_or_status
    else:
        status = obj_or_status.get("status") or {}
    return find_condition(status.get("conditions") if isinstance(status, dict) else None, ctype)


_TIMESTAMP_KEYS = frozenset({"lastProbeTime", "lastUpdateTime", "lastHeartbeatTime", "lastTransitionTime"})


def set_condition(status: Obj, condition: Obj, now: str, *, update_time: bool = False) -> bool:
    """Set a condition in ``status["conditions"]`` (in place) the way meta.SetStatusCondition
    does: ``lastTransitionTime`` changes only when ``status`` flips. A condition whose fields
    other than timestamps are unchanged is left as it is (its timestamps too). Returns True when
    anything changed.

    Args:
        status: the object's status dict (modified in place).
        condition: ``{"type", "status", "reason", "message", ...}``.
        now: RFC 3339 time used for a new or flipped condition.
        update_time: also set ``lastUpdateTime`` to ``now`` on any change (the Deployment
            controller's conditions).

    Mirrors: k8s.io/apimachinery pkg/api/meta conditions.go SetStatusCondition; kubernetes
    pkg/controller/deployment/util SetDeploymentCondition (``lastUpdateTime``).
    """
    conds: list[Obj] = status.setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c.get("type") != condition["type"]:
            continue
        if all(c.get(k) == v for k, v in condition.items() if k not in _TIMESTAMP_KEYS):
            return False
        new = {**c, **condition}
        if c.get("status") != condition.get("status"):
            new["lastTransitionTime"] = now
        else:
            new["lastTransitionTime"] = c.get("lastTransitionTime", condition.get("lastTransitionTime", now))
        if update_time:
            new["lastUpdateTime"] = now
        conds[i] = new
        return True
    new = {**condition, "lastTransitionTime": condition.get("lastTransitionTime", now)}
    if update_time:
        new["lastUpdateTime"] = now
    conds.append(new)
    return True


def with_condition(conditions: Sequence[Obj] | None, condition: Obj, now: str, *,
                   update_time: bool = False) -> list[Obj]:
    """A new conditions list (deep copies) with ``condition`` set as :func:`set_condition`
    sets it; equal to ``conditions`` when nothing changed."""
    status: Obj = {"conditions": [copy.deepcopy(c) for c in conditions or ()]}
    set_condition(status, condition, now, update_time=update_time)
    out: list[Obj] = status["conditions"]
    return out


def remove_condition(status: Obj, ctype: str) -> bool:
    """Drop the condition of type ``ctype`` from ``status["conditions"]`` (in place); True when
    there was one.

    Mirrors: k8s.io/apimachinery pkg/api/meta conditions.go RemoveStatusCondition.
    """
    conds = status.get("conditions") or []
    kept = [c for c in conds if c.get("type") != ctype]
    if len(kept) == len(conds):
        return False
    status["conditions"] = kept
    return True


def is_condition_true(obj_or_status: Obj, ctype: str) -> bool:
    """Whether the condition ``ctype`` (of an object or a status dict) has status ``"True"``."""
    c = get_condition(obj_or_status, ctype)
    return bool(c and c.get("status") == "True")


def pod_is_ready(pod: Obj) -> bool:
    """Pod has condition Ready=True."""
    return is_condition_true(pod, "Ready")
