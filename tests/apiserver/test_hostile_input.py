"""What a hostile client sent (issue 14 items 3-5): bounded decoding, typed-schema checks before
admission, the validation gaps. Every answer is a Status (400/413/422/504), never a 500, and a
refused request changes nothing stored."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import pytest

from pumice.api import yamlsafe
from pumice.apiserver.decode import decode_body, json_depth
from pumice.apiserver.errors import StatusError
from pumice.client.base import ApiError
from pumice.testing.cluster import LocalCluster

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"

#: six levels of nested aliases, nine references each: 9**9 (387 million) strings once expanded
BOMB = (b'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
        + b"".join(b"%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n"
                   % ((chr(98 + i).encode(),) * 2 + (chr(97 + i).encode(),) * 9) for i in range(8)))


async def _refused(c: LocalCluster, method: str, path: str, body: Any, *, ctype: str = "application/json",
                   params: dict[str, str] | None = None) -> ApiError:
    before = c.server.store.revision
    with pytest.raises(ApiError) as e:
        await c.client.request(method, path, body=body, content_type=ctype, params=params)
    assert e.value.status.get("kind") == "Status"
    assert e.value.code < 500 or e.value.code == 504
    assert c.server.store.revision == before
    return e.value


def _pod(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def _deployment(replicas: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


# -- decoding bounds (item 3) ----------------------------------------------------------------------


def test_a_yaml_alias_bomb_is_refused_before_it_is_expanded() -> None:
    t0 = time.process_time()
    with pytest.raises(StatusError) as e:
        decode_body(BOMB, yaml_ok=True)
    assert e.value.code == 400
    assert e.value.message.endswith("yaml: document contains excessive aliasing")
    assert time.process_time() - t0 < 5  # not expanded (a sanity bound, far above the real cost)


def test_a_few_aliases_are_fine() -> None:
    assert decode_body(b"a: &x {k: v}\nb: *x\nc: [*x, *x]\n", yaml_ok=True) == {
        "a": {"k": "v"}, "b": {"k": "v"}, "c": [{"k": "v"}, {"k": "v"}]}


@pytest.mark.parametrize("raw,yaml_ok", [
    (b"[" * 200_000 + b"]" * 200_000, False),
    (b"{a: " * 50_000 + b"1" + b"}" * 50_000, True),
    (b"".join(b"  " * i + b"a:\n" for i in range(150)) + b"  " * 150 + b"1\n", True),
    (b"[" * 101 + b"]" * 101, False),
])
def test_deep_nesting_is_400_not_a_recursion_error(raw: bytes, yaml_ok: bool) -> None:
    with pytest.raises(StatusError) as e:
        decode_body(raw, yaml_ok=yaml_ok)
    assert e.value.code == 400


def test_json_depth_counts_brackets_outside_strings() -> None:
    assert json_depth(rb'{"a":"[[[{{","b":[1,{"c":"\"]]"}]}', limit=2) == 3
    assert json_depth(b"[" * 150 + b"]" * 150) == 101
    assert decode_body(b"[" * 100 + b"]" * 100, yaml_ok=False) is not None


def test_yamlsafe_refuses_the_bomb_in_the_other_readers_too() -> None:
    with pytest.raises(yamlsafe.YAMLLimitError):
        yamlsafe.safe_load(BOMB)
    with pytest.raises(yamlsafe.YAMLLimitError):
        yamlsafe.safe_load_all(b"a: 1\n---\n" + BOMB)
    assert yamlsafe.safe_load_all("a: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]


async def test_the_bomb_over_http_is_400_on_every_yaml_path(cluster: LocalCluster) -> None:
    await cluster.client.request("POST", CONFIGMAPS, body={"apiVersion": "v1", "kind": "ConfigMap",
                                                           "metadata": {"name": "cm"}})
    e = await _refused(cluster, "POST", CONFIGMAPS, BOMB, ctype="application/yaml")
    assert e.code == 400
    e = await _refused(cluster, "PATCH", CONFIGMAPS + "/cm", BOMB, ctype="application/apply-patch+yaml",
                       params={"fieldManager": "t"})
    assert e.code == 400 and "excessive aliasing" in e.message


async def test_deep_json_over_http_is_400(cluster: LocalCluster) -> None:
    e = await _refused(cluster, "POST", PODS, b"[" * 200_000 + b"]" * 200_000)
    assert e.code == 400


# -- typed-schema checks before admission (item 4) -------------------------------------------------


def _decode_error(e: ApiError, kind: str, why: str) -> None:
    """A built-in kind's body that its Go struct cannot hold: 400 with Go's decoding error (trial
    12 F-1; custom resources keep the structural schema's 422)."""
    assert e.code == 400 and e.reason == "BadRequest", e.status
    assert e.message == f'{kind} in version "v1" cannot be handled as a {kind}: {why}'


@pytest.mark.parametrize("spec,why", [
    ({"containers": "notalist"}, "string into Go struct field PodSpec.spec.containers of type []v1.Container"),
    ({"containers": [{"name": "c", "image": "i", "command": "sleep 100"}]},
     "string into Go struct field Container.spec.containers.command of type []string"),
    ({"containers": [{"name": "c", "image": "i", "env": {"A": "b"}}]},
     "object into Go struct field Container.spec.containers.env of type []v1.EnvVar"),
    ({"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": "80"}]}]},
     "string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"),
    ({"containers": [{"name": "c", "image": "i", "env": [{"name": "A", "value": 5}]}]},
     "number into Go struct field EnvVar.spec.containers.env.value of type string"),
    ({"restartPolicy": 1, "containers": [{"name": "c", "image": "i"}]},
     "number into Go struct field PodSpec.spec.restartPolicy of type v1.RestartPolicy"),
])
async def test_a_badly_typed_pod_is_a_decode_error(cluster: LocalCluster, spec: Any, why: str) -> None:
    e = await _refused(cluster, "POST", PODS, _pod(spec))
    _decode_error(e, "Pod", "json: cannot unmarshal " + why)


