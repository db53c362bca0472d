"""Upstream's suspend tests at the snapshot of reference/kuberay-2.md (kuberay master feeaf72fa):
the "Suspend RayCluster" specs of ray-operator/controllers/ray/raycluster_controller_test.go and
rayjob_controller_suspended_test.go, each keeping upstream's name.

Upstream runs them in envtest (a real API server, the controllers running, no kubelet: the test
sets Pod phases). Here the same steps run against the FakeClient with the controllers'
reconcile called until the world settles, and Pod phases set by the test as upstream does.

Not ported: "Suspend RayCluster / without Condition" (pumice has no RayClusterStatusConditions
feature gate; the conditions are always on, as upstream's default).
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.raycluster import RayClusterReconciler
from pumice.controllers.ray.rayjob import RayJobReconciler
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient
from pumice.testing.ray_dashboard import FakeRayDashboard

from .conftest import ray_scheme

RC_ORIGIN = "kuberay ray-operator/controllers/ray/raycluster_controller_test.go: Suspend RayCluster"
RJ_ORIGIN = "kuberay ray-operator/controllers/ray/rayjob_controller_suspended_test.go"
GROUP = "small-group"


def raycluster_template(name: str) -> Obj:
    """Upstream's rayClusterTemplate: one group small-group of 3 replicas (min 0, max 4)."""
    shm = {"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name, "namespace": "default"},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                "volumes": [shm], "containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
                     "workerGroupSpecs": [{"replicas": 3, "minReplicas": 0, "maxReplicas": 4, "groupName": GROUP,
                                           "rayStartParams": {}, "template": {"spec": {
                                               "volumes": [shm],
                                               "containers": [{"name": "ray-worker",
                                                               "image": "rayproject/ray:2.52.0"}]}}}]}}


class World:
    """The FakeClient with both controllers; ``settle`` reconciles until nothing is written."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.client = FakeClient(ray_scheme(), clock=self.clock)
        self.events: list[tuple[str, str, str]] = []
        self.dash = FakeRayDashboard()
        self.rc = RayClusterReconciler(self.client, clock=self.clock, recorder=self)
        self.rj = RayJobReconciler(self.client, clock=self.clock, recorder=self,
                                   dashboard_client_factory=self.dash.factory)

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))

    async def settle(self, rounds: int = 8) -> None:
        """Reconcile every RayJob and RayCluster until a round writes nothing (the controllers'
        retry loop: a pass that raises is retried in the next round, as the work queue would)."""
        for _ in range(rounds):
            before = self.client.resource_version
            for kind, rec in ((scheme.RAY_JOB, self.rj), (scheme.RAY_CLUSTER, self.rc)):
                for obj in (await self.client.list(kind, "default")).items:
                    with contextlib.suppress(Exception):
                        await rec.reconcile(Request("default", obj["metadata"]["name"]))
            self.clock.advance(2)
            if self.client.resource_version == before:
                return

    async def pods(self, cluster: str, selector: str = "") -> list[Obj]:
        sel = f"ray.io/cluster={cluster}" + (f",{selector}" if selector else "")
        return (await self.client.list(scheme.POD, "default", label_selector=sel)).items

    async def cluster(self, name: str) -> Obj:
        return await self.client.get(scheme.RAY_CLUSTER, name, "default")

    async def set_suspend(self, kind: Any, name: str, suspend: bool, group: bool = False) -> None:
        obj = await self.client.get(kind, name, "default")
        if group:
            obj["spec"]["workerGroupSpecs"][0]["suspend"] = suspend
        else:
            obj["spec"]["suspend"] = suspend
        await self.client.update(obj)

    async def pods_running(self, cluster: str, selector: str = "", ready: bool = False) -> None:
        for p in await self.pods(cluster, selector):
            p["apiVersion"], p["kind"] = "v1", "Pod"
            p["status"] = {"phase": "Running", "podIP": "10.244.0.7"}
            if ready:
                p["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            await self.client.update_status(p)

    async def set_finalizers(self, cluster: str, finalizers: list[str]) -> None:
        for p in await self.pods(cluster):
            p["apiVersion"], p["kind"] = "v1", "Pod"
            p["metadata"]["finalizers"] = finalizers
            await self.client.update(p)


def suspend_status(cluster: Obj) -> str:
    """findRayClusterSuspendStatus of upstream's test."""
    conds = {c["type"]: c["status"] for c in (cluster.get("status") or {}).get("conditions") or []}
    suspending, suspended = conds.get("RayClusterSuspending") == "True", conds.get("RayClusterSuspended") == "True"
    assert not (suspending and suspended), "RayClusterSuspending and RayClusterSuspended both true"
    return "RayClusterSuspending" if suspending else "RayClusterSuspended" if suspended else ""


def provisioned(cluster: Obj) -> bool:
    return any(c["type"] == "RayClusterProvisioned" and c["status"] == "True"
               for c in (cluster.get("status") or {}).get("conditions") or [])


