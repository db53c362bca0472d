"""The Namespace controller: empty a deleted Namespace, then let it go.

When a Namespace has a deletionTimestamp (the API server sets ``status.phase: Terminating``):
delete every object of every namespaced kind the API serves in it (kinds from the client's scheme,
so CustomResourceDefinitions added at run time count), report what remains in the
``NamespaceContentRemaining`` condition and retry, and once nothing remains remove the
``kubernetes`` finalizer through the ``finalize`` subresource, after which the API server deletes
the Namespace.

Mirrors: kubernetes pkg/controller/namespace/deletion/namespaced_resources_deleter.go (Delete,
deleteAllContent, finalizeNamespace) and the condition types/reasons of
staging/src/k8s.io/api/core/v1 (NamespaceContentRemaining / SomeResourcesRemain).
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from pumice._util.clock import Clock, rfc3339
from pumice.api import Obj, meta
from pumice.api.scheme import NAMESPACE, ResourceKind
from pumice.client.base import ApiError, KubeClient, is_conflict, is_not_found
from pumice.client.informer import Informer
from pumice.runtime import Request, Result
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

FINALIZER_KUBERNETES = "kubernetes"
RETRY_SECONDS = 1.0


def deletable_namespaced_kinds(client: KubeClient) -> list[ResourceKind]:
    """Namespaced kinds that can be listed and deleted, one version per group/kind, sorted."""
    seen: dict[tuple[str, str], ResourceKind] = {}
    for rk in client.scheme:
        if not rk.namespaced or "list" not in rk.verbs or "delete" not in rk.verbs:
            continue
        seen.setdefault((rk.group, rk.plural), rk)
    return [seen[k] for k in sorted(seen)]


class NamespaceReconciler:
    """Deletes the contents of Terminating Namespaces (see module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> NamespaceReconciler:
        """Build the controller and register it (Namespaces, two workers)."""
        ns = cls(mgr.client, namespaces=mgr.informers.informer(NAMESPACE), clock=mgr.clock)
        mgr.controller("namespace").for_(NAMESPACE).with_options(max_concurrent_reconciles=2).complete(ns)
        return ns

    def __init__(self, client: KubeClient, *, namespaces: Informer, clock: Clock) -> None:
        self.client = client
        self.namespaces = namespaces
        self.clock = clock

    async def delete_content(self, ns: str) -> dict[str, int]:
        """Delete everything in ``ns``; returns plural -> objects still present this pass."""
        remaining: dict[str, int] = {}
        for rk in deletable_namespaced_kinds(self.client):
            try:
                items = (await self.client.list(rk, ns)).items
            except ApiError as e:
                if e.code in (404, 405):
                    continue
                raise
            if not items:
                continue
            remaining[rk.plural if not rk.group else f"{rk.plural}.{rk.group}"] = len(items)
            for obj in items:
                md = obj.get("metadata") or {}
                if md.get("deletionTimestamp"):
                    continue
                try:
                    await self.client.delete(rk, md["name"], ns, propagation_policy="Background")
                except ApiError as e:
                    if not is_not_found(e):
                        raise
        return remaining

    async def finalize(self, ns_obj: Obj) -> None:
        new = copy.deepcopy(ns_obj)
        new.setdefault("spec", {})["finalizers"] = [
            f for f in (new.get("spec") or {}).get("finalizers") or [] if f != FINALIZER_KUBERNETES]
        request = getattr(self.client, "request", None)
        if request is not None:
            await request("PUT", NAMESPACE.path(name=new["metadata"]["name"], sub="finalize"), body=new)
        else:
            await self.client.patch(NAMESPACE, new["metadata"]["name"], {"spec": {"finalizers": new["spec"]["finalizers"]}},
                                    subresource="finalize")

    async def reconcile(self, req: Request) -> Result:
        ns_obj = self.namespaces.store.get(None, req.name)
        if ns_obj is None or not ns_obj["metadata"].get("deletionTimestamp"):
            return Result()
        if FINALIZER_KUBERNETES not in ((ns_obj.get("spec") or {}).get("finalizers") or []):
            return Result()
        remaining = await self.delete_content(req.name)
        if remaining:
            parts = ", ".join(f"{k} has {v} resource instances" for k, v in sorted(remaining.items()))
            now = rfc3339(self.clock.now())
            status = copy.deepcopy(ns_obj.get("status") or {})
            conds = meta.with_condition(status.get("conditions") or [], {
                "type": "NamespaceContentRemaining", "status": "True", "reason": "SomeResourcesRemain",
                "message": f"Some resources are remaining: {parts}"}, now)
            if conds != (status.get("conditions") or []):
                status["conditions"] = conds
                try:
                    await self.client.update_status({**copy.deepcopy(ns_obj), "status": status})
                except ApiError as e:
                    if not (is_conflict(e) or is_not_found(e)):
                        raise
            return Result(requeue_after=RETRY_SECONDS)
        try:
            await self.finalize(ns_obj)
        except ApiError as e:
            if is_not_found(e):
                return Result()
            raise
        return Result()
