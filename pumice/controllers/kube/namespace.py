"""The Namespace controller: empty a deleted Namespace, then let it go.

When a Namespace has a deletionTimestamp (the API server sets ``status.phase: Terminating``):
delete every object of every namespaced kind the API serves in it (kinds from the client's scheme,
so CustomResourceDefinitions added at run time count), list what remains, and write the
deleter's five conditions on every pass: ``NamespaceDeletionDiscoveryFailure`` and
``NamespaceDeletionGroupVersionParsingFailure`` (always False here: kinds come from the scheme,
no discovery call can fail), ``NamespaceDeletionContentFailure`` (a kind whose list or delete
failed, or objects left with neither a finalizer nor a Pod grace period:
``unexpected items still remain in namespace: <ns> for gvr: <group>/<version>, Resource=<plural>``),
``NamespaceContentRemaining`` (``Some resources are remaining: configmaps. has 1 resource
instances``) and ``NamespaceFinalizersRemaining`` (``Some finalizers are remaining:
example.com/hold in 1 resource instances``); retry while anything remains, and once nothing
remains remove the ``kubernetes`` finalizer through the ``finalize`` subresource, after which the
API server deletes the Namespace.

Mirrors: kubernetes pkg/controller/namespace/deletion/namespaced_resources_deleter.go (Delete,
deleteAllContent, deleteAllContentForGroupVersionResource, finalizeNamespace) and
status_condition_utils.go (conditions, reasons and messages).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pumice._util.clock import Clock, parse_rfc3339, rfc3339
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
FINALIZER_ESTIMATE_SECONDS = 15
"""Seconds assumed for finalizers of remaining content to run (upstream finalizerEstimateSeconds)."""

CONDITION_TYPES = ("NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
                   "NamespaceDeletionContentFailure", "NamespaceContentRemaining", "NamespaceFinalizersRemaining")
"""The conditions the deleter keeps, in upstream's order (conditionTypes)."""
_OK: dict[str, tuple[str, str]] = {
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": ("ParsedGroupVersions", "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": ("ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentRemoved", "All content successfully removed"),
}


@dataclass
class ContentTotals:
    """What one deletion pass left: ``<plural>.<group>`` -> objects, finalizer -> objects held,
    the estimate (seconds) and the per-kind error texts."""

    remaining: dict[str, int] = field(default_factory=dict)
    finalizers: dict[str, int] = field(default_factory=dict)
    estimate: int = 0
    errors: list[str] = field(default_factory=list)


def _pod_grace_estimate(pods: list[Obj], since_deletion: float) -> int:
    """The longest terminationGracePeriodSeconds (default 30) of the non-terminal Pods, 0 once
    the Namespace has been deleting that long (estimateGracefulTerminationForPods)."""
    estimate = 0
    for p in pods:
        if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        grace = (p.get("spec") or {}).get("terminationGracePeriodSeconds")
        estimate = max(estimate, 30 if grace is None else int(grace))
    return 0 if since_deletion >= estimate else estimate


