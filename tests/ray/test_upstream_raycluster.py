"""Cases ported from upstream's RayCluster controller unit tests at the snapshot of
reference/kuberay-2.md (kuberay master feeaf72fa, ray-operator/controllers/ray/
raycluster_controller_unit_test.go); each test keeps upstream's name."""

from __future__ import annotations

from typing import Any

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.common import gcs_ft as gcsft
from pumice.controllers.ray.raycluster import RayClusterOptions, RayClusterReconciler, ReplicaFailureError
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme

ORIGIN = "kuberay ray-operator/controllers/ray/raycluster_controller_unit_test.go"
FIN = "ray.io/gcs-ft-redis-cleanup-finalizer"


@pytest.mark.parametrize(("name", "annotation", "want"), [
    pytest.param(n, a, w, marks=pytest.mark.upstream(f"{ORIGIN}: TestGetGCSFTDeletionTimeout / {n}"), id=n)
    for n, a, w in [
        ("no annotation returns default", None, 300),
        ("valid annotation", "120", 120),
        ("non-numeric annotation falls back to default", "not-a-number", 300),
        ("zero annotation falls back to default", "0", 300),
        ("negative annotation falls back to default", "-5", 300),
        ("1-second annotation (minimum valid)", "1", 1),
    ]])
def test_get_gcs_ft_deletion_timeout(name: str, annotation: str | None, want: int) -> None:
    cl: Obj = {"metadata": {"annotations": {"ray.io/gcs-ft-deletion-timeout": annotation} if annotation else {}}}
    assert gcsft.deletion_timeout_seconds(cl) == want


def _ft_cluster() -> Obj:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["metadata"]["annotations"] = {"ray.io/ft-enabled": "true"}
    return cl


@pytest.mark.parametrize(("name", "enabled", "want_finalizers"), [
    pytest.param(n, e, f, marks=pytest.mark.upstream(f"{ORIGIN}: Test_RedisCleanupFeatureFlag / {n}"), id=n)
    for n, e, f in [("Enable GCS FT Redis cleanup", True, 1), ("Disable GCS FT Redis cleanup", False, 0),
                    ("Feature flag is not set", None, 1)]])
async def test_redis_cleanup_feature_flag(name: str, enabled: bool | None, want_finalizers: int) -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = await client.create(_ft_cluster())
    opts = RayClusterOptions() if enabled is None else RayClusterOptions(enable_gcs_ft_redis_cleanup=enabled)
    rc = RayClusterReconciler(client, options=opts)
    req = Request("default", cl["metadata"]["name"])
    await rc.reconcile(req)
    got = await client.get(scheme.RAY_CLUSTER, cl["metadata"]["name"], "default")
    assert len(got["metadata"].get("finalizers") or []) == want_finalizers
    pods = (await client.list(scheme.POD, "default")).items
    if want_finalizers:
        assert got["metadata"]["finalizers"] == [FIN]
        assert pods == [], "the pass that adds the finalizer creates nothing else"
        await rc.reconcile(req)
        assert (await client.list(scheme.POD, "default")).items
    else:
        assert pods


@pytest.mark.upstream(f"{ORIGIN}: Test_RedisCleanupSkippedForEmbeddedBackend")
async def test_redis_cleanup_skipped_for_embedded_backend() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["spec"]["gcsFaultToleranceOptions"] = {"backend": "rocksdb"}
    await client.create(cl)
    await RayClusterReconciler(client).reconcile(Request("default", cl["metadata"]["name"]))
    got = await client.get(scheme.RAY_CLUSTER, cl["metadata"]["name"], "default")
    assert not got["metadata"].get("finalizers")


@pytest.mark.upstream(f"{ORIGIN}: Test_StaleRedisCleanupFinalizerRemovedForEmbeddedBackend")
async def test_stale_redis_cleanup_finalizer_removed_for_embedded_backend() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["spec"]["gcsFaultToleranceOptions"] = {"backend": "rocksdb"}
    cl["metadata"]["finalizers"] = [FIN]
    await client.create(cl)
    await client.delete(scheme.RAY_CLUSTER, cl["metadata"]["name"], "default")
    # Upstream's test turns the GCSFaultToleranceEmbeddedStorage gate on; pumice has it off (a
    # full reconcile refuses the rocksdb backend first), so the finalizer step runs on its own.
    deleting = await client.get(scheme.RAY_CLUSTER, cl["metadata"]["name"], "default")
    await RayClusterReconciler(client)._reconcile_gcs_ft_finalizer(deleting)
    with pytest.raises(Exception, match="not found"):
        await client.get(scheme.RAY_CLUSTER, cl["metadata"]["name"], "default")
    assert (await client.list(scheme.JOB, "default")).items == []


@pytest.mark.upstream(f"{ORIGIN}: Test_ReconcileManagedBy")
async def test_reconcile_managed_by() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    for managed_by, want_pods in (("ray.io/kuberay-operator", True), ("kueue.x-k8s.io/multikueue", False)):
        cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
        cl["metadata"]["name"] = "mb-" + ("kuberay" if want_pods else "kueue")
        cl["spec"]["managedBy"] = managed_by
        await client.create(cl)
        await RayClusterReconciler(client).reconcile(Request("default", cl["metadata"]["name"]))
        pods = (await client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={cl['metadata']['name']}")).items
        assert bool(pods) is want_pods


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_AutoscalerServiceAccount")
async def test_reconcile_autoscaler_service_account() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = load_sample("ray-cluster.autoscaler.yaml", "RayCluster")
    await client.create(cl)
    await RayClusterReconciler(client).reconcile(Request("default", cl["metadata"]["name"]))
    sa = await client.get(scheme.SERVICE_ACCOUNT, cl["metadata"]["name"], "default")
    assert sa["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_AutoscalerRoleBinding")
async def test_reconcile_autoscaler_role_binding() -> None:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    cl = load_sample("ray-cluster.autoscaler.yaml", "RayCluster")
    await client.create(cl)
    await RayClusterReconciler(client).reconcile(Request("default", cl["metadata"]["name"]))
    rb = await client.get(scheme.ROLE_BINDING, cl["metadata"]["name"], "default")
    assert rb["subjects"][0]["name"] == cl["metadata"]["name"]


# --- upstream's setupTest world: RayCluster raycluster-sample (autoscaling on, group small-group of 3
# replicas, workersToDelete pod1 and pod2) and six Pods: headNode (1.2.3.4) and pod1..pod5, whose
# worker Pods carry only the cluster and group labels, as upstream's do ------------------------------

INSTANCE = "raycluster-sample"
GROUP = "small-group"
HEAD_GROUP = "head-group"
HEAD_NODE = "headNode"
HEAD_IP = "1.2.3.4"


def setup_cluster() -> Obj:
    env = [{"name": "MY_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    return {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": INSTANCE, "namespace": "default"},
        "spec": {
            "enableInTreeAutoscaling": True,
            "headGroupSpec": {
                "rayStartParams": {"port": "6379", "object-manager-port": "12345", "node-manager-port": "12346",
                                   "object-store-memory": "100000000", "num-cpus": "1"},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0",
                                                      "command": ["python"], "args": ["/opt/code.py"],
                                                      "env": env}]}}},
            "workerGroupSpecs": [{
                "replicas": 3, "minReplicas": 0, "maxReplicas": 10000, "numOfHosts": 1, "groupName": GROUP,
                "rayStartParams": {"port": "6379", "num-cpus": "1"},
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0",
                                                      "command": ["echo"], "args": ["Hello Ray"], "env": env}]}},
                "scaleStrategy": {"workersToDelete": ["pod1", "pod2"]}}],
        },
    }


