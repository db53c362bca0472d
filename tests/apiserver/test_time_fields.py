"""metav1.Time and MicroTime fields of built-in kinds must parse as Go's ``time.Parse`` parses them
(RFC 3339; MicroTime with exactly six fraction digits), on every write path, as kube-apiserver's
decoding into the Go struct demands (trial 11 F-6: ``startTime: "bogus"`` was stored, after which
the official client and lightkube could not list the namespace and protobuf GETs answered 500)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from pumice._util.gotime import MICRO_LAYOUT, parse_error
from pumice.testing.cluster import HttpServer, serve_http

MERGE = {"Content-Type": "application/merge-patch+json"}
BOGUS = 'parsing time "bogus" as "2006-01-02T15:04:05Z07:00": cannot parse "bogus" as "2006"'


@pytest.mark.parametrize(("value", "layout", "error"), [
    ("2020-01-01T00:00:00Z", "", None),
    ("2020-01-01T00:00:00.123+02:00", "", None),
    ("bogus", "", BOGUS),
    ("2020-01-01", "", 'parsing time "2020-01-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"'),
    ("2026-13-45T99:00:00Z", "", 'parsing time "2026-13-45T99:00:00Z": month out of range'),
    ("2021-02-29T00:00:00Z", "", 'parsing time "2021-02-29T00:00:00Z": day out of range'),
    ("2020-01-01T00:00:00Zx", "", 'parsing time "2020-01-01T00:00:00Zx": extra text: "x"'),
    ("2020-01-01T00:00:00.000001Z", MICRO_LAYOUT, None),
    ("2020-01-01T00:00:00Z", MICRO_LAYOUT,
     'parsing time "2020-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"'),
])
def test_go_time_parse_errors(value: str, layout: str, error: str | None) -> None:
    assert (parse_error(value, layout) if layout else parse_error(value)) == error


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def test_a_bogus_time_in_a_create_body_is_a_decode_error(http: httpx2.AsyncClient) -> None:
    body = _pod("t1")
    body["metadata"]["creationTimestamp"] = "bogus"
    r = await http.post("/api/v1/namespaces/default/pods", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == f'Pod in version "v1" cannot be handled as a Pod: {BOGUS}'
    assert r.json()["reason"] == "BadRequest"
    assert (await http.get("/api/v1/namespaces/default/pods/t1")).status_code == 404


async def test_status_put_and_patch_with_bogus_times_store_nothing(http: httpx2.AsyncClient) -> None:
    assert (await http.post("/api/v1/namespaces/default/pods", json=_pod("t2"))).status_code == 201
    patch = {"status": {"startTime": "2020-01-01T00:00:00Z",
                        "conditions": [{"type": "X", "status": "True", "lastTransitionTime": "bogus"}]}}
    r = await http.patch("/api/v1/namespaces/default/pods/t2/status", json=patch, headers=MERGE)
    assert r.status_code == 422, r.text
    cause = r.json()["details"]["causes"][0]
    assert (cause["field"], cause["message"].endswith(f": {BOGUS}")) == ("patch", True)
    got = (await http.get("/api/v1/namespaces/default/pods/t2")).json()
    assert "startTime" not in got.get("status", {})
    got["status"] = {"startTime": "2020-01-01"}
    r = await http.put("/api/v1/namespaces/default/pods/t2/status", json=got)
    assert r.status_code == 400, r.text
    assert r.json()["message"].endswith('parsing time "2020-01-01" as "2006-01-02T15:04:05Z07:00": '
                                        'cannot parse "" as "T"')
    r = await http.patch("/api/v1/namespaces/default/pods/t2/status",
                         json={"status": {"startTime": "2020-01-01T00:00:00Z"}}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["startTime"] == "2020-01-01T00:00:00Z"


async def test_strategic_and_apply_patches_word_the_time_error_as_the_patch_handler(http: httpx2.AsyncClient) -> None:
    assert (await http.post("/api/v1/namespaces/default/pods", json=_pod("t3"))).status_code == 201
    r = await http.patch("/api/v1/namespaces/default/pods/t3/status",
                         json={"status": {"startTime": "bogus"}},
                         headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["message"] == f'Invalid value: "map[status:map[startTime:bogus]]": {BOGUS}'
    r = await http.patch("/api/v1/namespaces/default/configmaps/t3a?fieldManager=t",
                         json={"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "t3a", "creationTimestamp": "bogus"}},
                         headers={"Content-Type": "application/apply-patch+yaml"})
    assert r.status_code == 400, r.text
    assert r.json()["message"].endswith(f"unable to convert unstructured object to /v1, Kind=ConfigMap: {BOGUS}")


async def test_events_times(http: httpx2.AsyncClient) -> None:
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
          "eventTime": "notatime", "reportingController": "x", "reportingInstance": "y", "action": "a",
          "reason": "r", "type": "Normal", "regarding": {"kind": "Pod", "name": "p"}}
    r = await http.post("/apis/events.k8s.io/v1/namespaces/default/events", json=ev)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == ('Event in version "v1" cannot be handled as a Event: parsing time "notatime" as '
                                   '"2006-01-02T15:04:05.000000Z07:00": cannot parse "notatime" as "2006"')
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e2"}, "involvedObject": {"kind": "Pod"},
            "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2026-13-45T99:00:00Z"}
    r = await http.post("/api/v1/namespaces/default/events", json=core)
    assert r.status_code == 400, r.text
    assert r.json()["message"].endswith('parsing time "2026-13-45T99:00:00Z": month out of range')


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("times"), history=5) as s:
        yield s


def test_the_official_client_still_lists_pods_after_a_refused_bogus_time(srv: HttpServer) -> None:
    core = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(srv.kubeconfig)))
    core.create_namespaced_pod("default", _pod("o1"))
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_pod_status("o1", "default", {"status": {"conditions": [
            {"type": "X", "status": "True", "lastTransitionTime": "bogus"}]}})
    assert e.value.status == 422
    pods = core.list_namespaced_pod("default").items
    assert [p.metadata.name for p in pods] == ["o1"]


@pytest.mark.parametrize(("value", "ok"), [
    ("2020-01-01T00:00:00Z", True), ("2020-01-01t10:20:30.5+02:00", True), ("bogus", False),
    ("2020-01-01", False), ("2020-02-30T00:00:00Z", False), ("2020-01-01T24:00:00Z", False), ("", False),
])
def test_crd_date_time_format(value: str, ok: bool) -> None:
    from pumice.api.schema import is_date_time

    assert is_date_time(value) is ok


async def test_a_custom_resource_date_time_field_is_422(http: httpx2.AsyncClient) -> None:
    rj = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj1"},
          "spec": {"entrypoint": "python x.py", "submissionMode": "HTTPMode",
                   "clusterSelector": {"ray.io/cluster": "nosuch"}}}
    assert (await http.post("/apis/ray.io/v1/namespaces/default/rayjobs", json=rj)).status_code == 201, "create"
    r = await http.patch("/apis/ray.io/v1/namespaces/default/rayjobs/rj1/status",
                         json={"status": {"startTime": "bogus"}}, headers=MERGE)
    assert r.status_code == 422, r.text
    assert [(c["reason"], c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        ("FieldValueTypeInvalid", "status.startTime",
         'Invalid value: "bogus": status.startTime in body must be of type date-time: "bogus"')]
    got = (await http.get("/apis/ray.io/v1/namespaces/default/rayjobs/rj1")).json()
    assert got.get("status", {}).get("startTime") != "bogus"


async def test_events_v1_create_needs_event_time_and_a_known_type(http: httpx2.AsyncClient) -> None:
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e3"},
          "reportingController": "x", "reportingInstance": "y", "action": "a",
          "reason": "r", "type": "Weird", "regarding": {"kind": "Pod", "name": "p"}}
    r = await http.post("/apis/events.k8s.io/v1/namespaces/default/events", json=ev)
    assert r.status_code == 422, r.text
    assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        ("eventTime", "Required value"), ("type", 'Invalid value: "": has invalid value: Weird')]
    ev.update(type="Normal", eventTime="2020-01-01T00:00:00.000001Z")
    r = await http.post("/apis/events.k8s.io/v1/namespaces/default/events", json=ev)
    assert r.status_code == 201, r.text


def test_only_ascii_digits_parse_as_go_reads_them() -> None:
    """Python's ``\\d`` also matches other scripts' digits; Go's time.Parse takes 0-9 only, so
    Arabic-Indic digits must not take the fast path that accepts them (review of session 10)."""
    from pumice._util.gotime import parses

    value = "\u0662\u0660\u0662\u0664-01-02T03:04:05Z"
    assert not parses(value)
    go_quoted = "\\xd9\\xa2\\xd9\\xa0\\xd9\\xa2\\xd9\\xa4-01-02T03:04:05Z"  # time.quote: non-ASCII as \\x bytes
    assert parse_error(value) == (f'parsing time "{go_quoted}" as "2006-01-02T15:04:05Z07:00": '
                                  f'cannot parse "{go_quoted}" as "2006"')
    assert not parses("2024-01-02T03:04:05+\u0660\u0661:00")


async def test_events_v1_length_limits_count_bytes_as_go_len(http: httpx2.AsyncClient) -> None:
    """100 two-byte characters are 200 bytes: over the 128 limit, as Go's len counts them."""
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e4"},
          "eventTime": "2020-01-01T00:00:00.000001Z", "reportingController": "x", "reportingInstance": "y",
          "action": "a", "reason": "\u00e9" * 100, "type": "Normal", "regarding": {"kind": "Pod", "name": "p"}}
    r = await http.post("/apis/events.k8s.io/v1/namespaces/default/events", json=ev)
    assert r.status_code == 422, r.text
    assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        ("reason", 'Invalid value: "": can have at most 128 characters')]
    ev["reason"] = "\u00e9" * 64  # 128 bytes: at the limit
    assert (await http.post("/apis/events.k8s.io/v1/namespaces/default/events", json=ev)).status_code == 201