@pytest.mark.upstream(f"{RC_ORIGIN} / with Condition")
async def test_suspend_raycluster_with_condition() -> None:
    w, name = World(), "raycluster-suspend"
    await w.client.create(raycluster_template(name))
    await w.settle()
    assert len(await w.pods(name, f"ray.io/group={GROUP}")) == 3
    # Should delete all head and worker Pods if suspended
    await w.set_suspend(scheme.RAY_CLUSTER, name, True)
    await w.settle()
    assert await w.pods(name) == []
    cl = await w.cluster(name)
    assert cl["status"]["state"] == "suspended"
    assert suspend_status(cl) == "RayClusterSuspended"
    assert not provisioned(cl) and not (cl["status"].get("head") or {}).get("podName")
    # Set suspend to false and then revert it to true before all Pods are running
    await w.set_suspend(scheme.RAY_CLUSTER, name, False)
    await w.settle()
    assert len(await w.pods(name, "ray.io/node-type=head")) == 1
    assert len(await w.pods(name, f"ray.io/group={GROUP}")) == 3
    await w.pods_running(name, "ray.io/node-type=worker")
    await w.set_suspend(scheme.RAY_CLUSTER, name, True)
    await w.settle()
    assert await w.pods(name) == []
    cl = await w.cluster(name)
    assert cl["status"]["state"] == "suspended" and suspend_status(cl) == "RayClusterSuspended"
    # Should run all head and worker pods if un-suspended
    await w.set_suspend(scheme.RAY_CLUSTER, name, False)
    await w.settle()
    assert len(await w.pods(name, "ray.io/node-type=head")) == 1
    assert len(await w.pods(name, f"ray.io/group={GROUP}")) == 3
    await w.pods_running(name)
    await w.settle()
    cl = await w.cluster(name)
    assert cl["status"]["state"] == "ready"
    assert suspend_status(cl) == "" and provisioned(cl) and cl["status"]["head"]["podName"]


@pytest.mark.upstream(f"{RC_ORIGIN} / atomically with Condition")
async def test_suspend_raycluster_atomically_with_condition() -> None:
    w, name = World(), "raycluster-suspend-atomically"
    await w.client.create(raycluster_template(name))
    await w.settle()
    assert len(await w.pods(name)) == 4
    await w.set_finalizers(name, ["ray.io/deletion-blocker"])
    # RayClusterSuspending once .spec.suspend is true ...
    await w.set_suspend(scheme.RAY_CLUSTER, name, True)
    await w.settle()
    assert suspend_status(await w.cluster(name)) == "RayClusterSuspending"
    # ... and consistently, even when .spec.suspend goes back to false
    await w.set_suspend(scheme.RAY_CLUSTER, name, False)
    for _ in range(3):
        await w.settle()
        assert suspend_status(await w.cluster(name)) == "RayClusterSuspending"
    old = sorted(p["metadata"]["name"] for p in await w.pods(name))
    assert len(old) == 4
    # the Pods go once the finalizers are removed, and new ones are created
    await w.set_finalizers(name, [])
    await w.settle()
    for _ in range(3):
        await w.settle()
        assert suspend_status(await w.cluster(name)) == ""
    new = sorted(p["metadata"]["name"] for p in await w.pods(name))
    assert len(new) == 4 and not set(new) & set(old)
    # suspend again: every Pod is deleted, RayClusterSuspended, and it stays so
    await w.set_suspend(scheme.RAY_CLUSTER, name, True)
    await w.settle()
    assert await w.pods(name) == []
    for _ in range(3):
        await w.settle()
        assert suspend_status(await w.cluster(name)) == "RayClusterSuspended"


@pytest.mark.upstream(f"{RC_ORIGIN} / worker group")
async def test_suspend_raycluster_worker_group() -> None:
    w, name = World(), "raycluster-suspend-workergroup"
    await w.client.create(raycluster_template(name))
    await w.settle()
    assert len(await w.pods(name)) == 4
    await w.set_suspend(scheme.RAY_CLUSTER, name, True, group=True)
    await w.settle()
    assert await w.pods(name, f"ray.io/group={GROUP}") == []
    assert len(await w.pods(name, "ray.io/node-type=head")) == 1
    assert len(await w.pods(name)) == 1


@pytest.mark.upstream(f"{RC_ORIGIN} / worker group with Autoscaler enabled")
async def test_suspend_raycluster_worker_group_with_autoscaler_enabled() -> None:
    w, name = World(), "raycluster-suspend-workergroup-autoscaler"
    cl = raycluster_template(name)
    cl["spec"]["enableInTreeAutoscaling"] = True
    await w.client.create(cl)
    await w.settle()
    assert len(await w.pods(name)) == 4
    await w.set_suspend(scheme.RAY_CLUSTER, name, True, group=True)
    for _ in range(3):
        await w.settle()
        assert len(await w.pods(name, f"ray.io/group={GROUP}")) == 3
        assert len(await w.pods(name, "ray.io/node-type=head")) == 1
    assert ("Warning", "InvalidRayClusterSpec", f"The RayCluster spec is invalid default/{name}: worker group "
            f"{GROUP} cannot be suspended with Autoscaler enabled") in w.events


