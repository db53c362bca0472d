"""Schemathesis against the API server's own /openapi/v3 documents: requests generated from each
advertised operation (path and query parameters, bodies from the schemas, every patch media type)
never get a 5xx; bad input is a Kubernetes Status (4xx).

Bounded and deterministic: hypothesis derandomized, no example database, a fresh server per run.
By default only core/v1 ConfigMaps (a few seconds); ``make fuzz-openapi``
(``PUMICE_OPENAPI_FUZZ=full``) walks more resources with more examples each (several minutes).

Watch and log-follow parameters are left out of the generated requests: they open streams that
end only at their timeout (tests/apiserver/test_list_options.py and test_logs.py check them).
"""

from __future__ import annotations

import base64
import copy
import os
import ssl
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
import schemathesis
import yaml
from hypothesis import HealthCheck, given, settings

from pumice.testing.cluster import HttpServer, serve_http

#: (group-version document, the resource whose routes are called)
QUICK = [("api/v1", "configmaps")]
FULL = [("api/v1", "configmaps"), ("api/v1", "pods"), ("api/v1", "services"), ("api/v1", "namespaces"),
        ("api/v1", "serviceaccounts"), ("api/v1", "nodes"), ("apis/apps/v1", "deployments"),
        ("apis/batch/v1", "jobs"), ("apis/batch.volcano.sh/v1alpha1", "jobs"), ("apis/ray.io/v1", "rayclusters"),
        ("apis/scheduling.volcano.sh/v1beta1", "queues"),
        ("apis/apiextensions.k8s.io/v1", "customresourcedefinitions")]
FULL_RUN = os.environ.get("PUMICE_OPENAPI_FUZZ") == "full"
EXAMPLES = 40 if FULL_RUN else 12
STREAMING = {"watch", "allowWatchBookmarks", "sendInitialEvents", "follow"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("openapi-fuzz")) as s:
        yield s


@pytest.fixture(scope="module")
def ca(srv: HttpServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The server's CA (from the kubeconfig it wrote), so requests verify its certificate."""
    cluster = yaml.safe_load(srv.kubeconfig.read_text())["clusters"][0]["cluster"]
    path = tmp_path_factory.mktemp("ca") / "ca.crt"
    path.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    return str(path)


def _without_streams(params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in params if p["name"] not in STREAMING]


def _routes_of(path: str, gv: str, plural: str) -> bool:
    """Whether ``path`` is a route of resource ``plural`` (its collection, objects and
    subresources, namespaced or not), not a /watch/ path."""
    rest = path.removeprefix(f"/{gv}").removeprefix("/namespaces/{namespace}")
    return rest.split("/")[1:2] == [plural]


def _document(srv: HttpServer, ca: str, gv: str, plural: str) -> dict[str, Any]:
    """The group-version's document, cut to the routes of one resource, without the streaming
    parameters."""
    with httpx2.Client(base_url=srv.url, headers={"Authorization": f"Bearer {srv.token}"},
                       verify=ssl.create_default_context(cafile=ca)) as c:
        doc = c.get(f"/openapi/v3/{gv}").json()
    paths = {}
    for path, item in doc["paths"].items():
        if not _routes_of(path, gv, plural):
            continue
        item = copy.deepcopy(item)
        for key, value in item.items():
            if key == "parameters":
                item[key] = _without_streams(value)
            elif "parameters" in value:
                value["parameters"] = _without_streams(value["parameters"])
        paths[path] = item
    assert paths, (gv, plural)
    doc["paths"] = paths
    return doc


@pytest.mark.parametrize(("gv", "plural"), FULL if FULL_RUN else QUICK)
def test_generated_requests_never_get_a_5xx(srv: HttpServer, ca: str, gv: str, plural: str) -> None:
    schema = schemathesis.openapi.from_dict(_document(srv, ca, gv, plural))
    headers = {"Authorization": f"Bearer {srv.token}"}
    calls: list[int] = []
    server_errors: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def call(case: Any) -> None:
            r = case.call(base_url=srv.url, headers=headers, verify=ca, timeout=30)
            calls.append(r.status_code)
            if r.status_code >= 500:
                server_errors.append(f"{case.method} {case.formatted_path} query={case.query} "
                                     f"headers={case.headers} body={str(case.body)[:300]} -> "
                                     f"{r.status_code} {r.text[:300]}")

        call()
    assert server_errors == [], "\n".join(server_errors)
    assert len(calls) >= EXAMPLES and any(code < 300 for code in calls)  # some requests were accepted
