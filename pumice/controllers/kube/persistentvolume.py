"""The PersistentVolume binder: claims meet volumes.

For a PersistentVolumeClaim that is not bound:

- with ``spec.volumeName``: bind to that PersistentVolume when it is free (or pre-bound to the claim);
- otherwise pick the smallest Available volume of the claim's StorageClass whose capacity, access
  modes and volume mode fit (a volume pre-bound to the claim through ``claimRef`` wins);
- no volume fits and the class names a provisioner: annotate the claim
  ``volume.kubernetes.io/storage-provisioner`` (the provisioner, e.g. the node agent's local-path
  one, then creates a volume pre-bound to the claim) and record ``ExternalProvisioning``;
- no class and no volume: ``FailedBinding``.

Binding writes the volume first (``claimRef``, phase Bound) and then the claim (``volumeName``,
``pv.kubernetes.io/bind-completed``, phase Bound with the volume's capacity and access modes).

For a PersistentVolume: no claimRef -> Available; its claim gone (or a new claim with another uid)
-> Released (the provisioner deletes Released volumes whose reclaim policy is Delete; Retain keeps
them); claim bound to it -> Bound.

A claim of a ``WaitForFirstConsumer`` class waits for its first consumer: it binds only to a
volume pre-bound to it (the scheduler gives the volume it chose a ``claimRef``), and it is
provisioned only once the scheduler annotated it ``volume.kubernetes.io/selected-node``; until
then the binder records ``WaitForFirstConsumer`` (or ``WaitForPodScheduled`` naming the
unscheduled Pods that use it).

Mirrors: kubernetes pkg/controller/volume/persistentvolume/pv_controller.go (syncClaim,
syncUnboundClaim, syncBoundClaim, syncVolume, bind, emitEventForUnboundDelayBindingClaim),
index.go (findBestMatchForClaim), and the annotation and event texts there. Deviates: no
Recycle; the binder also watches unscheduled Pods' claims
(upstream re-syncs every claim every 15 s instead), so a waiting claim's event names the Pods
that use it once they exist.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from pumice.api import Obj
from pumice.api.scheme import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, POD, STORAGE_CLASS
from pumice.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    delays_binding,
    pod_claims,
    prebound_to,
    volume_fits,
)
from pumice.api.storage import class_of as _class_of
from pumice.api.storage import storage_bytes as _storage
from pumice.client.base import ApiError, KubeClient, is_conflict, is_not_found
from pumice.client.informer import Informer
from pumice.runtime import Request, Result
from pumice.runtime.events import EventRecorder
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"


def pod_claim_names(pod: Obj) -> list[str]:
    """The names of the claims a Pod uses (:func:`pumice.api.storage.pod_claims`), as the PV
    controller's Pod index keys them."""
    return [name for name, _ in pod_claims(pod)]


def claims_of_unscheduled_pod(pod: Obj) -> list[Request]:
    """The claims of a Pod not yet scheduled (a waiting WaitForFirstConsumer claim names it)."""
    if (pod.get("spec") or {}).get("nodeName"):
        return []
    ns = str((pod.get("metadata") or {}).get("namespace") or "")
    return [Request(ns, c) for c in pod_claim_names(pod)]


def claim_of_volume(pv: Obj) -> list[Request]:
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    if not ref.get("name"):
        return []
    return [Request(str(ref.get("namespace") or ""), str(ref["name"]))]


def find_best_match(pvc: Obj, volumes: list[Obj], *, delay_binding: bool = False) -> Obj | None:
    """The volume to bind ``pvc`` to: a fitting one pre-bound to it, else the smallest fitting
    Available volume with no claimRef (ties by name). With ``delay_binding`` (a
    WaitForFirstConsumer claim) only a pre-bound one: the scheduler picks the others."""
    fitting = [pv for pv in volumes if not (pv.get("metadata") or {}).get("deletionTimestamp") and volume_fits(pv, pvc)]
    for pv in fitting:
        if prebound_to(pv, pvc):
            return pv
    if delay_binding:
        return None
    free = [pv for pv in fitting if not (pv.get("spec") or {}).get("claimRef")
            and (pv.get("status") or {}).get("phase") in (None, "", "Available", "Pending")]
    free.sort(key=lambda pv: (_storage(pv, "capacity"), pv["metadata"]["name"]))
    return free[0] if free else None