def rayjob_template(name: str, suspend: bool = False) -> Obj:
    """Upstream's rayJobTemplate (K8sJobMode, sleep 999, shutdownAfterJobFinishes, one group)."""
    res = {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "namespace": "default", "annotations": {"foo": "bar"}},
            "spec": {"entrypoint": "sleep 999", "submissionMode": "K8sJobMode", "shutdownAfterJobFinishes": True,
                     "suspend": suspend,
                     "rayClusterSpec": {"rayVersion": "2.52.0", "headGroupSpec": {"rayStartParams": {}, "template": {
                         "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0",
                                                  "resources": res}]}}},
                         "workerGroupSpecs": [{"replicas": 3, "minReplicas": 0, "maxReplicas": 10000,
                                               "groupName": GROUP, "rayStartParams": {}, "template": {"spec": {
                                                   "containers": [{"name": "ray-worker",
                                                                   "image": "rayproject/ray:2.52.0",
                                                                   "resources": res}]}}}]}}}


async def job_status(w: World, name: str) -> Obj:
    return (await w.client.get(scheme.RAY_JOB, name, "default")).get("status") or {}


async def job_exists(w: World, name: str) -> bool:
    return any(j["metadata"]["name"] == name for j in (await w.client.list(scheme.JOB, "default")).items)


@pytest.mark.upstream(f"{RJ_ORIGIN}: When creating a rayjob with suspend == true")
async def test_rayjob_created_with_suspend_true() -> None:
    w, name = World(), "rayjob-suspend"
    await w.client.create(rayjob_template(name, suspend=True))
    await w.settle()
    st = await job_status(w, name)
    assert st["jobDeploymentStatus"] == "Suspended"
    for _ in range(3):  # should NOT create a raycluster object
        await w.settle()
        assert not (await job_status(w, name)).get("rayClusterName")
        assert (await w.client.list(scheme.RAY_CLUSTER, "default")).items == []
    await w.set_suspend(scheme.RAY_JOB, name, False)
    await w.settle()
    cluster = (await job_status(w, name))["rayClusterName"]
    assert cluster
    await w.cluster(cluster)
    for _ in range(3):  # no submitter Job while the cluster is not ready
        await w.settle()
        assert not await job_exists(w, name)
    await w.pods_running(cluster, ready=True)
    await w.settle()
    st = await job_status(w, name)
    assert st["dashboardURL"].startswith(name), st
    assert await job_exists(w, name)


@pytest.mark.upstream(f"{RJ_ORIGIN}: RayJob suspend operation shoud be atomic")
async def test_rayjob_suspend_operation_should_be_atomic() -> None:
    w, name = World(), "rayjob-atomic-suspend"
    await w.client.create(rayjob_template(name))
    await w.settle()
    st = await job_status(w, name)
    assert st["jobDeploymentStatus"] == "Initializing"
    await w.pods_running(st["rayClusterName"], ready=True)
    await w.settle()
    assert (await w.cluster(st["rayClusterName"]))["status"]["state"] == "ready"
    assert (await job_status(w, name))["jobDeploymentStatus"] == "Running"
    cl = await w.cluster(st["rayClusterName"])
    cl["metadata"]["finalizers"] = [*(cl["metadata"].get("finalizers") or []), "ray.io/deletion-blocker"]
    await w.client.update(cl)
    await w.set_suspend(scheme.RAY_JOB, name, True)
    await w.settle()
    assert (await job_status(w, name))["jobDeploymentStatus"] == "Suspending"
    for suspend in (False, True):  # the suspend field flips back and forth: Suspending holds
        await w.set_suspend(scheme.RAY_JOB, name, suspend)
        for _ in range(3):
            await w.settle()
            assert (await job_status(w, name))["jobDeploymentStatus"] == "Suspending"
    cl = await w.cluster(st["rayClusterName"])
    cl["metadata"]["finalizers"] = []
    await w.client.update(cl)
    await w.settle()
    assert (await job_status(w, name))["jobDeploymentStatus"] == "Suspended"


@pytest.mark.upstream(f"{RJ_ORIGIN}: When RayJob is suspended and should not requeue")
async def test_suspended_rayjob_does_not_requeue() -> None:
    w, name = World(), "test-suspended-rayjob"
    job = rayjob_template(name, suspend=True)
    job["status"] = {"jobDeploymentStatus": "Suspended", "jobStatus": ""}
    await w.client.create(job)
    result = await w.rj.reconcile(Request("default", name))
    assert not result.requeue_after
    assert (await job_status(w, name))["jobDeploymentStatus"] == "Suspended"


@pytest.mark.upstream(f"{RJ_ORIGIN}: When suspended RayJob transitions to New status")
async def test_suspended_rayjob_transitions_to_new() -> None:
    w, name = World(), "test-suspended-transition-rayjob"
    job = rayjob_template(name, suspend=False)
    job["status"] = {"jobDeploymentStatus": "Suspended", "jobStatus": ""}
    await w.client.create(job)
    result = await w.rj.reconcile(Request("default", name))
    assert result.requeue_after and result.requeue_after > 0
    st = await job_status(w, name)
    # upstream's JobDeploymentStatusNew and JobStatusNew are both ""
    assert st.get("jobDeploymentStatus", "") == "" and st.get("jobStatus", "") == ""
