"""Reconcile helpers on wire-form dicts: owner references, create-or-update, finalizers.

The mutating helpers return "did I change anything?" so a reconciler writes only when needed (a
second reconcile with no change in the world writes nothing).

Mirrors: controller-runtime pkg/controller/controllerutil/controllerutil.go.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable
from typing import Literal, Protocol

from pumice.api import Obj
from pumice.api.scheme import ResourceKind
from pumice.client.base import KubeClient, is_not_found

OperationResult = Literal["created", "updated", "unchanged"]

__all__ = [
    "AlreadyOwnedError",
    "OperationResult",
    "add_finalizer",
    "create_or_update",
    "has_finalizer",
    "remove_finalizer",
    "set_controller_reference",
    "set_owner_reference",
]


class AlreadyOwnedError(ValueError):
    """The object already has a different controller owner.

    Mirrors: controller-runtime controllerutil.AlreadyOwnedError.
    """


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _same_owner(ref: Obj, owner_ref: Obj) -> bool:
    """Same group, kind and name (version ignored, as upstream referSameObject)."""
    return (
        _group(str(ref.get("apiVersion", ""))) == _group(owner_ref["apiVersion"])
        and ref.get("kind") == owner_ref["kind"]
        and ref.get("name") == owner_ref["name"]
    )


def _check_scope(owner: Obj, obj: Obj) -> None:
    owner_ns = (owner.get("metadata") or {}).get("namespace") or ""
    obj_ns = (obj.get("metadata") or {}).get("namespace") or ""
    if owner_ns and owner_ns != obj_ns:
        what = "cluster-scoped resource" if not obj_ns else f"namespace {obj_ns!r}"
        raise ValueError(
            f"cross-namespace owner references are disallowed: owner's namespace {owner_ns!r}, "
            f"obj's {what}"
        )


def _owner_ref(owner: Obj, *, controller: bool | None, block_owner_deletion: bool | None) -> Obj:
    md = owner.get("metadata") or {}
    if not owner.get("apiVersion") or not owner.get("kind") or not md.get("name") or not md.get("uid"):
        raise ValueError("owner needs apiVersion, kind, metadata.name and metadata.uid")
    ref: Obj = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": md["name"], "uid": md["uid"]}
    if controller is not None:
        ref["controller"] = controller
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    return ref


def _upsert_ref(obj: Obj, ref: Obj) -> bool:
    refs: list[Obj] = obj.setdefault("metadata", {}).setdefault("ownerReferences", [])
    for i, existing in enumerate(refs):
        if _same_owner(existing, ref):
            if existing == ref:
                return False
            refs[i] = ref
            return True
    refs.append(ref)
    return True


def set_controller_reference(owner: Obj, obj: Obj) -> bool:
    """Make ``owner`` the controller of ``obj`` (ownerReference with ``controller: true`` and
    ``blockOwnerDeletion: true``), in place.

    Returns True when ``obj`` changed.

    Raises:
        AlreadyOwnedError: when another object is already ``obj``'s controller.
        ValueError: when ``owner`` lacks apiVersion/kind/name/uid, or the owner is namespaced and
            ``obj`` is in another namespace or cluster-scoped.
    """
    ref = _owner_ref(owner, controller=True, block_owner_deletion=True)
    _check_scope(owner, obj)
    for existing in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if existing.get("controller") and not _same_owner(existing, ref):
            raise AlreadyOwnedError(
                f"object {obj.get('kind', '')} {(obj.get('metadata') or {}).get('name', '')!r} is already "
                f"owned by another {existing.get('kind')} controller {existing.get('name')!r}"
            )
    return _upsert_ref(obj, ref)


def set_owner_reference(owner: Obj, obj: Obj) -> bool:
    """Add (or refresh) a non-controller ownerReference to ``owner`` on ``obj``, in place.

    Returns True when ``obj`` changed. Raises ValueError as :func:`set_controller_reference`.
    """
    ref = _owner_ref(owner, controller=None, block_owner_deletion=None)
    _check_scope(owner, obj)
    for existing in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if _same_owner(existing, ref):
            merged = {**existing, **ref}
            if merged == existing:
                return False
            return _upsert_ref(obj, merged)
    return _upsert_ref(obj, ref)


# ---------------------------------------------------------------------------------------------
# finalizers (pure on dicts)
# ---------------------------------------------------------------------------------------------


def has_finalizer(obj: Obj, finalizer: str) -> bool:
    """Whether ``metadata.finalizers`` contains ``finalizer``."""
    return finalizer in ((obj.get("metadata") or {}).get("finalizers") or [])


def add_finalizer(obj: Obj, finalizer: str) -> bool:
    """Append ``finalizer`` if absent, in place. Returns True when added."""
    if has_finalizer(obj, finalizer):
        return False
    md = obj.setdefault("metadata", {})
    md["finalizers"] = [*(md.get("finalizers") or []), finalizer]
    return True


def remove_finalizer(obj: Obj, finalizer: str) -> bool:
    """Remove every occurrence of ``finalizer``, in place. Returns True when removed."""
    if not has_finalizer(obj, finalizer):
        return False
    md = obj["metadata"]
    md["finalizers"] = [f for f in md["finalizers"] if f != finalizer]
    return True


# ---------------------------------------------------------------------------------------------
# create or update
# ---------------------------------------------------------------------------------------------


class Reader(Protocol):
    """Something to read the current object from (a client, or an informer's lister)."""

    def get(self, namespace: str | None, name: str) -> Obj | None: ...


MutateFn = Callable[[Obj], Awaitable[None] | None]


def _kind_of(client: KubeClient, obj: Obj) -> ResourceKind:
    rk = client.scheme.by_api_version_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if rk is None:
        raise ValueError(f"unknown kind {obj.get('apiVersion')!r} {obj.get('kind')!r}")
    return rk


async def _mutate(fn: MutateFn, obj: Obj) -> None:
    md = obj.get("metadata") or {}
    key = (md.get("namespace") or "", md.get("name"))
    out = fn(obj)
    if inspect.isawaitable(out):
        await out
    md = obj.get("metadata") or {}
    if ((md.get("namespace") or ""), md.get("name")) != key:
        raise ValueError("mutate_fn must not change metadata.name or metadata.namespace")


async def create_or_update(
    client: KubeClient, obj: Obj, mutate_fn: MutateFn, *, lister: Reader | None = None
) -> tuple[Obj, OperationResult]:
    """Create ``obj`` or bring the live object in line with ``mutate_fn``.

    ``obj`` names the object (apiVersion, kind, metadata.name/namespace). The live object is read
    (from ``lister`` when given, else from the API); if missing, ``mutate_fn(obj)`` fills ``obj``
    in and it is created. If present, ``mutate_fn`` is applied to a deep copy of the live object
    and an update is sent only when the result differs. ``mutate_fn`` may be sync or async and
    mutates its argument in place.

    Returns:
        (the object as written or as found, "created" | "updated" | "unchanged").

    Raises:
        ValueError: unknown kind, or ``mutate_fn`` changed the name or namespace.
        ApiError: from the API (e.g. 409 Conflict on a stale resourceVersion: the caller's
            reconcile fails and is retried).

    Mirrors: controller-runtime controllerutil.CreateOrUpdate.
    """
    rk = _kind_of(client, obj)
    md = obj.get("metadata") or {}
    name, ns = md.get("name"), (md.get("namespace") or None)
    if not name:
        raise ValueError("create_or_update needs metadata.name")
    live: Obj | None
    if lister is not None:
        live = lister.get(ns, name)
    else:
        try:
            live = await client.get(rk, name, ns)
        except Exception as e:
            if not is_not_found(e):
                raise
            live = None
    if live is None:
        await _mutate(mutate_fn, obj)
        created = await client.create(obj)
        return created, "created"
    desired = copy.deepcopy(live)
    await _mutate(mutate_fn, desired)
    if desired == live:
        return live, "unchanged"
    updated = await client.update(desired)
    return updated, "updated"