@pytest.mark.parametrize("part,rname,q", [("requests", "memory", "-2Gi"), ("limits", "cpu", "-1"),
                                          ("requests", "nvidia.com/gpu", "-1")])
async def test_a_negative_resource_quantity_is_422_as_kube_apiserver_says(
        cluster: LocalCluster, part: str, rname: str, q: str) -> None:
    """kube-apiserver's ValidateResourceQuantityValue (pkg/apis/core/validation); trial-6 F-6."""
    e = await _refused(cluster, "POST", PODS, _pod({"containers": [
        {"name": "c", "image": "i", "resources": {part: {rname: q}}}]}))
    assert e.code == 422 and e.reason == "Invalid"
    field = f"spec.containers[0].resources.{part}[{rname}]"
    assert {"reason": "FieldValueInvalid", "field": field,
            "message": f'Invalid value: "{q}": must be greater than or equal to 0'} in e.status["details"]["causes"]


def _set_path(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    cur = obj
    for k in parents:
        cur = cur[k]
    cur[last] = value
    return obj


@pytest.mark.parametrize("path,struct", [
    ("spec.selector.matchLabels", "LabelSelector"),
    ("spec.template.metadata.labels", "ObjectMeta"),
    ("metadata.annotations", "ObjectMeta"),
    ("spec.template.spec.nodeSelector", "PodSpec"),
])
async def test_a_map_field_that_is_not_an_object_is_a_decode_error_not_500(cluster: LocalCluster, path: str,
                                                                           struct: str) -> None:
    # lightkube types Go's map[string]string as a bare dict: such fields still must be objects
    # (found by the full-size fuzz of tests/reliability: matchLabels: true was a 500)
    e = await _refused(cluster, "POST", DEPLOYMENTS, _set_path(_deployment(1), path, True))
    _decode_error(e, "Deployment", f"json: cannot unmarshal bool into Go struct field {struct}.{path} of type "
                                   "map[string]string")


async def test_a_configmap_whose_data_is_a_list_or_holds_a_number_is_a_decode_error(cluster: LocalCluster) -> None:
    for data, why in ((["a"], "array into Go struct field ConfigMap.data of type map[string]string"),
                      ({"a": 1}, "number into Go struct field ConfigMap.data of type string")):
        e = await _refused(cluster, "POST", CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                         "metadata": {"name": "cm"}, "data": data})
        _decode_error(e, "ConfigMap", "json: cannot unmarshal " + why)


