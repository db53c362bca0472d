"""CRD ``selectableFields`` (GA in Kubernetes 1.32): a field selector on a declared field filters
a custom resource list and watch; an undeclared one stays ``field label not supported`` (trial 11
F-15)."""

from __future__ import annotations

import httpx2

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "things.t11.io"},
    "spec": {"group": "t11.io", "scope": "Namespaced",
             "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "selectableFields": [{"jsonPath": ".spec.color"}],
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}


async def test_a_declared_selectable_field_filters_the_list(http: httpx2.AsyncClient) -> None:
    assert (await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=CRD)).status_code == 201
    base = "/apis/t11.io/v1/namespaces/default/things"
    for name, color in (("th1", "red1"), ("th2", "red2")):
        r = await http.post(base, json={"apiVersion": "t11.io/v1", "kind": "Thing", "metadata": {"name": name},
                                        "spec": {"color": color}})
        assert r.status_code == 201, r.text
    r = await http.get(f"{base}?fieldSelector=spec.color%3Dred1")
    assert r.status_code == 200, r.text
    assert [i["metadata"]["name"] for i in r.json()["items"]] == ["th1"]
    r = await http.get(f"{base}?fieldSelector=spec.size%3D1")
    assert r.status_code == 400
    assert "field label not supported: spec.size" in r.json()["message"]


async def test_a_printer_column_json_path_must_start_with_a_dot(http: httpx2.AsyncClient) -> None:
    crd = {**CRD, "metadata": {"name": "bads.t11.io"}}
    crd["spec"] = {**CRD["spec"], "names": {"plural": "bads", "singular": "bad", "kind": "Bad", "listKind": "BadList"}}
    crd["spec"]["versions"] = [{**CRD["spec"]["versions"][0],
                                "additionalPrinterColumns": [{"name": "X", "type": "string", "jsonPath": "{{bad"}]}]
    r = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
    assert r.status_code == 422, r.text
    assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        ("spec.versions[0].additionalPrinterColumns[0].JSONPath",
         'Invalid value: "{{bad": must be a simple json path starting with .')]
