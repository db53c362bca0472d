"""A namespaced resource's all-namespaces path (``/api/v1/configmaps``) serves list and watch
only, as kube-apiserver registers it; every other method is 405 with the generic text (trial 11
F-9: a DELETE there deleted every namespace's ConfigMaps), and nothing is written."""

from __future__ import annotations

import httpx2
import pytest

NOT_ALLOWED = "the server does not allow this method on the requested resource"


@pytest.mark.parametrize("path", ["/api/v1/configmaps", "/apis/apps/v1/deployments"])
@pytest.mark.parametrize("query", [{}, {"dryRun": "All"}, {"labelSelector": "a=b"}])
async def test_delete_on_the_all_namespaces_path_is_405_and_deletes_nothing(
        http: httpx2.AsyncClient, path: str, query: dict[str, str]) -> None:
    for ns in ("t11a", "t11b"):
        assert (await http.post("/api/v1/namespaces", json={"metadata": {"name": ns}})).status_code == 201
        r = await http.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "keep", "labels": {"a": "b"}}})
        assert r.status_code == 201
    before = (await http.get("/api/v1/configmaps")).json()
    r = await http.delete(path, params=query)
    assert r.status_code == 405
    assert r.json()["reason"] == "MethodNotAllowed" and r.json()["message"] == NOT_ALLOWED
    after = (await http.get("/api/v1/configmaps")).json()
    assert [i["metadata"]["uid"] for i in after["items"]] == [i["metadata"]["uid"] for i in before["items"]]
    assert {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in after["items"]} >= {
        ("t11a", "keep"), ("t11b", "keep")}


async def test_post_on_the_all_namespaces_path_is_405_with_upstreams_text(http: httpx2.AsyncClient) -> None:
    r = await http.post("/api/v1/configmaps", json={"metadata": {"name": "x", "namespace": "default"}})
    assert r.status_code == 405 and r.json()["message"] == NOT_ALLOWED
    assert (await http.get("/api/v1/namespaces/default/configmaps/x")).status_code == 404


async def test_list_and_watch_on_the_all_namespaces_path_still_answer(http: httpx2.AsyncClient) -> None:
    r = await http.get("/api/v1/configmaps")
    assert r.status_code == 200 and r.json()["kind"] == "ConfigMapList"
    r = await http.get("/api/v1/configmaps", params={"watch": "1", "timeoutSeconds": "1"})
    assert r.status_code == 200


async def test_delete_collection_of_a_cluster_scoped_resource_is_served(http: httpx2.AsyncClient) -> None:
    r = await http.post("/apis/scheduling.k8s.io/v1/priorityclasses",
                        json={"metadata": {"name": "t11-pc", "labels": {"t11": "x"}}, "value": 5})
    assert r.status_code == 201
    r = await http.delete("/apis/scheduling.k8s.io/v1/priorityclasses", params={"labelSelector": "t11=x"})
    assert r.status_code == 200 and [i["metadata"]["name"] for i in r.json()["items"]] == ["t11-pc"]
