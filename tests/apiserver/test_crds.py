"""CustomResourceDefinitions: served kinds, schema pruning/defaulting/validation, Strict field
validation, status and scale subresources, printer columns, deletion of instances."""

from __future__ import annotations

import copy

import pytest

from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wd"]},
        "scope": "Namespaced",
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                     "statusReplicasPath": ".status.replicas"}},
            "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "replicas": {"type": "integer", "default": 1},
                        "color": {"type": "string", "enum": ["red", "blue"]},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    }},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                                "state": {"type": "string"}}},
                },
            }},
        }],
    },
}


def widget(name: str, **spec: object) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


@pytest.fixture
async def widgets(cluster: LocalCluster):
    await cluster.client.create(copy.deepcopy(WIDGET_CRD))
    return cluster.scheme.by_api_version_kind("example.com/v1", "Widget")


async def test_applied_crd_is_served_and_established(cluster: LocalCluster, widgets) -> None:
    assert widgets is not None and widgets.subresources == ("status", "scale")
    crd_kind = cluster.scheme.by_api_version_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    crd = await cluster.client.get(crd_kind, "widgets.example.com")
    conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conds == {"NamesAccepted": "True", "Established": "True"}
    doc = await cluster.client.request("GET", "/apis/example.com/v1")
    assert {r["name"] for r in doc["resources"]} == {"widgets", "widgets/status", "widgets/scale"}


async def test_schema_defaults_and_prunes(cluster: LocalCluster, widgets) -> None:
    w = await cluster.client.create(widget("w1", size=2, bogus=1, extra={"anything": {"x": 1}}))
    assert w["spec"] == {"size": 2, "replicas": 1, "extra": {"anything": {"x": 1}}}


async def test_schema_violations_are_422_with_causes(cluster: LocalCluster, widgets) -> None:
    with pytest.raises(ApiError) as e:
        await cluster.client.create(widget("w1", size=0, color="green"))
    assert e.value.code == 422
    fields = sorted(c["field"] for c in e.value.status["details"]["causes"])
    assert fields == ["spec.color", "spec.size"]
    with pytest.raises(ApiError):
        await cluster.client.get(widgets, "w1", "default")


async def test_unknown_fields_under_strict_are_400_and_nothing_is_stored(cluster: LocalCluster, widgets) -> None:
    with pytest.raises(ApiError) as e:
        await cluster.client.request("POST", widgets.path("default"), body=widget("w1", size=1, bogus=1),
                                     params={"fieldValidation": "Strict"})
    assert e.value.code == 400
    assert e.value.message == ('Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
                               'unknown field "spec.bogus"')
    with pytest.raises(ApiError):
        await cluster.client.get(widgets, "w1", "default")


async def test_status_subresource_of_custom_resource(cluster: LocalCluster, widgets) -> None:
    w = await cluster.client.create(widget("w1", size=1))
    w["status"] = {"state": "ignored"}
    w = await cluster.client.update(w)
    assert "status" not in w
    w = await cluster.client.patch(widgets, "w1", {"status": {"state": "ready"}}, "default", subresource="status")
    assert w["status"] == {"state": "ready"} and w["metadata"]["generation"] == 1


async def test_a_status_write_of_a_custom_resource_reports_an_unknown_top_level_field(
        cluster: LocalCluster, widgets) -> None:
    """Review 18 R-15: a status write's body is pruned as any body is decoded (the status walked
    through the same prune/default as a status-only write, the other values present for the
    root's own step): an unknown top-level field is a warning, or 400 under Strict, and is not
    stored. pumice pruned only a {"status": ...} copy and never saw it."""
    w = await cluster.client.create(widget("w1", size=1))
    put = {**copy.deepcopy(w), "bogus": 1, "status": {"replicas": 2}}
    with pytest.raises(ApiError) as e:
        await cluster.client.request("PUT", widgets.path("default", "w1") + "/status", body=put,
                                     params={"fieldValidation": "Strict"})
    assert e.value.code == 400
    assert e.value.message == ('Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
                               'unknown field "bogus"')
    got = await cluster.client.request("PUT", widgets.path("default", "w1") + "/status", body=put)
    assert got["status"] == {"replicas": 2} and "bogus" not in got


