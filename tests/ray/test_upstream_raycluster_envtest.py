"""Upstream's RayCluster envtest specs at the snapshot of reference/kuberay-2.md (kuberay master
feeaf72fa, ray-operator/controllers/ray/raycluster_controller_test.go), each ``Describe`` one test
keeping upstream's name; the "Suspend RayCluster" specs are in test_upstream_suspend.py.

Run as there: the FakeClient with the controllers reconciled until nothing is written, Pod phases
set by the test as upstream's envtest does (no kubelet).

Not ported: "Manager cache
Pod label selectors" (pumice's informers are not restricted to Ray Pods' labels). The finalizer
timeout's "Helper function tests" and "Auto-deletion safety" are the unit cases
TestGetGCSFTDeletionTimeout and TestHasGCSFTFinalizer in test_upstream_raycluster.py.
"""

from __future__ import annotations

import pytest

from pumice.api import Obj, scheme
from pumice.controllers.ray.common.pod import PodOptions
from pumice.controllers.ray.raycluster import RayClusterOptions, RayClusterReconciler

from .test_upstream_suspend import GROUP, World, raycluster_template

ORIGIN = "kuberay ray-operator/controllers/ray/raycluster_controller_test.go"


async def create(w: World, cl: Obj) -> str:
    await w.client.create(cl)
    await w.settle()
    return str(cl["metadata"]["name"])


async def update_group(w: World, name: str, **fields: object) -> None:
    cl = await w.cluster(name)
    g = cl["spec"]["workerGroupSpecs"][0]
    for k, v in fields.items():
        if k == "workers_to_delete":
            g.setdefault("scaleStrategy", {})["workersToDelete"] = v
        else:
            g[k] = v
    await w.client.update(cl)
    await w.settle()


async def workers(w: World, name: str) -> list[Obj]:
    return await w.pods(name, f"ray.io/group={GROUP}")


@pytest.mark.upstream(f"{ORIGIN}: Static RayCluster")
async def test_static_raycluster() -> None:
    w = World()
    # upstream's suite_test.go runs the RayCluster controller with a FluentBit head sidecar
    w.rc = RayClusterReconciler(w.client, clock=w.clock, recorder=w, options=RayClusterOptions(pod=PodOptions(
        head_sidecar_containers=({"name": "fluentbit", "image": "fluent/fluent-bit:1.9.6"},))))
    name = await create(w, raycluster_template("raycluster-static"))
    await w.client.get(scheme.SERVICE, f"{name}-head-svc", "default")
    assert len(await workers(w, name)) == 3
    [head] = await w.pods(name, "ray.io/node-type=head")
    # "Create a head Pod resource with default sidecars": autoscaling off, so the Ray container and
    # the sidecar, last
    assert [ct["name"] for ct in head["spec"]["containers"]] == ["ray-head", "fluentbit"]
    await w.pods_running(name)
    await w.settle()
    st = (await w.cluster(name))["status"]
    assert st["state"] == "ready" and st["stateTransitionTimes"]["ready"]
    # delete a worker Pod: KubeRay creates a new one
    victim = (await workers(w, name))[0]["metadata"]["name"]
    await w.client.delete(scheme.POD, victim, "default")
    await w.settle()
    assert len(await workers(w, name)) == 3
    # replicas past maxReplicas (4): 4 Pods, consistently
    await update_group(w, name, replicas=5)
    for _ in range(3):
        await w.settle()
        assert len(await workers(w, name)) == 4


@pytest.mark.parametrize(("label", "value", "expected"), [
    pytest.param("app.kubernetes.io/name", "myapp", "myapp", marks=pytest.mark.upstream(
        f"{ORIGIN}: RayCluster with overridden app.kubernetes.io labels"), id="app-name"),
    pytest.param("ray.io/cluster", "invalid-cluster-name", "raycluster-overridden-cluster-label",
                 marks=pytest.mark.upstream(f"{ORIGIN}: RayCluster with invalid overridden ray.io/cluster labels"),
                 id="cluster-label")])
