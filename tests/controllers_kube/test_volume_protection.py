"""Storage object in-use protection: the StorageObjectInUseProtection admission plugin's finalizers
and the pvc-protection and pv-protection controllers that take them off."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

from pumice.api import Obj
from pumice.api.scheme import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, POD
from pumice.client.base import is_not_found
from pumice.controllers.kube.volumeprotection import (
    PVCProtectionReconciler,
    pod_is_terminated,
    pod_uses_claim,
)
from pumice.runtime import Request

from .conftest import chain, eventually

PV = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-data"},
      "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
               "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/var/tmp/pv-data"}}}
PVC = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                "resources": {"requests": {"storage": "500Mi"}}}}


def pod(name: str, *, claim: str = "data", node: str | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "busybox"}],
                 "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


async def gone(c: Any, kind: Any, name: str, ns: str | None = None) -> bool:
    try:
        await c.get(kind, name, ns)
    except Exception as e:
        if is_not_found(e):
            return True
        raise
    return False


async def test_admission_puts_the_protection_finalizers_on_new_claims_and_volumes() -> None:
    async with chain(nodes=1, manager=False) as env:
        c = env.client
        claim = await c.create(copy.deepcopy(PVC))
        volume = await c.create(copy.deepcopy(PV))
        assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
        assert volume["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
        # one already there is not added twice; others are kept, the protection one appended
        other = copy.deepcopy(PVC)
        other["metadata"].update(name="other", finalizers=["example.com/keep", "kubernetes.io/pvc-protection"])
        assert (await c.create(other))["metadata"]["finalizers"] == ["example.com/keep", "kubernetes.io/pvc-protection"]
        third = copy.deepcopy(PVC)
        third["metadata"].update(name="third", finalizers=["example.com/keep"])
        assert (await c.create(third))["metadata"]["finalizers"] == ["example.com/keep", "kubernetes.io/pvc-protection"]
        # without the controllers a deleted claim stays, Terminating, as on a cluster whose
        # kube-controller-manager is down
        await c.delete(PERSISTENT_VOLUME_CLAIM, "data", "default")
        assert (await c.get(PERSISTENT_VOLUME_CLAIM, "data", "default"))["metadata"]["deletionTimestamp"]


async def test_a_claim_used_by_a_scheduled_pod_outlives_its_delete_until_the_pod_is_gone() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        node = "fake-node-0"
        await c.create(copy.deepcopy(PVC))
        await c.create(pod("user", node=node))
        await c.create(pod("waiting"))  # not scheduled: does not hold the claim
        await c.delete(PERSISTENT_VOLUME_CLAIM, "data", "default")
        # the controller's own decision on the deleting claim, taken here once its cache has it:
        # in use, so no write (a wrong one would take the finalizer off, and the claim would go)
        assert env.kube is not None and env.kube.pvc_protection is not None
        protection = env.kube.pvc_protection
        await eventually(lambda: bool((protection.claims.store.get("default", "data") or {}).get("metadata", {})
                                      .get("deletionTimestamp")), what="the deleting claim cached")
        await protection.reconcile(Request("default", "data"))
        claim = await c.get(PERSISTENT_VOLUME_CLAIM, "data", "default")
        assert claim["metadata"]["deletionTimestamp"] and claim["metadata"]["finalizers"] == [
            "kubernetes.io/pvc-protection"]
        await c.delete(POD, "user", "default", grace_period_seconds=0)
        await eventually(lambda: gone(c, PERSISTENT_VOLUME_CLAIM, "data", "default"), what="claim deleted")


async def test_an_unused_claim_goes_at_once_and_one_without_the_finalizer_gets_it() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        await c.create(copy.deepcopy(PVC))
        await c.delete(PERSISTENT_VOLUME_CLAIM, "data", "default")
        await eventually(lambda: gone(c, PERSISTENT_VOLUME_CLAIM, "data", "default"), what="claim deleted")
        # a claim whose finalizer was taken off by hand gets it back (objects from before admission)
        other = await c.create({**copy.deepcopy(PVC), "metadata": {"name": "older", "namespace": "default"}})
        other["metadata"]["finalizers"] = []
        await c.update(other)

        async def protected() -> bool:
            cl = await c.get(PERSISTENT_VOLUME_CLAIM, "older", "default")
            return cl["metadata"].get("finalizers") == ["kubernetes.io/pvc-protection"]

        await eventually(protected, what="finalizer put back")


async def test_a_bound_volume_outlives_its_delete_until_it_is_released() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        await c.create(copy.deepcopy(PV))
        await c.create(copy.deepcopy(PVC))

        async def bound() -> bool:
            return ((await c.get(PERSISTENT_VOLUME, "pv-data")).get("status") or {}).get("phase") == "Bound"

        await eventually(bound, what="volume Bound")
        await c.delete(PERSISTENT_VOLUME, "pv-data")
        assert env.kube is not None and env.kube.pv_protection is not None
        protection = env.kube.pv_protection
        await eventually(lambda: bool((protection.volumes.store.get(None, "pv-data") or {}).get("metadata", {})
                                      .get("deletionTimestamp")), what="the deleting volume cached")
        await protection.reconcile(Request("", "pv-data"))  # Bound: kept, no write
        volume = await c.get(PERSISTENT_VOLUME, "pv-data")
        assert volume["metadata"]["deletionTimestamp"] and volume["status"]["phase"] == "Bound"
        await c.delete(PERSISTENT_VOLUME_CLAIM, "data", "default")  # unused: goes, the volume is Released
        await eventually(lambda: gone(c, PERSISTENT_VOLUME, "pv-data"), what="volume deleted")


def test_which_pods_use_a_claim() -> None:
    claim = {"metadata": {"name": "web-scratch", "namespace": "default", "uid": "c1",
                          "ownerReferences": [{"kind": "Pod", "name": "web", "uid": "p1", "controller": True}]}}
    eph: Obj = {"metadata": {"name": "web", "namespace": "default", "uid": "p1"},
                "spec": {"nodeName": "n1", "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]}}
    assert pod_uses_claim(eph, claim)
    # an ephemeral claim is not held by a Pod it does not belong to, nor by a Pod shut down
    stranger = copy.deepcopy(eph)
    stranger["metadata"]["uid"] = "p2"
    assert not pod_uses_claim(stranger, claim)
    shut = copy.deepcopy(eph)
    shut["metadata"].update(deletionTimestamp="2026-12-03T00:00:00Z", deletionGracePeriodSeconds=0)
    assert not pod_uses_claim(shut, claim)
    # a claim volume holds it whatever the Pod's phase, once the Pod is scheduled
    named = {"metadata": {"name": "data", "namespace": "default"}}
    done = {**pod("done", node="n1"), "status": {"phase": "Succeeded"}}
    assert pod_uses_claim(done, named)
    assert not pod_uses_claim(pod("waiting"), named)
    assert not pod_uses_claim(pod("other", claim="logs", node="n1"), named)


class _Store:
    def __init__(self, objs: list[Obj]) -> None:
        self.objs = objs

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return next((o for o in self.objs if o["metadata"]["name"] == name), None)

    def by_index(self, _index: str, _value: str) -> list[Obj]:
        return []  # the cache has no Pod yet


class _Informer:
    def __init__(self, objs: list[Obj]) -> None:
        self.store = _Store(objs)

    def add_indexer(self, _name: str, _fn: Any) -> None:
        pass


class _LiveClient:
    """The API server's answers: its Pods (which the cache has not seen) and the updates made."""

    def __init__(self, pods: list[Obj]) -> None:
        self.pods = pods
        self.updates: list[Obj] = []

    async def list(self, _kind: Any, _namespace: str | None = None) -> Any:
        return SimpleNamespace(items=self.pods)

    async def update(self, obj: Obj) -> Obj:
        self.updates.append(obj)
        return obj


