"""``ephemeral-volume``: the PersistentVolumeClaim of each generic ephemeral volume of a Pod.

For a Pod (not being deleted) with ``volumes[].ephemeral.volumeClaimTemplate``, each such volume
gets the claim ``<pod name>-<volume name>`` (:func:`pumice.api.storage.volume_claim_name`): the
template's labels, annotations and spec, in the Pod's namespace, controlled by the Pod
(``blockOwnerDeletion: true``). The PersistentVolume binder binds it (or hands it to its class's
provisioner), the schedulers place the Pod once it is bound, and when the Pod goes the garbage
collector deletes the claim (``pvc-protection`` lets it go once the Pod is shut down).

A claim of that name that the Pod does not control is left alone: the Pod gets a Warning Event
``FailedBinding`` ``ephemeral volume <volume>: PVC <ns>/<claim> was not created for pod <ns>/<pod>
(pod is not owner)`` and is retried with backoff (the schedulers keep it Pending with the same
text); a refused create gets ``ephemeral volume <volume>: create PVC <claim>: <API message>``.

Events: a Pod created (or seen at start) with an ephemeral volume; a claim deleted, for the Pods
whose ephemeral volume it was (made again once it is gone). Pod updates are ignored (a Pod's
volumes cannot change) and so are Pod deletes (the garbage collector handles the claims).

Mirrors: kubernetes pkg/controller/volume/ephemeral/controller.go (enqueuePod, onPVCDelete,
syncHandler, handleVolume) and component-helpers storage/ephemeral.
Deviates: a create refused with AlreadyExists (the claim cache behind a claim just made) is
retried without an Event.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from pumice.api import Obj
from pumice.api.meta import is_deleting, owner_reference
from pumice.api.scheme import PERSISTENT_VOLUME_CLAIM, POD
from pumice.api.storage import volume_claim_name, why_not_for_pod
from pumice.client.base import ApiError, KubeClient, is_already_exists
from pumice.client.informer import Informer
from pumice.controllers.kube.volumeprotection import POD_CLAIM_INDEX, pod_claim_keys
from pumice.runtime import Request, Result
from pumice.runtime.events import EventRecorder
from pumice.runtime.manager import Manager
from pumice.runtime.predicates import FuncPredicate

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions

log = logging.getLogger(__name__)

COMPONENT = "ephemeral_volume"
"""The Events' ``source.component`` (upstream's)."""
REASON_FAILED_BINDING = "FailedBinding"


class EphemeralVolumeError(Exception):
    """A Pod's ephemeral volume that cannot get its claim (retried with backoff)."""


def ephemeral_volumes(pod: Obj) -> list[Obj]:
    """The Pod's generic ephemeral volumes, in volume order."""
    return [v for v in (pod.get("spec") or {}).get("volumes") or () if isinstance(v, dict) and "ephemeral" in v]


def wants_claims(pod: Obj) -> bool:
    """A Pod this controller works on: not being deleted, with an ephemeral volume (enqueuePod)."""
    return not is_deleting(pod) and bool(ephemeral_volumes(pod))


def desired_claim(pod: Obj, volume: Obj) -> Obj:
    """The claim of ``pod``'s ephemeral ``volume`` (pure; the template is copied): the template's
    labels and annotations (when it has them) and spec, controlled by the Pod."""
    template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") or {}
    tmd = template.get("metadata") or {}
    md: Obj = {"name": volume_claim_name(pod, volume), "namespace": (pod.get("metadata") or {}).get("namespace")}
    for key in ("labels", "annotations"):
        if tmd.get(key):
            md[key] = copy.deepcopy(tmd[key])
    md["ownerReferences"] = [owner_reference(pod, default=POD)]
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md,
            "spec": copy.deepcopy(template.get("spec") or {})}


class EphemeralVolumeReconciler:
    """``ephemeral-volume``: see the module docstring. Reconciles Pods.

    Args:
        client: the API client (claim creates).
        pods: Pod informer (indexed by the claims its Pods name).
        claims: PersistentVolumeClaim informer.
        recorder: Events about Pods (component ``ephemeral_volume``).
    """

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> EphemeralVolumeReconciler:
        """Build the reconciler and register it: Pods created with an ephemeral volume, and the
        Pods whose ephemeral claim was deleted."""
        inf = mgr.informers
        r = cls(mgr.client, pods=inf.informer(POD), claims=inf.informer(PERSISTENT_VOLUME_CLAIM),
                recorder=mgr.event_recorder(COMPONENT))
        mgr.controller("ephemeral-volume").for_(POD, FuncPredicate(
            create=wants_claims, update=lambda _o, _n: False, delete=lambda _p: False)).watches(
            PERSISTENT_VOLUME_CLAIM, r.pods_of_claim, FuncPredicate(
                create=lambda _c: False, update=lambda _o, _n: False)).complete(r)
        return r

    def __init__(self, client: KubeClient, *, pods: Informer, claims: Informer, recorder: EventRecorder) -> None:
        self.client = client
        self.pods = pods
        self.claims = claims
        self.recorder = recorder
        pods.add_indexer(POD_CLAIM_INDEX, pod_claim_keys)

    def pods_of_claim(self, claim: Obj) -> list[Request]:
        """The Pods to look at again after ``claim`` was deleted (onPVCDelete): those naming it
        that :func:`wants_claims`."""
        md = claim.get("metadata") or {}
        users = self.pods.store.by_index(POD_CLAIM_INDEX, f"{md.get('namespace') or ''}/{md.get('name') or ''}")
        return [Request.for_object(p) for p in users if wants_claims(p)]

    async def reconcile(self, req: Request) -> Result:
        """Make the missing claims of the Pod's ephemeral volumes, in volume order.

        Raises:
            EphemeralVolumeError: a volume whose claim exists but is not the Pod's, or whose create
                was refused (after the Warning Event).
            ApiError: a create refused with AlreadyExists (retried).
        """
        pod = self.pods.store.get(req.namespace, req.name)
        if pod is None or is_deleting(pod):
            return Result()
        for volume in ephemeral_volumes(pod):
            why = await self._ensure_claim(pod, volume)
            if why:
                vname = volume.get("name", "")
                self.recorder.event(pod, "Warning", REASON_FAILED_BINDING, f"ephemeral volume {vname}: {why}")
                raise EphemeralVolumeError(f"pod {req.namespace}/{req.name}, ephemeral volume {vname}: {why}")
        return Result()

    async def _ensure_claim(self, pod: Obj, volume: Obj) -> str:
        """handleVolume: "" once the volume's claim is the Pod's (made now if missing), else why not."""
        ns = str((pod.get("metadata") or {}).get("namespace") or "")
        name = volume_claim_name(pod, volume)
        existing = self.claims.store.get(ns, name)
        if existing is not None:
            return why_not_for_pod(pod, existing) or ""
        try:
            await self.client.create(desired_claim(pod, volume))
        except ApiError as e:
            if is_already_exists(e):
                raise
            return f"create PVC {name}: {e}"
        log.info("created PersistentVolumeClaim %s/%s for ephemeral volume %s of Pod %s", ns, name,
                 volume.get("name", ""), (pod.get("metadata") or {}).get("name"))
        return ""