class PersistentVolumeBinder:
    """Reconciles claims (``for_`` PersistentVolumeClaim); :meth:`reconcile_volume` handles volumes."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> PersistentVolumeBinder:
        """Build the binder and register its two controllers (claims; volumes)."""
        inf = mgr.informers
        binder = cls(mgr.client, claims=inf.informer(PERSISTENT_VOLUME_CLAIM), volumes=inf.informer(PERSISTENT_VOLUME),
                     classes=inf.informer(STORAGE_CLASS), recorder=mgr.event_recorder("persistentvolume-controller"),
                     pods=inf.informer(POD))
        mgr.controller("persistentvolume-binder").for_(PERSISTENT_VOLUME_CLAIM).watches(
            PERSISTENT_VOLUME, claim_of_volume).watches(POD, claims_of_unscheduled_pod).complete(binder)
        mgr.controller("persistentvolume-binder-volumes").for_(PERSISTENT_VOLUME).watches(
            PERSISTENT_VOLUME_CLAIM, lambda c: [Request("", str((c.get("spec") or {}).get("volumeName") or ""))]
            if (c.get("spec") or {}).get("volumeName") else []).complete(VolumeReconciler(binder))
        return binder

    def __init__(self, client: KubeClient, *, claims: Informer, volumes: Informer, classes: Informer,
                 recorder: EventRecorder, pods: Informer | None = None) -> None:
        self.client = client
        self.claims = claims
        self.volumes = volumes
        self.classes = classes
        self.recorder = recorder
        self.pods = pods

    # -------------------------------------------------------------------------------- claims

    async def reconcile(self, req: Request) -> Result:
        pvc = self.claims.store.get(req.namespace, req.name)
        if pvc is None or pvc["metadata"].get("deletionTimestamp"):
            return Result()
        try:
            return await self._sync_claim(pvc)
        except ApiError as e:
            if is_conflict(e) or is_not_found(e):
                return Result(requeue_after=0.5)
            raise

    async def _sync_claim(self, pvc: Obj) -> Result:
        spec = pvc.get("spec") or {}
        status = pvc.get("status") or {}
        name = spec.get("volumeName")
        if name:
            pv = self.volumes.store.get(None, name)
            if pv is None:
                if status.get("phase") == "Bound":
                    await self._claim_status(pvc, "Lost")
                    self.recorder.event(pvc, "Warning", "ClaimLost",
                                        "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
                return Result()
            ref = (pv.get("spec") or {}).get("claimRef")
            if ref and not prebound_to(pv, pvc):
                self.recorder.event(pvc, "Warning", "FailedBinding",
                                    f'volume "{name}" already bound to a different claim.')
                return Result()
            await self._bind(pv, pvc, set_volume_name=False)
            return Result()
        cls_name = _class_of(pvc)
        sc = self.classes.store.get(None, cls_name) if cls_name else None
        delay = delays_binding(sc)
        pv = find_best_match(pvc, self.volumes.store.list(), delay_binding=delay)
        if pv is not None:
            await self._bind(pv, pvc, set_volume_name=True)
            return Result()
        if delay and ANN_SELECTED_NODE not in (pvc["metadata"].get("annotations") or {}):
            self._event_waiting(pvc)
        elif sc is not None and sc.get("provisioner") and sc["provisioner"] != "kubernetes.io/no-provisioner":
            ann = pvc["metadata"].get("annotations") or {}
            if ann.get(ANN_STORAGE_PROVISIONER) != sc["provisioner"]:
                new = copy.deepcopy(pvc)
                anns = new["metadata"].setdefault("annotations", {})
                anns[ANN_STORAGE_PROVISIONER] = sc["provisioner"]
                anns[ANN_BETA_STORAGE_PROVISIONER] = sc["provisioner"]
                await self.client.update(new)
                self.recorder.event(
                    pvc, "Normal", "ExternalProvisioning",
                    f"Waiting for a volume to be created either by the external provisioner '{sc['provisioner']}' "
                    "or manually by the system administrator. If volume creation is delayed, please verify that "
                    "the provisioner is running and correctly registered.")
        elif not cls_name:
            self.recorder.event(pvc, "Normal", "FailedBinding",
                                "no persistent volumes available for this claim and no storage class is set")
        elif sc is None:
            self.recorder.event(pvc, "Warning", "ProvisioningFailed",
                                f'storageclass.storage.k8s.io "{cls_name}" not found')
        if status.get("phase") != "Pending":
            await self._claim_status(pvc, "Pending")
        return Result()

    def _event_waiting(self, pvc: Obj) -> None:
        """The event of a WaitForFirstConsumer claim waiting for a Node: ``WaitForPodScheduled``
        naming the unscheduled Pods that use it, or ``WaitForFirstConsumer`` when none does
        (pv_controller.go emitEventForUnboundDelayBindingClaim)."""
        md = pvc["metadata"]
        names: list[str] = []
        if self.pods is not None:
            names = [str(p["metadata"]["name"]) for p in self.pods.store.list(str(md.get("namespace") or ""))
                     if not (p.get("spec") or {}).get("nodeName") and md["name"] in pod_claim_names(p)]
        if not names:
            self.recorder.event(pvc, "Normal", "WaitForFirstConsumer",
                                "waiting for first consumer to be created before binding")
        elif len(names) == 1:
            self.recorder.event(pvc, "Normal", "WaitForPodScheduled", f"waiting for pod {names[0]} to be scheduled")
        else:
            self.recorder.event(pvc, "Normal", "WaitForPodScheduled",
                                f"waiting for pods {','.join(names)} to be scheduled")

    async def _claim_status(self, pvc: Obj, phase: str, pv: Obj | None = None) -> Obj:
        new = copy.deepcopy(pvc)
        st = new.setdefault("status", {})
        st["phase"] = phase
        if pv is not None:
            st["accessModes"] = list((pv.get("spec") or {}).get("accessModes") or [])
            st["capacity"] = dict((pv.get("spec") or {}).get("capacity") or {})
        if new.get("status") == pvc.get("status"):
            return pvc
        out: Obj = await self.client.update_status(new)
        return out

    async def _bind(self, pv: Obj, pvc: Obj, *, set_volume_name: bool) -> None:
        md = pvc["metadata"]
        # the volume first: claimRef and phase Bound
        new_pv = copy.deepcopy(pv)
        ref = new_pv["spec"].get("claimRef") or {}
        wanted_ref = {"kind": "PersistentVolumeClaim", "namespace": md.get("namespace"), "name": md["name"],
                      "uid": md.get("uid"), "apiVersion": "v1", "resourceVersion": md.get("resourceVersion")}
        if ref.get("uid") != md.get("uid"):
            if not ref:
                new_pv["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
            new_pv["spec"]["claimRef"] = wanted_ref
        if new_pv != pv:
            new_pv = await self.client.update(new_pv)
        if (new_pv.get("status") or {}).get("phase") != "Bound":
            new_pv = copy.deepcopy(new_pv)
            new_pv.setdefault("status", {})["phase"] = "Bound"
            await self.client.update_status(new_pv)
        # then the claim: volumeName, bind-completed, phase Bound
        new_pvc = copy.deepcopy(pvc)
        anns = new_pvc["metadata"].setdefault("annotations", {})
        anns[ANN_BIND_COMPLETED] = "yes"
        if set_volume_name or not (pvc.get("spec") or {}).get("volumeName"):
            anns[ANN_BOUND_BY_CONTROLLER] = "yes"
            new_pvc["spec"]["volumeName"] = pv["metadata"]["name"]
        if new_pvc != pvc:
            new_pvc = await self.client.update(new_pvc)
        await self._claim_status(new_pvc, "Bound", pv)

    # -------------------------------------------------------------------------------- volumes

    async def reconcile_volume(self, req: Request) -> Result:
        pv = self.volumes.store.get(None, req.name)
        if pv is None:  # one being deleted still moves to Released (pv-protection waits for it)
            return Result()
        ref = (pv.get("spec") or {}).get("claimRef")
        phase = (pv.get("status") or {}).get("phase")
        if not ref:
            want = "Available"
        else:
            pvc = self.claims.store.get(str(ref.get("namespace") or ""), str(ref.get("name") or ""))
            if pvc is None or (ref.get("uid") and (pvc.get("metadata") or {}).get("uid") != ref.get("uid")):
                # the claim is gone: Released once it had been bound (a pre-bound volume waits)
                want = "Released" if ref.get("uid") and phase in ("Bound", "Released") else (phase or "Available")
            elif (pvc.get("spec") or {}).get("volumeName") == pv["metadata"]["name"]:
                want = "Bound"
            else:
                want = phase or "Available"
        if want == phase:
            return Result()
        new = copy.deepcopy(pv)
        new.setdefault("status", {})["phase"] = want
        try:
            await self.client.update_status(new)
        except ApiError as e:
            if is_conflict(e) or is_not_found(e):
                return Result(requeue_after=0.5)
            raise
        return Result()


class VolumeReconciler:
    """The volume half of :class:`PersistentVolumeBinder` as its own controller (``for_`` PV)."""

    def __init__(self, binder: PersistentVolumeBinder) -> None:
        self.binder = binder

    async def reconcile(self, req: Request) -> Result:
        return await self.binder.reconcile_volume(req)
