"""Over real HTTP: duplicate JSON/YAML fields under fieldValidation Strict / Warn / unset /
Ignore, and the unknown-field warning of an unset fieldValidation (kube-apiserver's default is
Warn). Mirrors kubernetes test/integration/apiserver/field_validation_test.go."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from pumice.apiserver.decode import duplicate_fields
from pumice.testing.cluster import HttpServer, serve_http

CMS = "/api/v1/namespaces/default/configmaps"
DUP_JSON = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","name":"%s"},"data":{"a":"1","a":"2"}}'
DUP_YAML = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  name: %s\ndata:\n  a: '1'\n  a: '2'\n"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("dups")) as s:
        yield s


def http(srv: HttpServer) -> httpx2.Client:
    return httpx2.Client(base_url=srv.url, headers={"Authorization": f"Bearer {srv.token}"}, verify=False)


def _warnings(r: httpx2.Response) -> str:
    return r.headers.get("warning", "")


def test_duplicate_fields_are_listed_with_their_paths_in_document_order() -> None:
    body = (b'{"metadata":{"name":"a","name":"b"},"spec":{"paused":true,"paused":false,"template":{"spec":'
            b'{"containers":[{"name":"c","imagePullPolicy":"Always","imagePullPolicy":"Never"}]}}}}')
    assert duplicate_fields(body) == ['duplicate field "metadata.name"', 'duplicate field "spec.paused"',
                                      'duplicate field "spec.template.spec.containers[0].imagePullPolicy"']
    assert duplicate_fields(b'{"a":[[{"b":1,"b":2}]],"c":{"d":1}}') == ['duplicate field "a[0][0].b"']
    assert duplicate_fields(b"a: 1\nb:\n  - x: 1\n    x: 2\na: 3\n") == [
        'line 4: key "x" already set in map', 'line 5: key "a" already set in map']
    assert duplicate_fields(b'{"a":1,"b":{"a":2}}') == []


def test_strict_refuses_a_duplicate_json_field(srv: HttpServer) -> None:
    r = http(srv).post(CMS, params={"fieldValidation": "Strict"}, content=DUP_JSON % (b"dupd", b"dupe"),
                       headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["reason"] == "BadRequest"
    assert r.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
                                   'duplicate field "metadata.name", duplicate field "data.a"')
    assert http(srv).get(f"{CMS}/dupe").status_code == 404


def test_strict_refuses_a_duplicate_yaml_key_with_go_yamls_text(srv: HttpServer) -> None:
    r = http(srv).post(CMS, params={"fieldValidation": "Strict"}, content=DUP_YAML % (b"ydupd", b"ydupe"),
                       headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400
    assert r.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
                                   'yaml: unmarshal errors:\n  line 5: key "name" already set in map\n'
                                   '  line 8: key "a" already set in map')


@pytest.mark.parametrize("mode", ["Warn", None])
def test_warn_and_unset_warn_per_duplicate_and_keep_the_last_value(srv: HttpServer, mode: str | None) -> None:
    name = f"w{(mode or 'unset').lower()}"
    params = {"fieldValidation": mode} if mode else {}
    r = http(srv).post(CMS, params=params, content=DUP_JSON % (b"x", name.encode()),
                       headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    assert _warnings(r) == '299 - "duplicate field \\"metadata.name\\"", 299 - "duplicate field \\"data.a\\""'
    assert r.json()["metadata"]["name"] == name and r.json()["data"] == {"a": "2"}
    # update and merge patch are checked the same way
    put = http(srv).put(f"{CMS}/{name}", params=params, content=DUP_JSON % (name.encode(), name.encode()),
                        headers={"Content-Type": "application/json"})
    assert put.status_code == 200 and 'duplicate field \\"metadata.name\\"' in _warnings(put)
    patch = http(srv).patch(f"{CMS}/{name}", params=params, content=b'{"data":{"b":"1","b":"2"}}',
                            headers={"Content-Type": "application/merge-patch+json"})
    assert patch.status_code == 200 and _warnings(patch) == '299 - "duplicate field \\"data.b\\""'


def test_ignore_says_nothing(srv: HttpServer) -> None:
    r = http(srv).post(CMS, params={"fieldValidation": "Ignore"}, content=DUP_JSON % (b"x", b"ign"),
                       headers={"Content-Type": "application/json"})
    assert r.status_code == 201 and "warning" not in r.headers


def test_unset_field_validation_warns_about_unknown_fields(srv: HttpServer) -> None:
    r = http(srv).post(CMS, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dupk"}, "bogus": 1})
    assert r.status_code == 201 and _warnings(r) == '299 - "unknown field \\"bogus\\""'
    r = http(srv).post(CMS, params={"fieldValidation": "Ignore"},
                       json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dupk2"}, "bogus": 1})
    assert r.status_code == 201 and "warning" not in r.headers


def test_a_warning_about_a_non_ascii_field_name_goes_out_as_utf8_with_quotes_and_newlines_escaped(srv: HttpServer) -> None:
    # the bad-input fuzz found a 500 here: a header value must be Latin-1 to Starlette, and a field
    # name is any Unicode; upstream sends the UTF-8 bytes with " and \ escaped
    body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"uni"},"b\u00f6g\U0004f278\\"q\\\\s\\nt":1}'
    r = http(srv).post(CMS, content=body.encode(), headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    raw = dict(r.headers.raw)[b"warning"].decode("utf-8")
    assert raw == '299 - "unknown field \\"b\u00f6g\U0004f278\\"q\\\\s t\\""'