async def test_a_status_put_of_a_custom_resource_checks_the_types_of_its_status_only_and_after_the_lookup(
        cluster: LocalCluster, widgets) -> None:
    """kube-apiserver's status strategy for custom resources keeps the stored object but its
    status and validates the result after reading the stored object: the body's other values
    are not checked, a missing object is 404 and a stale resourceVersion 409 before the status
    types are looked at; metadata is checked in the decode step, with the status then."""
    w = await cluster.client.create(widget("w1", size=1))
    put = {**copy.deepcopy(w), "spec": {"size": "one", "color": 7}, "status": {"replicas": 2}}
    got = await cluster.client.update_status(put)
    assert got["spec"] == w["spec"] and got["status"] == {"replicas": 2}

    def causes(e: pytest.ExceptionInfo[ApiError]) -> list[str]:
        return [c["field"] for c in e.value.status["details"]["causes"]]

    bad = {**copy.deepcopy(got), "status": {"replicas": "two", "state": 3}}
    with pytest.raises(ApiError) as e:
        await cluster.client.update_status(bad)
    assert e.value.code == 422 and causes(e) == ["status.replicas", "status.state"]
    with pytest.raises(ApiError) as e:
        await cluster.client.update_status({**copy.deepcopy(bad), "metadata": {**bad["metadata"], "labels": 5}})
    assert e.value.code == 422 and causes(e) == ["metadata.labels", "status.replicas", "status.state"]
    with pytest.raises(ApiError) as e:
        await cluster.client.update_status({**copy.deepcopy(bad), "metadata": {**bad["metadata"], "resourceVersion": "1"}})
    assert e.value.code == 409
    await cluster.client.delete(widgets, "w1", "default")
    with pytest.raises(ApiError) as e:
        await cluster.client.update_status(bad)
    assert e.value.code == 404


async def test_a_put_of_a_custom_resource_or_crd_without_resource_version_is_422(cluster: LocalCluster, widgets) -> None:
    """trial 12 F-13: custom resources (and their status) and CRDs allow no unconditional
    update (apiextensions strategies' AllowUnconditionalUpdate false): a PUT must carry the
    resourceVersion it read; built-ins such as ConfigMaps still may leave it out."""
    w = await cluster.client.create(widget("w1", size=1))
    bare = copy.deepcopy(w)
    del bare["metadata"]["resourceVersion"]
    bare["spec"]["size"] = 2
    rv_cause = {"reason": "FieldValueInvalid", "message": "Invalid value: 0x0: must be specified for an update",
                "field": "metadata.resourceVersion"}
    with pytest.raises(ApiError) as e:
        await cluster.client.update(bare)
    assert (e.value.code, e.value.reason) == (422, "Invalid")
    assert e.value.message == ('widgets.example.com "w1" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
                               'must be specified for an update')
    assert e.value.status["details"] == {"name": "w1", "group": "example.com", "kind": "widgets",
                                         "causes": [rv_cause]}
    with pytest.raises(ApiError) as e:
        await cluster.client.update_status({**bare, "status": {"replicas": 2}})
    assert e.value.code == 422 and e.value.status["details"]["causes"] == [rv_cause]
    assert (await cluster.client.get(widgets, "w1", "default"))["spec"]["size"] == 1
    crd_kind = cluster.scheme.by_api_version_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    crd = await cluster.client.get(crd_kind, "widgets.example.com")
    del crd["metadata"]["resourceVersion"]
    with pytest.raises(ApiError) as e:
        await cluster.client.request("PUT", crd_kind.path(None, "widgets.example.com"), body=crd,
                                     params={"dryRun": "All"})
    assert e.value.message == ('customresourcedefinitions.apiextensions.k8s.io "widgets.example.com" is invalid: '
                               'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update')
    # with the version read, or through a patch or the scale subresource, the write goes through
    bare["metadata"]["resourceVersion"] = w["metadata"]["resourceVersion"]
    assert (await cluster.client.update(bare))["spec"]["size"] == 2
    await cluster.client.patch(widgets, "w1", {"spec": {"size": 3}}, "default")
    await cluster.client.request("PUT", widgets.path("default", "w1", "scale"), body={
        "apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "w1", "namespace": "default"},
        "spec": {"replicas": 4}})
    assert (await cluster.client.get(widgets, "w1", "default"))["spec"] == {"size": 3, "replicas": 4}
    cm_kind = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    await cluster.client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}})
    cm = await cluster.client.update({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "c", "namespace": "default"}, "data": {"k": "v"}})
    assert cm["data"] == {"k": "v"} and cm_kind is not None


async def test_scale_subresource_of_custom_resource(cluster: LocalCluster, widgets) -> None:
    await cluster.client.create(widget("w1", size=1, replicas=2))
    scale = await cluster.client.request("GET", widgets.path("default", "w1", "scale"))
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2
    await cluster.client.patch(widgets, "w1", {"spec": {"replicas": 5}}, "default", subresource="scale")
    assert (await cluster.client.get(widgets, "w1", "default"))["spec"]["replicas"] == 5


