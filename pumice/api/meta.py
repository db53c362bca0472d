"""Small accessors and helpers over wire-form objects (plain dicts).

Shapes: ``obj`` is a Kubernetes object as JSON (``{"apiVersion", "kind", "metadata", ...}``).
Conditions follow metav1.Condition / the core condition shape: ``type``, ``status`` ("True",
"False", "Unknown"), ``reason``, ``message``, ``lastTransitionTime``.
"""


from typing import Any

Obj = dict[str, Any]


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


def owner_reference(owner: Obj, *, controller: bool = True, block_owner_deletion: bool = True) -> Obj:
    """An ownerReference pointing at ``owner``."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": name(owner),
        "uid": uid(owner),
        "controller": controller,
        "blockOwnerDeletion": block_owner_deletion,
    }


def get_condition(obj_or_status: Obj, ctype: str) -> Obj | None:
    """The condition of type ``ctype`` from ``obj["status"]["conditions"]`` (or from a status dict)."""
    status = obj_or_status.get("status", obj_or_status) if "metadata" in obj_or_status else obj_or_status
    for c in (status or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def set_condition(status: Obj, condition: Obj, now: str) -> bool:
    """Set a condition in ``status["conditions"]`` the way meta.SetStatusCondition does:
    ``lastTransitionTime`` changes only when ``status`` flips. Returns True when anything changed.

    Args:
        status: the object's status dict (modified in place).
        condition: ``{"type", "status", "reason", "message", ...}``.
        now: RFC 3339 time used for a new or flipped condition.
    """
    conds: list[Obj] = status.setdefault("conditions", [])
    for i, c in enumerate(conds):
        if c.get("type") != condition["type"]:
            continue
        new = {**c, **condition}
        if c.get("status") != condition.get("status"):
            new["lastTransitionTime"] = now
        else:
            new["lastTransitionTime"] = c.get("lastTransitionTime", now)
        if new == c:
            return False
        conds[i] = new
        return True
    conds.append({**condition, "lastTransitionTime": condition.get("lastTransitionTime", now)})
    return True


def is_condition_true(obj_or_status: Obj, ctype: str) -> bool:
    c = get_condition(obj_or_status, ctype)
    return bool(c and c.get("status") == "True")


def pod_is_ready(pod: Obj) -> bool:
    """Pod has condition Ready=True."""
    return is_condition_true(pod, "Ready")
