"""managedFields through the API: every create/update/patch records its field manager (from
``fieldManager`` or the User-Agent), subresources included, and server-side apply conflicts with
them as kube-apiserver's does; request options are validated with apimachinery's words."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def configmap(**data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": dict(data)}


def deployment(replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d1"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d1"}},
                     "template": {"metadata": {"labels": {"app": "d1"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def entries(obj: dict) -> list[tuple[str, str, str]]:
    return [(e["manager"], e["operation"], e.get("subresource", "")) for e in obj["metadata"]["managedFields"]]


async def test_create_patch_and_put_record_their_managers(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    c = cluster.client
    obj = await c.request("POST", cms.path("default"), body=configmap(a="1"), params={"fieldManager": "kubectl-create"})
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    obj = await c.request("PATCH", cms.path("default", "c1"), body={"data": {"b": "2"}}, content_type=MERGE,
                          params={"fieldManager": "kubectl-patch"})
    obj["data"]["a"] = "3"
    obj = await c.request("PUT", cms.path("default", "c1"), body=obj, params={"fieldManager": "kubectl-edit"})
    by = {e["manager"]: e for e in obj["metadata"]["managedFields"]}
    assert sorted(by) == ["kubectl-create", "kubectl-edit", "kubectl-patch"]
    assert all(e["operation"] == "Update" and e["apiVersion"] == "v1" for e in by.values())
    assert by["kubectl-create"]["fieldsV1"] == {"f:data": {}}  # still owns the map it made, not .data.a
    assert by["kubectl-patch"]["fieldsV1"] == {"f:data": {"f:b": {}}}
    assert by["kubectl-edit"]["fieldsV1"] == {"f:data": {"f:a": {}}}


async def test_without_field_manager_the_user_agent_names_the_writer(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    obj = await cluster.client.request("POST", cms.path("default"), body=configmap(a="1"))
    assert obj["metadata"]["managedFields"][0]["manager"] == "pumice-client"


async def test_a_write_that_changes_nothing_keeps_the_resource_version(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    c = cluster.client
    obj = await c.request("POST", cms.path("default"), body=configmap(a="1"), params={"fieldManager": "m1"})
    again = await c.request("PATCH", cms.path("default", "c1"), body={"data": {"a": "1"}}, content_type=MERGE,
                            params={"fieldManager": "m2"})
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert entries(again) == [("m1", "Update", "")]


async def test_status_and_scale_writes_carry_their_subresource(cluster: LocalCluster) -> None:
    deps = cluster.scheme.by_api_version_kind("apps/v1", "Deployment")
    c = cluster.client
    await c.request("POST", deps.path("default"), body=deployment(1), params={"fieldManager": "kubectl-create"})
    await c.request("PATCH", deps.path("default", "d1", "status"), body={"status": {"observedGeneration": 7}},
                    content_type=MERGE, params={"fieldManager": "ctrl"})
    await c.request("PATCH", deps.path("default", "d1", "scale"), body={"spec": {"replicas": 3}},
                    content_type=MERGE, params={"fieldManager": "kubectl-scale"})
    obj = await c.request("GET", deps.path("default", "d1"))
    by = {e["manager"]: e for e in obj["metadata"]["managedFields"]}
    assert by["ctrl"]["subresource"] == "status" and by["ctrl"]["fieldsV1"] == {
        "f:status": {"f:observedGeneration": {}}}
    scale = by["kubectl-scale"]
    assert scale["subresource"] == "scale" and scale["apiVersion"] == "apps/v1" and "time" not in scale
    assert scale["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in by["kubectl-create"]["fieldsV1"]["f:spec"]
    with pytest.raises(ApiError) as err:
        await c.request("PATCH", deps.path("default", "d1"), body=deployment(5), content_type=APPLY,
                        params={"fieldManager": "kubectl"})
    assert err.value.code == 409
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "kubectl-scale" with subresource '
                                 '"scale" using apps/v1: .spec.replicas')
    assert err.value.status["details"]["causes"] == [{
        "reason": "FieldManagerConflict", "message": 'conflict with "kubectl-scale" with subresource "scale" using '
                                                     'apps/v1', "field": ".spec.replicas"}]
    forced = await c.request("PATCH", deps.path("default", "d1"), body=deployment(5), content_type=APPLY,
                             params={"fieldManager": "kubectl", "force": "true"})
    assert forced["spec"]["replicas"] == 5
    assert "kubectl-scale" not in {e["manager"] for e in forced["metadata"]["managedFields"]}


async def test_apply_after_create_conflicts_until_forced(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    c = cluster.client
    await c.request("POST", cms.path("default"), body=configmap(a="1"), params={"fieldManager": "kubectl-create"})
    with pytest.raises(ApiError) as err:
        await c.request("PATCH", cms.path("default", "c1"), body=configmap(a="2"), content_type=APPLY,
                        params={"fieldManager": "kubectl"})
    assert err.value.code == 409 and err.value.reason == "Conflict"
    assert err.value.message == 'Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.a'
    obj = await c.request("GET", cms.path("default", "c1"))
    assert obj["data"] == {"a": "1"}


@pytest.mark.parametrize(("ctype", "query", "message"), [
    (MERGE, {"force": "true"}, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified '
                               "for non-apply patch"),
    (MERGE, {"fieldManager": "m" * 129}, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not '
                                         "be more than 128 bytes"),
    (MERGE, {"fieldManager": "\x01bad"}, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: '
                                         '"\\x01bad": invalid character U+0001 (at position 0)'),
    (APPLY, {"fieldManager": ""}, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                                  "required for apply patch"),
    (APPLY, {}, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply '
                "patch"),
])
async def test_patch_options_are_validated_as_upstream(cluster: LocalCluster, ctype: str, query: dict,
                                                       message: str) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    await cluster.client.request("POST", cms.path("default"), body=configmap(a="1"))
    before = cluster.server.store.revision
    with pytest.raises(ApiError) as err:
        await cluster.client.request("PATCH", cms.path("default", "c1"), body=configmap(z="1"), content_type=ctype,
                                     params=query)
    assert (err.value.code, err.value.reason, err.value.message) == (422, "Invalid", message)
    assert err.value.status["details"]["kind"] == "PatchOptions"
    assert cluster.server.store.revision == before


async def test_create_and_update_options_are_validated_too(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    c = cluster.client
    with pytest.raises(ApiError) as err:
        await c.request("POST", cms.path("default"), body=configmap(a="1"),
                        params={"fieldManager": "m" * 129, "fieldValidation": "Bogus"})
    assert err.value.code == 422
    assert err.value.message == ('CreateOptions.meta.k8s.io "" is invalid: [fieldManager: Too long: may not be more '
                                 'than 128 bytes, fieldValidation: Unsupported value: "Bogus": supported values: '
                                 '"", "Ignore", "Strict", "Warn"]')
    obj = await c.request("POST", cms.path("default"), body=configmap(a="1"))
    with pytest.raises(ApiError) as err:
        await c.request("PUT", cms.path("default", "c1"), body=obj, params={"fieldManager": "a\tb"})
    assert err.value.message == ('UpdateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\tb": '
                                 "invalid character U+0009 (at position 1)")


async def test_an_applied_configuration_may_not_carry_managed_fields(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    body = configmap(a="1")
    body["metadata"]["managedFields"] = []
    with pytest.raises(ApiError) as err:
        await cluster.client.request("PATCH", cms.path("default", "c1"), body=body, content_type=APPLY,
                                     params={"fieldManager": "kubectl"})
    assert (err.value.code, err.value.message) == (400, "metadata.managedFields must be nil")


async def test_apply_over_a_hand_written_list_key_that_is_not_an_object_is_not_a_500(cluster: LocalCluster) -> None:
    """A client may PUT any fieldsV1; an Apply manager's ``k:`` step that is not a JSON object (or
    not JSON) names no list item, so the manager's next apply goes through (was: 500
    AttributeError / a 422 with a JSON decoder's message)."""
    deps = cluster.scheme.by_api_version_kind("apps/v1", "Deployment")
    c = cluster.client
    await c.request("PATCH", deps.path("default", "d1"), body=deployment(1), content_type=APPLY,
                    params={"fieldManager": "ap"})
    for step in ("k:[1]", 'k:"c"', "k:null", "k:{bad", "v:{"):
        cur = await c.request("GET", deps.path("default", "d1"))
        cur["metadata"]["managedFields"] = [{
            "manager": "ap", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {step: {".": {}, "f:image": {}}}}}}}}]
        await c.request("PUT", deps.path("default", "d1"), body=cur, params={"fieldManager": "ap"})
        body = deployment(1)
        body["spec"]["template"]["spec"]["containers"][0]["image"] = f"busybox-{len(step)}"
        got = await c.request("PATCH", deps.path("default", "d1"), body=body, content_type=APPLY,
                              params={"fieldManager": "ap"})
        containers = got["spec"]["template"]["spec"]["containers"]
        assert [(x["name"], x["image"]) for x in containers] == [("c", f"busybox-{len(step)}")], step


