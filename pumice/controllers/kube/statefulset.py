"""The StatefulSet controller: Pods with stable names (``<set>-<ordinal>``), stable storage (one
PersistentVolumeClaim per volumeClaimTemplate and ordinal, ``<template>-<set>-<ordinal>``), and,
with ``podManagementPolicy: OrderedReady``, ordered start (ordinal N is created once 0..N-1 are
Running and Ready) and ordered scale-down (highest ordinal first, one at a time).

Each Pod gets ``hostname`` = its name and ``subdomain`` = ``spec.serviceName`` (so the headless
Service gives it a stable DNS name), and the labels ``statefulset.kubernetes.io/pod-name``,
``apps.kubernetes.io/pod-index`` and ``controller-revision-hash``. The template's revisions are
ControllerRevisions ``<set>-<hash>``. A RollingUpdate replaces Pods of an older revision from the
highest ordinal down to ``partition``, one at a time, each after the others are Ready; OnDelete
waits for the user to delete them. Failed Pods are deleted and made again.

Status: replicas, readyReplicas, availableReplicas, currentReplicas, updatedReplicas,
currentRevision, updateRevision, observedGeneration, collisionCount.

Mirrors: kubernetes pkg/controller/statefulset (stateful_set_control.go updateStatefulSet,
stateful_set_utils.go getPodName/getPersistentVolumeClaimName/newVersionedStatefulSetPod,
stateful_pod_control.go createMissingPersistentVolumeClaims). Deviates: no
persistentVolumeClaimRetentionPolicy deletion (claims are retained), no maxUnavailable, no
minReadySeconds wait for availability.
"""

from __future__ import annotations

import copy
import logging

from pumice._util.clock import Clock
from pumice.api import Obj, meta
from pumice.api.meta import owner_reference
from pumice.api.scheme import CONTROLLER_REVISION, PERSISTENT_VOLUME_CLAIM, POD, STATEFUL_SET
from pumice.client.base import ApiError, KubeClient, is_already_exists, is_conflict
from pumice.client.informer import OWNER_UID_INDEX, Informer
from pumice.controllers.kube.options import KubeOptions
from pumice.controllers.kube.podutil import compute_hash, delete_exactly, is_terminal
from pumice.runtime import Request, Result
from pumice.runtime.events import EventRecorder
from pumice.runtime.manager import Manager

log = logging.getLogger(__name__)

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"


def pod_name(sts: Obj, ordinal: int) -> str:
    return f"{sts['metadata']['name']}-{ordinal}"


def claim_name(template: Obj, sts: Obj, ordinal: int) -> str:
    return f"{template['metadata']['name']}-{pod_name(sts, ordinal)}"


def ordinal_of(sts: Obj, pod: Obj) -> int | None:
    prefix = sts["metadata"]["name"] + "-"
    name = pod["metadata"]["name"]
    if not name.startswith(prefix) or not name[len(prefix):].isdigit():
        return None
    return int(name[len(prefix):])


def revision_name(sts: Obj) -> str:
    """``<set>-<hash of the template>``: the update revision of the set's current template."""
    return f"{sts['metadata']['name']}-{compute_hash((sts.get('spec') or {}).get('template') or {})}"


def desired_pod(sts: Obj, ordinal: int, revision: str) -> Obj:
    """The Pod of ``ordinal`` at ``revision`` (pure)."""
    spec = sts.get("spec") or {}
    tpl = spec.get("template") or {}
    md = tpl.get("metadata") or {}
    name = pod_name(sts, ordinal)
    labels = {**(md.get("labels") or {}), POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal),
              REVISION_LABEL: revision}
    pmeta: Obj = {"name": name, "namespace": sts["metadata"].get("namespace"), "labels": labels,
                  "ownerReferences": [owner_reference(sts)]}
    if md.get("annotations"):
        pmeta["annotations"] = dict(md["annotations"])
    pspec = copy.deepcopy(tpl.get("spec") or {})
    pspec["hostname"] = name
    if spec.get("serviceName"):
        pspec["subdomain"] = spec["serviceName"]
    claims = spec.get("volumeClaimTemplates") or []
    if claims:
        names = {c["metadata"]["name"] for c in claims}
        vols = [v for v in pspec.get("volumes") or [] if v.get("name") not in names]
        vols.extend({"name": c["metadata"]["name"],
                     "persistentVolumeClaim": {"claimName": claim_name(c, sts, ordinal)}} for c in claims)
        pspec["volumes"] = vols
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pmeta, "spec": pspec}


