"""The head Ingress of a RayCluster (``headGroupSpec.enableIngress``): the builder, the
sub-reconciler against the FakeClient, and the whole operator on the in-process API server (the
DefaultIngressClass admission, the garbage collector deleting the Ingress with its cluster).

No upstream sample sets ``enableIngress`` (checked: kuberay master feeaf72fa, and
../shared/samples/kuberay), so the tests add it to ray-cluster.sample.yaml.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.common.ingress import build_ingress_for_head_service, ingress_needs_update
from pumice.controllers.ray.raycluster import RayClusterReconciler
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme

BUILDER = "kuberay ray-operator/controllers/ray/common/ingress_test.go"
CONTROLLER = "kuberay ray-operator/controllers/ray/raycluster_controller_unit_test.go"
NAME = "raycluster-kuberay"


def sample(**head: Any) -> Obj:
    """ray-cluster.sample.yaml with ``enableIngress: true`` and ``head`` merged into headGroupSpec."""
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["metadata"].setdefault("namespace", "default")
    cl["spec"]["headGroupSpec"].update({"enableIngress": True, **head})
    return cl


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.items.append((type, reason, message))


def world() -> tuple[FakeClient, RayClusterReconciler, Events]:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    ev = Events()
    return client, RayClusterReconciler(client, recorder=ev, clock=FakeClock()), ev


async def ingresses(client: FakeClient) -> list[Obj]:
    return (await client.list(scheme.INGRESS, "default")).items


# --- the builder --------------------------------------------------------------------------------


@pytest.mark.upstream(f"{BUILDER}: TestBuildIngressForHeadService")
def test_the_ingress_sends_the_root_path_to_the_head_services_dashboard_with_the_annotated_class() -> None:
    cl = sample()
    cl["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx", "team": "ml"}
    ing = build_ingress_for_head_service(cl)
    assert ing["apiVersion"] == "networking.k8s.io/v1" and ing["kind"] == "Ingress"
    assert ing["metadata"] == {
        "name": "raycluster-kuberay-head-ingress", "namespace": "default",
        "labels": {"ray.io/cluster": NAME, "ray.io/identifier": "raycluster-kuberay-head",
                   "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"},
        "annotations": {"team": "ml"}}  # the deprecated class annotation is not copied
    assert ing["spec"] == {"ingressClassName": "nginx", "rules": [{"http": {"paths": [{
        "path": "/", "pathType": "Prefix",
        "backend": {"service": {"name": "raycluster-kuberay-head-svc", "port": {"number": 8265}}}}]}}]}


@pytest.mark.upstream(f"{BUILDER}: TestBuildIngressForHeadServiceWithoutIngressClass")
def test_without_the_class_annotation_the_ingress_names_no_class() -> None:
    ing = build_ingress_for_head_service(sample())
    assert "ingressClassName" not in ing["spec"] and "annotations" not in ing["metadata"]


@pytest.mark.upstream(f"{BUILDER}: TestBuildIngressForHeadServiceWithIngressFields")
def test_ingress_options_set_host_path_path_type_and_tls() -> None:
    cl = sample(ingressOptions={"host": "ray.example.com", "path": "/dashboard", "pathType": "Exact",
                                "tls": [{"hosts": ["ray.example.com"], "secretName": "ray-tls"}]})
    cl["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx"}
    spec = build_ingress_for_head_service(cl)["spec"]
    assert spec["ingressClassName"] == "nginx"
    [rule] = spec["rules"]
    assert rule["host"] == "ray.example.com"
    assert [(p["path"], p["pathType"]) for p in rule["http"]["paths"]] == [("/dashboard", "Exact")]
    assert spec["tls"] == [{"hosts": ["ray.example.com"], "secretName": "ray-tls"}]


def test_the_backend_is_the_custom_head_service_at_the_declared_dashboard_port() -> None:
    cl = sample(headService={"metadata": {"name": "my-head"}})
    cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 6379, "name": "gcs-server"}, {"containerPort": 9999, "name": "dashboard"}]
    [rule] = build_ingress_for_head_service(cl)["spec"]["rules"]
    assert rule["http"]["paths"][0]["backend"] == {"service": {"name": "my-head", "port": {"number": 9999}}}


# --- ingressNeedsUpdate -------------------------------------------------------------------------


def _ingress(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    md: Obj = {"name": "sample-head-ingress", "namespace": "default"}
    if labels:
        md["labels"] = labels
    if annotations:
        md["annotations"] = annotations
    return {"metadata": md, "spec": spec}


def _rule(host: str, path: str, path_type: str) -> Obj:
    return {"host": host, "http": {"paths": [{"path": path, "pathType": path_type}]}}


@pytest.mark.upstream(f"{CONTROLLER}: TestIngressNeedsUpdateAppliesDesiredFields")
def test_needs_update_copies_the_desired_labels_annotations_and_spec() -> None:
    existing = _ingress({"ray.io/cluster": "sample"}, {"nginx.ingress.kubernetes.io/rewrite-target": "/$1"},
                        rules=[_rule("old.example.com", "/sample/(.*)", "Exact")])
    desired = _ingress({"ray.io/cluster": "sample", "extra": "label"}, {"nginx.ingress.kubernetes.io/ssl-redirect": "true"},
                       rules=[_rule("new.example.com", "/dashboard", "Prefix")],
                       tls=[{"hosts": ["new.example.com"], "secretName": "ray-tls"}])
    assert ingress_needs_update(existing, desired)
    assert existing["metadata"]["labels"] == desired["metadata"]["labels"]
    assert existing["metadata"]["annotations"] == desired["metadata"]["annotations"]
    assert existing["spec"] == desired["spec"]


@pytest.mark.upstream(f"{CONTROLLER}: TestIngressNeedsUpdateNoopWhenEqual")
def test_needs_update_is_false_when_equal() -> None:
    existing = _ingress({"ray.io/cluster": "sample"}, {"a": "b"}, rules=[_rule("new.example.com", "/dashboard", "Prefix")])
    assert not ingress_needs_update(existing, copy.deepcopy(existing))


@pytest.mark.upstream(f"{CONTROLLER}: TestIngressNeedsUpdatePreservesDefaultedIngressClassName")
def test_needs_update_keeps_a_class_the_admission_defaulted() -> None:
    rules = [_rule("ray.example.com", "/", "Prefix")]
    existing = _ingress(ingressClassName="nginx", rules=rules)
    assert not ingress_needs_update(existing, _ingress(rules=rules))
    assert existing["spec"]["ingressClassName"] == "nginx"


@pytest.mark.upstream(f"{CONTROLLER}: TestIngressNeedsUpdateOverridesIngressClassNameWhenRequested")
def test_needs_update_sets_a_requested_class_over_the_live_one() -> None:
    rules = [_rule("ray.example.com", "/", "Prefix")]
    existing = _ingress(ingressClassName="nginx", rules=rules)
    assert ingress_needs_update(existing, _ingress(ingressClassName="traefik", rules=rules))
    assert existing["spec"]["ingressClassName"] == "traefik"


# --- the sub-reconciler on the FakeClient -------------------------------------------------------


async def test_enable_ingress_creates_one_owned_ingress_and_a_second_pass_writes_nothing() -> None:
    client, rc, ev = world()
    cl = await client.create(sample())
    await rc.reconcile(Request("default", NAME))
    [ing] = await ingresses(client)
    assert ing["metadata"]["name"] == "raycluster-kuberay-head-ingress"
    [ref] = ing["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (
        "RayCluster", NAME, cl["metadata"]["uid"], True, True)
    assert ("Normal", "CreatedIngress", "Created ingress default/raycluster-kuberay-head-ingress") in ev.items
    for _ in range(2):
        await rc.reconcile(Request("default", NAME))
    before = len(client.writes())
    await rc.reconcile(Request("default", NAME))
    assert client.writes()[before:] == []


async def test_no_ingress_without_enable_ingress() -> None:
    client, rc, _ = world()
    cl = sample()
    cl["spec"]["headGroupSpec"]["enableIngress"] = False
    await client.create(cl)
    await rc.reconcile(Request("default", NAME))
    assert await ingresses(client) == []


@pytest.mark.upstream(f"{CONTROLLER}: TestReconcileIngressKubernetesUpdatesOwnedIngress")
async def test_an_owned_ingress_changed_by_hand_is_brought_back() -> None:
    client, rc, ev = world()
    await client.create(sample())
    await rc.reconcile(Request("default", NAME))
    [ing] = await ingresses(client)
    ing["spec"]["rules"][0]["host"] = "stale-host.example.com"
    ing["metadata"]["labels"].pop("ray.io/cluster")
    ing["apiVersion"], ing["kind"] = "networking.k8s.io/v1", "Ingress"
    await client.update(ing)
    await rc.reconcile(Request("default", NAME))
    [back] = await ingresses(client)
    assert back["spec"] == build_ingress_for_head_service(await client.get(scheme.RAY_CLUSTER, NAME, "default"))["spec"]
    assert back["metadata"]["labels"]["ray.io/cluster"] == NAME
    assert ("Normal", "UpdatedIngress", "Updated ingress default/raycluster-kuberay-head-ingress") in ev.items


@pytest.mark.upstream(f"{CONTROLLER}: TestReconcileIngressKubernetesSkipsUnownedIngressWithGeneratedName")
async def test_an_ingress_of_that_name_the_cluster_does_not_own_is_left_alone_with_a_warning() -> None:
    client, rc, ev = world()
    user = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "raycluster-kuberay-head-ingress", "namespace": "default"},
            "spec": {"rules": [{"host": "user-defined-host.example.com"}]}}
    await client.create(user)
    await client.create(sample())
    await rc.reconcile(Request("default", NAME))
    [ing] = await ingresses(client)
    assert ing["spec"] == user["spec"] and not ing["metadata"].get("ownerReferences")
    assert ("Warning", "FailedToCreateIngress", "Ingress default/raycluster-kuberay-head-ingress already exists "
            "and is not owned by this RayCluster; not modifying it") in ev.items


@pytest.mark.upstream(f"{CONTROLLER}: TestReconcileIngressKubernetesSkipsUnownedIngress")
async def test_a_user_ingress_carrying_the_cluster_label_is_not_adopted() -> None:
    client, rc, _ = world()
    user = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "user-owned-ingress", "namespace": "default", "labels": {"ray.io/cluster": NAME}},
            "spec": {"rules": [{"host": "user-defined-host.example.com"}]}}
    await client.create(user)
    await client.create(sample())
    await rc.reconcile(Request("default", NAME))
    by_name = {i["metadata"]["name"]: i for i in await ingresses(client)}
    assert by_name["user-owned-ingress"]["spec"] == user["spec"]
    assert by_name["raycluster-kuberay-head-ingress"]["metadata"]["ownerReferences"][0]["name"] == NAME


@pytest.mark.upstream(f"{CONTROLLER}: TestReconcileIngressKubernetesFindsOwnedIngressWhenNameIsShortened")
async def test_a_long_cluster_name_gets_the_shortened_ingress_name_on_create_and_update() -> None:
    client, rc, _ = world()
    long_name = "raycluster-long-9-name-that-is-fifty-three-characters"  # the longest valid name
    cl = sample(ingressOptions={"host": "a.example.com"})
    cl["metadata"]["name"] = long_name
    await client.create(cl)
    await rc.reconcile(Request("default", long_name))
    [ing] = await ingresses(client)
    # the last 50 characters, the leading digit replaced by "r" (upstream CheckName)
    assert ing["metadata"]["name"] == "r-name-that-is-fifty-three-characters-head-ingress"
    cl = await client.get(scheme.RAY_CLUSTER, long_name, "default")
    cl["spec"]["headGroupSpec"]["ingressOptions"]["host"] = "b.example.com"
    await client.update(cl)
    await rc.reconcile(Request("default", long_name))
    [ing] = await ingresses(client)
    assert ing["spec"]["rules"][0]["host"] == "b.example.com"


# --- the operator on the in-process API server --------------------------------------------------


async def test_the_operator_makes_the_ingress_on_the_api_server_and_it_goes_with_the_cluster() -> None:
    """The DefaultIngressClass admission names the default class, the operator keeps it (no update
    fight), and the garbage collector deletes the Ingress once the RayCluster is deleted."""
    from pumice.controllers.kube import setup as kube_setup
    from pumice.controllers.ray import setup as ray_setup
    from pumice.runtime.manager import Manager
    from pumice.testing import cluster as cluster_mod
    from pumice.testing.ray_dashboard import FakeRayDashboard

    from .test_setup import wait_for

    async with cluster_mod.local_cluster() as lc:
        await lc.client.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                                "metadata": {"name": "nginx", "annotations": {
                                    "ingressclass.kubernetes.io/is-default-class": "true"}},
                                "spec": {"controller": "k8s.io/ingress-nginx"}})
        mgr = Manager(lc.new_client(field_manager="kuberay-operator"))
        ray_setup(mgr, dashboard_client_factory=FakeRayDashboard().factory, seed=3)
        kube_setup(mgr, controllers=["garbagecollector"])
        async with cluster_mod.running(mgr):
            await lc.client.create(sample())

            async def ingress() -> Obj | None:
                items = (await lc.client.list(scheme.INGRESS, "default")).items
                return items[0] if items else None

            async def made() -> bool:
                return await ingress() is not None

            await wait_for(made)
            ing = await ingress()
            assert ing is not None
            assert ing["spec"]["ingressClassName"] == "nginx"
            assert ing["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] == \
                "raycluster-kuberay-head-svc"
            rv = ing["metadata"]["resourceVersion"]
            await RayClusterReconciler(lc.client).reconcile(Request("default", NAME))
            again = await ingress()
            assert again is not None and again["metadata"]["resourceVersion"] == rv
            await lc.client.delete(scheme.RAY_CLUSTER, NAME, "default")

            async def gone() -> bool:
                return await ingress() is None

            await wait_for(gone)