async def test_a_null_spec_is_unset_and_reported_as_missing_containers(cluster: LocalCluster) -> None:
    e = await _refused(cluster, "POST", PODS, _pod(None))
    assert e.code == 422
    assert e.status["details"]["causes"][0]["field"] == "spec.containers"


async def test_a_badly_typed_custom_resource_is_422_before_admission(cluster: LocalCluster) -> None:
    vc = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v"},
          "spec": {"minAvailable": "x", "tasks": [{"name": "t", "replicas": 1, "template": {
              "spec": {"containers": [{"name": "c", "image": "i"}]}}}]}}
    e = await _refused(cluster, "POST", "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs", vc)
    assert e.code == 422
    assert e.message == ('Job.batch.volcano.sh "v" is invalid: spec.minAvailable: Invalid value: "string": '
                         'spec.minAvailable in body must be of type integer: "string"')


# -- validation gaps (item 5) ----------------------------------------------------------------------


@pytest.mark.parametrize("raw,shown", [
    (json.dumps(_deployment("three")).encode(), "string"),
    (json.dumps(_deployment(0)).encode().replace(b'"replicas": 0', b'"replicas": 1.5'), "number 1.5"),
    # out of int32: Go's decoder cannot hold it, so decoding refuses it before validation
    (json.dumps(_deployment(10_000_000_000)).encode(), "number 10000000000"),
])
async def test_bad_replicas_say_what_is_wrong(cluster: LocalCluster, raw: bytes, shown: str) -> None:
    e = await _refused(cluster, "POST", DEPLOYMENTS, raw)
    _decode_error(e, "Deployment", f"json: cannot unmarshal {shown} into Go struct field DeploymentSpec.spec.replicas "
                                   "of type int32")


def _rc(replicas: int) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
                       "spec": {"replicas": replicas, "selector": {"a": "b"},
                                "template": {"metadata": {"labels": {"a": "b"}},
                                             "spec": {"containers": [{"name": "c", "image": "i"}]}}}}).encode()