async def test_strategic_merge_patch_on_custom_resource_is_415(cluster: LocalCluster, widgets) -> None:
    await cluster.client.create(widget("w1", size=1))
    with pytest.raises(ApiError) as e:
        await cluster.client.patch(widgets, "w1", {"spec": {"size": 2}}, "default", patch_type="strategic")
    assert e.value.code == 415 and e.value.reason == "UnsupportedMediaType"
    assert e.value.message == ("the body of the request was in an unknown format - accepted media types include: "
                               "application/json-patch+json, application/merge-patch+json, "
                               "application/apply-patch+yaml")


async def test_table_uses_printer_columns(cluster: LocalCluster, widgets) -> None:
    await cluster.client.create(widget("w1", size=3))
    resp = await cluster.client.http.get(widgets.path("default"), headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
    table = resp.json()
    assert [c["name"] for c in table["columnDefinitions"]][:2] == ["Name", "Size"]
    assert table["rows"][0]["cells"][:2] == ["w1", 3]
    # a column without a description gets apiextensions' JSONPath one
    assert table["columnDefinitions"][1]["description"] == "Custom resource definition column (in JSONPath format): .spec.size"


async def test_a_table_of_one_object_carries_its_resource_version(cluster: LocalCluster, widgets) -> None:
    created = await cluster.client.create(widget("w1", size=3))
    resp = await cluster.client.http.get(widgets.path("default") + "/w1", headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert resp.json()["metadata"] == {"resourceVersion": created["metadata"]["resourceVersion"]}


async def test_deleting_the_crd_removes_its_instances_and_kind(cluster: LocalCluster, widgets) -> None:
    await cluster.client.create(widget("w1", size=1))
    crd_kind = cluster.scheme.by_api_version_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    await cluster.client.delete(crd_kind, "widgets.example.com")
    assert cluster.scheme.by_api_version_kind("example.com/v1", "Widget") is None
    assert cluster.server.store.count("example.com/widgets") == 0
    with pytest.raises(ApiError) as e:
        await cluster.client.request("GET", "/apis/example.com/v1/namespaces/default/widgets")
    assert e.value.code == 404


async def test_invalid_crd_is_rejected(cluster: LocalCluster) -> None:
    bad = copy.deepcopy(WIDGET_CRD)
    bad["metadata"]["name"] = "wrong.example.com"
    with pytest.raises(ApiError) as e:
        await cluster.client.create(bad)
    assert e.value.code == 422 and "metadata.name" in e.value.message


async def test_builtin_kuberay_and_volcano_kinds_are_served(cluster: LocalCluster) -> None:
    for av, kind in (("ray.io/v1", "RayCluster"), ("ray.io/v1", "RayJob"), ("ray.io/v1", "RayService"),
                     ("scheduling.volcano.sh/v1beta1", "Queue"), ("scheduling.volcano.sh/v1beta1", "PodGroup"),
                     ("batch.volcano.sh/v1alpha1", "Job"), ("bus.volcano.sh/v1alpha1", "Command")):
        rk = cluster.scheme.by_api_version_kind(av, kind)
        assert rk is not None, (av, kind)
    rcs = cluster.scheme.by_api_version_kind("ray.io/v1", "RayCluster")
    lst = await cluster.client.list(rcs, "default")
    assert lst.items == []


def _required_with_defaults() -> dict:
    """WIDGET_CRD with ``spec.replicas`` (default 1) and ``status.state`` (default "New") required."""
    crd = copy.deepcopy(WIDGET_CRD)
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    props["spec"]["required"] = ["size", "replicas"]
    props["status"]["required"] = ["state"]
    props["status"]["properties"]["state"]["default"] = "New"
    return crd


async def test_a_required_field_with_a_default_is_defaulted_before_it_is_validated(cluster: LocalCluster) -> None:
    """kube-apiserver applies a structural schema's defaults as it decodes the body, then
    validates: a required field with a default may be left out. pumice listed it as Required
    beside a type error (its type check validated the body undefaulted) and stored a status write
    undefaulted (then refused the next update: status.state Required)."""
    await cluster.client.create(_required_with_defaults())
    widgets = cluster.scheme.by_api_version_kind("example.com/v1", "Widget")
    w = await cluster.client.create(widget("w1", size=2))
    assert w["spec"] == {"size": 2, "replicas": 1}
    with pytest.raises(ApiError) as e:
        await cluster.client.create(widget("w2", size="two"))
    assert e.value.code == 422
    assert [c["field"] for c in e.value.status["details"]["causes"]] == ["spec.size"]
    w = await cluster.client.patch(widgets, "w1", {"status": {"replicas": 1}}, "default", subresource="status")
    assert w["status"] == {"replicas": 1, "state": "New"}
    w["spec"]["size"] = 3
    w = await cluster.client.update(w)
    assert w["spec"]["size"] == 3
    w["status"] = {"replicas": 2}  # a status PUT too
    w = await cluster.client.request("PUT", widgets.path("default", "w1") + "/status", body=w)
    assert w["status"] == {"replicas": 2, "state": "New"}