def setup_pods() -> list[Obj]:
    def running(name: str, labels: dict[str, str], container: str, ip: str = "") -> Obj:
        status: Obj = {"phase": "Running", "containerStatuses": [{"name": container, "state": {}}]}
        if ip:
            status["podIP"] = ip
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default",
                             "labels": {"ray.io/is-ray-node": "yes", "ray.io/cluster": INSTANCE, **labels}},
                "spec": {"containers": [{"name": container, "image": "rayproject/autoscaler"}]},
                "status": status}
    head = running(HEAD_NODE, {"ray.io/node-type": "head", "ray.io/group": HEAD_GROUP}, "ray-head", HEAD_IP)
    return [head, *(running(f"pod{i}", {"ray.io/group": GROUP}, "ray-worker") for i in range(1, 6))]


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.items.append((type, reason, message))


async def world(*objs: Obj, options: RayClusterOptions = RayClusterOptions()) -> tuple[
        FakeClient, RayClusterReconciler, Events]:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    for o in objs:
        await client.create(o)
    ev = Events()
    return client, RayClusterReconciler(client, recorder=ev, options=options, clock=client.clock), ev


async def worker_names(client: FakeClient) -> list[str]:
    pods = (await client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={INSTANCE},ray.io/group={GROUP}"))
    return sorted(p["metadata"]["name"] for p in pods.items)


@pytest.mark.parametrize(("name", "to_delete", "random_deletes"), [
    pytest.param(n, d, r, marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_RemoveWorkersToDelete_RandomDelete / "
                                                     f"{n}"), id=n)
    for n, d, r in [
        ("Set WorkersToDelete to pod1 and pod2.", ["pod1", "pod2"], 0),
        ("Set WorkersToDelete to pod3 and pod4", ["pod3", "pod4"], 0),
        ("Set WorkersToDelete to pod1 and pod5", ["pod1", "pod5"], 0),
        ("Set WorkersToDelete to pod2 and NonExistentPod", ["pod2", "NonExistentPod"], 1),
        ("Set WorkersToDelete to NonExistentPod1 and NonExistentPod1", ["NonExistentPod1", "NonExistentPod2"], 2),
    ]])
async def test_reconcile_remove_workers_to_delete_random_delete(name: str, to_delete: list[str],
                                                                random_deletes: int) -> None:
    client, rc, _ = await world(*setup_pods(), options=RayClusterOptions(enable_random_pod_delete=True))
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] = to_delete
    await rc._reconcile_pods(cl)
    left = await worker_names(client)
    assert len(left) == 3
    assert not set(left) & set(to_delete)
    existing = {f"pod{i}" for i in range(1, 6)}
    assert 2 - len(set(to_delete) & existing) == random_deletes


@pytest.mark.parametrize(("name", "to_delete", "non_existent"), [
    pytest.param(n, d, x, marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_RemoveWorkersToDelete_NoRandomDelete / "
                                                     f"{n}"), id=n)
    for n, d, x in [
        ("Set WorkersToDelete to pod2 and pod3.", ["pod2", "pod3"], 0),
        ("Set WorkersToDelete to pod2 and NonExistentPod", ["pod2", "NonExistentPod"], 1),
        ("Set WorkersToDelete to NonExistentPod1 and NonExistentPod1", ["NonExistentPod1", "NonExistentPod2"], 2),
    ]])
async def test_reconcile_remove_workers_to_delete_no_random_delete(name: str, to_delete: list[str],
                                                                   non_existent: int) -> None:
    client, rc, _ = await world(*setup_pods())
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] = to_delete
    await rc._reconcile_pods(cl)
    left = await worker_names(client)
    assert 5 - len(left) == 2 - non_existent
    assert not set(left) & set(to_delete)


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_RandomDelete_OK")
async def test_reconcile_random_delete_ok() -> None:
    client, rc, _ = await world(*setup_pods())
    cl = setup_cluster()
    cl["spec"].pop("enableInTreeAutoscaling")
    cl["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    await rc._reconcile_pods(cl)
    left = await worker_names(client)
    assert len(left) == 2 and not set(left) & {"pod1", "pod2"}


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_PodDeleted_Diff0_OK")
async def test_reconcile_pod_deleted_diff0_ok() -> None:
    client, rc, _ = await world(*setup_pods())
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] = []
    await client.delete(scheme.POD, "pod3", "default")
    await client.delete(scheme.POD, "pod4", "default")
    await rc._reconcile_pods(cl)
    assert len(await worker_names(client)) == 3


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_PodDeleted_DiffLess0_OK")
async def test_reconcile_pod_deleted_diff_less0_ok() -> None:
    client, rc, _ = await world(*setup_pods(), options=RayClusterOptions(enable_random_pod_delete=True))
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] = []
    await client.delete(scheme.POD, "pod3", "default")
    await rc._reconcile_pods(cl)
    assert len(await worker_names(client)) == 3


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_Diff0_WorkersToDelete_OK")
async def test_reconcile_diff0_workers_to_delete_ok() -> None:
    client, rc, _ = await world(*setup_pods())
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] = ["pod3", "pod4"]
    await rc._reconcile_pods(cl)
    assert await worker_names(client) == ["pod1", "pod2", "pod5"]