@pytest.mark.parametrize("path,raw,field,shown,fmt", [
    ("/api/v1/namespaces/default/replicationcontrollers", _rc(2**31), "ReplicationControllerSpec.spec.replicas", "2147483648", "int32"),
    ("/api/v1/namespaces/default/replicationcontrollers", _rc(10**23 - 1), "ReplicationControllerSpec.spec.replicas",
     "99999999999999999999999", "int32"),
    ("/api/v1/namespaces/default/replicationcontrollers", _rc(-(2**31) - 1), "ReplicationControllerSpec.spec.replicas", "-2147483649",
     "int32"),
    (PODS, json.dumps(_pod({"terminationGracePeriodSeconds": 10**23 - 1,
                            "containers": [{"name": "c", "image": "i"}]})).encode(),
     "PodSpec.spec.terminationGracePeriodSeconds", "99999999999999999999999", "int64"),
    (PODS, json.dumps(_pod({"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 2**40}]}]})).encode(),
     "ContainerPort.spec.containers.ports.containerPort", str(2**40), "int32"),
])
async def test_an_integer_out_of_its_fields_go_type_is_a_decode_error(
        cluster: LocalCluster, path: str, raw: bytes, field: str, shown: str, fmt: str) -> None:
    """Trial 5 F-2: an RC with replicas 99999999999999999999999 was stored as 1e+23 and its
    controller created Pods without end; every built-in kind's integer now honours its format."""
    e = await _refused(cluster, "POST", path, raw)
    kind = "ReplicationController" if "replication" in path else "Pod"
    _decode_error(e, kind, f"json: cannot unmarshal number {shown} into Go struct field {field} of type {fmt}")


async def test_integers_at_the_bounds_of_their_format_are_accepted(cluster: LocalCluster) -> None:
    body = _pod({"terminationGracePeriodSeconds": 2**63 - 1,
                 "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 80}]}]})
    body["metadata"]["generation"] = -(2**63)  # ignored by the server, but it must decode
    created = await cluster.client.request("POST", PODS, body=body)
    assert created["spec"]["terminationGracePeriodSeconds"] == 2**63 - 1


async def test_an_env_object_is_not_reported_as_env_0_name(cluster: LocalCluster) -> None:
    e = await _refused(cluster, "POST", PODS, _pod({"containers": [{"name": "c", "image": "i", "env": {"A": "b"}}]}))
    assert "env[0].name" not in e.message


async def test_changing_a_job_selector_says_the_field_is_immutable(cluster: LocalCluster) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}
    j = await cluster.client.request("POST", "/apis/batch/v1/namespaces/default/jobs", body=job)
    j["spec"]["selector"] = {"matchLabels": {"other": "x"}}
    e = await _refused(cluster, "PUT", "/apis/batch/v1/namespaces/default/jobs/j", j)
    assert e.code == 422
    assert {"field": "spec.selector", "reason": "FieldValueInvalid"}.items() <= next(
        c for c in e.status["details"]["causes"] if c["field"] == "spec.selector").items()
    assert "spec.selector: Invalid value" in e.message and "field is immutable" in e.message


async def test_a_configmap_over_1_mib_is_422(cluster: LocalCluster) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"a": "x" * (2 * 1024 * 1024)}}
    e = await _refused(cluster, "POST", CONFIGMAPS, cm)
    assert e.code == 422
    assert e.message == 'ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes'


async def test_an_unknown_field_validation_is_422(cluster: LocalCluster) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fv"}}
    e = await _refused(cluster, "POST", CONFIGMAPS, cm, params={"fieldValidation": "Bogus"})
    assert e.code == 422
    assert e.message == ('CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": '
                         'supported values: "", "Ignore", "Strict", "Warn"')


@pytest.mark.parametrize("selector", ["x/y/z=1", "a=" + "b" * 70, "a in (b", "a b"])
async def test_an_invalid_label_selector_is_400_on_list_and_watch(cluster: LocalCluster, selector: str) -> None:
    for params in ({"labelSelector": selector}, {"labelSelector": selector, "watch": "1"}):
        e = await _refused(cluster, "GET", PODS, None, params=params)
        assert e.code == 400 and e.message.startswith("unable to parse requirement")


async def test_a_future_resource_version_is_answered_with_too_large(cluster: LocalCluster) -> None:
    for params in ({"watch": "1", "resourceVersion": "99999999"}, {"resourceVersion": "99999999"}):
        e = await _refused(cluster, "GET", PODS, None, params=params)
        assert e.code == 504 and e.reason == "Timeout"
        assert e.message.startswith("Timeout: Too large resource version: 99999999, current: ")
        assert e.status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
        assert e.status["details"]["retryAfterSeconds"] == 1


# -- plain HTTP to the TLS port (item 5) -----------------------------------------------------------


def test_plain_http_to_the_tls_port_gets_go_s_400_and_tls_still_works(tmp_path: Any) -> None:
    import socket
    import ssl
    from urllib.parse import urlsplit

    from pumice.apiserver.tlsfront import PLAIN_HTTP_REPLY
    from pumice.testing.cluster import serve_http

    with serve_http(tmp_path) as srv:
        port = urlsplit(srv.url).port
        assert port is not None
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        assert data == PLAIN_HTTP_REPLY
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        assert data.startswith(b"HTTP/1.1 200") and b"gitVersion" in data


@pytest.mark.parametrize("request_line", [
    b"GET /api/v1/pods?labelSelector=" + b"a" * 100_000 + b" HTTP/1.1",  # over httptools' 64 KiB URL limit
    b"GET /api/v1/pods HTTP/1.1\r\nbad header line",
])
async def test_a_request_that_cannot_be_parsed_gets_a_400_status(request_line: bytes) -> None:
    """Trial 5 F-5: uvicorn answered these with a plain-text ``Invalid HTTP request received.``."""
    from pumice.apiserver.server import APIServer

    server = APIServer(None)
    ready = asyncio.Event()
    task = asyncio.create_task(server.serve("127.0.0.1", 0, tls=False, ready=ready))
    try:
        await asyncio.wait_for(ready.wait(), 30)
        assert server.url is not None
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(request_line + b"\r\nHost: x\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b"content-type: application/json" in head
    assert json.loads(body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "BadRequest", "code": 400,
        "message": "invalid HTTP request: the request line or a header cannot be parsed (the URL is limited to "
                   "65535 bytes)"}
