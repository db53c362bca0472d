"""RayService controller with the fake dashboard and the in-memory FakeClient: the pass order,
statuses, conditions, events and timings of reference/kuberay-2.md §11."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.common import rayservice as rsb
from pumice.controllers.ray.raycluster import RayClusterReconciler
from pumice.controllers.ray.rayservice import (
    RayServiceOptions,
    RayServiceReconciler,
    apps_from_serve_details,
    inconsistent_rayservice_status,
)
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient
from pumice.testing.ray_dashboard import FakeRayDashboard

from .conftest import load_sample, ray_scheme

NAME = "rayservice-sample"
REQ = Request("default", NAME)


def running(*apps: str, status: str = "RUNNING") -> Obj:
    return {"applications": {a: {"name": a, "status": status, "message": "",
                                 "deployments": {f"{a}-dep": {"status": "HEALTHY", "message": ""}}}
                             for a in apps}}


class Harness:
    """One RayService world: per-cluster fake dashboards, a proxy health table, recorded events."""

    def __init__(self, options: RayServiceOptions = RayServiceOptions()) -> None:
        self.clock = FakeClock()
        self.client = FakeClient(ray_scheme(), clock=self.clock)
        self.dashes: dict[str, FakeRayDashboard] = {}
        self.healthy: set[str] = set()
        self.events: list[tuple[str, str, str]] = []
        self.rc = RayClusterReconciler(self.client, clock=self.clock)
        self.rs = RayServiceReconciler(self.client, clock=self.clock, dashboard_client_factory=self.factory,
                                       serve_proxy_healthy=self.proxy, options=options, rng=random.Random(3),
                                       recorder=self)
        self.next_ip = 10

    def factory(self, cluster: Obj, url: str, auth_token: str | None = None) -> Any:
        return self.dash(cluster["metadata"]["name"]).factory(cluster, url, auth_token)

    def dash(self, cluster_name: str) -> FakeRayDashboard:
        return self.dashes.setdefault(cluster_name, FakeRayDashboard())

    async def proxy(self, pod: Obj, port: int) -> bool:
        return (pod.get("status") or {}).get("podIP") in self.healthy

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))

    def reasons(self) -> list[str]:
        return [r for _, r, _ in self.events]

    async def create(self, **spec: Any) -> Obj:
        rs = load_sample("ray-service.sample.yaml", "RayService")
        rs["spec"].update(spec)
        return await self.client.create(rs)

    async def obj(self) -> Obj:
        return await self.client.get(scheme.RAY_SERVICE, NAME, "default")

    async def status(self) -> Obj:
        return (await self.obj()).get("status") or {}

    async def edit(self, fn: Any) -> None:
        rs = await self.obj()
        fn(rs)
        await self.client.update(rs)

    async def step(self, n: int = 1) -> Any:
        out = None
        for _ in range(n):
            out = await self.rs.reconcile(REQ)
        return out

    async def clusters(self) -> list[str]:
        return sorted(x["metadata"]["name"] for x in (await self.client.list(scheme.RAY_CLUSTER, "default")).items
                      if not x["metadata"].get("deletionTimestamp"))

    def cond(self, st: Obj, ctype: str) -> tuple[str, str]:
        for x in st.get("conditions") or []:
            if x["type"] == ctype:
                return x["status"], x["reason"]
        return ("", "")

    async def cluster_ready(self, name: str, *, proxy_healthy: bool = True) -> None:
        """Run the RayCluster controller, make its Pods Running and Ready, record HeadPodReady."""
        req = Request("default", name)
        await self.rc.reconcile(req)
        for p in (await self.client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={name}")).items:
            self.next_ip += 1
            p["apiVersion"], p["kind"] = "v1", "Pod"
            p["status"] = {"phase": "Running", "podIP": f"10.244.0.{self.next_ip}",
                           "conditions": [{"type": "Ready", "status": "True"}]}
            await self.client.update_status(p)
            if proxy_healthy:
                self.healthy.add(p["status"]["podIP"])
        await self.rc.reconcile(req)

    async def serve_endpoints(self, cluster: str, n: int) -> None:
        """What the endpoints controller would write for the serve Service: ``n`` ready Pods."""
        svc = rsb.serve_service_name(await self.obj())
        sl = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
              "metadata": {"name": f"{svc}-abc", "namespace": "default",
                           "labels": {"kubernetes.io/service-name": svc}},
              "addressType": "IPv4",
              "endpoints": [{"addresses": [f"10.9.0.{i}"], "conditions": {"ready": True},
                             "targetRef": {"kind": "Pod", "name": f"{cluster}-{i}", "uid": f"uid-{cluster}-{i}"}}
                            for i in range(n)]}
        try:
            old = await self.client.get(scheme.ENDPOINT_SLICE, sl["metadata"]["name"], "default")
            old["endpoints"] = sl["endpoints"]
            await self.client.update(old)
        except Exception:
            await self.client.create(sl)

    async def to_ready(self, **spec: Any) -> str:
        """Create the sample and drive it to Ready; returns the active cluster name."""
        await self.create(**spec)
        await self.step(2)  # finalizer, pending name
        with pytest.raises(LookupError, match="found 0 head"):
            await self.step()  # creates the cluster; its head Pod does not exist yet
        name = (await self.status())["pendingServiceStatus"]["rayClusterName"]
        await self.cluster_ready(name)
        self.dash(name).serve_details = running("fruit_app", "math_app")
        await self.serve_endpoints(name, 2)
        await self.step()
        st = await self.status()
        assert st["activeServiceStatus"]["rayClusterName"] == name, st
        return name


async def test_first_pass_adds_the_finalizer_and_nothing_else() -> None:
    h = Harness()
    await h.create()
    res = await h.step()
    rs = await h.obj()
    assert rs["metadata"]["finalizers"] == ["ray.io/rayservice-finalizer"]
    assert not rs.get("status")
    assert res.requeue_after == 2.0
    assert await h.clusters() == []


async def test_second_pass_writes_a_pending_name_and_initializing_conditions_before_any_cluster() -> None:
    h = Harness()
    await h.create()
    await h.step(2)
    st = await h.status()
    pending = st["pendingServiceStatus"]["rayClusterName"]
    assert pending.startswith(f"{NAME}-") and len(pending) == len(NAME) + 6
    assert h.cond(st, "Ready") == ("False", "Initializing")
    assert h.cond(st, "UpgradeInProgress") == ("False", "Initializing")
    assert st["serviceStatus"] == ""
    assert await h.clusters() == []


async def test_third_pass_creates_the_pending_cluster_with_upstream_labels_and_annotations() -> None:
    h = Harness()
    await h.create()
    await h.step(2)
    with pytest.raises(LookupError, match="found 0 head"):
        await h.step()
    name = (await h.status())["pendingServiceStatus"]["rayClusterName"]
    cl = await h.client.get(scheme.RAY_CLUSTER, name, "default")
    assert cl["metadata"]["labels"]["ray.io/originated-from-cr-name"] == NAME
    assert cl["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayService"
    ann = cl["metadata"]["annotations"]
    assert ann["ray.io/num-worker-groups"] == "1"
    assert ann["ray.io/kuberay-version"] == "nightly"
    assert ann["ray.io/hash-without-replicas-and-workers-to-delete"] == rsb.goal_hash(await h.obj())
    assert cl["metadata"]["ownerReferences"][0]["kind"] == "RayService"
    assert ("Normal", "CreatedRayCluster", f"Created the RayCluster default/{name}") in h.events


async def test_sample_becomes_ready_with_services_following_the_cluster() -> None:
    h = Harness()
    name = await h.to_ready()
    st = await h.status()
    assert h.cond(st, "Ready") == ("True", "NonZeroServeEndpoints")
    assert h.cond(st, "UpgradeInProgress") == ("False", "NoPendingCluster")
    assert st["serviceStatus"] == "Running"
    assert st["numServeEndpoints"] == 2
    assert st["pendingServiceStatus"].get("rayClusterName", "") == ""
    assert set(st["activeServiceStatus"]["applicationStatuses"]) == {"fruit_app", "math_app"}
    assert st["activeServiceStatus"]["rayClusterStatus"]["state"] == "ready"
    put = h.dash(name).serve_configs[0]
    assert [a["name"] for a in put["applications"]] == ["fruit_app", "math_app"]
    assert put["applications"][0]["route_prefix"] == "/fruit"
    head = await h.client.get(scheme.SERVICE, f"{NAME}-head-svc", "default")
    serve = await h.client.get(scheme.SERVICE, f"{NAME}-serve-svc", "default")
    assert head["spec"]["selector"]["ray.io/cluster"] == name
    assert serve["spec"]["selector"] == {"ray.io/cluster": name, "ray.io/serve": "true"}
    assert serve["spec"]["ports"] == [{"name": "serve", "port": 8000}]
    assert serve["metadata"]["labels"]["ray.io/serve"] == f"{NAME}-serve"
    assert head["metadata"]["labels"]["ray.io/identifier"] == f"{NAME}-head"
    assert {"UpdatedServeApplications", "CreatedService", "UpdatedHeadPodServeLabel"} <= set(h.reasons())


async def test_steady_state_pass_writes_nothing_and_does_not_re_put() -> None:
    h = Harness()
    name = await h.to_ready()
    writes = len(h.client.writes())
    await h.step(3)
    assert len(h.client.writes()) == writes
    assert len(h.dash(name).serve_configs) == 1


async def test_head_pod_serve_label_follows_the_proxy_health_check() -> None:
    h = Harness()
    name = await h.to_ready()
    [head] = (await h.client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={name},ray.io/node-type=head")).items
    assert head["metadata"]["labels"]["ray.io/serve"] == "true"
    h.healthy.discard(head["status"]["podIP"])
    await h.step()
    head = await h.client.get(scheme.POD, head["metadata"]["name"], "default")
    assert head["metadata"]["labels"]["ray.io/serve"] == "false"
    workers = (await h.client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={name},ray.io/node-type=worker")).items
    assert all(w["metadata"]["labels"]["ray.io/serve"] == "true" for w in workers)


async def test_exclude_head_pod_from_serve_svc_keeps_the_label_false() -> None:
    h = Harness()
    name = await h.to_ready(excludeHeadPodFromServeSvc=True)
    [head] = (await h.client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={name},ray.io/node-type=head")).items
    assert head["metadata"]["labels"]["ray.io/serve"] == "false"


async def test_fixed_head_service_name_is_invalid_and_creates_nothing() -> None:
    h = Harness()
    rs = load_sample("ray-service.sample.yaml", "RayService")
    rs["spec"]["rayClusterConfig"]["headGroupSpec"]["headService"] = {"metadata": {"name": "my-head"}}
    await h.client.create(rs)
    res = await h.step(2)
    st = await h.status()
    assert h.cond(st, "Ready") == ("False", "ValidationFailed")
    assert res.requeue_after is None
    [(typ, reason, msg)] = [e for e in h.events if e[1].startswith("Invalid")]
    assert (typ, reason) == ("Warning", "InvalidRayServiceSpec")
    assert msg == (f"default/{NAME}: The RayService spec is invalid: "
                   "spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set")
    assert await h.clusters() == []


@pytest.mark.parametrize(("mutate", "reason", "text"), [
    (lambda rs: rs["metadata"].update(name="r" * 48), "InvalidRayServiceMetadata", "no more than 47 characters"),
    (lambda rs: rs["metadata"].update(annotations={"ray.io/initializing-timeout": "soon"}),
     "InvalidRayServiceMetadata", "initializing-timeout"),
    (lambda rs: rs["spec"].update(upgradeStrategy={"type": "BlueGreen"}), "InvalidRayServiceSpec",
     "Spec.UpgradeStrategy.Type value BlueGreen is invalid"),
    (lambda rs: rs["spec"].update(rayClusterDeletionDelaySeconds=-1), "InvalidRayServiceSpec",
     "RayClusterDeletionDelaySeconds should be a non-negative integer"),
])
async def test_validation_rules_emit_the_upstream_reason(mutate: Any, reason: str, text: str) -> None:
    h = Harness()
    rs = load_sample("ray-service.sample.yaml", "RayService")
    mutate(rs)
    await h.client.create(rs)
    await h.rs.reconcile(Request("default", rs["metadata"]["name"]))
    await h.rs.reconcile(Request("default", rs["metadata"]["name"]))
    [(typ, got, msg)] = [e for e in h.events if e[1].startswith("Invalid")]
    assert (typ, got) == ("Warning", reason) and text in msg
    assert await h.clusters() == []


async def test_cluster_spec_change_upgrades_without_downtime_and_deletes_the_old_cluster_after_the_delay() -> None:
    h = Harness()
    old = await h.to_ready()

    def bump(rs: Obj) -> None:
        rs["spec"]["rayClusterConfig"]["rayVersion"] = "2.53.0"
    await h.edit(bump)
    await h.step()
    st = await h.status()
    new = st["pendingServiceStatus"]["rayClusterName"]
    assert new and new != old
    assert h.cond(st, "UpgradeInProgress") == ("True", "BothActivePendingClustersExist")
    assert h.cond(st, "Ready") == ("True", "NonZeroServeEndpoints")
    with pytest.raises(LookupError):
        await h.step()  # creates the pending cluster; its head Pod does not exist yet
    assert await h.clusters() == sorted([old, new])
    await h.cluster_ready(new)
    h.dash(new).serve_details = running("fruit_app")
    h.dash(new).serve_details["applications"]["fruit_app"]["status"] = "DEPLOYING"
    await h.step()
    serve = await h.client.get(scheme.SERVICE, f"{NAME}-serve-svc", "default")
    assert serve["spec"]["selector"]["ray.io/cluster"] == old, "traffic moves only when every app is RUNNING"
    assert (await h.status())["pendingServiceStatus"]["applicationStatuses"]["fruit_app"]["status"] == "DEPLOYING"
    h.dash(new).serve_details = running("fruit_app", "math_app")
    await h.step()
    st = await h.status()
    serve = await h.client.get(scheme.SERVICE, f"{NAME}-serve-svc", "default")
    head = await h.client.get(scheme.SERVICE, f"{NAME}-head-svc", "default")
    assert serve["spec"]["selector"]["ray.io/cluster"] == new
    assert head["spec"]["selector"]["ray.io/cluster"] == new
    assert st["activeServiceStatus"]["rayClusterName"] == new
    assert st["pendingServiceStatus"].get("rayClusterName", "") == ""
    assert h.cond(st, "UpgradeInProgress") == ("False", "NoPendingCluster")
    await h.step()  # the old cluster is first seen dangling: scheduled for now + 60 s
    assert await h.clusters() == sorted([old, new])
    h.clock.advance(59)
    await h.step()
    assert old in await h.clusters()
    h.clock.advance(2)
    await h.step()
    assert await h.clusters() == [new]
    assert ("Normal", "DeletedRayCluster", f"Deleted the RayCluster default/{old}") in h.events


async def test_two_clusters_of_one_rayservice_never_share_a_service_name() -> None:
    h = Harness()
    old = await h.to_ready()
    await h.edit(lambda rs: rs["spec"]["rayClusterConfig"].update(rayVersion="2.53.0"))
    await h.step()
    new = (await h.status())["pendingServiceStatus"]["rayClusterName"]
    with pytest.raises(LookupError):
        await h.step()
    await h.cluster_ready(new)
    names = [s["metadata"]["name"] for s in (await h.client.list(scheme.SERVICE, "default")).items]
    assert len(names) == len(set(names))
    assert {f"{old}-head-svc", f"{new}-head-svc", f"{NAME}-head-svc", f"{NAME}-serve-svc"} <= set(names)


@pytest.mark.parametrize("change", ["replicas", "serve_config", "workers_to_delete"])
async def test_in_place_changes_do_not_create_a_new_cluster(change: str) -> None:
    h = Harness()
    name = await h.to_ready()

    def edit(rs: Obj) -> None:
        g = rs["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
        if change == "replicas":
            g["replicas"] = 3
        elif change == "workers_to_delete":
            g["scaleStrategy"] = {"workersToDelete": ["x"]}
        else:
            rs["spec"]["serveConfigV2"] = rs["spec"]["serveConfigV2"].replace("price: 3", "price: 4")
    await h.edit(edit)
    await h.step(2)
    st = await h.status()
    assert await h.clusters() == [name]
    assert st["pendingServiceStatus"].get("rayClusterName", "") == ""
    if change == "serve_config":
        assert len(h.dash(name).serve_configs) == 2
        assert h.dash(name).serve_configs[1]["applications"][0]["deployments"][0]["user_config"]["price"] == 4


async def test_appended_worker_group_updates_the_active_cluster_in_place() -> None:
    h = Harness()
    name = await h.to_ready()

    def add_group(rs: Obj) -> None:
        groups = rs["spec"]["rayClusterConfig"]["workerGroupSpecs"]
        g = copy.deepcopy(groups[0])
        g["groupName"] = "extra"
        groups.append(g)
    await h.edit(add_group)
    await h.step()
    cl = await h.client.get(scheme.RAY_CLUSTER, name, "default")
    assert [g["groupName"] for g in cl["spec"]["workerGroupSpecs"]] == ["small-group", "extra"]
    assert cl["metadata"]["annotations"]["ray.io/num-worker-groups"] == "2"
    assert await h.clusters() == [name]
    assert ("Normal", "UpdatedRayCluster", f"Updated the active RayCluster default/{name}") in h.events


@pytest.mark.parametrize(("strategy", "env_default", "upgrades"), [
    ({"type": "None"}, True, False),
    ({"type": "NewCluster"}, False, True),
    (None, False, False),
    (None, True, True),
])
async def test_upgrade_strategy_decides_whether_a_spec_change_rolls_a_new_cluster(
        strategy: Obj | None, env_default: bool, upgrades: bool) -> None:
    h = Harness(RayServiceOptions(enable_zero_downtime=env_default))
    extra = {"upgradeStrategy": strategy} if strategy else {}
    await h.to_ready(**extra)
    await h.edit(lambda rs: rs["spec"]["rayClusterConfig"].update(rayVersion="2.53.0"))
    await h.step()
    assert bool((await h.status())["pendingServiceStatus"].get("rayClusterName")) is upgrades


async def test_failed_application_shows_upstream_statuses_and_never_ready() -> None:
    h = Harness()
    await h.create()
    await h.step(2)
    with pytest.raises(LookupError):
        await h.step()
    name = (await h.status())["pendingServiceStatus"]["rayClusterName"]
    await h.cluster_ready(name)
    h.dash(name).serve_details = {"applications": {"fruit_app": {
        "status": "DEPLOY_FAILED", "message": "ModuleNotFoundError: No module named 'fruit'",
        "deployments": {}}}}
    await h.step()
    st = await h.status()
    app = st["pendingServiceStatus"]["applicationStatuses"]["fruit_app"]
    assert app == {"status": "DEPLOY_FAILED", "message": "ModuleNotFoundError: No module named 'fruit'",
                   "serveDeploymentStatuses": {}}
    assert h.cond(st, "Ready") == ("False", "Initializing")
    assert "UpdatedServeApplications" in h.reasons()
    assert (await h.client.list(scheme.SERVICE, "default", label_selector="ray.io/serve")).items == []


async def test_a_put_failure_is_a_warning_event_and_an_error() -> None:
    h = Harness()
    await h.create()
    await h.step(2)
    with pytest.raises(LookupError):
        await h.step()
    name = (await h.status())["pendingServiceStatus"]["rayClusterName"]
    await h.cluster_ready(name)

    async def boom(config: Obj) -> None:
        raise RuntimeError("HTTP 500")
    dash = h.dash(name)
    orig = dash.factory

    def factory(cluster: Obj, url: str, auth_token: str | None = None) -> Any:
        cl = orig(cluster, url, auth_token)
        cl.update_deployments = boom  # type: ignore[method-assign]
        return cl
    dash.factory = factory  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await h.step()
    assert next(e for e in h.events if e[1] == "FailedToUpdateServeApplications")[0] == "Warning"


async def test_zero_applications_after_a_head_restart_are_re_submitted() -> None:
    h = Harness()
    name = await h.to_ready()
    h.dash(name).serve_details = {"applications": {}}
    await h.step()
    assert len(h.dash(name).serve_configs) == 2


async def test_suspend_deletes_clusters_and_services_then_resume_starts_over() -> None:
    h = Harness()
    name = await h.to_ready()
    await h.edit(lambda rs: rs["spec"].update(suspend=True))
    await h.step()
    st = await h.status()
    assert h.cond(st, "Suspending") == ("True", "SuspendRequested")
    assert h.cond(st, "Ready") == ("False", "SuspendInProgress")
    assert st["numServeEndpoints"] == 0 and not st["activeServiceStatus"]
    await h.step()
    assert h.cond(await h.status(), "Suspending") == ("True", "SuspendInProgress")
    await h.serve_endpoints(name, 0)
    for kind in (scheme.RAY_CLUSTER, scheme.SERVICE):
        for obj in (await h.client.list(kind, "default")).items:
            if obj["metadata"].get("labels", {}).get("ray.io/originated-from-crd") == "RayService":
                await h.client.delete(kind, obj["metadata"]["name"], "default")
    await h.step()
    st = await h.status()
    assert h.cond(st, "Suspended") == ("True", "SuspendComplete")
    assert h.cond(st, "Suspending") == ("False", "SuspendComplete")
    assert (await h.step()).requeue_after is None
    await h.edit(lambda rs: rs["spec"].update(suspend=False))
    await h.step()
    st = await h.status()
    assert h.cond(st, "Suspended") == ("False", "RayServiceResumed")
    assert h.cond(st, "Ready") == ("False", "Initializing")
    new = st["pendingServiceStatus"]["rayClusterName"]
    assert new and new != name


async def test_initializing_timeout_fails_terminally_and_cleans_up() -> None:
    h = Harness()
    rs = load_sample("ray-service.sample.yaml", "RayService")
    rs["metadata"]["annotations"] = {"ray.io/initializing-timeout": "30s"}
    rs["spec"]["rayClusterDeletionDelaySeconds"] = 0
    await h.client.create(rs)
    await h.step(2)
    with pytest.raises(LookupError):
        await h.step()
    name = (await h.status())["pendingServiceStatus"]["rayClusterName"]
    h.clock.advance(31)
    with pytest.raises(LookupError):
        await h.step()  # still no head Pod: the pass errors before the status
    await h.cluster_ready(name)
    await h.step()
    st = await h.status()
    ready = next(x for x in st["conditions"] if x["type"] == "Ready")
    assert ready["reason"] == "InitializingTimeout"
    assert ready["message"].startswith("RayService failed to become ready within the configured timeout of 30s.")
    assert not st["pendingServiceStatus"].get("rayClusterName")
    assert "RayServiceInitializingTimeout" in h.reasons()
    await h.step()
    h.clock.advance(1)
    await h.step()
    assert await h.clusters() == []
    assert (await h.step()).requeue_after is None


async def test_deletion_removes_clusters_then_the_finalizer() -> None:
    h = Harness()
    name = await h.to_ready()
    await h.client.delete(scheme.RAY_SERVICE, NAME, "default")
    await h.step()
    assert await h.clusters() == []
    assert ("Normal", "DeletedRayCluster", f"Deleted the RayCluster default/{name}") in h.events
    await h.step()
    with pytest.raises(Exception, match="not found"):
        await h.obj()


async def test_external_managed_by_is_ignored() -> None:
    h = Harness()
    await h.create(managedBy="kueue.x-k8s.io/multikueue")
    res = await h.step(3)
    assert res.requeue_after is None
    assert not (await h.obj())["metadata"].get("finalizers")


def test_hash_ignores_replicas_workers_to_delete_tolerations_and_suspend() -> None:
    rs = load_sample("ray-service.sample.yaml", "RayService")
    base = rsb.goal_hash(rs)
    spec = rs["spec"]["rayClusterConfig"]
    g = spec["workerGroupSpecs"][0]
    g.update(replicas=4, minReplicas=0, maxReplicas=9, scaleStrategy={"workersToDelete": ["a"]})
    g["template"]["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    spec["headGroupSpec"]["template"]["spec"]["schedulingGates"] = [{"name": "kueue"}]
    spec["suspend"] = True
    assert rsb.goal_hash(rs) == base
    spec["rayVersion"] = "2.53.0"
    assert rsb.goal_hash(rs) != base


def test_apps_from_serve_details_maps_the_default_app_and_needs_every_app_running() -> None:
    ready, apps = apps_from_serve_details({"applications": {"": {"status": "RUNNING", "deployments": {}}}})
    assert ready and list(apps) == ["default"]
    assert apps_from_serve_details({"applications": {}}) == (False, {})
    ready, _ = apps_from_serve_details(running("a") | {"applications": {
        "a": {"status": "RUNNING"}, "b": {"status": "DEPLOYING"}}})
    assert not ready


def test_status_diff_ignores_cluster_status_and_observed_generation() -> None:
    old = {"activeServiceStatus": {"rayClusterName": "x", "rayClusterStatus": {"state": "ready"}},
           "observedGeneration": 1}
    new = copy.deepcopy(old)
    new["activeServiceStatus"]["rayClusterStatus"] = {"state": "suspended"}
    new["observedGeneration"] = 2
    assert not inconsistent_rayservice_status(old, new)
    new["numServeEndpoints"] = 1
    assert inconsistent_rayservice_status(old, new)


@pytest.mark.parametrize(("text", "why"), [
    ("just a string", "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of "
                      "type map[string]interface {}"),
    ("applications: [unclosed", "error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']'"),
])
async def test_a_serve_config_that_is_not_a_yaml_mapping_is_a_warning_and_never_put(text: str, why: str) -> None:
    """Trial 3 finding 14: such a serveConfigV2 was accepted in silence (upstream's yaml.Unmarshal
    into a map fails, and the failure is a Warning Event FailedToUpdateServeApplications)."""
    h = Harness()
    await h.create(serveConfigV2=text)
    await h.step(2)
    with pytest.raises(LookupError):
        await h.step()
    name = (await h.status())["pendingServiceStatus"]["rayClusterName"]
    await h.cluster_ready(name)
    with pytest.raises(ValueError, match=r"^error "):
        await h.step()
    warning = next(e for e in h.events if e[1] == "FailedToUpdateServeApplications")
    assert warning[0] == "Warning" and warning[2].endswith(f": {why}"), warning
    assert "<unicode string>" not in warning[2]
    assert h.dash(name).serve_configs == []
    assert "UpdatedServeApplications" not in h.reasons()


def test_serve_config_of_decodes_a_mapping_and_empty_text() -> None:
    from pumice.controllers.ray.rayservice import serve_config_of

    assert serve_config_of("applications:\n- {name: a, import_path: m:app}") == {
        "applications": [{"name": "a", "import_path": "m:app"}]}
    assert serve_config_of("") == {}
    with pytest.raises(ValueError, match=r"cannot unmarshal array into Go value of type map\[string\]interface \{\}"):
        serve_config_of("- a\n- b")


@pytest.mark.parametrize(("text", "why"), [
    ("a: b\n c: d: e", "yaml: line 2: mapping values are not allowed in this context"),
    ('a: "x', "yaml: found unexpected end of stream"),
    ("a:\n  - b\n - c", "yaml: line 2: did not find expected key"),
    ("a: *x", "yaml: unknown anchor 'x' referenced"),
    ('a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)),
     "yaml: document contains excessive aliasing"),
    ("7", "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal number into Go value of type "
          "map[string]interface {}"),
])
def test_serve_config_errors_are_go_yamls(text: str, why: str) -> None:
    """sigs.k8s.io/yaml's words, never PyYAML's (trial 12 F-6 a: ``in "<unicode string>"``)."""
    from pumice.controllers.ray.rayservice import serve_config_of

    with pytest.raises(ValueError) as e:
        serve_config_of(text)
    message = str(e.value)
    assert message.removeprefix("error converting YAML to JSON: ") == why, message