async def test_a_pod_the_cache_has_not_seen_still_holds_the_claim_through_the_live_list() -> None:
    claim = {**copy.deepcopy(PVC), "kind": "PersistentVolumeClaim"}
    claim["metadata"].update(deletionTimestamp="2026-12-03T00:00:00Z", finalizers=["kubernetes.io/pvc-protection"])
    live = _LiveClient([pod("user", node="fake-node-0")])
    r = PVCProtectionReconciler(live, claims=_Informer([claim]), pods=_Informer([]))  # type: ignore[arg-type]
    await r.reconcile(Request("default", "data"))
    assert live.updates == []
    live.pods = []  # the Pod is gone: the finalizer comes off
    await r.reconcile(Request("default", "data"))
    assert [u["metadata"]["finalizers"] for u in live.updates] == [[]]


def test_a_pod_being_deleted_with_no_container_running_has_terminated() -> None:
    deleting = {**pod("p", node="n1"), "status": {"phase": "Running", "containerStatuses": [
        {"name": "c", "state": {"terminated": {"exitCode": 0}}}]}}
    deleting["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z"
    assert pod_is_terminated(deleting)
    running = copy.deepcopy(deleting)
    running["status"]["containerStatuses"][0]["state"] = {"running": {}}
    assert not pod_is_terminated(running)
    for state in ({}, None, {"running": None}):  # notRunning: neither terminated nor waiting is running
        running["status"]["containerStatuses"][0]["state"] = state
        assert not pod_is_terminated(running), state
    running["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "ContainerCreating"}}
    assert pod_is_terminated(running)
    assert pod_is_terminated({**pod("q", node="n1"), "status": {"phase": "Failed"}})
    assert not pod_is_terminated({**pod("r", node="n1"), "status": {"phase": "Running"}})
