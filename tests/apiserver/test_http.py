"""Over real HTTP: bearer token, Status errors, body limit, discovery, version."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from pumice.testing.cluster import HttpServer, serve_http


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("http")) as s:
        yield s


def http(srv: HttpServer, token: str | None = "ok") -> httpx2.Client:
    headers = {"Authorization": f"Bearer {srv.token if token == 'ok' else token}"} if token else {}
    return httpx2.Client(base_url=srv.url, headers=headers, verify=False)


def test_kubeconfig_is_written_beside_the_data(srv: HttpServer) -> None:
    text = Path(srv.kubeconfig).read_text()
    assert srv.url in text and srv.token in text


def test_request_without_token_is_401_status(srv: HttpServer) -> None:
    r = http(srv, None).get("/api/v1/namespaces/default/pods")
    assert r.status_code == 401 and r.headers["content-type"] == "application/json"
    assert r.json()["reason"] == "Unauthorized"
    assert http(srv, "wrong").get("/api/v1/pods").status_code == 401


def test_version_is_public_and_reports_1_32(srv: HttpServer) -> None:
    r = http(srv, None).get("/version")
    assert r.json()["gitVersion"].startswith("v1.32.")


def test_not_found_status_has_exact_content_type(srv: HttpServer) -> None:
    r = http(srv).get("/api/v1/namespaces/default/pods/nope")
    assert r.status_code == 404 and r.headers["content-type"] == "application/json"
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": 'pods "nope" not found', "reason": "NotFound",
                        "details": {"name": "nope", "kind": "pods"}, "code": 404}


def test_malformed_json_is_400(srv: HttpServer) -> None:
    r = http(srv).post("/api/v1/namespaces/default/configmaps", content=b"{not json",
                       headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["reason"] == "BadRequest"


def test_wrong_kind_for_endpoint_is_400(srv: HttpServer) -> None:
    r = http(srv).post("/api/v1/namespaces/default/configmaps",
                       json={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    assert r.status_code == 400


def test_oversize_body_is_413(srv: HttpServer) -> None:
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "x" * (3 * 1024 * 1024)}}
    r = http(srv).post("/api/v1/namespaces/default/configmaps", json=big)
    assert r.status_code == 413 and r.json()["reason"] == "RequestEntityTooLarge"
    assert http(srv).get("/api/v1/namespaces/default/configmaps/big").status_code == 404


def test_legacy_discovery_lists_subresources(srv: HttpServer) -> None:
    names = [r["name"] for r in http(srv).get("/api/v1").json()["resources"]]
    assert "pods" in names and "pods/status" in names and "pods/log" in names and "pods/binding" in names


def test_aggregated_discovery_only_in_the_version_asked(srv: HttpServer) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    r = http(srv).get("/apis", headers={"Accept": accept})
    assert r.json()["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    assert "v=v2beta1" in r.headers["content-type"]
    assert http(srv).get("/apis").json()["kind"] == "APIGroupList"


def test_openapi_v3_declares_field_validation_on_patch_and_has_the_schemas(srv: HttpServer) -> None:
    root = http(srv).get("/openapi/v3").json()
    doc = http(srv).get(root["paths"]["api/v1"]["serverRelativeURL"]).json()
    op = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in op["parameters"]]
    pod = doc["components"]["schemas"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["properties"]["spec"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}
    volume = doc["components"]["schemas"]["io.k8s.api.core.v1.Volume"]["properties"]
    assert "configMap" in volume and "volumeSource" not in volume  # inlined as in Go's JSON
    ray = http(srv).get(root["paths"]["apis/ray.io/v1"]["serverRelativeURL"]).json()
    rc = ray["components"]["schemas"]["io.ray.v1.RayCluster"]
    assert "spec" in rc["properties"] and rc["x-kubernetes-group-version-kind"][0]["kind"] == "RayCluster"


def test_openapi_v2_is_served_as_json_and_protobuf(srv: HttpServer) -> None:
    doc = http(srv).get("/openapi/v2").json()
    assert doc["swagger"] == "2.0"
    assert doc["definitions"]["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}]
    r = http(srv).get("/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.content.startswith(b"\x0a\x032.0") and b"io.k8s.api.core.v1.PodSpec" in r.content
    # the paths too: a path name, its operation IDs and x-kubernetes-action extensions
    assert b"/apis/batch/v1/namespaces/{namespace}/jobs" in r.content
    assert b"listBatchV1NamespacedJob" in r.content and b"x-kubernetes-action" in r.content


def test_trailing_slashes_are_tolerated(srv: HttpServer) -> None:
    c = http(srv)
    assert c.get("/version/").json()["major"] == "1"
    assert c.get("/api/").json()["kind"] == "APIVersions"
    assert c.get("/apis/").json()["kind"] == "APIGroupList"
    assert c.get("/api/v1/namespaces/").json()["kind"] == "NamespaceList"


def test_discovery_documents_answer_only_get(srv: HttpServer) -> None:
    """Each discovery document is a GET route: another method is 405, as go-restful answers
    (found by tests/apiserver/test_openapi.py: POST /api/v1 answered the APIResourceList)."""
    for path in ("/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/apis/ray.io/v1/", "/version"):
        assert http(srv).get(path).status_code == 200, path
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            r = http(srv).request(method, path, json={})
            assert r.status_code == 405 and r.json()["reason"] == "MethodNotAllowed", (method, path)


def test_namespace_finalize_is_put_only(srv: HttpServer) -> None:
    """kube-apiserver's finalize storage only updates: PATCH is 405 (it was served as an update)."""
    c = http(srv)
    assert c.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": "fin-put"}}).status_code == 201
    r = c.patch("/api/v1/namespaces/fin-put/finalize", content=b'{"spec":{"finalizers":[]}}',
                headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 405 and r.json()["reason"] == "MethodNotAllowed"
    ns = c.get("/api/v1/namespaces/fin-put").json()
    ns["spec"]["finalizers"] = []
    assert c.put("/api/v1/namespaces/fin-put/finalize", json=ns).status_code == 200