def deletion_conditions(totals: ContentTotals) -> list[Obj]:
    """The five conditions of a deleting Namespace after a pass (True with the failure or what
    remains, else False with upstream's "ok" reason and message).

    Mirrors: pkg/controller/namespace/deletion/status_condition_utils.go (ProcessContentTotals,
    makeDeleteContentCondition, newSuccessfulCondition): reason ``SomeFinalizerRemain`` (sic).
    """
    failing: dict[str, tuple[str, str]] = {}
    if totals.errors:
        msgs = sorted(totals.errors)
        failing["NamespaceDeletionContentFailure"] = (
            "ContentDeletionFailed", f"Failed to delete all resource types, {len(msgs)} remaining: {', '.join(msgs)}")
    if totals.remaining:
        parts = sorted(f"{k} has {n} resource instances" for k, n in totals.remaining.items() if n)
        failing["NamespaceContentRemaining"] = ("SomeResourcesRemain", f"Some resources are remaining: {', '.join(parts)}")
    if totals.finalizers:
        parts = sorted(f"{f} in {n} resource instances" for f, n in totals.finalizers.items() if n)
        failing["NamespaceFinalizersRemaining"] = ("SomeFinalizerRemain",
                                                   f"Some finalizers are remaining: {', '.join(parts)}")
    out = []
    for ctype in CONDITION_TYPES:
        reason, message = failing.get(ctype) or _OK[ctype]
        out.append({"type": ctype, "status": "True" if ctype in failing else "False", "reason": reason,
                    "message": message})
    return out


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

    async def delete_content(self, ns: str, deleted_at: float | None = None) -> ContentTotals:
        """Delete everything in ``ns``, kind by kind, then list what remains.

        Args:
            ns: the Namespace.
            deleted_at: its deletionTimestamp (epoch seconds; None: now), from which the Pods'
                grace periods are counted.

        Returns:
            What remains (per ``<plural>.<group>``, per finalizer), the estimate in seconds, and
            the per-kind errors (a kind that failed does not stop the others, as upstream).

        Mirrors: namespaced_resources_deleter.go deleteAllContent,
        deleteAllContentForGroupVersionResource, estimateGracefulTermination.
        """
        out = ContentTotals()
        since = self.clock.now() - (self.clock.now() if deleted_at is None else deleted_at)
        for rk in deletable_namespaced_kinds(self.client):
            try:
                items = (await self.client.list(rk, ns)).items
                estimate = _pod_grace_estimate(items, since) if rk.group == "" and rk.plural == "pods" else 0
                deleted = False
                for obj in items:
                    md = obj.get("metadata") or {}
                    if md.get("deletionTimestamp"):
                        continue
                    try:
                        await self.client.delete(rk, md["name"], ns, propagation_policy="Background")
                        deleted = True
                    except ApiError as e:
                        if not is_not_found(e) and e.code != 405:
                            raise
                if deleted:
                    items = (await self.client.list(rk, ns)).items
            except ApiError as e:
                if e.code in (404, 405):
                    continue
                out.errors.append(str(e))
                continue
            if not items:
                continue
            out.remaining[f"{rk.plural}.{rk.group}"] = len(items)
            finalizers: dict[str, int] = {}
            for obj in items:
                for f in (obj.get("metadata") or {}).get("finalizers") or []:
                    finalizers[f] = finalizers.get(f, 0) + 1
            for f, n in finalizers.items():
                out.finalizers[f] = out.finalizers.get(f, 0) + n
            if estimate:
                out.estimate = max(out.estimate, estimate)
            elif finalizers:
                out.estimate = max(out.estimate, FINALIZER_ESTIMATE_SECONDS)
            else:
                out.errors.append(f"unexpected items still remain in namespace: {ns} for gvr: {rk.group}/{rk.version}, "
                                  f"Resource={rk.plural}")
        return out

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
        totals = await self.delete_content(req.name, parse_rfc3339(str(ns_obj["metadata"]["deletionTimestamp"])))
        # the conditions are written on every pass, the "all good" ones too (upstream: a pass
        # that succeeds after one that failed must say so)
        status = copy.deepcopy(ns_obj.get("status") or {})
        now = rfc3339(self.clock.now())
        changed = False
        for cond in deletion_conditions(totals):
            changed |= meta.set_condition(status, cond, now)
        if changed:
            try:
                await self.client.update_status({**{k: copy.deepcopy(v) for k, v in ns_obj.items() if k != "status"}, "status": status})
            except ApiError as e:
                if not (is_conflict(e) or is_not_found(e)):
                    log.error("namespace %s: couldn't update status condition: %s", req.name, e)
        if totals.errors:
            raise RuntimeError(f"namespace {req.name}: {'; '.join(sorted(totals.errors))}")
        if totals.remaining:
            return Result(requeue_after=RETRY_SECONDS)
        try:
            await self.finalize(ns_obj)
        except ApiError as e:
            if is_not_found(e):
                return Result()
            raise
        return Result()