def desired_claim(sts: Obj, template: Obj, ordinal: int) -> Obj:
    """The PersistentVolumeClaim of ``template`` for ``ordinal`` (pure; labelled with the set's
    selector, not owned by the set: claims outlive their Pods)."""
    spec = sts.get("spec") or {}
    labels = {**((template.get("metadata") or {}).get("labels") or {}),
              **((spec.get("selector") or {}).get("matchLabels") or {})}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim_name(template, sts, ordinal), "namespace": sts["metadata"].get("namespace"),
                         "labels": labels},
            "spec": copy.deepcopy(template.get("spec") or {})}


def _replicas(sts: Obj) -> int:
    r = (sts.get("spec") or {}).get("replicas")
    return 1 if r is None else int(r)


def _running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and meta.pod_is_ready(pod) and \
        not pod["metadata"].get("deletionTimestamp")


class StatefulSetReconciler:
    """Reconciler for apps/v1 StatefulSets (see the module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> StatefulSetReconciler:
        """Build the controller and register it (StatefulSets, owned Pods)."""
        inf = mgr.informers
        sts = cls(mgr.client, sets=inf.informer(STATEFUL_SET), pods=inf.informer(POD),
                  claims=inf.informer(PERSISTENT_VOLUME_CLAIM), revisions=inf.informer(CONTROLLER_REVISION),
                  clock=mgr.clock, recorder=mgr.event_recorder("statefulset-controller"))
        mgr.controller("statefulset").for_(STATEFUL_SET).owns(POD).with_options(
            max_concurrent_reconciles=opts.workers).complete(sts)
        return sts

    def __init__(self, client: KubeClient, *, sets: Informer, pods: Informer, claims: Informer, revisions: Informer,
                 clock: Clock, recorder: EventRecorder) -> None:
        self.client = client
        self.sets = sets
        self.pods = pods
        self.claims = claims
        self.revisions = revisions
        self.clock = clock
        self.recorder = recorder

    async def reconcile(self, req: Request) -> Result:
        sts = self.sets.store.get(req.namespace, req.name)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return Result()
        try:
            await self._sync(sts)
        except ApiError as e:
            if is_conflict(e) or is_already_exists(e):
                return Result(requeue_after=0.5)
            raise
        return Result()

    async def _ensure_revision(self, sts: Obj, revision: str) -> None:
        if self.revisions.store.get(sts["metadata"].get("namespace"), revision) is not None:
            return
        owned = [r for r in self.revisions.store.by_index(OWNER_UID_INDEX, sts["metadata"]["uid"])]
        number = max([int(r.get("revision") or 0) for r in owned] or [0]) + 1
        try:
            await self.client.create({
                "apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": revision, "namespace": sts["metadata"].get("namespace"),
                             "labels": dict((sts.get("spec") or {}).get("selector", {}).get("matchLabels") or {})
                             | {REVISION_LABEL: revision},
                             "ownerReferences": [owner_reference(sts)]},
                "data": {"spec": {"template": (sts.get("spec") or {}).get("template") or {}}},
                "revision": number})
        except ApiError as e:
            if not is_already_exists(e):
                raise

    async def _sync(self, sts: Obj) -> None:
        spec = sts.get("spec") or {}
        replicas = _replicas(sts)
        start = int(((spec.get("ordinals") or {}).get("start")) or 0)
        update_rev = revision_name(sts)
        await self._ensure_revision(sts, update_rev)
        owned = self.pods.store.by_index(OWNER_UID_INDEX, sts["metadata"]["uid"])
        by_ordinal: dict[int, Obj] = {}
        for p in owned:
            o = ordinal_of(sts, p)
            if o is not None:
                by_ordinal[o] = p
        ordered = (spec.get("podManagementPolicy") or "OrderedReady") == "OrderedReady"
        wanted = list(range(start, start + replicas))
        current_rev = (sts.get("status") or {}).get("currentRevision") or update_rev
        blocked = False
        for i in wanted:
            pod = by_ordinal.get(i)
            if pod is not None and is_terminal(pod) and not pod["metadata"].get("deletionTimestamp"):
                await self._delete(sts, pod, "recreate failed Pod")
                blocked = blocked or ordered
                continue
            if pod is None:
                if blocked:
                    break
                await self._create(sts, i, update_rev if i >= self._partition(spec) else current_rev)
                if ordered:
                    blocked = True
                continue
            if ordered and not _running_and_ready(pod):
                blocked = True
        # scale down: highest ordinal first; one at a time once the rest is ready when ordered
        extra = sorted((o for o in by_ordinal if o not in wanted), reverse=True)
        for o in extra:
            pod = by_ordinal[o]
            if pod["metadata"].get("deletionTimestamp"):
                if ordered:
                    break
                continue
            if ordered and any(not _running_and_ready(by_ordinal[w]) for w in wanted if w in by_ordinal):
                break
            await self._delete(sts, pod, "scale down")
            if ordered:
                break
        # rolling update: the highest ordinal at an old revision, once all are running and ready
        us = spec.get("updateStrategy") or {}
        if (us.get("type") or "RollingUpdate") == "RollingUpdate" and not extra and \
                all(o in by_ordinal and _running_and_ready(by_ordinal[o]) for o in wanted):
            partition = self._partition(spec)
            for o in sorted(wanted, reverse=True):
                if o < partition:
                    break
                pod = by_ordinal[o]
                if (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) != update_rev:
                    await self._delete(sts, pod, "update")
                    break
        await self._status(sts, list(by_ordinal.values()), update_rev, current_rev)

    @staticmethod
    def _partition(spec: Obj) -> int:
        us = spec.get("updateStrategy") or {}
        return int(((us.get("rollingUpdate") or {}).get("partition")) or 0)

    async def _create(self, sts: Obj, ordinal: int, revision: str) -> None:
        ns = sts["metadata"].get("namespace")
        for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            name = claim_name(template, sts, ordinal)
            if self.claims.store.get(ns, name) is None:
                try:
                    await self.client.create(desired_claim(sts, template, ordinal))
                    self.recorder.event(sts, "Normal", "SuccessfulCreate",
                                        f"create Claim {name} Pod {pod_name(sts, ordinal)} in StatefulSet "
                                        f"{sts['metadata']['name']} success")
                except ApiError as e:
                    if not is_already_exists(e):
                        self.recorder.event(sts, "Warning", "FailedCreate",
                                            f"create Claim {name} for Pod {pod_name(sts, ordinal)} in StatefulSet "
                                            f"{sts['metadata']['name']} failed error: {e.message or e}")
                        raise
        name = pod_name(sts, ordinal)
        try:
            await self.client.create(desired_pod(sts, ordinal, revision))
        except ApiError as e:
            if is_already_exists(e):
                return
            self.recorder.event(sts, "Warning", "FailedCreate",
                                f"create Pod {name} in StatefulSet {sts['metadata']['name']} failed error: "
                                f"{e.message or e}")
            raise
        self.recorder.event(sts, "Normal", "SuccessfulCreate",
                            f"create Pod {name} in StatefulSet {sts['metadata']['name']} successful")

    async def _delete(self, sts: Obj, pod: Obj, why: str) -> None:
        md = pod["metadata"]
        if not await delete_exactly(self.client, pod):
            return
        log.debug("statefulset %s: deleted %s (%s)", sts["metadata"]["name"], md["name"], why)
        self.recorder.event(sts, "Normal", "SuccessfulDelete",
                            f"delete Pod {md['name']} in StatefulSet {sts['metadata']['name']} successful")

    async def _status(self, sts: Obj, pods: list[Obj], update_rev: str, current_rev: str) -> None:
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp") and not is_terminal(p)]
        replicas = _replicas(sts)

        def at(rev: str) -> int:
            return sum(1 for p in live if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == rev)

        updated = at(update_rev)
        ready = sum(1 for p in live if _running_and_ready(p))
        if updated == replicas and ready == replicas:
            current_rev = update_rev
        status = dict(sts.get("status") or {})
        status.update({
            "observedGeneration": int(sts["metadata"].get("generation") or 0),
            "replicas": len(live), "readyReplicas": ready, "availableReplicas": ready,
            "currentReplicas": at(current_rev), "updatedReplicas": updated,
            "currentRevision": current_rev, "updateRevision": update_rev,
            "collisionCount": int(status.get("collisionCount") or 0),
        })
        if status != (sts.get("status") or {}):
            await self.client.update_status({**sts, "status": status})

