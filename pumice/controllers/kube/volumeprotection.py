"""Storage object in-use protection: a PersistentVolumeClaim a Pod uses, and a PersistentVolume
that is bound, stay (Terminating) after a delete until they are no longer used.

The API server's ``StorageObjectInUseProtection`` admission plugin puts the finalizers on at
create (:class:`pumice.apiserver.admission.StorageObjectInUseProtection`); these two controllers
take them off:

- ``pvc-protection``: a claim being deleted loses ``kubernetes.io/pvc-protection`` once no
  scheduled Pod of its namespace uses it: a ``persistentVolumeClaim`` volume naming it (whatever
  the Pod's phase, until the Pod object is gone), or a generic ``ephemeral`` volume whose claim it
  is (the claim controlled by the Pod) while the Pod is not shut down (deleted with grace 0). The
  Pod cache is asked first; when it names no user, a live list of the namespace's Pods decides
  (the cache may not have a new Pod yet). Pod events that can free a claim (a Pod deleted,
  terminated or not scheduled) wake the claims it names.
- ``pv-protection``: a volume being deleted loses ``kubernetes.io/pv-protection`` once its phase is
  not ``Bound``.

Both also put their finalizer on an object that is not being deleted and lacks it (objects made
before the admission plugin ran).

Mirrors: kubernetes pkg/controller/volume/pvcprotection/pvc_protection_controller.go (processPVC,
isBeingUsed, askInformer, askAPIServer, podUsesPVC, podIsShutDown, enqueuePVCs),
pkg/controller/volume/pvprotection/pv_protection_controller.go (processPV, isBeingUsed) and
pkg/controller/volume/protectionutil (IsDeletionCandidate, NeedToAddFinalizer).
Deviates: no per-namespace batching of claims behind one lazy live list (each claim that the cache
finds unused makes its own live list).
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from pumice.api import Obj
from pumice.api.meta import is_deleting
from pumice.api.scheme import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, POD
from pumice.api.storage import (
    PV_PROTECTION_FINALIZER,
    PVC_PROTECTION_FINALIZER,
    pod_claims,
    why_not_for_pod,
)
from pumice.client.base import ApiError, KubeClient, is_conflict, is_not_found
from pumice.client.informer import Informer
from pumice.controllers.kube.podutil import is_terminal
from pumice.runtime import Request, Result
from pumice.runtime.helpers import add_finalizer, has_finalizer, remove_finalizer
from pumice.runtime.manager import Manager
from pumice.runtime.predicates import FuncPredicate

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions

log = logging.getLogger(__name__)

POD_CLAIM_INDEX = "pumice.io/pod-claims"
"""Pod cache index: ``<namespace>/<claim>`` for every claim a Pod's volumes name."""