@pytest.mark.parametrize(("body", "message"), [
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c-0", "namespace": "default",
                                                             "finalizers": ["a/b", "a/b"]}},
     'failed to create typed patch object (default/c-0; /v1, Kind=ConfigMap): .metadata.finalizers: '
     'duplicate entries for key [="a/b"]'),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c-0", "namespace": "default",
                                                             "finalizers": ["x/y", "a/b", "x/y"]}},
     'failed to create typed patch object (default/c-0; /v1, Kind=ConfigMap): .metadata.finalizers: '
     'duplicate entries for key [="x/y"]'),
    # the object is named as the applied configuration names it (objectGVKNN of the patch): a
    # body without a namespace is "/<name>", whether the object exists or not
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c-0", "finalizers": ["a/b", "a/b"]}},
     'failed to create typed patch object (/c-0; /v1, Kind=ConfigMap): .metadata.finalizers: '
     'duplicate entries for key [="a/b"]'),
])
async def test_an_applied_configuration_its_lists_cannot_key_is_a_400_with_kube_apiservers_text(
        cluster: LocalCluster, body: dict, message: str) -> None:
    # kube-apiserver v1.34.4 through kubectl apply --server-side: the field manager cannot type the
    # patch; the handler answers 500 with no reason and this text. pumice gives the text as a 400
    # BadRequest: bad input is never a 500 here, and nothing is stored
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    for existing in (False, True):
        if existing:
            await cluster.client.request("POST", cms.path("default"), body=configmap(a="1") | {
                "metadata": {"name": "c-0"}})
        with pytest.raises(ApiError) as err:
            await cluster.client.request("PATCH", cms.path("default", "c-0"), body=body, content_type=APPLY,
                                         params={"fieldManager": "a"})
        assert (err.value.code, err.value.reason, err.value.message) == (400, "BadRequest", message)
        stored = await cluster.client.request("GET", cms.path("default", "c-0")) if existing else None
        assert stored is None or "finalizers" not in stored["metadata"]



