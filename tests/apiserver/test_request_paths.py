"""Paths and request-wide parameters as kube-apiserver serves them (trial 11 F-11 g): the
deprecated ``/watch/`` paths, the named health checks, ``?timeout=`` and ``Accept`` negotiation."""

from __future__ import annotations

import json

import httpx2
import pytest

from pumice.testing.cluster import LocalCluster

from .builders import configmap

NOT_FOUND = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": "the server could not find the requested resource", "reason": "NotFound",
             "details": {}, "code": 404}


def _events(body: str) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"]["name"]) for e in map(json.loads, body.splitlines())]


@pytest.mark.parametrize("path", ["/api/v1/watch/namespaces/default/configmaps", "/api/v1/watch/configmaps"])
async def test_the_deprecated_watch_path_watches_the_collection(cluster: LocalCluster, http: httpx2.AsyncClient,
                                                                path: str) -> None:
    await cluster.client.create(configmap("a"))
    r = await http.get(path, params={"resourceVersion": "0", "timeoutSeconds": "1",
                                     "fieldSelector": "metadata.namespace=default"})
    assert r.status_code == 200 and ("ADDED", "a") in _events(r.text)


async def test_the_deprecated_watch_path_of_one_object(cluster: LocalCluster, http: httpx2.AsyncClient) -> None:
    await cluster.client.create(configmap("a"))
    await cluster.client.create(configmap("b"))
    r = await http.get("/api/v1/watch/namespaces/default/configmaps/a",
                       params={"resourceVersion": "0", "timeoutSeconds": "1"})
    assert r.status_code == 200 and _events(r.text) == [("ADDED", "a")]
    r = await http.get("/api/v1/watch/namespaces/default/configmaps/a",
                       params={"resourceVersion": "0", "timeoutSeconds": "1", "fieldSelector": "metadata.name=b"})
    assert (r.status_code, r.json()["message"]) == (400, "fieldSelector metadata.name doesn't match requested name")


async def test_the_deprecated_watch_path_is_get_only_and_has_no_subresources(http: httpx2.AsyncClient) -> None:
    r = await http.delete("/api/v1/watch/namespaces/default/configmaps")
    assert (r.status_code, r.json()["reason"]) == (405, "MethodNotAllowed")
    r = await http.get("/api/v1/watch/namespaces/default/pods/p/status")
    assert r.status_code == 404 and r.json() == NOT_FOUND


async def test_named_health_checks_and_unknown_ones(http: httpx2.AsyncClient) -> None:
    for path in ("/healthz/ping", "/livez/log", "/readyz/etcd", "/readyz/informer-sync"):
        r = await http.get(path)
        assert (r.status_code, r.text) == (200, "ok"), path
    for path in ("/healthz/bogus", "/readyz/ping/x", "/livez/shutdown"):
        r = await http.get(path)
        assert r.status_code == 404 and r.json() == NOT_FOUND, path


async def test_a_timeout_that_is_not_a_go_duration_is_400(http: httpx2.AsyncClient) -> None:
    r = await http.get("/api/v1/namespaces/default/configmaps", params={"timeout": "abc"})
    assert (r.status_code, r.json()["reason"], r.json()["message"]) == (
        400, "BadRequest", 'invalid timeout specified in the request URL - time: invalid duration "abc"')
    r = await http.get("/api/v1/namespaces/default/configmaps", params={"timeout": "32s"})
    assert r.status_code == 200
    # a long-running request (a watch) has no deadline: its timeout is not read
    r = await http.get("/api/v1/namespaces/default/configmaps",
                       params={"timeout": "abc", "watch": "true", "timeoutSeconds": "1"})
    assert r.status_code == 200


async def test_an_accept_the_server_cannot_write_is_406_before_the_write(cluster: LocalCluster,
                                                                         http: httpx2.AsyncClient) -> None:
    before = cluster.server.store.revision
    body = json.dumps(configmap("a"))
    r = await http.post("/api/v1/namespaces/default/configmaps", content=body,
                        headers={"Accept": "application/cbor", "Content-Type": "application/json"})
    assert (r.status_code, r.json()["reason"], r.json()["message"]) == (
        406, "NotAcceptable", "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, "
                              "application/vnd.kubernetes.protobuf")
    assert cluster.server.store.revision == before
    for accept in ("application/cbor, */*;q=0.1", "Application/JSON"):
        r = await http.get("/api/v1/namespaces/default/configmaps", headers={"Accept": accept})
        assert r.status_code == 200, accept
