"""Protobuf over HTTP (bodies, responses, lists, watch frames), streaming lists
(sendInitialEvents with the initial-events-end bookmark) and Go zero-value defaulting."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator

import httpx2
import pytest

from pumice.api import protobuf as pb
from pumice.testing.cluster import HttpServer, serve_http

PB = "application/vnd.kubernetes.protobuf"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("pbhttp")) as s:
        yield s


@pytest.fixture
def http(srv: HttpServer) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=srv.url, headers={"Authorization": f"Bearer {srv.token}"}, verify=False,
                       timeout=30) as c:
        yield c


def cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": data}


def frames(body: bytes) -> list[tuple[str, dict]]:
    out, i = [], 0
    while i < len(body):
        (size,) = struct.unpack(">I", body[i:i + 4])
        out.append(pb.decode_watch_event(body[i + 4:i + 4 + size]))
        i += 4 + size
    return out


def test_create_with_a_protobuf_body_and_read_it_back_as_protobuf(http: httpx2.Client) -> None:
    r = http.post("/api/v1/namespaces/default/configmaps", content=pb.encode_object(cm("pb1", a="1")),
                  headers={"Content-Type": PB, "Accept": f"{PB}, */*"})
    assert r.status_code == 201 and r.headers["content-type"] == PB
    created = pb.decode_object(r.content)
    assert created["data"] == {"a": "1"} and created["metadata"]["uid"]
    as_json = http.get("/api/v1/namespaces/default/configmaps/pb1").json()
    got = pb.decode_object(http.get("/api/v1/namespaces/default/configmaps/pb1", headers={"Accept": PB}).content)
    assert got == as_json == created


def test_list_as_protobuf(http: httpx2.Client) -> None:
    http.post("/api/v1/namespaces/default/configmaps", json=cm("pb2", b="2"))
    r = http.get("/api/v1/namespaces/default/configmaps", headers={"Accept": f"{PB},application/json"})
    assert r.headers["content-type"] == PB
    lst = pb.decode_object(r.content)
    assert lst["kind"] == "ConfigMapList" and lst["metadata"]["resourceVersion"]
    # protobuf items carry no apiVersion/kind (the message has no TypeMeta), as from kube-apiserver
    as_json = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
               for o in http.get("/api/v1/namespaces/default/configmaps").json()["items"]]
    assert lst["items"] == as_json


def test_delete_with_protobuf_delete_options(http: httpx2.Client) -> None:
    http.post("/api/v1/namespaces/default/configmaps", json=cm("pb3"))
    opts = pb.encode_object({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"})
    r = http.request("DELETE", "/api/v1/namespaces/default/configmaps/pb3", content=opts,
                     headers={"Content-Type": PB})
    assert r.status_code == 200
    assert http.get("/api/v1/namespaces/default/configmaps/pb3").status_code == 404


def test_custom_resources_refuse_protobuf_bodies_and_answer_json(http: httpx2.Client) -> None:
    path = "/apis/ray.io/v1/namespaces/default/rayclusters"
    r = http.post(path, content=pb.MAGIC + b"\x0a\x00", headers={"Content-Type": PB})
    assert r.status_code == 415 and r.json()["reason"] == "UnsupportedMediaType"
    r = http.get(path, headers={"Accept": f"{PB}, application/json"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert http.get(path, headers={"Accept": PB}).status_code == 406


def test_malformed_protobuf_body_is_400(http: httpx2.Client) -> None:
    r = http.post("/api/v1/namespaces/default/configmaps", content=b"k8s\x00\x0a\xff\xff",
                  headers={"Content-Type": PB})
    assert r.status_code == 400 and r.json()["reason"] == "BadRequest"


def test_watch_in_protobuf_frames(http: httpx2.Client) -> None:
    rv = http.get("/api/v1/namespaces/default/configmaps").json()["metadata"]["resourceVersion"]
    http.post("/api/v1/namespaces/default/configmaps", json=cm("pbw", w="1"))
    r = http.get(f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=1",
                 headers={"Accept": f"{PB}, */*"})
    assert r.headers["content-type"] == f"{PB};stream=watch"
    events = frames(r.content)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "pbw")]


WATCH_LIST = ("watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
              "&timeoutSeconds=1")


def test_streaming_list_ends_initial_events_with_the_annotated_bookmark(http: httpx2.Client) -> None:
    http.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wl"}})
    for n in ("a", "b", "c"):
        http.post("/api/v1/namespaces/wl/configmaps", json={**cm(n), "metadata": {"name": n, "namespace": "wl"}})
    r = http.get(f"/api/v1/namespaces/wl/configmaps?{WATCH_LIST}")
    events = [json.loads(line) for line in r.text.splitlines()]
    assert [e["type"] for e in events[:4]] == ["ADDED", "ADDED", "ADDED", "BOOKMARK"]
    assert sorted(e["object"]["metadata"]["name"] for e in events[:3]) == ["a", "b", "c"]
    bm = events[3]["object"]
    assert bm["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bm["metadata"]["resourceVersion"]) >= max(int(e["object"]["metadata"]["resourceVersion"])
                                                         for e in events[:3])


def test_streaming_list_of_an_empty_collection_is_just_the_bookmark(http: httpx2.Client) -> None:
    r = http.get(f"/api/v1/namespaces/nothing-here/secrets?{WATCH_LIST}", headers={"Accept": f"{PB}, */*"})
    events = frames(r.content)
    assert events[0][0] == "BOOKMARK"
    assert events[0][1]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_send_initial_events_false_starts_at_the_most_recent_revision(http: httpx2.Client) -> None:
    http.post("/api/v1/namespaces/default/configmaps", json=cm("old"))
    r = http.get("/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=false"
                 "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1")
    assert r.status_code == 200 and "ADDED" not in r.text


def test_watch_list_parameters_are_validated_as_kube_apiserver_does(http: httpx2.Client) -> None:
    r = http.get("/api/v1/configmaps?watch=true&sendInitialEvents=true")
    assert r.status_code == 422
    body = r.json()
    assert body["details"]["kind"] == "ListOptions"
    assert {c["field"] for c in body["details"]["causes"]} == {"resourceVersionMatch", "allowWatchBookmarks"}
    assert http.get("/api/v1/configmaps?sendInitialEvents=true").status_code == 422
    assert http.get("/api/v1/configmaps?watch=true&resourceVersionMatch=NotOlderThan").status_code == 422
    r = http.get(f"/api/v1/configmaps?{WATCH_LIST}&resourceVersion=999999999")
    assert r.status_code == 504 and r.json()["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_service_target_port_zero_defaults_to_the_port(http: httpx2.Client) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "tp0"},
           "spec": {"ports": [{"name": "a", "port": 8080, "targetPort": 0}, {"name": "b", "port": 9090, "targetPort": ""}]}}
    r = http.post("/api/v1/namespaces/default/services", json=svc)
    assert r.status_code == 201, r.text
    assert [p["targetPort"] for p in r.json()["spec"]["ports"]] == [8080, 9090]


def test_go_zero_values_written_explicitly_are_defaulted(http: httpx2.Client) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "zero", "generateName": ""},
           "spec": {"schedulerName": "", "restartPolicy": "", "dnsPolicy": "", "nodeName": "", "hostNetwork": False,
                    "containers": [{"name": "main", "image": "busybox", "imagePullPolicy": "",
                                    "terminationMessagePath": ""}]}}
    r = http.post("/api/v1/namespaces/default/pods", json=pod)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["schedulerName"] == "default-scheduler" and spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst" and "nodeName" not in spec and "hostNetwork" not in spec
    c = spec["containers"][0]
    assert c["imagePullPolicy"] == "Always" and c["terminationMessagePath"] == "/dev/termination-log"


def test_error_bodies_end_with_a_newline_as_kube_apiservers(http: httpx2.Client) -> None:
    # found by kubernetes-client/python's e2e suite
    r = http.get("/api/v1/namespaces/default/pods/missing")
    assert r.status_code == 404 and r.content.endswith(b"}\n")


def test_a_created_service_has_a_load_balancer_status(http: httpx2.Client) -> None:
    # found by kubernetes-client/python's e2e suite (it reads status.load_balancer)
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "with-status"},
           "spec": {"ports": [{"port": 80}]}}
    r = http.post("/api/v1/namespaces/default/services", json=svc)
    assert r.json()["status"] == {"loadBalancer": {}}
