"""The built-in CRDs carry upstream's integer formats and list/map markers inside embedded
Kubernetes types (trial 12 F-12): out-of-range integers are refused at create, server-side apply
merges a custom resource's lists by the markers, and the built-in CRDs are owned by a named
field manager."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from pumice.testing.paths import shared_dir

RAYJOBS_CRD = shared_dir() / "samples" / "kuberay" / "ray.io_rayjobs.yaml"
APPLY = {"Content-Type": "application/apply-patch+yaml"}
RC_URL = "/apis/ray.io/v1/namespaces/default/rayclusters"


def ray_cluster(name: str, **container: Any) -> dict[str, Any]:
    head = {"name": "ray-head", "image": "rayproject/ray:2.9.0", **container}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name, "namespace": "default"},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}}}}


def head_container(obj: dict[str, Any]) -> dict[str, Any]:
    [c] = obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
    return c


async def apply(http: httpx2.AsyncClient, url: str, body: Any, manager: str, force: bool = False) -> httpx2.Response:
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    text = body if isinstance(body, str) else json.dumps(body)
    return await http.patch(url + query, content=text, headers=APPLY)


async def test_a_container_port_out_of_int32_range_is_refused_at_create(http: httpx2.AsyncClient) -> None:
    rc = ray_cluster("rcbig", ports=[{"containerPort": 3000000000, "name": "x"}])
    rc["spec"]["headGroupSpec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 99999999999999
    r = await http.post(RC_URL, json=rc)
    assert r.status_code == 422
    field = "spec.headGroupSpec.template.spec.containers[0].ports[0].containerPort"
    message = f"Invalid value: 3000000000: {field} in body must be of type int32"
    assert r.json()["message"] == f'RayCluster.ray.io "rcbig" is invalid: {field}: {message}'
    assert r.json()["details"]["causes"] == [{"reason": "FieldValueInvalid", "message": message, "field": field}]
    assert (await http.get(f"{RC_URL}/rcbig")).status_code == 404


async def test_server_side_apply_merges_containers_and_env_by_name(http: httpx2.AsyncClient) -> None:
    assert (await apply(http, f"{RC_URL}/rc1", ray_cluster("rc1", env=[{"name": "A", "value": "a"}]), "one")).is_success
    r = await apply(http, f"{RC_URL}/rc1", ray_cluster("rc1", env=[{"name": "B", "value": "b"}]), "two")
    assert r.status_code == 200, r.text
    assert head_container(r.json())["env"] == [{"name": "A", "value": "a"}, {"name": "B", "value": "b"}]
    two = next(e for e in r.json()["metadata"]["managedFields"] if e["manager"] == "two")
    container = two["fieldsV1"]["f:spec"]["f:headGroupSpec"]["f:template"]["f:spec"]["f:containers"]
    assert set(container['k:{"name":"ray-head"}']["f:env"]) == {'k:{"name":"B"}'}


async def test_server_side_apply_keys_ports_by_port_and_defaulted_protocol(http: httpx2.AsyncClient) -> None:
    first = ray_cluster("rc2", ports=[{"containerPort": 6379, "name": "gcs"}])
    assert (await apply(http, f"{RC_URL}/rc2", first, "one")).is_success
    r = await apply(http, f"{RC_URL}/rc2", ray_cluster("rc2", ports=[{"containerPort": 8265, "name": "dash"}]), "two")
    assert r.status_code == 200, r.text
    assert head_container(r.json())["ports"] == [{"containerPort": 6379, "name": "gcs", "protocol": "TCP"},
                                                 {"containerPort": 8265, "name": "dash", "protocol": "TCP"}]
    # the same port under another name is a conflict on that item's name, keyed as upstream keys it
    r = await apply(http, f"{RC_URL}/rc2", ray_cluster("rc2", ports=[{"containerPort": 6379, "name": "redis"}]), "two")
    assert r.status_code == 409
    assert r.json()["message"] == (
        'Apply failed with 1 conflict: conflict with "one": .spec.headGroupSpec.template.spec'
        '.containers[name="ray-head"].ports[containerPort=6379,protocol="TCP"].name')


async def test_an_unmarked_list_of_a_custom_resource_stays_atomic(http: httpx2.AsyncClient) -> None:
    """``args`` is ``x-kubernetes-list-type: atomic``: a second manager's different list is a
    conflict on the whole list, not a union."""
    assert (await apply(http, f"{RC_URL}/rc3", ray_cluster("rc3", args=["a"]), "one")).is_success
    r = await apply(http, f"{RC_URL}/rc3", ray_cluster("rc3", args=["b"]), "two")
    assert r.status_code == 409
    assert r.json()["message"].endswith('.containers[name="ray-head"].args')


async def test_built_in_crds_are_owned_by_pumice_and_start_objects_by_kube_apiserver(
        http: httpx2.AsyncClient) -> None:
    crd = (await http.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayjobs.ray.io")).json()
    assert [e["manager"] for e in crd["metadata"]["managedFields"]] == ["pumice"]
    ns = (await http.get("/api/v1/namespaces/default")).json()
    assert [e["manager"] for e in ns["metadata"]["managedFields"]] == ["kube-apiserver"]


async def test_server_side_apply_of_upstreams_crd_file_conflicts_only_on_versions(http: httpx2.AsyncClient) -> None:
    """KubeRay's CRD upgrade step (``kubectl apply --server-side -f ray.io_rayjobs.yaml``):
    ``spec.versions`` is an atomic list and upstream's differs from pumice's (descriptions, the
    v1alpha1 version), so it conflicts with the manager that installed it, as kube-apiserver does
    with whoever created a CRD; names, group and scope are equal and do not conflict."""
    url = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayjobs.ray.io"
    r = await apply(http, url, RAYJOBS_CRD.read_text(), "kubectl")
    assert r.status_code == 409
    assert r.json()["message"] == ('Apply failed with 1 conflict: conflict with "pumice" using '
                                   'apiextensions.k8s.io/v1: .spec.versions')
    r = await apply(http, url, RAYJOBS_CRD.read_text(), "kubectl", force=True)
    assert r.status_code == 200, r.text
    assert [v["name"] for v in r.json()["spec"]["versions"]] == ["v1", "v1alpha1"]
    assert {e["manager"] for e in r.json()["metadata"]["managedFields"]} == {"kubectl", "pumice"}
