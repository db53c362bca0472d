"""RayCluster controller against the in-memory FakeClient: services, pods, scaling, suspend, status.

The kubelet is simulated by :func:`mark_pods_running` (as KubeRay's envtest suites do).
"""

from __future__ import annotations

from typing import Any

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.raycluster import RayClusterReconciler, inconsistent_status
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample

REQ = Request("default", "raycluster-kuberay")


async def create_sample(client: FakeClient, **worker_overrides: Any) -> Obj:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["spec"]["workerGroupSpecs"][0].update(worker_overrides)
    return await client.create(cl)


async def pods(client: FakeClient, node_type: str | None = None) -> list[Obj]:
    sel = "ray.io/cluster=raycluster-kuberay" + (f",ray.io/node-type={node_type}" if node_type else "")
    return (await client.list(scheme.POD, "default", label_selector=sel)).items


async def mark_pods_running(client: FakeClient, ready: bool = True) -> None:
    for p in await pods(client):
        p["apiVersion"], p["kind"] = "v1", "Pod"
        p["status"] = {"phase": "Running", "podIP": f"10.244.0.{len(p['metadata']['name'])}",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
        await client.update_status(p)


async def default_target_ports(client: FakeClient) -> None:
    """Set each Service port's targetPort to its port, as the API server's defaulting does (the
    FakeClient does no defaulting; upstream's unit tests do the same by hand)."""
    for svc in (await client.list(scheme.SERVICE, "default")).items:
        for p in svc["spec"].get("ports") or []:
            p.setdefault("targetPort", p["port"])
        svc["apiVersion"], svc["kind"] = "v1", "Service"
        await client.update(svc)


async def cluster(client: FakeClient) -> Obj:
    return await client.get(scheme.RAY_CLUSTER, "raycluster-kuberay", "default")


async def settle(r: RayClusterReconciler, times: int = 3) -> None:
    for _ in range(times):
        await r.reconcile(REQ)


@pytest.fixture
def reconciler(client: FakeClient) -> RayClusterReconciler:
    return RayClusterReconciler(client, clock=FakeClock())


async def test_first_pass_creates_head_service_head_and_workers(client: FakeClient,
                                                                reconciler: RayClusterReconciler) -> None:
    await create_sample(client)
    result = await reconciler.reconcile(REQ)
    svc = await client.get(scheme.SERVICE, "raycluster-kuberay-head-svc", "default")
    assert svc["spec"]["clusterIP"] == "None"
    assert len(await pods(client, "head")) == 1
    assert len(await pods(client, "worker")) == 1
    assert result.requeue_after == 2.0  # status changed in this pass
    st = (await cluster(client))["status"]
    assert st["desiredWorkerReplicas"] == 1
    assert st["desiredCPU"] == "2" and st["desiredMemory"] == "6Gi"
    assert "state" not in st


async def test_a_second_pass_with_no_change_writes_nothing(client: FakeClient,
                                                           reconciler: RayClusterReconciler) -> None:
    await create_sample(client)
    await settle(reconciler)
    before = len(client.writes())
    result = await reconciler.reconcile(REQ)
    assert client.writes()[before:] == []
    assert result.requeue_after == 300.0


async def test_all_pods_running_and_ready_make_the_cluster_ready(client: FakeClient,
                                                                 reconciler: RayClusterReconciler) -> None:
    await create_sample(client)
    await reconciler.reconcile(REQ)
    await default_target_ports(client)
    await mark_pods_running(client)
    await reconciler.reconcile(REQ)
    st = (await cluster(client))["status"]
    assert st["state"] == "ready"
    assert st["readyWorkerReplicas"] == 1 and st["availableWorkerReplicas"] == 1
    conds = {c["type"]: (c["status"], c["reason"]) for c in st["conditions"]}
    assert conds["HeadPodReady"] == ("True", "HeadPodRunningAndReady")
    assert conds["RayClusterProvisioned"] == ("True", "AllPodRunningAndReadyFirstTime")
    assert conds["RayClusterSuspended"][0] == "False" and conds["RayClusterSuspending"][0] == "False"
    assert st["head"]["podName"].startswith("raycluster-kuberay-head-")
    assert st["head"]["serviceName"] == "raycluster-kuberay-head-svc"
    assert st["head"]["serviceIP"] == st["head"]["podIP"]
    assert st["endpoints"] == {"client": "10001", "dashboard": "8265", "gcs-server": "6379", "metrics": "8080"}


async def test_ready_state_never_goes_back_when_the_head_becomes_unready(client: FakeClient,
                                                                         reconciler: RayClusterReconciler) -> None:
    await create_sample(client)
    await reconciler.reconcile(REQ)
    await mark_pods_running(client)
    await reconciler.reconcile(REQ)
    await mark_pods_running(client, ready=False)
    await reconciler.reconcile(REQ)
    st = (await cluster(client))["status"]
    assert st["state"] == "ready"
    assert {c["type"]: c["status"] for c in st["conditions"]}["HeadPodReady"] == "False"


async def test_replicas_above_max_are_clamped(client: FakeClient, reconciler: RayClusterReconciler) -> None:
    await create_sample(client, replicas=10)
    await settle(reconciler)
    assert len(await pods(client, "worker")) == 5


@pytest.mark.upstream("raycluster_controller_test.go: scale down with workersToDelete")
async def test_workers_to_delete_deletes_exactly_those_pods(client: FakeClient,
                                                            reconciler: RayClusterReconciler) -> None:
    await create_sample(client, replicas=3)
    await settle(reconciler)
    workers = sorted(p["metadata"]["name"] for p in await pods(client, "worker"))
    assert len(workers) == 3
    cl = await cluster(client)
    cl["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"] = {"workersToDelete": [workers[1]]}
    await client.update(cl)
    deletes_before = [a for a in client.writes() if a[0] == "delete"]
    await settle(reconciler)
    after = sorted(p["metadata"]["name"] for p in await pods(client, "worker"))
    assert after == [workers[0], workers[2]]
    deletes = [a for a in client.writes() if a[0] == "delete"][len(deletes_before):]
    # the list stays in the spec (the autoscaler clears it), so later passes retry the delete and
    # get NotFound; no other Pod is ever deleted
    assert {d[3] for d in deletes} == {workers[1]}


async def test_workers_to_delete_naming_a_gone_pod_is_ignored(client: FakeClient,
                                                              reconciler: RayClusterReconciler) -> None:
    await create_sample(client, scaleStrategy={"workersToDelete": ["no-such-pod"]})
    await settle(reconciler)
    assert len(await pods(client, "worker")) == 1


async def test_scale_up_creates_the_difference_with_free_replica_indexes(client: FakeClient,
                                                                         reconciler: RayClusterReconciler) -> None:
    await create_sample(client)
    await settle(reconciler)
    cl = await cluster(client)
    cl["spec"]["workerGroupSpecs"][0]["replicas"] = 3
    await client.update(cl)
    await settle(reconciler)
    idx = sorted(p["metadata"]["labels"]["ray.io/worker-group-replica-index"] for p in await pods(client, "worker"))
    assert idx == ["0", "1", "2"]


async def test_scale_down_without_autoscaler_deletes_the_surplus(client: FakeClient,
                                                                 reconciler: RayClusterReconciler) -> None:
    await create_sample(client, replicas=3)
    await settle(reconciler)
    cl = await cluster(client)
    cl["spec"]["workerGroupSpecs"][0]["replicas"] = 1
    await client.update(cl)
    await settle(reconciler)
    assert len(await pods(client, "worker")) == 1


async def test_a_failed_head_pod_is_deleted_and_recreated(client: FakeClient,
                                                          reconciler: RayClusterReconciler) -> None:
    await create_sample(client)
    await settle(reconciler)
    head = (await pods(client, "head"))[0]
    head["apiVersion"], head["kind"] = "v1", "Pod"
    head["status"] = {"phase": "Failed"}
    await client.update_status(head)
    await reconciler.reconcile(REQ)
    assert await pods(client, "head") == []
    await reconciler.reconcile(REQ)
    heads = await pods(client, "head")
    assert len(heads) == 1 and heads[0]["metadata"]["name"] != head["metadata"]["name"]


async def test_suspend_deletes_all_pods_then_reports_suspended(client: FakeClient,
                                                               reconciler: RayClusterReconciler) -> None:
    await create_sample(client)
    await settle(reconciler)
    cl = await cluster(client)
    cl["spec"]["suspend"] = True
    await client.update(cl)
    await reconciler.reconcile(REQ)  # status pass records Suspending
    conds = {c["type"]: c["status"] for c in (await cluster(client))["status"]["conditions"]}
    assert conds["RayClusterSuspending"] == "True"
    await reconciler.reconcile(REQ)  # deletes the pods, then sees none: Suspended
    st = (await cluster(client))["status"]
    conds = {c["type"]: c["status"] for c in st["conditions"]}
    assert await pods(client) == []
    assert conds["RayClusterSuspended"] == "True" and conds["RayClusterSuspending"] == "False"
    assert conds["RayClusterProvisioned"] == "False"
    assert st["state"] == "suspended"
    cl = await cluster(client)
    cl["spec"]["suspend"] = False
    await client.update(cl)
    await settle(reconciler)
    assert len(await pods(client)) == 2


async def test_a_suspended_worker_group_has_no_pods(client: FakeClient, reconciler: RayClusterReconciler) -> None:
    await create_sample(client, replicas=2)
    await settle(reconciler)
    cl = await cluster(client)
    cl["spec"]["workerGroupSpecs"][0]["suspend"] = True
    await client.update(cl)
    await settle(reconciler)
    assert await pods(client, "worker") == []
    assert (await cluster(client))["status"]["desiredWorkerReplicas"] == 0


async def test_a_failed_pod_create_sets_replica_failure(client: FakeClient, reconciler: RayClusterReconciler) -> None:
    await create_sample(client)

    def fail_pods(verb: str, plural: str, ns: str, name: str) -> None:
        if verb == "create" and plural == "pods":
            raise RuntimeError("quota exceeded")

    client.interceptor = fail_pods
    await reconciler.reconcile(REQ)
    conds = {c["type"]: c for c in (await cluster(client))["status"]["conditions"]}
    assert conds["ReplicaFailure"]["reason"] == "FailedCreateHeadPod"
    client.interceptor = None
    await settle(reconciler)
    assert "ReplicaFailure" not in {c["type"] for c in (await cluster(client))["status"]["conditions"]}


async def test_multi_host_groups_scale_in_whole_replicas(client: FakeClient, reconciler: RayClusterReconciler) -> None:
    await create_sample(client, replicas=2, numOfHosts=2)
    await settle(reconciler)
    workers = await pods(client, "worker")
    assert len(workers) == 4
    by_replica: dict[str, list[str]] = {}
    for p in workers:
        by_replica.setdefault(p["metadata"]["labels"]["ray.io/worker-group-replica-name"], []).append(
            p["metadata"]["labels"]["ray.io/replica-host-index"])
    assert sorted(sorted(v) for v in by_replica.values()) == [["0", "1"], ["0", "1"]]
    await client.get(scheme.SERVICE, "raycluster-kuberay-headless", "default")
    victim = workers[0]["metadata"]["name"]
    cl = await cluster(client)
    cl["spec"]["workerGroupSpecs"][0]["replicas"] = 1
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"] = {"workersToDelete": [victim]}
    await client.update(cl)
    await settle(reconciler)
    left = await pods(client, "worker")
    assert len(left) == 2 and victim not in {p["metadata"]["name"] for p in left}


async def test_invalid_spec_creates_nothing(client: FakeClient, reconciler: RayClusterReconciler) -> None:
    await create_sample(client, minReplicas=3, maxReplicas=1)
    result = await reconciler.reconcile(REQ)
    assert result.requeue_after is None
    assert await pods(client) == []


def test_status_consistency_ignores_last_update_time() -> None:
    a = {"state": "ready", "lastUpdateTime": "2024-01-01T00:00:00Z", "conditions": []}
    assert not inconsistent_status(a, {**a, "lastUpdateTime": "2025-01-01T00:00:00Z"})
    assert inconsistent_status(a, {**a, "readyWorkerReplicas": 1})


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.items.append((type, reason, message))




@pytest.mark.parametrize("annotated", [True, False])
async def test_a_lost_head_of_a_provisioned_cluster_is_recreated_unless_annotated(
        client: FakeClient, reconciler: RayClusterReconciler, annotated: bool) -> None:
    # Upstream reconcilePods: a provisioned cluster marked ray.io/disable-provisioned-head-restart
    # (SidecarMode RayJobs' clusters) gets no new head Pod; any other cluster does.
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    if annotated:
        cl["metadata"]["annotations"] = {"ray.io/disable-provisioned-head-restart": "true"}
    await client.create(cl)
    await reconciler.reconcile(REQ)
    await default_target_ports(client)
    await mark_pods_running(client)
    await settle(reconciler)
    assert any(c["type"] == "RayClusterProvisioned" and c["status"] == "True"
               for c in (await cluster(client))["status"]["conditions"])
    head = (await pods(client, "head"))[0]
    await client.delete(scheme.POD, head["metadata"]["name"], "default")
    await settle(reconciler)
    heads = await pods(client, "head")
    assert (heads == []) if annotated else (len(heads) == 1 and heads[0]["metadata"]["name"] != head["metadata"]["name"])


async def test_the_serve_service_annotation_makes_the_serve_service_once(client: FakeClient,
                                                                       reconciler: RayClusterReconciler) -> None:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["metadata"]["annotations"] = {"ray.io/enable-serve-service": "true"}
    cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"].append(
        {"containerPort": 8000, "name": "serve"})
    await client.create(cl)
    await settle(reconciler)
    svc = await client.get(scheme.SERVICE, "raycluster-kuberay-serve-svc", "default")
    assert svc["spec"]["selector"] == {"ray.io/cluster": "raycluster-kuberay"}
    assert svc["spec"]["ports"] == [{"name": "serve", "port": 8000}]
    before = len(client.writes())
    await reconciler.reconcile(REQ)
    assert client.writes()[before:] == []


async def test_no_serve_service_without_the_annotation(client: FakeClient, reconciler: RayClusterReconciler) -> None:
    await create_sample(client)
    await settle(reconciler)
    names = [s["metadata"]["name"] for s in (await client.list(scheme.SERVICE, "default")).items]
    assert names == ["raycluster-kuberay-head-svc"]


async def test_the_serve_service_annotation_without_a_serve_port_stops_the_pass_before_the_pods(
        client: FakeClient, reconciler: RayClusterReconciler) -> None:
    """As upstream: reconcileServeService fails with its text, and the sub-reconcilers after it
    (the Pods) do not run."""
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["metadata"]["annotations"] = {"ray.io/enable-serve-service": "true"}
    await client.create(cl)
    result = await reconciler.reconcile(REQ)
    assert result.requeue_after == 2.0
    assert await pods(client) == []
