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
                               "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                        "properties": {"color": {"type": "string"}}}}}}}]},
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


async def test_selectable_field_paths_are_checked_against_the_schema(http: httpx2.AsyncClient) -> None:
    # trial 11 F-16: ValidateCustomResourceSelectableFields (a path the schema lacks was accepted)
    crd = {**CRD, "metadata": {"name": "bads.t11.io"}}
    version = {**CRD["spec"]["versions"][0], "selectableFields": [
        {"jsonPath": ".spec.nosuch"}, {"jsonPath": "spec.color"}, {"jsonPath": ".spec.tags[0]"}, {"jsonPath": ".spec"},
        {"jsonPath": ".metadata.name"}, {"jsonPath": ".spec.color"}, {"jsonPath": ".spec.color"}, {}]}
    version["schema"] = {"openAPIV3Schema": {"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
        "spec": {"type": "object", "properties": {"color": {"type": "string"},
                                                  "tags": {"type": "array", "items": {"type": "string"}}}}}}}
    crd["spec"] = {**CRD["spec"], "names": {"plural": "bads", "singular": "bad", "kind": "Bad", "listKind": "BadList"},
                   "versions": [version]}
    r = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
    assert r.status_code == 422, r.text
    at = "spec.versions[0].selectableFields"
    assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        (f"{at}[0].jsonPath", 'Invalid value: ".spec.nosuch": is an invalid path: does not refer to a valid field'),
        (f"{at}[1].jsonPath", 'Invalid value: "spec.color": is an invalid path: expected [ or . but got: spec'),
        (f"{at}[2].jsonPath", 'Invalid value: ".spec.tags[0]": is an invalid path: array notation is not allowed'),
        (f"{at}[3].jsonPath", 'Invalid value: ".spec": must point to a field of type string, boolean or integer. '
                              "Enum string fields and strings with formats are allowed."),
        (f"{at}[4].jsonPath", 'Invalid value: ".metadata.name": must not point to fields in metadata'),
        (f"{at}[6].jsonPath", 'Duplicate value: ".spec.color"'),
        (f"{at}[7].jsonPath", "Required value"),
    ]
    version["selectableFields"] = [{"jsonPath": f".spec.f{k}"} for k in range(9)]
    version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] = {
        f"f{k}": {"type": "integer"} for k in range(9)}
    r = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
    assert r.status_code == 422, r.text
    assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        (at, "Too many: 9: must have at most 8 items")]