@pytest.mark.parametrize("random_delete", [
    pytest.param(True, marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_PodCrash_DiffLess0_OK / Enable random Pod "
                                                  "deletion"), id="enable"),
    pytest.param(False, marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_PodCrash_DiffLess0_OK / Disable random "
                                                   "Pod deletion"), id="disable")])
async def test_reconcile_pod_crash_diff_less0_ok(random_delete: bool) -> None:
    client, rc, _ = await world(*setup_pods(), options=RayClusterOptions(enable_random_pod_delete=random_delete))
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] = ["pod3"]
    await rc._reconcile_pods(cl)
    assert len(await worker_names(client)) == (3 if random_delete else 4)


@pytest.mark.parametrize("restart_policy", [
    pytest.param(p, marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_PodEvicted_DiffLess0_OK / Pod with "
                                               f"RestartPolicy{p}"), id=p) for p in ("Always", "OnFailure")])
async def test_reconcile_pod_evicted_diff_less0_ok(restart_policy: str) -> None:
    pods = setup_pods()
    pods[0]["spec"]["restartPolicy"] = restart_policy
    pods[0]["status"]["phase"] = "Failed"
    client, rc, _ = await world(*pods)
    with pytest.raises(Exception):  # noqa: B017 - upstream asserts only that an error is returned
        await rc._reconcile_pods(setup_cluster())
    heads = await client.list(scheme.POD, "default", label_selector=f"ray.io/group={HEAD_GROUP}")
    assert heads.items == [], "the evicted head is deleted"


@pytest.mark.upstream(f"{ORIGIN}: TestReconcileHeadService")
async def test_reconcile_head_service() -> None:
    cl = setup_cluster()
    client, rc, _ = await world(cl)
    sel = f"ray.io/cluster={INSTANCE},ray.io/node-type=head,ray.io/identifier={INSTANCE}-head"
    await rc._reconcile_head_service(cl)
    assert len((await client.list(scheme.SERVICE, "default", label_selector=sel)).items) == 1
    await rc._reconcile_head_service(cl)
    assert len((await client.list(scheme.SERVICE, "default", label_selector=sel)).items) == 1
    labels = {"ray.io/cluster": INSTANCE, "ray.io/node-type": "head", "ray.io/identifier": f"{INSTANCE}-head"}
    svcs = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": n, "namespace": "default", "labels": labels}}
            for n in ("head-svc-1", "head-svc-2")]
    _, rc2, _ = await world(*svcs)
    with pytest.raises(Exception, match="head"):
        await rc2._reconcile_head_service(cl)


@pytest.mark.upstream(f"{ORIGIN}: TestReconcileHeadlessService")
async def test_reconcile_headless_service() -> None:
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 4
    client, rc, _ = await world(cl)
    sel = f"ray.io/headless-worker-svc={INSTANCE}"
    await rc._reconcile_headless_service(cl)
    svcs = (await client.list(scheme.SERVICE, "default", label_selector=sel)).items
    assert [s["metadata"]["name"] for s in svcs] == [f"{INSTANCE}-headless"]
    assert svcs[0]["spec"]["clusterIP"] == "None"
    await rc._reconcile_headless_service(cl)
    assert len((await client.list(scheme.SERVICE, "default", label_selector=sel)).items) == 1


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_Autoscaler_ServiceAccountName")
async def test_reconcile_autoscaler_service_account_name() -> None:
    cl = setup_cluster()
    cl["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = "my-sa"
    _, rc, _ = await world(cl)
    with pytest.raises(Exception):  # noqa: B017 - upstream: an error when the user's SA is missing
        await rc._reconcile_autoscaler_rbac(cl)
    _, rc2, _ = await world({"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": {"name": "my-sa", "namespace": "default"}})
    await rc2._reconcile_autoscaler_rbac(cl)


def head_service(cluster: Obj, cluster_ip: str | None = None) -> Obj:
    """The controller's head Service with targetPort = port, as the API server defaults it."""
    from pumice.controllers.ray.common import service as svcb

    svc = svcb.build_head_service(cluster)
    for p in svc["spec"]["ports"]:
        p.setdefault("targetPort", p["port"])
    if cluster_ip is not None:
        svc["spec"]["clusterIP"] = cluster_ip
    return svc


def labelled_pod(name: str, node_type: str, *, ready: bool | None = True, phase: str = "Running",
                 ip: str = HEAD_IP, group: str | None = None) -> Obj:
    labels = {"ray.io/cluster": INSTANCE, "ray.io/node-type": node_type}
    if group:
        labels["ray.io/group"] = group
    status: Obj = {"phase": phase, "podIP": ip}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "ray", "image": "rayproject/ray"}]}, "status": status}