async def test_raycluster_with_overridden_labels(label: str, value: str, expected: str) -> None:
    w = World()
    cl = raycluster_template("raycluster-overridden-k8s-labels" if label.startswith("app")
                             else "raycluster-overridden-cluster-label")
    cl["spec"]["headGroupSpec"]["template"]["metadata"] = {"labels": {label: value}}
    name = await create(w, cl)
    heads = await w.pods(name, "ray.io/node-type=head")
    assert len(heads) == 1 and heads[0]["metadata"]["labels"][label] == expected
    assert len(await workers(w, name)) == 3
    for p in heads:
        p["apiVersion"], p["kind"] = "v1", "Pod"
        p["status"] = {"phase": "Running", "podIP": "1.1.1.1"}
        await w.client.update_status(p)
    for p in await workers(w, name):
        p["apiVersion"], p["kind"] = "v1", "Pod"
        p["status"] = {"phase": "Running"}
        await w.client.update_status(p)
    await w.settle()
    st = (await w.cluster(name))["status"]
    assert st["state"] == "ready" and st["stateTransitionTimes"]["ready"]
    assert st["head"]["serviceIP"] == "1.1.1.1"


@pytest.mark.upstream(f"{ORIGIN}: RayCluster with autoscaling enabled")
async def test_raycluster_with_autoscaling_enabled() -> None:
    w = World()
    cl = raycluster_template("raycluster-autoscaler")
    cl["spec"]["enableInTreeAutoscaling"] = True
    name = await create(w, cl)
    for kind in (scheme.ROLE_BINDING, scheme.ROLE, scheme.SERVICE_ACCOUNT):
        await w.client.get(kind, name, "default")
    pods = await workers(w, name)
    assert len(pods) == 3
    # the autoscaler scales down: replicas 2 and the Pod to delete
    await update_group(w, name, replicas=2, workers_to_delete=[pods[0]["metadata"]["name"]])
    assert len(await workers(w, name)) == 2
    await update_group(w, name, workers_to_delete=[])
    # and up again
    await update_group(w, name, replicas=4)
    assert len(await workers(w, name)) == 4