def _pod_body(status: dict | None = None) -> dict:
    body: dict = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"}}
    if status is None:
        body["spec"] = {"containers": [{"name": "c", "image": "nginx"}]}
    else:
        body["status"] = status
    return body


def _raycluster_body(status: dict | None = None) -> dict:
    body: dict = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "p1"}}
    if status is None:
        body["spec"] = {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.9.0"}]}}}}
    else:
        body["status"] = status
    return body


@pytest.mark.parametrize(("api_version", "kind", "make", "full", "less", "other"), [
    ("v1", "Pod", _pod_body, {"phase": "Running", "message": "hi"}, {"phase": "Running"}, {"phase": "Failed"}),
    ("ray.io/v1", "RayCluster", _raycluster_body, {"state": "ready", "reason": "hi"}, {"state": "ready"},
     {"state": "suspended"}),
])
async def test_a_status_apply_records_its_manager_so_it_removes_and_conflicts(
        cluster: LocalCluster, api_version: str, kind: str, make: Callable[..., dict], full: dict, less: dict,
        other: dict) -> None:
    """A server-side apply to the status subresource keeps the ownership it computed (kube-apiserver's
    status PrepareForUpdate keeps the new object's managedFields): the applier's next apply drops a
    field only it owned, and another manager's change of its field is a 409 naming it."""
    rk = cluster.scheme.by_api_version_kind(api_version, kind)
    c = cluster.client
    await c.request("POST", rk.path("default"), body=make(), params={"fieldManager": "creator"})
    status = rk.path("default", "p1", "status")
    obj = await c.request("PATCH", status, body=make(full), content_type=APPLY, params={"fieldManager": "kubelet"})
    assert ("kubelet", "Apply", "status") in entries(obj)
    [gone] = set(full) - set(less)
    obj = await c.request("PATCH", status, body=make(less), content_type=APPLY, params={"fieldManager": "kubelet"})
    assert gone not in obj["status"] and obj["status"].items() >= less.items()
    [field] = other
    with pytest.raises(ApiError) as err:
        await c.request("PATCH", status, body=make(other), content_type=APPLY, params={"fieldManager": "other"})
    assert err.value.code == 409
    assert err.value.message == f'Apply failed with 1 conflict: conflict with "kubelet" with subresource "status": ' \
                                f'.status.{field}'
    assert err.value.status["details"]["causes"] == [{
        "reason": "FieldManagerConflict", "message": 'conflict with "kubelet" with subresource "status"',
        "field": f".status.{field}"}]
    # a merge patch and a PUT of the status still record their Update managers beside the apply's
    obj = await c.request("PATCH", status, body={"status": other}, content_type=MERGE, params={"fieldManager": "m"})
    assert obj["status"][field] == other[field]
    obj["status"][gone] = "again"
    obj = await c.request("PUT", status, body=obj, params={"fieldManager": "editor"})
    by = {e["manager"]: e for e in obj["metadata"]["managedFields"]}
    assert (by["m"]["operation"], by["m"]["subresource"]) == ("Update", "status")
    assert by["m"]["fieldsV1"] == {"f:status": {f"f:{field}": {}}}
    assert by["editor"]["fieldsV1"] == {"f:status": {f"f:{gone}": {}}}
    assert "kubelet" not in by  # the merge patch took over the one field it still owned
    assert cluster.server.store.changed_objects() == []