async def calculate(rc: RayClusterReconciler, client: FakeClient, cl: Obj, err: Exception | None = None) -> Obj:
    pods = (await client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={INSTANCE}")).items
    return await rc._calculate_status(cl, pods, err)


def cond(st: Obj, kind: str) -> tuple[str, str]:
    found = next((x for x in st.get("conditions") or [] if x["type"] == kind), None)
    return (found["status"], found["reason"]) if found else ("", "")


@pytest.mark.upstream(f"{ORIGIN}: TestUpdateEndpoints")
async def test_update_endpoints() -> None:
    from pumice.controllers.ray.raycluster import service_endpoints

    assert service_endpoints(head_service(setup_cluster()), {}) == {
        "client": "10001", "dashboard": "8265", "metrics": "8080", "gcs-server": "6379", "serve": "8000"}


@pytest.mark.parametrize(("name", "pods", "want", "error"), [
    pytest.param(n, p, w, e, marks=pytest.mark.upstream(f"{ORIGIN}: TestGetHeadPodIPAndNameFromGetRayClusterHeadPod / "
                                                        f"{n}"), id=n)
    for n, p, w, e in [
        ("get expected Pod IP if there's one head node", "testPods", (HEAD_IP, HEAD_NODE), False),
        ("no error if there's no head node", "none", ("", ""), False),
        ("no error if there's more than one head node", "extra", ("", ""), True),
        ("no error if head pod ip is not yet set", "noip", ("", HEAD_NODE), False),
    ]])
def test_get_head_pod_ip_and_name_from_get_ray_cluster_head_pod(name: str, pods: str, want: tuple[str, str],
                                                                 error: bool) -> None:
    from pumice.controllers.ray.raycluster import single_head_pod

    world_pods = {"testPods": setup_pods(), "none": [],
                  "extra": [*setup_pods(), labelled_pod("unexpectedExtraHeadNode", "head", group=HEAD_GROUP)],
                  "noip": [{"metadata": {"name": HEAD_NODE, "labels": {"ray.io/node-type": "head"}},
                            "status": {"phase": "Pending", "podIP": ""}}]}[pods]
    if error:
        with pytest.raises(RuntimeError):
            single_head_pod(setup_cluster(), world_pods)
        return
    head = single_head_pod(setup_cluster(), world_pods)
    got = ((head.get("status") or {}).get("podIP", ""), head["metadata"]["name"]) if head else ("", "")
    assert got == want


@pytest.mark.parametrize(("name", "services", "want"), [
    pytest.param(n, s, w, marks=pytest.mark.upstream(f"{ORIGIN}: TestGetHeadServiceIPAndName / {n}"), id=n)
    for n, s, w in [
        ("get expected Service IP if there's one head Service", 1, ("1.2.3.4", f"{INSTANCE}-head-svc")),
        ("get error if there's no head Service", 0, None),
        ("get error if there's more than one head Service", 2, None),
    ]])
def test_get_head_service_ip_and_name(name: str, services: int, want: tuple[str, str] | None) -> None:
    from pumice.controllers.ray.raycluster import head_service_ip_and_name

    cl = setup_cluster()
    svcs = [head_service(cl, "1.2.3.4"), {**head_service(cl, "1.2.3.5"),
                                          "metadata": {"name": "unexpectedExtraHeadService"}}][:services]
    if want is None:  # upstream: an error; none yet is a LookupError (retried quietly), two a RuntimeError
        with pytest.raises(LookupError if services == 0 else RuntimeError,
                           match="unable to find head service" if services == 0 else "found multiple head services"):
            head_service_ip_and_name(cl, svcs, None)
    else:
        assert head_service_ip_and_name(cl, svcs, None) == want


@pytest.mark.upstream(f"{ORIGIN}: TestGetHeadServiceIPAndNameOnHeadlessService")
def test_get_head_service_ip_and_name_on_headless_service() -> None:
    from pumice.controllers.ray.raycluster import head_service_ip_and_name, single_head_pod

    cl = setup_cluster()
    svc = head_service(cl)
    assert svc["spec"]["clusterIP"] == "None"
    assert head_service_ip_and_name(cl, [svc], single_head_pod(cl, setup_pods())) == (HEAD_IP, f"{INSTANCE}-head-svc")


@pytest.mark.upstream(f"{ORIGIN}: TestUpdateStatusObservedGeneration")
async def test_update_status_observed_generation() -> None:
    cl = setup_cluster()
    cl["status"] = {"observedGeneration": -1}
    client, rc, _ = await world(*setup_pods(), head_service(cl, HEAD_IP), cl)
    stored = await client.get(scheme.RAY_CLUSTER, INSTANCE, "default")
    st = await calculate(rc, client, stored)
    assert st["observedGeneration"] == stored["metadata"]["generation"]


@pytest.mark.parametrize(("field", "value"), [
    pytest.param("reason", "test reason", marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_UpdateClusterReason"),
                 id="reason"),
    pytest.param("state", "ready", marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_UpdateClusterState"),
                 id="state")])
def test_reconcile_update_cluster_reason_and_state(field: str, value: str) -> None:
    """Upstream writes the new status through updateRayClusterStatus when it is inconsistent with
    the old; pumice's reconcile writes it when :func:`inconsistent_status` says so."""
    from pumice.controllers.ray.raycluster import inconsistent_status

    assert inconsistent_status({}, {field: value})
    assert not inconsistent_status({field: value}, {field: value})


@pytest.mark.upstream(f"{ORIGIN}: TestCalculateStatus")
async def test_calculate_status() -> None:
    cl = setup_cluster()
    pods = [labelled_pod(HEAD_NODE, "head"), *(labelled_pod(f"workerNode-{i}", "worker") for i in range(3))]
    client, rc, _ = await world(*pods, head_service(cl, "aaa.bbb.ccc.ddd"))
    st = await calculate(rc, client, cl)
    assert st["head"]["podIP"] == HEAD_IP
    assert (st["head"]["serviceIP"], st["head"]["serviceName"]) == ("aaa.bbb.ccc.ddd", f"{INSTANCE}-head-svc")
    assert st["stateTransitionTimes"]["ready"] == st["lastUpdateTime"]
    assert cond(st, "HeadPodReady")[0] == "True"
    head = await client.get(scheme.POD, HEAD_NODE, "default")
    head["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    head = await client.update_status(head)
    assert cond(await calculate(rc, client, cl), "HeadPodReady")[0] == "False"
    head["status"]["phase"] = "Failed"
    await client.update_status(head)
    assert cond(await calculate(rc, client, cl), "HeadPodReady")[0] == "False"
    st = await calculate(rc, client, cl, ReplicaFailureError("FailedCreateHeadPod", "invalid"))
    assert cond(st, "ReplicaFailure") == ("True", "FailedCreateHeadPod")


@pytest.mark.upstream(f"{ORIGIN}: TestCalculateStatusWithoutDesiredReplicas")
async def test_calculate_status_without_desired_replicas() -> None:
    cl = setup_cluster()
    client, rc, _ = await world(labelled_pod(HEAD_NODE, "head"), head_service(cl, "aaa.bbb.ccc.ddd"))
    st = await calculate(rc, client, cl)
    assert st["desiredWorkerReplicas"] and st["desiredWorkerReplicas"] != st["readyWorkerReplicas"]
    assert not st.get("state") and not st.get("reason") and not st.get("stateTransitionTimes")


@pytest.mark.upstream(f"{ORIGIN}: TestCalculateStatusWithSuspendedWorkerGroups")
async def test_calculate_status_with_suspended_worker_groups() -> None:
    cl = setup_cluster()
    g = cl["spec"]["workerGroupSpecs"][0]
    g.update(suspend=True, minReplicas=100, maxReplicas=100)
    g["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "100Mi"}}
    client, rc, _ = await world(labelled_pod(HEAD_NODE, "head"), head_service(cl, "aaa.bbb.ccc.ddd"))
    st = await calculate(rc, client, cl)
    assert (st["desiredWorkerReplicas"], st["minWorkerReplicas"], st["maxWorkerReplicas"]) == (0, 0, 0)
    assert (st["desiredCPU"], st["desiredMemory"]) == ("0", "0")
    assert st["state"] == "ready" and st["stateTransitionTimes"]


@pytest.mark.upstream(f"{ORIGIN}: TestCalculateStatusWithReconcileErrorBackAndForth")
async def test_calculate_status_with_reconcile_error_back_and_forth() -> None:
    cl = setup_cluster()
    pods = [labelled_pod(HEAD_NODE, "head"), *(labelled_pod(f"workerNode-{i}", "worker") for i in range(3))]
    client, rc, _ = await world(*pods, head_service(cl, "aaa.bbb.ccc.ddd"))
    st = await calculate(rc, client, cl, RuntimeError("invalid"))
    assert st["desiredWorkerReplicas"] == st["readyWorkerReplicas"] == 3
    assert not st.get("state") and not st.get("reason") and not st.get("stateTransitionTimes")
    st = await calculate(rc, client, {**cl, "status": st})
    assert st["state"] == "ready" and not st.get("reason")
    t1 = st["stateTransitionTimes"]["ready"]
    rc.clock.advance(5)  # type: ignore[attr-defined]
    st = await calculate(rc, client, {**cl, "status": st}, RuntimeError("invalid2"))
    assert st["state"] == "ready" and not st.get("reason")
    assert st["stateTransitionTimes"]["ready"] == t1


@pytest.mark.upstream(f"{ORIGIN}: TestRayClusterProvisionedCondition")
async def test_ray_cluster_provisioned_condition() -> None:
    cl = setup_cluster()
    client, rc, _ = await world(labelled_pod(HEAD_NODE, "head", ready=False),
                                labelled_pod("workerNode", "worker", ready=False, group=GROUP), head_service(cl))

    async def set_ready(name: str, ready: bool) -> None:
        p = await client.get(scheme.POD, name, "default")
        p["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
        await client.update_status(p)

    st = await calculate(rc, client, cl)
    assert cond(st, "RayClusterProvisioned") == ("False", "RayClusterPodsProvisioning")
    await set_ready(HEAD_NODE, True)
    await set_ready("workerNode", True)
    st = await calculate(rc, client, {**cl, "status": st})
    assert cond(st, "RayClusterProvisioned") == ("True", "AllPodRunningAndReadyFirstTime")
    await set_ready("workerNode", False)
    st = await calculate(rc, client, {**cl, "status": st})
    assert cond(st, "RayClusterProvisioned") == ("True", "AllPodRunningAndReadyFirstTime")
    await set_ready(HEAD_NODE, False)
    st = await calculate(rc, client, {**cl, "status": st})
    assert cond(st, "RayClusterProvisioned") == ("True", "AllPodRunningAndReadyFirstTime")


@pytest.mark.upstream(f"{ORIGIN}: TestStateTransitionTimes_NoStateChange")
async def test_state_transition_times_no_state_change() -> None:
    cl = setup_cluster()
    client, rc, _ = await world(labelled_pod(HEAD_NODE, "head", ready=None), head_service(cl, "aaa.bbb.ccc.ddd"))
    before = "2026-01-01T00:00:00Z"
    cl["status"] = {"state": "ready", "stateTransitionTimes": {"ready": before}}
    st = await calculate(rc, client, cl)
    assert st["stateTransitionTimes"]["ready"] == before


async def set_pod(client: FakeClient, name: str, *, phase: str | None = None, restart_policy: str | None = None,
                  terminated: bool = False) -> None:
    """Change a Pod's restartPolicy (spec) and phase / Ray container state (status), as upstream's
    tests do with Update and Status().Update."""
    pod = await client.get(scheme.POD, name, "default")
    if restart_policy is not None:
        pod["spec"]["restartPolicy"] = restart_policy
        pod = await client.update(pod)
    if phase is not None:
        pod.setdefault("status", {})["phase"] = phase
    if terminated:
        pod["status"]["containerStatuses"] = [{"name": pod["spec"]["containers"][0]["name"],
                                               "state": {"terminated": {}}}]
    await client.update_status(pod)


@pytest.mark.upstream(f"{ORIGIN}: Test_TerminatedWorkers_NoAutoscaler")
async def test_terminated_workers_no_autoscaler() -> None:
    client, rc, _ = await world(*setup_pods())
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] = []
    cl["spec"].pop("enableInTreeAutoscaling")
    await rc._reconcile_pods(cl)
    assert len(await worker_names(client)) == 3
    for phase in ("Failed", "Succeeded"):
        first = (await worker_names(client))[0]
        await set_pod(client, first, phase=phase)
        with pytest.raises(ReplicaFailureError):
            await rc._reconcile_pods(cl)
        assert len(await worker_names(client)) == 2
        await rc._reconcile_pods(cl)
        assert len(await worker_names(client)) == 3
        for name in await worker_names(client):
            await set_pod(client, name, phase="Running")


@pytest.mark.upstream(f"{ORIGIN}: Test_TerminatedHead_RestartPolicy")
async def test_terminated_head_restart_policy() -> None:
    client, rc, _ = await world(setup_pods()[0])
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"] = []

    async def all_pods() -> list[Obj]:
        return (await client.list(scheme.POD, "default")).items

    await set_pod(client, HEAD_NODE, restart_policy="Always", phase="Failed")
    with pytest.raises(ReplicaFailureError):
        await rc._reconcile_pods(cl)
    assert await all_pods() == []
    await rc._reconcile_pods(cl)
    (head,) = await all_pods()
    await set_pod(client, head["metadata"]["name"], restart_policy="Never", phase="Running", terminated=True)
    with pytest.raises(ReplicaFailureError):
        await rc._reconcile_pods(cl)
    assert await all_pods() == []
    await rc._reconcile_pods(cl)
    assert len(await all_pods()) == 1


@pytest.mark.upstream(f"{ORIGIN}: Test_RunningPods_RayContainerTerminated")
async def test_running_pods_ray_container_terminated() -> None:
    client, rc, _ = await world(setup_pods()[0])
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"] = []
    await set_pod(client, HEAD_NODE, restart_policy="Never", phase="Running", terminated=True)
    with pytest.raises(ReplicaFailureError):
        await rc._reconcile_pods(cl)
    assert (await client.list(scheme.POD, "default")).items == []
    await rc._reconcile_pods(cl)
    assert len((await client.list(scheme.POD, "default")).items) == 1


@pytest.mark.parametrize(("name", "policy", "phase", "state", "want"), [
    pytest.param(n, p, ph, s, w, marks=pytest.mark.upstream(f"{ORIGIN}: Test_ShouldDeletePod / {n}"), id=n)
    for n, p, ph, s, w in [
        ("restartPolicy=Always, phase=PodFailed, shouldDelete=true", "Always", "Failed", None, True),
        ("restartPolicy=Always, phase=PodRunning, ray-head=running, shouldDelete=false", "Always", "Running",
         "running", False),
        ("restartPolicy=Always, phase=PodRunning, ray-head=terminated, shouldDelete=false", "Always", "Running",
         "terminated", False),
        ("restartPolicy=Never, phase=PodFailed, shouldDelete=true", "Never", "Failed", None, True),
        ("restartPolicy=Never, phase=PodSucceeded, shouldDelete=true", "Never", "Succeeded", None, True),
        ("restartPolicy=Never, phase=PodRunning, ray-head=running, shouldDelete=false", "Never", "Running",
         "running", False),
        ("restartPolicy=Never, phase=PodRunning, ray-head=terminated, shouldDelete=true", "Never", "Running",
         "terminated", True),
    ]])
def test_should_delete_pod(name: str, policy: str, phase: str, state: str | None, want: bool) -> None:
    from pumice.controllers.ray.raycluster import should_delete_pod

    status: Obj = {"phase": phase}
    if state:
        status["containerStatuses"] = [{"name": "ray-head", "state": {state: {}}}]
    pod = {"metadata": {"name": "p"}, "spec": {"restartPolicy": policy, "containers": [{"name": "ray-head"}]},
           "status": status}
    assert should_delete_pod(pod)[0] is want


@pytest.mark.parametrize(("name", "replicas", "lo", "hi", "want"), [
    pytest.param(n, r, lo, hi, w, marks=pytest.mark.upstream(f"{ORIGIN}: {test} / {n}"), id=f"{test}-{n}")
    for test in ("TestReconcile_Replicas_Optional", "TestReconcile_Multihost_Replicas")
    for n, r, lo, hi, w in [("Replicas is nil", None, 1, 10000, 1),
                            ("Replicas is smaller than MinReplicas", 0, 1, 10000, 1),
                            ("Replicas is larger than MaxReplicas", 4, 1, 3, 3)]])
async def test_reconcile_replicas_optional_and_multihost_replicas(name: str, replicas: int | None, lo: int, hi: int,
                                                                  want: int, request: pytest.FixtureRequest) -> None:
    from pumice.controllers.ray.common.pod import PodOptions

    hosts = 4 if "Multihost" in request.node.callspec.id else 1
    client, rc, _ = await world(*setup_pods(), options=RayClusterOptions(pod=PodOptions(multi_host_indexing=False)))
    cl = setup_cluster()
    cl["spec"]["enableInTreeAutoscaling"] = False
    g = cl["spec"]["workerGroupSpecs"][0]
    g["scaleStrategy"]["workersToDelete"] = []
    g.update(minReplicas=lo, maxReplicas=hi, numOfHosts=hosts)
    g.pop("replicas")
    if replicas is not None:
        g["replicas"] = replicas
    await rc._reconcile_pods(cl)
    assert len(await worker_names(client)) == want * hosts


@pytest.mark.parametrize("hosts", [
    pytest.param(1, marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_NumOfHosts / NumOfHosts is 1"), id="1"),
    pytest.param(4, marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_NumOfHosts / NumOfHosts is larger than 1"),
                 id="4")])
async def test_reconcile_num_of_hosts(hosts: int) -> None:
    client, rc, _ = await world(setup_pods()[0])
    cl = setup_cluster()
    cl["spec"]["enableInTreeAutoscaling"] = False
    g = cl["spec"]["workerGroupSpecs"][0]
    g["scaleStrategy"]["workersToDelete"] = []
    g.update(replicas=1, numOfHosts=hosts)
    await rc._reconcile_pods(cl)
    assert len(await worker_names(client)) == hosts


@pytest.mark.parametrize(("name", "resources", "want"), [
    pytest.param(n, r, w, marks=pytest.mark.upstream(f"{ORIGIN}: TestSumGPUs / {n}"), id=n)
    for n, r, w in [
        ("no GPUs specified", {"cpu": 1}, 0),
        ("one GPU type specified", {"cpu": 1, "nvidia.com/gpu": 1, "google.com/tpu": 1}, 1),
        ("multiple GPUs specified", {"cpu": 1, "nvidia.com/gpu": 3, "nvidia.com/mig-1g.10gb": 2, "foo.bar/gpu": 2,
                                     "google.com/tpu": 1}, 7),
        ("multiple MIG types specified", {"cpu": 1, "nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 2,
                                          "nvidia.com/mig-2g.20gb": 3, "nvidia.com/mig-3g.40gb": 4,
                                          "google.com/tpu": 1}, 10),
    ]])
def test_sum_gpus(name: str, resources: dict[str, int], want: int) -> None:
    from fractions import Fraction

    from pumice.controllers.ray.common import resources as res

    assert res.sum_gpus({k: Fraction(v) for k, v in resources.items()}) == want


@pytest.mark.upstream(f"{ORIGIN}: TestDeleteAllPods")
async def test_delete_all_pods() -> None:
    def pod(name: str, app: str, finalizers: list[str] | None = None) -> Obj:
        md: Obj = {"name": name, "namespace": "tmp-ns", "labels": {"app": app}}
        if finalizers:
            md["finalizers"] = finalizers
        return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": {"containers": [{"name": "c"}]}}

    client, rc, _ = await world(pod("alive", "tmp"), pod("deleted", "tmp", ["tmp"]), pod("other", "other"))
    await client.delete(scheme.POD, "deleted", "tmp-ns")  # stays, terminating, behind its finalizer
    listed = await rc._delete_all_pods("tmp-ns", "app=tmp")
    assert sorted(p["metadata"]["name"] for p in listed) == ["alive", "deleted"]
    listed = await rc._delete_all_pods("tmp-ns", "app=tmp")
    assert [p["metadata"]["name"] for p in listed] == ["deleted"]
    left = (await client.list(scheme.POD, "tmp-ns")).items
    assert sorted(p["metadata"]["name"] for p in left) == ["deleted", "other"]


@pytest.mark.parametrize(("delete", "failure"), [
    pytest.param(["pod2", "pod3", "pod4"], "Failed to create worker Pod", marks=pytest.mark.upstream(
        f"{ORIGIN}: TestEvents_FailedPodCreation / failure event for failed worker pod creation"), id="worker"),
    pytest.param([HEAD_NODE], "Failed to create head Pod", marks=pytest.mark.upstream(
        f"{ORIGIN}: TestEvents_FailedPodCreation / failure event for failed head pod creation"), id="head")])
async def test_events_failed_pod_creation(delete: list[str], failure: str) -> None:
    from pumice.client.base import ApiError

    client, rc, ev = await world(*setup_pods())
    for name in delete:
        await client.delete(scheme.POD, name, "default")

    def boom(verb: str, plural: str, namespace: str, name: str) -> None:
        if verb == "create":
            raise ApiError(500, "InternalError", "injected", {})
    client.interceptor = boom
    cl = setup_cluster()
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] = []
    with pytest.raises(ReplicaFailureError):
        await rc._reconcile_pods(cl)
    assert any(failure in message for _, _, message in ev.items), ev.items


def _auth_env(pod: Obj) -> list[Obj]:
    return [e for e in pod["spec"]["containers"][0].get("env") or [] if e["name"].startswith("RAY_AUTH")]


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_AuthSecret")
async def test_reconcile_auth_secret() -> None:
    import base64

    cl = setup_cluster()
    cl["spec"]["authOptions"] = {"mode": "token"}
    client, rc, _ = await world(*setup_pods())
    await rc._reconcile_auth_secret(cl)
    secret = await client.get(scheme.SECRET, INSTANCE, "default")
    assert len(base64.b64decode(secret["stringData"]["auth_token"])) == 32
    assert secret["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


@pytest.mark.upstream(f"{ORIGIN}: TestReconcile_AuthSecret_SkipWhenK8sTokenAuthEnabled")
async def test_reconcile_auth_secret_skip_when_k8s_token_auth_enabled() -> None:
    cl = setup_cluster()
    cl["spec"]["authOptions"] = {"mode": "token", "enableK8sTokenAuth": True}
    client, rc, _ = await world(*setup_pods())
    await rc._reconcile_auth_secret(cl)
    assert (await client.list(scheme.SECRET, "default")).items == []


@pytest.mark.upstream(f"{ORIGIN}: TestReconcileAuthSecret_WithSecretName")
async def test_reconcile_auth_secret_with_secret_name() -> None:
    cl = setup_cluster()
    cl["spec"]["authOptions"] = {"mode": "token", "secretName": "provided-secret"}
    client, rc, _ = await world()
    await rc._reconcile_auth_secret(cl)
    assert (await client.list(scheme.SECRET, "default")).items == []


@pytest.mark.parametrize(("secret_name", "want"), [
    pytest.param(None, INSTANCE, marks=pytest.mark.upstream(f"{ORIGIN}: TestReconcile_PodsWithAuthToken"),
                 id="cluster-secret"),
    pytest.param("provided-secret", "provided-secret", marks=pytest.mark.upstream(
        f"{ORIGIN}: TestReconcilePodsWithAuthTokenSecretName"), id="provided-secret")])
async def test_reconcile_pods_with_auth_token(secret_name: str | None, want: str) -> None:
    cl = setup_cluster()
    cl["spec"]["authOptions"] = {"mode": "token", **({"secretName": secret_name} if secret_name else {})}
    client, rc, _ = await world()
    await rc._reconcile_pods(cl)
    pods = (await client.list(scheme.POD, "default")).items
    assert len(pods) == 4
    expected = [{"name": "RAY_AUTH_MODE", "value": "token"},
                {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": want, "key": "auth_token"}}}]
    for pod in pods:
        assert _auth_env(pod) == expected
        for init in pod["spec"].get("initContainers") or []:  # wait-gcs-ready too (configureTokenAuth)
            assert [e for e in init.get("env") or [] if e["name"].startswith("RAY_AUTH")] == expected


async def _deleted_ft_cluster(client: FakeClient) -> Obj:
    """upstream's gcsFTEnabledCluster: FT annotation, no autoscaler, the Redis cleanup finalizer,
    and deleted (so deletionTimestamp is set and the finalizer holds it)."""
    cl = setup_cluster()
    cl["metadata"]["annotations"] = {"ray.io/ft-enabled": "true"}
    cl["metadata"]["finalizers"] = [FIN]
    cl["spec"].pop("enableInTreeAutoscaling")
    await client.create(cl)
    await client.delete(scheme.RAY_CLUSTER, INSTANCE, "default")
    return await client.get(scheme.RAY_CLUSTER, INSTANCE, "default")


@pytest.mark.parametrize(("head", "worker", "jobs"), [
    pytest.param(h, w, j, marks=pytest.mark.upstream(f"{ORIGIN}: Test_RedisCleanup / {n}"), id=n)
    for n, h, w, j in [("Both head and worker Pods are not terminated", True, True, 0),
                       ("Only head Pod is terminated", False, True, 1),
                       ("Only worker Pod is terminated", True, False, 0),
                       ("Both head and worker Pods are terminated", False, False, 1)]])
async def test_redis_cleanup(head: bool, worker: bool, jobs: int) -> None:
    client, rc, _ = await world()
    await _deleted_ft_cluster(client)
    if head:
        await client.create(labelled_pod(HEAD_NODE, "head", group="headgroup"))
    if worker:
        await client.create(labelled_pod("workerNode", "worker", group=GROUP))
    await rc.reconcile(Request("default", INSTANCE))
    found = (await client.list(scheme.JOB, "default")).items
    assert len(found) == jobs
    if not jobs:
        return
    cl = await client.get(scheme.RAY_CLUSTER, INSTANCE, "default")
    assert FIN in cl["metadata"]["finalizers"]
    job = found[0]
    assert job["spec"]["activeDeadlineSeconds"] == 300
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["/bin/bash", "-c", "--"]
    job["apiVersion"], job["kind"] = "batch/v1", "Job"
    job["status"] = {"succeeded": 1, "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                                    {"type": "Complete", "status": "True"}]}
    await client.update_status(job)
    await rc.reconcile(Request("default", INSTANCE))
    assert (await client.list(scheme.RAY_CLUSTER, "default")).items == []


@pytest.mark.parametrize(("fail", "message"), [
    pytest.param(False, "Created Redis cleanup Job", marks=pytest.mark.upstream(
        f"{ORIGIN}: TestEvents_RedisCleanup / Created Redis cleanup Job"), id="created"),
    pytest.param(True, "Failed to create Redis cleanup Job", marks=pytest.mark.upstream(
        f"{ORIGIN}: TestEvents_RedisCleanup / Failed to create Redis cleanup Job"), id="failed")])
async def test_events_redis_cleanup(fail: bool, message: str) -> None:
    from pumice.client.base import ApiError

    client, rc, ev = await world()
    await _deleted_ft_cluster(client)
    if fail:
        def boom(verb: str, plural: str, namespace: str, name: str) -> None:
            if verb == "create":
                raise ApiError(500, "InternalError", "random error", {})
        client.interceptor = boom
        with pytest.raises(ApiError, match="random error"):
            await rc.reconcile(Request("default", INSTANCE))
    else:
        await rc.reconcile(Request("default", INSTANCE))
    assert any(message in m for _, _, m in ev.items), ev.items


@pytest.mark.parametrize(("name", "finalizers", "want"), [
    pytest.param(n, f, w, marks=pytest.mark.upstream(f"{ORIGIN}: TestHasGCSFTFinalizer / {n}"), id=n)
    for n, f, w in [("no finalizers", None, False), ("GCS FT finalizer present", [FIN], True),
                    ("other finalizer only", ["some-other-finalizer"], False),
                    ("GCS FT among multiple finalizers", ["other", FIN], True)]])
def test_has_gcs_ft_finalizer(name: str, finalizers: list[str] | None, want: bool) -> None:
    assert gcsft.has_finalizer({"metadata": {"finalizers": finalizers}}) is want


@pytest.mark.parametrize("defaults", [
    pytest.param(True, marks=pytest.mark.upstream(f"{ORIGIN}: TestBuildPodsInjectDefaultPodMetadata"), id="inject"),
    pytest.param(False, marks=pytest.mark.upstream(f"{ORIGIN}: TestBuildPodsWithoutDefaultPodMetadata"),
                 id="without")])
async def test_build_pods_default_pod_metadata(defaults: bool) -> None:
    cl = setup_cluster()
    cl["spec"].pop("enableInTreeAutoscaling")
    g = cl["spec"]["workerGroupSpecs"][0]
    g.update(replicas=1, scaleStrategy={})
    for spec, who in ((cl["spec"]["headGroupSpec"], "head"), (g, "worker")):
        spec["rayStartParams"] = {}
        spec["template"]["metadata"] = {
            "annotations": {"user-annotation": f"{who}-only", **({"shared-annotation": who} if defaults else {})},
            "labels": {"user-label": f"{who}-only", **({"shared-label": who} if defaults else {})}}
    opts = RayClusterOptions(
        default_pod_annotations={"monitoring.example.com/scrape": "true", "shared-annotation": "default"},
        default_pod_labels={"fleet": "managed", "shared-label": "default"}) if defaults else RayClusterOptions()
    client, rc, _ = await world(options=opts)
    await rc._reconcile_pods(cl)
    pods = {p["metadata"]["labels"]["ray.io/node-type"]: p["metadata"]
            for p in (await client.list(scheme.POD, "default")).items}
    for who, md in pods.items():
        assert md["annotations"]["user-annotation"] == f"{who}-only" and md["labels"]["user-label"] == f"{who}-only"
        if defaults:
            assert md["annotations"]["monitoring.example.com/scrape"] == "true"
            assert md["annotations"]["shared-annotation"] == who and md["labels"]["shared-label"] == who
            assert md["labels"]["fleet"] == "managed"
        else:
            assert "monitoring.example.com/scrape" not in md["annotations"] and "fleet" not in md["labels"]


@pytest.mark.upstream(f"{ORIGIN}: TestSetDefaults")
async def test_set_defaults() -> None:
    """Upstream fills nil rayStartParams with empty maps so the rest never sees nil; pumice's
    builders read a missing rayStartParams as empty: such a cluster gets its Pods."""
    cl = setup_cluster()
    del cl["spec"]["headGroupSpec"]["rayStartParams"]
    del cl["spec"]["workerGroupSpecs"][0]["rayStartParams"]
    cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"] = {}
    client, rc, _ = await world()
    await rc._reconcile_pods(cl)
    assert len((await client.list(scheme.POD, "default")).items) == 4


@pytest.mark.parametrize(("name", "strategy", "head", "want"), [
    pytest.param(n, s, h, w, marks=pytest.mark.upstream(f"{ORIGIN}: TestShouldRecreatePodsForUpgrade / {n}"), id=n)
    for n, s, h, w in [
        ("No upgrade strategy", None, "testPods", False),
        ("Upgrade strategy type is nil", {}, "testPods", False),
        ("Upgrade strategy type is None", {"type": "None"}, "testPods", False),
        ("Recreate strategy but no pods exist", {"type": "Recreate"}, None, False),
        ("Recreate strategy with matching RayClusterHash", {"type": "Recreate"}, ("current", "current"), False),
        ("Recreate strategy with mismatched RayClusterHash", {"type": "Recreate"}, ("old-head-hash", "current"),
         True),
        ("Recreate strategy with different KubeRay version", {"type": "Recreate"}, ("old-hash", "v1.0.0"), False),
        ("Recreate strategy with same KubeRay version but different hash", {"type": "Recreate"},
         ("old-hash", "current"), True),
        ("Recreate strategy with same KubeRay version and same hash", {"type": "Recreate"}, ("current", "current"),
         False),
    ]])
async def test_should_recreate_pods_for_upgrade(name: str, strategy: Obj | None, head: Any, want: bool) -> None:
    from pumice.controllers.ray import constants as c
    from pumice.controllers.ray.common.hashing import hash_without_replicas_and_workers_to_delete

    cl = setup_cluster()
    if strategy is not None:
        cl["spec"]["upgradeStrategy"] = strategy
    current = hash_without_replicas_and_workers_to_delete(cl["spec"])
    pods: list[Obj] = []
    if head == "testPods":
        pods = setup_pods()
    elif head is not None:
        pod = labelled_pod("head-pod", "head", group=HEAD_GROUP)
        pod["metadata"]["annotations"] = {
            "ray.io/upgrade-strategy-recreate-hash": current if head[0] == "current" else head[0],
            "ray.io/kuberay-version": c.KUBERAY_VERSION if head[1] == "current" else head[1]}
        pods = [pod]
    client, rc, _ = await world(*pods)
    assert await rc._should_recreate_pods_for_upgrade(cl) is want
    if head is not None and head != "testPods" and head[1] != "current":
        # another KubeRay version: the head Pod gets the current hash and version instead
        ann = (await client.get(scheme.POD, "head-pod", "default"))["metadata"]["annotations"]
        assert ann == {"ray.io/upgrade-strategy-recreate-hash": current, "ray.io/kuberay-version": c.KUBERAY_VERSION}