@pytest.mark.upstream(f"{ORIGIN}: RayCluster with a multi-host worker group")
async def test_raycluster_with_a_multi_host_worker_group() -> None:
    w = World()
    cl = raycluster_template("raycluster-multihost")
    cl["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 4
    cl["spec"]["enableInTreeAutoscaling"] = True
    name = await create(w, cl)
    assert len(await w.pods(name, "ray.io/node-type=head")) == 1
    pods = await workers(w, name)
    assert len(pods) == 12
    await w.pods_running(name)
    replicas: dict[str, tuple[str, set[str]]] = {}
    for p in pods:
        labels = p["metadata"]["labels"]
        index, host = labels["ray.io/worker-group-replica-index"], labels["ray.io/replica-host-index"]
        rname = labels["ray.io/worker-group-replica-name"]
        seen_index, hosts = replicas.setdefault(rname, (index, set()))
        assert seen_index == index and host not in hosts and 0 <= int(host) < 4
        hosts.add(host)
    assert len(replicas) == 3 and {i for i, _ in replicas.values()} == {"0", "1", "2"}
    assert all(len(h) == 4 for _, h in replicas.values())
    await w.settle()
    st = (await w.cluster(name))["status"]
    assert st["state"] == "ready"
    assert (st["desiredWorkerReplicas"], st["minWorkerReplicas"], st["maxWorkerReplicas"]) == (12, 0, 16)
    # the autoscaler deletes one whole replica (its 4 Pods)
    doomed = [p["metadata"]["name"] for p in pods
              if p["metadata"]["labels"]["ray.io/worker-group-replica-name"] == next(iter(replicas))]
    await update_group(w, name, replicas=2, workers_to_delete=doomed)
    assert len(await workers(w, name)) == 8
    await update_group(w, name, workers_to_delete=[])
    await update_group(w, name, replicas=4)
    assert len(await workers(w, name)) == 16
    # a deleted worker Pod comes back (its replica is recreated whole)
    await w.client.delete(scheme.POD, (await workers(w, name))[0]["metadata"]["name"], "default")
    for _ in range(3):
        await w.settle()
        assert len(await workers(w, name)) == 16


@pytest.mark.upstream(f"{ORIGIN}: RayCluster with PodTemplate referencing a different namespace")
async def test_raycluster_with_pod_template_referencing_a_different_namespace() -> None:
    w = World()
    cl = raycluster_template("raycluster-podtemplate-namespace")
    cl["spec"]["headGroupSpec"]["template"]["metadata"] = {"namespace": "not-default"}
    cl["spec"]["workerGroupSpecs"][0]["template"]["metadata"] = {"namespace": "not-default"}
    name = await create(w, cl)
    assert len(await workers(w, name)) == 3
    assert len(await w.pods(name, "ray.io/node-type=head")) == 1
    assert (await w.client.list(scheme.POD, "not-default")).items == []


@pytest.mark.upstream(f"{ORIGIN}: RayCluster without resource request")
async def test_raycluster_without_resource_request() -> None:
    w = World()
    cl = raycluster_template("no-resource-req")
    limits = {"cpu": "1", "memory": "1Gi"}
    cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": limits}
    cl["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"] = {"limits": limits}
    name = await create(w, cl)
    assert len(await workers(w, name)) == 3
    await w.pods_running(name)
    await w.settle()
    st = (await w.cluster(name))["status"]
    assert st["state"] == "ready"
    assert (st["desiredMemory"], st["desiredCPU"]) == ("4Gi", "4")


@pytest.mark.upstream(f"{ORIGIN}: RayCluster with invalid NumOfHosts")
async def test_raycluster_with_invalid_num_of_hosts() -> None:
    w = World()
    cl = raycluster_template("raycluster-invalid-numofhosts")
    cl["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 0
    name = await create(w, cl)
    assert await workers(w, name) == []


COND_ORIGIN = f"{ORIGIN}: RayCluster with RayClusterStatusConditions feature gate enabled"


def condition(cl: Obj, kind: str) -> str:
    return next((c["status"] for c in (cl.get("status") or {}).get("conditions") or [] if c["type"] == kind), "")


@pytest.mark.upstream(f"{COND_ORIGIN} / Should handle HeadPodReady and RayClusterProvisioned conditions correctly")
async def test_head_pod_ready_and_raycluster_provisioned_conditions() -> None:
    w = World()
    cl = raycluster_template("raycluster-status-conditions-enabled")
    cl["spec"]["workerGroupSpecs"][0].update(replicas=1, maxReplicas=1)
    name = await create(w, cl)
    (head,), (worker,) = await w.pods(name, "ray.io/node-type=head"), await workers(w, name)

    async def set_ready(pod: Obj, ready: bool) -> None:
        pod = await w.client.get(scheme.POD, pod["metadata"]["name"], "default")
        pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
        await w.client.update_status(pod)
        await w.settle()

    await set_ready(head, True)
    assert condition(await w.cluster(name), "HeadPodReady") == "True"
    for _ in range(3):
        await w.settle()
        assert condition(await w.cluster(name), "RayClusterProvisioned") == "False"
    await set_ready(worker, True)
    assert condition(await w.cluster(name), "RayClusterProvisioned") == "True"
    await set_ready(worker, False)
    for _ in range(3):
        await w.settle()
        assert condition(await w.cluster(name), "RayClusterProvisioned") == "True"
    await set_ready(head, False)
    cl = await w.cluster(name)
    assert condition(cl, "HeadPodReady") == "False" and condition(cl, "RayClusterProvisioned") == "True"


@pytest.mark.upstream(f"{COND_ORIGIN} / Should handle RayClusterReplicaFailure condition correctly")
async def test_raycluster_replica_failure_condition() -> None:
    """Upstream's API server refuses the head Pod (imagePullPolicy "!invalid!"); the FakeClient
    does not validate Pods, so the refusal is injected as the 422 the API server answers."""
    from pumice.client.base import ApiError

    w = World()
    cl = raycluster_template("raycluster-status-conditions-enabled-invalid")
    cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "!invalid!"

    def refuse(verb: str, plural: str, namespace: str, name: str) -> None:
        if verb == "create" and plural == "pods":
            raise ApiError(422, "Invalid", 'Pod is invalid: spec.containers[0].imagePullPolicy: Unsupported value: '
                                           '"!invalid!"', {})
    w.client.interceptor = refuse
    name = await create(w, cl)
    assert condition(await w.cluster(name), "ReplicaFailure") == "True"


@pytest.mark.upstream(f"{ORIGIN}: RayCluster with custom probe ports")
async def test_raycluster_with_custom_probe_ports() -> None:
    w = World()
    cl = raycluster_template("raycluster-custom-probe-ports")
    cl["spec"]["headGroupSpec"]["rayStartParams"] = {"dashboard-port": "8365", "dashboard-agent-listen-port": "8266"}
    g = cl["spec"]["workerGroupSpecs"][0]
    g.update(rayStartParams={"dashboard-agent-listen-port": "9000"}, replicas=1, maxReplicas=1)
    name = await create(w, cl)
    (head,), (worker,) = await w.pods(name, "ray.io/node-type=head"), await workers(w, name)
    await w.pods_running(name)
    await w.settle()
    assert (await w.cluster(name))["status"]["state"] == "ready"
    for probe in ("livenessProbe", "readinessProbe"):
        command = " ".join(head["spec"]["containers"][0][probe]["exec"]["command"])
        assert ":8266" in command and ":8365" in command, command
        command = " ".join(worker["spec"]["containers"][0][probe]["exec"]["command"])
        assert ":9000" in command and ":8365" not in command, command


FT_ORIGIN = f"{ORIGIN}: RayCluster Redis cleanup finalizer timeout and auto-deletion"
FIN = "ray.io/gcs-ft-redis-cleanup-finalizer"


@pytest.mark.upstream(f"{FT_ORIGIN} / Auto-deletion for clusters with stuck GCS FT finalizer")
async def test_auto_deletion_for_clusters_with_stuck_gcs_ft_finalizer() -> None:
    w = World()
    cl = raycluster_template("raycluster-redis-cleanup")
    cl["metadata"]["finalizers"] = [FIN]
    name = await create(w, cl)
    assert FIN in (await w.cluster(name))["metadata"]["finalizers"]
    # deleted, but not past the timeout: the finalizer stays (GCS FT is not even enabled here)
    await w.client.delete(scheme.RAY_CLUSTER, name, "default")
    await w.settle()
    cl = await w.cluster(name)
    assert cl["metadata"]["deletionTimestamp"] and FIN in cl["metadata"]["finalizers"]
    # 20 minutes after the deletion: forceRemoveGCSFTFinalizer drops it, and the cluster goes
    await w.rc._force_remove_gcs_ft_finalizer(cl, 20 * 60)
    assert (await w.client.list(scheme.RAY_CLUSTER, "default")).items == []
    assert any(r == "ForceDeletedStuckCluster" for _, r, _ in w.events)


@pytest.mark.upstream(f"{FT_ORIGIN} / Integration with Redis cleanup flow")
async def test_timeout_force_deletes_through_reconcile() -> None:
    from pumice.runtime.reconcile import Request

    w = World()
    cl = raycluster_template("raycluster-integration")
    cl["metadata"]["annotations"] = {"ray.io/ft-enabled": "true", "ray.io/gcs-ft-deletion-timeout": "1"}
    cl["metadata"]["finalizers"] = [FIN]
    await w.client.create(cl)
    name = cl["metadata"]["name"]
    await w.client.delete(scheme.RAY_CLUSTER, name, "default")
    w.clock.advance(2)
    result = await w.rc.reconcile(Request("default", name))
    assert not result.requeue_after
    assert (await w.client.list(scheme.RAY_CLUSTER, "default")).items == []


@pytest.mark.upstream(f"{ORIGIN}: RayCluster with a maximum name")
async def test_raycluster_with_a_maximum_name() -> None:
    """A 53-character name (the longest valid) with 4 hosts per replica (the headless Service) and
    ``ray.io/enable-serve-service: "true"`` (the serve Service, the longest Service suffix)."""
    w = World()
    cl = raycluster_template("r" * 53)
    cl["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 4
    cl["metadata"]["annotations"] = {"ray.io/enable-serve-service": "true"}
    name = await create(w, cl)
    assert len(await workers(w, name)) == 3 * 4
    for suffix in ("-head-svc", "-serve-svc", "-headless"):
        await w.client.get(scheme.SERVICE, name + suffix, "default")