def _md(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def is_deletion_candidate(obj: Obj, finalizer: str) -> bool:
    """Being deleted and still holding ``finalizer`` (protectionutil.IsDeletionCandidate)."""
    return is_deleting(obj) and has_finalizer(obj, finalizer)


def needs_finalizer(obj: Obj, finalizer: str) -> bool:
    """Not being deleted and without ``finalizer`` (protectionutil.NeedToAddFinalizer)."""
    return not is_deleting(obj) and not has_finalizer(obj, finalizer)


def pod_is_shut_down(pod: Obj) -> bool:
    """Deleted with grace 0 (done by the node agent, or force-deleted): it no longer holds its
    ephemeral claims."""
    md = _md(pod)
    return bool(md.get("deletionTimestamp")) and md.get("deletionGracePeriodSeconds") == 0


def pod_uses_claim(pod: Obj, claim: Obj) -> bool:
    """Whether scheduled ``pod`` uses ``claim`` (podUsesPVC): a claim volume naming it, or an
    ephemeral volume whose claim, controlled by the Pod, it is, while the Pod is not shut down."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    name = _md(claim).get("name")
    for claim_name, ephemeral in pod_claims(pod):
        if claim_name != name:
            continue
        if not ephemeral or (not pod_is_shut_down(pod) and why_not_for_pod(pod, claim) is None):
            return True
    return False


def pod_claim_keys(pod: Obj) -> list[str]:
    """:data:`POD_CLAIM_INDEX`'s values for ``pod`` (common.PodPVCIndexFunc)."""
    ns = _md(pod).get("namespace") or ""
    return [f"{ns}/{name}" for name, _ in pod_claims(pod)]


_STATUS_LISTS = ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")


def pod_is_terminated(pod: Obj) -> bool:
    """Succeeded or Failed, or being deleted with no container running (none reported counts as
    none running). A container counts as running unless its state says ``terminated`` or
    ``waiting``: an empty or missing state is running, as Go's nil pointers.
    Mirrors pkg/volume/util IsPodTerminated and notRunning."""
    if is_terminal(pod):
        return True
    status = pod.get("status") or {}
    return is_deleting(pod) and not any(_running(cs) for key in _STATUS_LISTS for cs in status.get(key) or ())


def _running(status: Obj) -> bool:
    state = status.get("state") or {}
    return state.get("terminated") is None and state.get("waiting") is None


def _may_free(pod: Obj) -> bool:
    """A Pod event that can let a claim go (enqueuePVCs): the Pod terminated or not scheduled."""
    return pod_is_terminated(pod) or not (pod.get("spec") or {}).get("nodeName")


def _claims_of(pod: Obj) -> list[Request]:
    ns = str(_md(pod).get("namespace") or "")
    return [Request(ns, name) for name, _ in pod_claims(pod)]


async def _set_finalizer(client: KubeClient, obj: Obj, finalizer: str, present: bool) -> Result:
    """Update ``obj`` (a cached object, copied) with ``finalizer`` added or removed."""
    new = copy.deepcopy(obj)
    if present:
        add_finalizer(new, finalizer)
    else:
        remove_finalizer(new, finalizer)
    try:
        await client.update(new)
    except ApiError as e:
        if is_conflict(e):
            return Result(requeue_after=0.5)  # the cache is behind a newer write
        if is_not_found(e):
            return Result()
        raise
    log.info("%s %s finalizer %s %s/%s", "added" if present else "removed", obj.get("kind", ""), finalizer,
             _md(obj).get("namespace") or "", _md(obj).get("name"))
    return Result()


class PVCProtectionReconciler:
    """``pvc-protection``: see the module docstring.

    Args:
        client: the API client (updates, and the live Pod list).
        claims: PersistentVolumeClaim informer.
        pods: Pod informer (indexed by the claims its Pods name).
    """

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> PVCProtectionReconciler:
        """Build the reconciler and register it: claims that need the finalizer or are being
        deleted with it, and the claims named by Pods that may have let them go."""
        inf = mgr.informers
        r = cls(mgr.client, claims=inf.informer(PERSISTENT_VOLUME_CLAIM), pods=inf.informer(POD))

        def wanted(c: Obj) -> bool:
            return needs_finalizer(c, PVC_PROTECTION_FINALIZER) or \
                is_deletion_candidate(c, PVC_PROTECTION_FINALIZER)

        claim_events = FuncPredicate(create=wanted, update=lambda _o, n: wanted(n), delete=lambda _c: False)
        pod_events = FuncPredicate(create=_may_free, update=lambda o, n: _may_free(n) or _md(o).get("uid") !=
                                   _md(n).get("uid"), delete=lambda _p: True)
        mgr.controller("pvc-protection").for_(PERSISTENT_VOLUME_CLAIM, claim_events).watches(
            POD, _claims_of, pod_events).complete(r)
        return r

    def __init__(self, client: KubeClient, *, claims: Informer, pods: Informer) -> None:
        self.client = client
        self.claims = claims
        self.pods = pods
        pods.add_indexer(POD_CLAIM_INDEX, pod_claim_keys)

    async def reconcile(self, req: Request) -> Result:
        claim = self.claims.store.get(req.namespace, req.name)
        if claim is None:
            return Result()
        if is_deletion_candidate(claim, PVC_PROTECTION_FINALIZER):
            if await self.in_use(claim):
                log.debug("keeping PersistentVolumeClaim %s/%s: a Pod uses it", req.namespace, req.name)
                return Result()
            return await _set_finalizer(self.client, claim, PVC_PROTECTION_FINALIZER, present=False)
        if needs_finalizer(claim, PVC_PROTECTION_FINALIZER):
            return await _set_finalizer(self.client, claim, PVC_PROTECTION_FINALIZER, present=True)
        return Result()

    async def in_use(self, claim: Obj) -> bool:
        """A Pod of the cache uses ``claim``, or else one of a live list of its namespace does."""
        ns = str(_md(claim).get("namespace") or "")
        if any(pod_uses_claim(p, claim) for p in self.pods.store.by_index(POD_CLAIM_INDEX, f"{ns}/{_md(claim)['name']}")):
            return True
        live = await self.client.list(POD, ns)
        return any(pod_uses_claim(p, claim) for p in live.items)


class PVProtectionReconciler:
    """``pv-protection``: see the module docstring.

    Args:
        client: the API client.
        volumes: PersistentVolume informer.
    """

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> PVProtectionReconciler:
        """Build the reconciler and register it on the volumes that need the finalizer or are
        being deleted with it."""
        r = cls(mgr.client, volumes=mgr.informers.informer(PERSISTENT_VOLUME))

        def wanted(v: Obj) -> bool:
            return needs_finalizer(v, PV_PROTECTION_FINALIZER) or is_deletion_candidate(v, PV_PROTECTION_FINALIZER)

        mgr.controller("pv-protection").for_(PERSISTENT_VOLUME, FuncPredicate(
            create=wanted, update=lambda _o, n: wanted(n), delete=lambda _v: False)).complete(r)
        return r

    def __init__(self, client: KubeClient, *, volumes: Informer) -> None:
        self.client = client
        self.volumes = volumes

    async def reconcile(self, req: Request) -> Result:
        volume = self.volumes.store.get(None, req.name)
        if volume is None:
            return Result()
        if is_deletion_candidate(volume, PV_PROTECTION_FINALIZER):
            if (volume.get("status") or {}).get("phase") == "Bound":
                log.debug("keeping PersistentVolume %s: it is bound", req.name)
                return Result()
            return await _set_finalizer(self.client, volume, PV_PROTECTION_FINALIZER, present=False)
        if needs_finalizer(volume, PV_PROTECTION_FINALIZER):
            return await _set_finalizer(self.client, volume, PV_PROTECTION_FINALIZER, present=True)
        return Result()
