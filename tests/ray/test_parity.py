"""Child objects and events that a side-by-side run with the real KubeRay operator showed to differ
(issue 10, "Parity with the real operator"): head Pod annotations, Pod and Service event reasons."""

from __future__ import annotations

import random

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.common.hashing import hash_without_replicas_and_workers_to_delete
from pumice.controllers.ray.raycluster import RayClusterReconciler
from pumice.controllers.ray.rayjob import RayJobReconciler
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient
from pumice.testing.ray_dashboard import FakeRayDashboard

from .conftest import load_sample, ray_scheme


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.items.append((type, reason, message))


async def test_head_pod_carries_kuberay_version_and_recreate_hash_and_pod_events_name_the_node_type() -> None:
    ev = Events()
    client = FakeClient(ray_scheme(), clock=FakeClock())
    rc = RayClusterReconciler(client, recorder=ev)
    cluster = await client.create(load_sample("ray-cluster.sample.yaml", "RayCluster"))
    await rc.reconcile(Request("default", cluster["metadata"]["name"]))
    pods = (await client.list(scheme.POD, "default")).items
    [head] = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    ann = head["metadata"]["annotations"]
    assert ann["ray.io/kuberay-version"] == "nightly"
    assert ann["ray.io/upgrade-strategy-recreate-hash"] == hash_without_replicas_and_workers_to_delete(cluster["spec"])
    workers = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    assert "ray.io/kuberay-version" not in (workers[0]["metadata"].get("annotations") or {})
    reasons = [(r, m) for _, r, m in ev.items]
    assert ("CreatedHeadPod", f"Created head Pod default/{head['metadata']['name']}") in reasons
    assert ("CreatedWorkerPod", f"Created worker Pod default/{workers[0]['metadata']['name']}") in reasons
    assert ("CreatedService", "Created service default/raycluster-kuberay-head-svc") in reasons
    assert not [r for r, _ in reasons if r == "CreatedPod"]


async def test_rayjob_path_records_created_service_for_its_head_service() -> None:
    ev = Events()
    clock = FakeClock()
    client = FakeClient(ray_scheme(), clock=clock)
    dash = FakeRayDashboard()
    rc = RayClusterReconciler(client, clock=clock)
    rj = RayJobReconciler(client, clock=clock, dashboard_client_factory=dash.factory, recorder=ev,
                          rng=random.Random(1))
    await client.create(load_sample("ray-job.sample.yaml", "RayJob"))
    req = Request("default", "rayjob-sample")
    await rj.reconcile(req)
    await rj.reconcile(req)
    name = (await client.get(scheme.RAY_JOB, "rayjob-sample", "default"))["status"]["rayClusterName"]
    await rc.reconcile(Request("default", name))
    for p in (await client.list(scheme.POD, "default")).items:
        p["apiVersion"], p["kind"] = "v1", "Pod"
        p["status"] = {"phase": "Running", "podIP": "10.244.0.9", "conditions": [{"type": "Ready", "status": "True"}]}
        await client.update_status(p)
    await rc.reconcile(Request("default", name))
    await rj.reconcile(req)  # -> Running
    await rj.reconcile(req)  # Running: the RayJob's head Service
    assert ("Normal", "CreatedService", "Created the service default/rayjob-sample-head-svc") in ev.items


async def test_a_worker_group_named_empty_creates_worker_pods_with_worker_events() -> None:
    """The CRD lets groupName be ``""``; its Pods are still workers (trial 11 F-2: they were
    reported as ``CreatedHeadPod``)."""
    ev = Events()
    client = FakeClient(ray_scheme(), clock=FakeClock())
    rc = RayClusterReconciler(client, recorder=ev)
    sample = load_sample("ray-cluster.sample.yaml", "RayCluster")
    sample["spec"]["workerGroupSpecs"][0]["groupName"] = ""
    sample["spec"]["workerGroupSpecs"][0]["replicas"] = 1
    cluster = await client.create(sample)
    await rc.reconcile(Request("default", cluster["metadata"]["name"]))
    pods = (await client.list(scheme.POD, "default")).items
    by_type = {p["metadata"]["labels"]["ray.io/node-type"]: p["metadata"]["name"] for p in pods}
    assert set(by_type) == {"head", "worker"}
    reasons = [(r, m) for _, r, m in ev.items if r.startswith("Created") and r.endswith("Pod")]
    assert sorted(reasons) == [("CreatedHeadPod", f"Created head Pod default/{by_type['head']}"),
                               ("CreatedWorkerPod", f"Created worker Pod default/{by_type['worker']}")]
