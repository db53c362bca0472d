"""/openapi/v2 and /openapi/v3 describe every served route (trial 13 F-5), checked over real
HTTPS against a live API server: both documents pass openapi-spec-validator (Swagger 2.0 and
OpenAPI 3.0) with every ``$ref`` resolving; every advertised read answers (with real objects where
the test makes them); every verb a route omits answers 405 (or 404 for a path not served); a CRD
created appears in both documents and vanishes when deleted."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
import yaml
from openapi_spec_validator.validation.validators import OpenAPIV2SpecValidator, OpenAPIV30SpecValidator

from pumice.testing.cluster import HttpServer, serve_http
from pumice.testing.fake_kubelet import node_object
from pumice.testing.kubectl import kubectl_binary
from pumice.testing.paths import samples_dir
from tests.apiserver.builders import configmap, deployment, pod

NS = "oapi"
METHODS = ("get", "put", "post", "delete", "patch")

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]},
}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("openapi")) as s:
        yield s


@pytest.fixture(scope="module")
def c(srv: HttpServer) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=srv.url, headers={"Authorization": f"Bearer {srv.token}"}, verify=False,
                       timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def objects(c: httpx2.Client) -> dict[str, str]:
    """Real objects, one per kind the walk reads them for: ``{path-template prefix: name}``."""
    ray = yaml.safe_load((samples_dir() / "kuberay" / "ray-cluster.sample.yaml").read_text())
    ray["metadata"]["namespace"] = NS
    made = [
        ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
        (f"/api/v1/namespaces/{NS}/configmaps", configmap("cm", ns=NS, data={"a": "1"})),
        (f"/api/v1/namespaces/{NS}/pods", pod("p", ns=NS)),
        (f"/apis/apps/v1/namespaces/{NS}/deployments", deployment("d", ns=NS)),
        ("/api/v1/nodes", node_object("n0")),
        (f"/apis/ray.io/v1/namespaces/{NS}/rayclusters", ray),
        ("/apis/scheduling.volcano.sh/v1beta1/queues", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                                         "metadata": {"name": "q"}, "spec": {"weight": 1}}),
    ]
    out = {}
    for path, body in made:
        r = c.post(path, json=body)
        assert r.status_code == 201, r.text
        out[path] = body["metadata"]["name"]
    return out


def _v3_documents(c: httpx2.Client) -> dict[str, Any]:
    root = c.get("/openapi/v3").json()
    return {gv: c.get(e["serverRelativeURL"]).json() for gv, e in root["paths"].items()}


def _refs(doc: Any) -> Iterator[str]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            else:
                yield from _refs(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _refs(v)


def _operations(doc: Any) -> Iterator[tuple[str, str, dict]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method != "parameters":
                yield path, method, op


def test_v2_validates_and_every_ref_resolves(c: httpx2.Client) -> None:
    doc = c.get("/openapi/v2").json()
    assert list(OpenAPIV2SpecValidator(doc).iter_errors()) == []
    assert {r.removeprefix("#/definitions/") for r in _refs(doc)} <= set(doc["definitions"])
    ids = [op["operationId"] for _, _, op in _operations(doc)]
    assert len(ids) == len(set(ids)) and len(ids) > 500


def test_every_v3_document_validates_and_every_ref_resolves(c: httpx2.Client) -> None:
    docs = _v3_documents(c)
    assert {"api/v1", "apis/batch/v1", "apis/ray.io/v1", "apis/batch.volcano.sh/v1alpha1"} <= set(docs)
    for gv, doc in docs.items():
        assert list(OpenAPIV30SpecValidator(doc).iter_errors()) == [], gv
        assert {r.removeprefix("#/components/schemas/") for r in _refs(doc)} <= set(doc["components"]["schemas"]), gv
        assert all(path.startswith("/" + gv + "/") for path in doc["paths"]), gv


def test_v3_jobs_have_upstreams_operations(c: httpx2.Client) -> None:
    doc = c.get("/openapi/v3/apis/batch/v1").json()
    ops = {(path, method): (op["operationId"], op.get("x-kubernetes-action")) for path, method, op in _operations(doc)}
    jobs = "/apis/batch/v1/namespaces/{namespace}/jobs"
    assert ops[(jobs, "get")] == ("listBatchV1NamespacedJob", "list")
    assert ops[(jobs, "post")] == ("createBatchV1NamespacedJob", "post")
    assert ops[(jobs, "delete")] == ("deleteBatchV1CollectionNamespacedJob", "deletecollection")
    assert ops[(jobs + "/{name}", "put")] == ("replaceBatchV1NamespacedJob", "put")
    assert ops[(jobs + "/{name}/status", "patch")] == ("patchBatchV1NamespacedJobStatus", "patch")
    assert ops[("/apis/batch/v1/jobs", "get")] == ("listBatchV1JobForAllNamespaces", "list")
    assert ops[("/apis/batch/v1/watch/namespaces/{namespace}/jobs/{name}", "get")] == (
        "watchBatchV1NamespacedJob", "watch")
    patch = doc["paths"][jobs + "/{name}"]["patch"]
    assert set(patch["requestBody"]["content"]) == {
        "application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json",
        "application/apply-patch+yaml"}
    assert {p["name"] for p in patch["parameters"]} == {"dryRun", "fieldManager", "fieldValidation", "force"}
    assert patch["x-kubernetes-group-version-kind"] == {"group": "batch", "kind": "Job", "version": "v1"}
    listing = doc["paths"][jobs]["get"]
    assert {"labelSelector", "fieldSelector", "watch", "limit", "continue", "resourceVersion"} <= {
        p["name"] for p in listing["parameters"]}
    assert listing["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.batch.v1.JobList"}


def test_custom_resources_take_no_strategic_merge_patch_and_have_a_list_schema(c: httpx2.Client) -> None:
    doc = c.get("/openapi/v3/apis/ray.io/v1").json()
    patch = doc["paths"]["/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}"]["patch"]
    assert set(patch["requestBody"]["content"]) == {
        "application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"}
    assert patch["operationId"] == "patchRayIoV1NamespacedRayCluster"
    listed = doc["components"]["schemas"]["io.ray.v1.RayClusterList"]
    assert listed["properties"]["items"]["items"] == {"$ref": "#/components/schemas/io.ray.v1.RayCluster"}
    v2 = c.get("/openapi/v2").json()
    assert "application/strategic-merge-patch+json" not in \
        v2["paths"]["/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}"]["patch"]["consumes"]


def test_only_served_verbs_are_advertised(c: httpx2.Client) -> None:
    v2 = c.get("/openapi/v2").json()["paths"]
    assert "delete" not in v2["/api/v1/namespaces/{namespace}/services"]  # no deletecollection (405)
    assert "delete" not in v2["/api/v1/namespaces"]
    assert set(v2["/api/v1/namespaces/{namespace}/bindings"]) == {"parameters", "post"}
    assert set(v2["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]) == {"parameters", "post"}
    assert set(v2["/apis/metrics.k8s.io/v1beta1/nodes"]) == {"parameters", "get"}
    assert "/apis/metrics.k8s.io/v1beta1/watch/nodes" not in v2


def _fill(path: str, objects: dict[str, str]) -> tuple[str, bool]:
    """``path`` with ``{namespace}`` and ``{name}`` filled: a real object's name where the test
    made one of that resource (True), else a name that does not exist (False)."""
    real = False
    name = "absent"
    head = path.split("/{name}")[0].replace("{namespace}", NS).replace("/watch/", "/")
    if "{name}" in path and head in objects:
        name, real = objects[head], True
    return path.replace("{namespace}", NS).replace("{name}", name).replace("{path}", "x"), real


def test_every_advertised_read_is_served(c: httpx2.Client, objects: dict[str, str]) -> None:
    """Every GET operation answers from its handler: 200 for collections and real objects (a
    watch's 200 comes before any event), a NotFound naming the object for a name that does not
    exist, and for connect operations the streaming handler's answer, never a path 404 or 405."""
    doc = c.get("/openapi/v2").json()
    seen_real = 0
    for path, method, op in _operations(doc):
        if method != "get":
            continue
        url, real = _fill(path, objects)
        action = op.get("x-kubernetes-action")
        params = {"timeoutSeconds": "1"} if action in ("watch", "watchlist") else {}
        with c.stream("GET", url, params=params) as r:
            body = r.read() if action not in ("watch", "watchlist") else b""
            status = r.status_code
        where = f"{op['operationId']} GET {url}: {status} {body[:200]!r}"
        if action == "connect":  # served: not 405, and a 404 names the object (not a path 404)
            assert status != 405 and (status != 404 or json.loads(body)["details"]), where
            continue
        if path.startswith("/apis/metrics.k8s.io/") and status == 503:  # served: no node reports usage
            assert json.loads(body)["reason"] == "ServiceUnavailable", where
            continue
        if "{name}" in path and not real and action != "watch":
            assert status == 404 and json.loads(body)["details"]["name"] == "absent", where
            continue
        if path.endswith("/log"):  # the log handler's answer for a Pod not yet on a node
            assert status == 204 and body == b"", where
            continue
        assert status == 200, where
        seen_real += "{name}" in path
        if action in ("get", "list") and body:
            ref = op["responses"]["200"]["schema"].get("$ref", "")
            gvk = doc["definitions"][ref.removeprefix("#/definitions/")].get("x-kubernetes-group-version-kind") \
                if ref else None
            if gvk:
                assert json.loads(body)["kind"] in {g["kind"] for g in gvk}, where
    assert seen_real >= 10


def _unserved_request(c: httpx2.Client, method: str, url: str) -> httpx2.Response:
    headers = {"Content-Type": "application/merge-patch+json" if method == "patch" else "application/json"}
    return c.request(method.upper(), url, params={"dryRun": "All"}, content=b"{}", headers=headers)


def test_every_verb_a_route_omits_is_405_or_404(c: httpx2.Client, objects: dict[str, str]) -> None:
    doc = c.get("/openapi/v2").json()
    wrong = []
    for path, item in doc["paths"].items():
        if "/proxy" in path:
            continue  # proxy routes advertise every method
        url, _ = _fill(path, objects)
        for method in METHODS:
            if method in item:
                continue
            r = _unserved_request(c, method, url)
            if r.status_code not in (404, 405) or (r.status_code == 404 and r.json().get("details")):
                wrong.append(f"{method.upper()} {url}: {r.status_code} {r.text[:120]}")
    assert wrong == [], "\n".join(wrong)


def _wait(fn: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_a_crd_appears_in_both_documents_and_vanishes_when_deleted(c: httpx2.Client) -> None:
    collection = "/apis/example.com/v1/namespaces/{namespace}/gadgets"

    def served() -> bool:
        v2 = c.get("/openapi/v2").json()
        root = c.get("/openapi/v3").json()["paths"]
        return collection in v2["paths"] and "com.example.v1.Gadget" in v2["definitions"] \
            and "apis/example.com/v1" in root

    assert not served()
    assert c.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=WIDGET_CRD).status_code == 201
    assert _wait(served)
    doc = c.get("/openapi/v3/apis/example.com/v1").json()
    assert doc["paths"][collection]["post"]["operationId"] == "createExampleComV1NamespacedGadget"
    assert "patch" in doc["paths"][collection + "/{name}/status"]
    assert "com.example.v1.GadgetList" in doc["components"]["schemas"]
    assert c.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com").status_code == 200
    assert _wait(lambda: not served())
    assert c.get("/openapi/v3/apis/example.com/v1").status_code == 404
    v2 = c.get("/openapi/v2").json()
    assert not [p for p in v2["paths"] if "example.com" in p]
    assert not [d for d in v2["definitions"] if d.startswith("com.example.")]



def test_discovery_names_the_streaming_and_token_subresources_as_upstream(c: httpx2.Client) -> None:
    """The subresource table discovery and the OpenAPI routes share: pods/exec, attach and
    portforward take create and get with their options kinds; serviceaccounts/token creates a
    TokenRequest (they were listed as get-only with the parent's kind)."""
    res = {r["name"]: r for r in c.get("/api/v1").json()["resources"]}
    assert (res["pods/exec"]["kind"], res["pods/exec"]["verbs"]) == ("PodExecOptions", ["create", "get"])
    assert (res["pods/portforward"]["kind"], res["pods/portforward"]["verbs"]) == (
        "PodPortForwardOptions", ["create", "get"])
    token = res["serviceaccounts/token"]
    assert (token["group"], token["version"], token["kind"], token["verbs"]) == (
        "authentication.k8s.io", "v1", "TokenRequest", ["create"])
    v2 = c.get("/openapi/v2").json()["paths"]
    assert v2["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"]["post"][
        "x-kubernetes-group-version-kind"] == {"group": "authentication.k8s.io", "kind": "TokenRequest",
                                               "version": "v1"}


#: kube-apiserver's non-resource discovery operations (api/openapi-spec/swagger.json): path ->
#: (operationId, tag, response definition, the /openapi/v3 document that holds it)
DISCOVERY_OPS = {
    "/api/": ("getCoreAPIVersions", "core", "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions", "api"),
    "/api/v1/": ("getCoreV1APIResources", "core_v1", "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
                 "api/v1"),
    "/apis/": ("getAPIVersions", "apis", "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList", "apis"),
    "/apis/batch/": ("getBatchAPIGroup", "batch", "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "apis/batch"),
    "/apis/batch/v1/": ("getBatchV1APIResources", "batch_v1", "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
                        "apis/batch/v1"),
    "/apis/rbac.authorization.k8s.io/": ("getRbacAuthorizationAPIGroup", "rbacAuthorization",
                                         "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup",
                                         "apis/rbac.authorization.k8s.io"),
    "/apis/ray.io/": ("getRayIoAPIGroup", "rayIo", "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "apis/ray.io"),
    "/apis/ray.io/v1/": ("getRayIoV1APIResources", "rayIo_v1", "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
                         "apis/ray.io/v1"),
    "/version/": ("getCodeVersion", "version", "io.k8s.apimachinery.pkg.version.Info", "version"),
}


def test_both_documents_have_upstreams_discovery_routes(c: httpx2.Client, srv: HttpServer) -> None:
    """Trial 14 F-1: /openapi/v2 (JSON and the protobuf kubectl asks for) and /openapi/v3 carry
    the non-resource discovery operations upstream's swagger.json has, each /openapi/v3 one in
    the document kube-apiserver puts it in; the definitions they name are there."""
    v2 = c.get("/openapi/v2").json()
    for path, (op_id, tag, definition, v3_path) in DISCOVERY_OPS.items():
        op = v2["paths"][path]["get"]
        assert (op["operationId"], op["tags"], op["responses"]["200"]["schema"]) == (
            op_id, [tag], {"$ref": "#/definitions/" + definition}), path
        assert definition in v2["definitions"], path
        doc = c.get(f"/openapi/v3/{v3_path}").json()
        op3 = doc["paths"][path]["get"]
        assert (op3["operationId"], op3["tags"]) == (op_id, [tag]), path
        assert op3["responses"]["200"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/" + definition}, path
        assert definition in doc["components"]["schemas"], path
    assert v2["paths"]["/version/"]["get"]["produces"] == ["application/json"]
    assert v2["definitions"]["io.k8s.apimachinery.pkg.version.Info"]["required"][:3] == ["major", "minor", "gitVersion"]
    assert {"api", "apis", "apis/batch", "apis/ray.io", "version"} <= set(c.get("/openapi/v3").json()["paths"])
    pb = c.get("/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}).content
    for path, (op_id, _, definition, _) in DISCOVERY_OPS.items():
        assert path.encode() in pb and op_id.encode() in pb and definition.encode() in pb, path
    # kubectl reads the same document
    out = subprocess.run([kubectl_binary(), "--kubeconfig", str(srv.kubeconfig), "get", "--raw", "/openapi/v2"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out)["paths"]["/apis/batch/"]["get"]["operationId"] == "getBatchAPIGroup"


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def test_the_official_python_client_calls_each_documented_discovery_operation(c: httpx2.Client,
                                                                              srv: HttpServer) -> None:
    """The official python client is generated from upstream's operations: the class is the tag
    (``batch_v1`` -> ``BatchV1Api``), the method the operationId less the tag
    (``getBatchV1APIResources`` -> ``get_api_resources``). Each discovery operation /openapi/v2
    documents names a method the client has, and calling it against the server answers."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(srv.kubeconfig))
    v2 = c.get("/openapi/v2").json()
    called = {}
    for path, item in v2["paths"].items():
        op = item.get("get", {})
        if "x-kubernetes-action" in op or not op.get("operationId"):
            continue
        tag = op["tags"][0]
        cls = getattr(client, "".join(p[:1].upper() + p[1:] for p in tag.split("_")) + "Api", None)
        if cls is None:  # a group the client is not generated for (CRDs, metrics.k8s.io)
            continue
        camel = "".join(p[:1].upper() + p[1:] for p in tag.split("_"))
        method = _snake(op["operationId"].replace(camel, "", 1))
        called[path] = getattr(cls(api), method)()
    assert called["/apis/"].groups and called["/api/"].versions == ["v1"]
    assert called["/apis/batch/"].name == "batch"
    assert {r.name for r in called["/apis/batch/v1/"].resources} >= {"jobs", "cronjobs", "jobs/status"}
    assert called["/version/"].git_version.startswith("v1.")
    assert {p for p in DISCOVERY_OPS if "ray.io" not in p} <= set(called)


def test_a_v3_document_asked_for_by_a_stale_hash_is_redirected_to_the_current_one(c: httpx2.Client,
                                                                                   srv: HttpServer) -> None:
    """Trial 14 F-1: kube-openapi's handler3. The index's serverRelativeURL carries the SHA-512
    of the document's bytes; that URL answers with long cache headers; any other hash is a 301 to
    it (kubectl follows it); no hash: the document with no cache headers."""
    root = c.get("/openapi/v3").json()["paths"]
    for path in ("apis/batch/v1", "api", "version", "apis/batch"):
        url = root[path]["serverRelativeURL"]
        r = c.get(url)
        digest = hashlib.sha512(r.content).hexdigest().upper()
        assert url == f"/openapi/v3/{path}?hash={digest}"
        assert (r.status_code, r.headers["cache-control"], r.headers["etag"]) == (200, "public, immutable",
                                                                                   f'"{digest}"')
        assert r.headers["expires"] and r.headers["vary"] == "Accept"
        moved = c.get(f"/openapi/v3/{path}?hash=bogus", follow_redirects=False)
        assert (moved.status_code, moved.headers["location"]) == (301, url), path
        plain = c.get(f"/openapi/v3/{path}")
        assert plain.status_code == 200 and "cache-control" not in plain.headers and plain.content == r.content
    out = subprocess.run([kubectl_binary(), "--kubeconfig", str(srv.kubeconfig), "get", "--raw",
                          "/openapi/v3/apis/batch/v1?hash=bogus"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    assert "/apis/batch/v1/namespaces/{namespace}/jobs" in json.loads(out)["paths"]
