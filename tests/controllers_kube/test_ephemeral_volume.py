"""Generic ephemeral volumes: the ephemeral-volume controller makes each Pod's claims, the
PersistentVolume binder (or a provisioner) binds them, the scheduler places the Pod, and the
garbage collector with pvc-protection removes the claims with the Pod."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from pathlib import Path
from typing import Any

from pumice._util.clock import default_clock
from pumice.api import Obj
from pumice.api.scheme import EVENT, PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, POD
from pumice.client.base import is_not_found
from pumice.controllers.kube.ephemeral import desired_claim
from pumice.node.provisioner import LocalPathProvisioner

from .conftest import chain, eventually

PV = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-scratch"},
      "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
               "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/var/tmp/pv-scratch"}}}
TEMPLATE: Obj = {"metadata": {"labels": {"type": "scratch"}, "annotations": {"example.com/note": "tmp"}},
                 "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                          "resources": {"requests": {"storage": "500Mi"}}}}


def pod(name: str, *, template: Obj | None = None, **spec: Any) -> Obj:
    tpl = copy.deepcopy(TEMPLATE if template is None else template)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox", "volumeMounts": [
                {"name": "scratch", "mountPath": "/scratch"}]}],
                "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": tpl}}], **spec}}


async def _get(c: Any, kind: Any, name: str, ns: str | None = "default") -> Obj | None:
    try:
        return dict(await c.get(kind, name, ns))
    except Exception as e:
        if is_not_found(e):
            return None
        raise


def test_the_claim_of_an_ephemeral_volume_is_the_template_owned_by_the_pod() -> None:
    p = pod("web")
    p["metadata"]["uid"] = "u1"
    vol = p["spec"]["volumes"][0]
    assert desired_claim(p, vol) == {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "web-scratch", "namespace": "default",
                     "labels": {"type": "scratch"}, "annotations": {"example.com/note": "tmp"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "u1",
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": TEMPLATE["spec"]}
    # the builder copies: the Pod's template is not shared with the claim
    claim = desired_claim(p, vol)
    claim["spec"]["accessModes"].append("ReadOnlyMany")
    assert vol["ephemeral"]["volumeClaimTemplate"]["spec"]["accessModes"] == ["ReadWriteOnce"]
    # a template without labels or annotations gives a claim without them
    db = pod("db", template={"spec": TEMPLATE["spec"]})
    bare = desired_claim(db, db["spec"]["volumes"][0])
    assert "labels" not in bare["metadata"] and "annotations" not in bare["metadata"]


async def test_a_pod_with_an_ephemeral_volume_gets_its_claim_bound_and_runs_then_takes_it_along() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        await c.create(copy.deepcopy(PV))
        created = await c.create(pod("web"))

        async def running() -> bool:
            p = await _get(c, POD, "web")
            return p is not None and (p.get("status") or {}).get("phase") == "Running"

        await eventually(running, what="Pod Running")
        claim = await _get(c, PERSISTENT_VOLUME_CLAIM, "web-scratch")
        assert claim is not None
        assert claim["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": created["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}]
        assert claim["metadata"]["labels"] == {"type": "scratch"}
        assert claim["metadata"]["annotations"]["example.com/note"] == "tmp"
        assert claim["spec"]["volumeName"] == "pv-scratch" and claim["status"]["phase"] == "Bound"
        assert (await c.get(POD, "web", "default"))["spec"]["nodeName"] == "fake-node-0"
        # the Pod's delete takes its claim along (garbage collector, then pvc-protection once the
        # Pod is gone); the volume is Released
        await c.delete(POD, "web", "default")
        await eventually(lambda: _gone(c, PERSISTENT_VOLUME_CLAIM, "web-scratch"), timeout=30, what="claim deleted")

        async def released() -> bool:
            pv = await _get(c, PERSISTENT_VOLUME, "pv-scratch", None)
            return pv is not None and (pv.get("status") or {}).get("phase") == "Released"

        await eventually(released, what="volume Released")


async def _gone(c: Any, kind: Any, name: str) -> bool:
    return await _get(c, kind, name) is None


async def test_an_ephemeral_claim_of_the_default_class_is_provisioned_and_the_pod_scheduled() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        provisioner = LocalPathProvisioner(env.cluster.new_client(), Path("/nonexistent/pv"), default_clock(),
                                           record_events=False, make_dirs=False)
        provisioning = asyncio.create_task(provisioner.run())
        try:
            tpl = copy.deepcopy(TEMPLATE)
            del tpl["spec"]["storageClassName"]  # the default class "standard", filled in at the claim's create
            await c.create(pod("job", template=tpl))

            async def scheduled() -> bool:
                p = await _get(c, POD, "job")
                return p is not None and bool(p["spec"].get("nodeName"))

            await eventually(scheduled, timeout=30, what="Pod scheduled")
            claim = await _get(c, PERSISTENT_VOLUME_CLAIM, "job-scratch")
            assert claim is not None and claim["spec"]["storageClassName"] == "standard"
            assert claim["status"]["phase"] == "Bound" and claim["spec"]["volumeName"].startswith("pvc-")
        finally:
            provisioning.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await provisioning


async def test_a_claim_of_that_name_not_owned_by_the_pod_is_left_alone_with_a_warning_event() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        await c.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": {"name": "web-scratch", "namespace": "default"},
                        "spec": copy.deepcopy(TEMPLATE["spec"])})
        await c.create(pod("web"))

        async def warned() -> list[Obj]:
            return [e for e in (await c.list(EVENT, "default")).items
                    if e.get("reason") == "FailedBinding" and e["involvedObject"].get("name") == "web"]

        await eventually(warned, what="FailedBinding Event")
        ev = (await warned())[0]
        assert ev["type"] == "Warning" and ev["involvedObject"]["kind"] == "Pod"
        assert ev["message"] == ("ephemeral volume scratch: PVC default/web-scratch was not created for pod "
                                 "default/web (pod is not owner)")
        assert ev["source"]["component"] == "ephemeral_volume"
        claim = await c.get(PERSISTENT_VOLUME_CLAIM, "web-scratch", "default")
        assert not claim["metadata"].get("ownerReferences")
        assert not (await c.get(POD, "web", "default"))["spec"].get("nodeName")


async def test_a_deleted_ephemeral_claim_is_made_again_for_its_pod() -> None:
    async with chain(nodes=1) as env:
        c = env.client
        # a Pod that no Node admits: its claim is not in use, so its delete is not held back
        created = await c.create(pod("idle", nodeSelector={"disk": "none"}))

        async def claim_uid() -> str:
            claim = await _get(c, PERSISTENT_VOLUME_CLAIM, "idle-scratch")
            return "" if claim is None or claim["metadata"].get("deletionTimestamp") else claim["metadata"]["uid"]

        await eventually(claim_uid, what="claim created")
        first = await claim_uid()
        await c.delete(PERSISTENT_VOLUME_CLAIM, "idle-scratch", "default")

        async def remade() -> bool:
            return (await claim_uid()) not in ("", first)

        await eventually(remade, what="claim made again")
        claim = await c.get(PERSISTENT_VOLUME_CLAIM, "idle-scratch", "default")
        assert claim["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
