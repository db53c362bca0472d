"""pods/proxy, services/proxy and nodes/proxy: requests go to the Pod IP, the Service's ready
endpoint, or the node agent, unchanged; errors are kube-apiserver's Status texts."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from pumice.apiserver.proxy import parse_proxy_path, split_scheme_name_port
from pumice.runtime.health import HealthServer
from pumice.testing.cluster import LocalCluster

from .builders import pod


async def echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse({"method": request.method, "path": request.url.path, "query": request.url.query,
                         "body": body.decode(), "headers": dict(request.headers)},
                        status_code=int(request.query_params.get("status", "200")),
                        headers={"X-Backend": "yes", "Connection": "close, X-Secret", "X-Secret": "hop"})


async def moved(request: Request) -> Response:
    return RedirectResponse("/elsewhere/", status_code=302)


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


JOB_LISTS: list[dict[str, str]] = []


async def ray_jobs(request: Request) -> Response:
    """Ray's ``GET /api/jobs/`` (no jobs); records the request's headers."""
    JOB_LISTS.append(dict(request.headers))
    return JSONResponse([])


@contextlib.asynccontextmanager
async def backend() -> AsyncIterator[int]:
    """A real HTTP server on 127.0.0.1 (a Pod's or node agent's port)."""
    app = Starlette(routes=[Route("/moved", moved), Route("/healthz", healthz), Route("/api/jobs/", ray_jobs),
                            Route("/{path:path}", echo, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])])
    server = HealthServer(app)
    await server.start()
    try:
        yield server.port
    finally:
        await server.stop()


def http(cluster: LocalCluster) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=cluster.app), base_url="http://apiserver",
                              headers={"Authorization": f"Bearer {cluster.server.token}"})


async def running_pod(cluster: LocalCluster, name: str, ip: str, port: int | None = None,
                      labels: dict[str, str] | None = None) -> None:
    spec: dict[str, Any] = {}
    if port is not None:
        spec["containers"] = [{"name": "main", "image": "busybox:1.36",
                               "ports": [{"containerPort": port, "name": "web"}]}]
    await cluster.client.create(pod(name, labels=labels, **spec))
    await cluster.client.bind("default", name, "n1")
    p = await cluster.client.get(cluster.scheme.by_api_version_kind("v1", "Pod"), name, "default")
    p["status"] = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
    await cluster.client.update_status(p)


async def service_with_endpoints(cluster: LocalCluster, name: str, ip: str, target_port: int, pod_name: str) -> None:
    await cluster.client.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
                                 "spec": {"ports": [{"name": "dashboard", "port": 8265, "targetPort": target_port}]}})
    await cluster.client.create({
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": "default"},
        "subsets": [{"addresses": [{"ip": ip, "targetRef": {"kind": "Pod", "name": pod_name, "namespace": "default"}}],
                     "ports": [{"name": "dashboard", "port": target_port}]}]})


def status_of(r: httpx2.Response) -> tuple[int, str, str]:
    doc = r.json()
    assert doc["kind"] == "Status" and r.headers["content-type"] == "application/json"
    return r.status_code, doc["reason"], doc["message"]


def test_split_scheme_name_port_follows_apimachinery() -> None:
    assert split_scheme_name_port("web") == ("", "web", "")
    assert split_scheme_name_port("web:8080") == ("", "web", "8080")
    assert split_scheme_name_port("https:web:dashboard") == ("https", "web", "dashboard")
    assert split_scheme_name_port("ftp:web:80") is None
    assert split_scheme_name_port("a:b:c:d") is None
    assert split_scheme_name_port(":80") is None


def test_proxy_paths_are_recognised_with_their_raw_subpath() -> None:
    assert parse_proxy_path("/api/v1/namespaces/ns/services/s:dashboard/proxy/api/jobs/") == (
        "ns", "services", "s:dashboard", "/api/jobs/")
    assert parse_proxy_path("/api/v1/namespaces/ns/pods/p/proxy") == ("ns", "pods", "p", "")
    assert parse_proxy_path("/api/v1/namespaces/ns/pods/p/proxy/a%2Fb") == ("ns", "pods", "p", "/a%2Fb")
    assert parse_proxy_path("/api/v1/nodes/n1/proxy/healthz") == (None, "nodes", "n1", "/healthz")
    assert parse_proxy_path("/api/v1/namespaces/ns/pods/p/log") is None
    assert parse_proxy_path("/api/v1/namespaces/ns/nodes/n/proxy/") is None


async def test_pod_proxy_passes_method_path_query_body_and_headers_both_ways(cluster: LocalCluster) -> None:
    async with backend() as port, http(cluster) as h:
        await running_pod(cluster, "p", "127.0.0.1", port)
        r = await h.post("/api/v1/namespaces/default/pods/p/proxy/a/b%20c/?x=1&resourceVersion=abc&status=201",
                         content=b'{"k": 1}', headers={"X-Custom": "v",
                                                       "Connection": "keep-alive, X-Drop", "X-Drop": "1"})
        assert r.status_code == 201, r.text
        got = r.json()
        assert got["method"] == "POST" and got["path"] == "/a/b c/" and got["body"] == '{"k": 1}'
        assert got["query"] == "x=1&resourceVersion=abc&status=201"
        sent = got["headers"]
        assert sent["x-custom"] == "v"
        assert "authorization" not in sent and "x-drop" not in sent
        assert sent["x-forwarded-uri"] == "/api/v1/namespaces/default/pods/p/proxy/a/b%20c/"
        assert sent["host"] == f"127.0.0.1:{port}"
        assert r.headers["x-backend"] == "yes" and "x-secret" not in r.headers


async def test_pod_proxy_without_a_port_uses_the_first_container_port_and_every_method(cluster: LocalCluster) -> None:
    async with backend() as port, http(cluster) as h:
        await running_pod(cluster, "p", "127.0.0.1", port)
        for method in ("GET", "PUT", "PATCH", "DELETE", "OPTIONS"):
            r = await h.request(method, "/api/v1/namespaces/default/pods/p/proxy/x")
            assert r.status_code == 200 and r.json()["method"] == method
        r = await h.head("/api/v1/namespaces/default/pods/p/proxy/x")
        assert r.status_code == 200
        r = await h.get(f"/api/v1/namespaces/default/pods/http:p:{port}/proxy/y")
        assert r.json()["path"] == "/y"


async def test_proxy_root_without_slash_redirects_and_same_host_redirects_keep_the_proxy_path(
        cluster: LocalCluster) -> None:
    async with backend() as port, http(cluster) as h:
        await running_pod(cluster, "p", "127.0.0.1", port)
        r = await h.get(f"/api/v1/namespaces/default/pods/p:{port}/proxy?a=1")
        assert r.status_code == 301
        assert r.headers["location"] == f"/api/v1/namespaces/default/pods/p:{port}/proxy/?a=1"
        r = await h.get(f"/api/v1/namespaces/default/pods/p:{port}/proxy/moved")
        assert r.status_code == 302
        assert r.headers["location"] == f"/api/v1/namespaces/default/pods/p:{port}/proxy/elsewhere/"


async def test_service_proxy_resolves_the_port_name_or_number_to_the_endpoint_target_port(
        cluster: LocalCluster) -> None:
    async with backend() as port, http(cluster) as h:
        await running_pod(cluster, "head", "127.0.0.1", port)
        await service_with_endpoints(cluster, "svc", "127.0.0.1", port, "head")
        for id_ in ("svc:dashboard", "svc:8265", "http:svc:dashboard"):
            r = await h.get(f"/api/v1/namespaces/default/services/{id_}/proxy/api/version/")
            assert r.status_code == 200 and r.json()["path"] == "/api/version/", id_


async def test_service_proxy_errors_are_kube_apiservers(cluster: LocalCluster) -> None:
    async with http(cluster) as h:
        base = "/api/v1/namespaces/default/services"
        assert status_of(await h.get(f"{base}/nope:dashboard/proxy/")) == (
            404, "NotFound", 'endpoints "nope" not found')
        assert status_of(await h.get(f"{base}/nope:8265/proxy/")) == (404, "NotFound", 'services "nope" not found')
        await cluster.client.create({"apiVersion": "v1", "kind": "Service",
                                     "metadata": {"name": "empty", "namespace": "default"},
                                     "spec": {"ports": [{"name": "dashboard", "port": 8265}]}})
        await cluster.client.create({"apiVersion": "v1", "kind": "Endpoints",
                                     "metadata": {"name": "empty", "namespace": "default"}})
        assert status_of(await h.get(f"{base}/empty:dashboard/proxy/")) == (
            503, "ServiceUnavailable", 'no endpoints available for service "empty"')
        assert status_of(await h.get(f"{base}/empty:81/proxy/")) == (
            503, "ServiceUnavailable", 'no service port 81 found for service "empty"')
        assert status_of(await h.get(f"{base}/ftp:empty:81/proxy/")) == (
            400, "BadRequest", 'invalid service request "ftp:empty:81"')
        # an endpoint address that is no Pod's address is skipped (isValidAddress)
        await running_pod(cluster, "other", "127.0.0.9")
        await service_with_endpoints(cluster, "stale", "127.0.0.1", 8265, "other")
        assert status_of(await h.get(f"{base}/stale:dashboard/proxy/")) == (
            503, "ServiceUnavailable", 'no endpoints available for service "stale:dashboard"')


async def test_pod_proxy_errors_are_kube_apiservers(cluster: LocalCluster) -> None:
    async with http(cluster) as h:
        base = "/api/v1/namespaces/default/pods"
        assert status_of(await h.get(f"{base}/nope/proxy/")) == (404, "NotFound", 'pods "nope" not found')
        assert status_of(await h.get(f"{base}/a:b:c:d/proxy/")) == (400, "BadRequest", 'invalid pod request "a:b:c:d"')
        await cluster.client.create(pod("pending"))
        assert status_of(await h.get(f"{base}/pending/proxy/")) == (400, "BadRequest", "address not allowed")
        await running_pod(cluster, "outside", "8.8.8.8", 53)
        assert status_of(await h.get(f"{base}/outside/proxy/")) == (400, "BadRequest", "address not allowed")
        free = socket.socket()
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
        free.close()
        await running_pod(cluster, "closed", "127.0.0.1", port)
        assert status_of(await h.get(f"{base}/closed/proxy/x")) == (
            503, "ServiceUnavailable", f"error trying to reach service: dial tcp 127.0.0.1:{port}: connect: "
                                       "connection refused")



async def test_pod_proxy_port_that_cannot_be_dialled_is_a_503_as_gos_dialer_says(cluster: LocalCluster) -> None:
    """kube-apiserver puts the id's port into the URL as given, and Go's dialer refuses it: a
    number out of range, or a name /etc/services does not know (was: 500 from the URL parser)."""
    async with http(cluster) as h:
        base = "/api/v1/namespaces/default/pods"
        await running_pod(cluster, "p1", "127.0.0.1", 1)
        for port, detail in (("99999", "address 99999: invalid port"), ("-1", "address -1: invalid port"),
                             ("no-such-port", "lookup tcp/no-such-port: unknown port"),
                             ("1.5", "lookup tcp/1.5: unknown port"), ("%5B", "lookup tcp/[: unknown port")):
            assert status_of(await h.get(f"{base}/p1:{port}/proxy/x")) == (
                503, "ServiceUnavailable", f"error trying to reach service: dial tcp: {detail}"), port


async def test_node_proxy_reaches_the_node_agent(cluster: LocalCluster) -> None:
    async with backend() as port, http(cluster) as h:
        await cluster.client.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "agent"},
                                     "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                                                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}})
        r = await h.get("/api/v1/nodes/agent/proxy/healthz")
        assert r.status_code == 200 and r.text == "ok"
        r = await h.get(f"/api/v1/nodes/agent:{port}/proxy/healthz")
        assert r.text == "ok"
        assert status_of(await h.get("/api/v1/nodes/nope/proxy/healthz")) == (404, "NotFound", 'nodes "nope" not found')
        code, _, message = status_of(await h.get("/api/v1/nodes/agent:22/proxy/"))
        assert code == 400 and message.startswith("port 22 of node agent is not proxied")


async def test_discovery_lists_the_proxy_subresources(cluster: LocalCluster) -> None:
    async with http(cluster) as h:
        doc = (await h.get("/api/v1")).json()
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["pods/proxy"]["kind"] == "PodProxyOptions"
    assert by_name["services/proxy"]["kind"] == "ServiceProxyOptions"
    assert by_name["nodes/proxy"]["kind"] == "NodeProxyOptions"
    assert json.dumps(sorted(by_name["services/proxy"]["verbs"])) == '["create", "delete", "get", "patch", "update"]'


async def test_proxy_is_authorized_as_a_subresource_verb_by_rbac(cluster: LocalCluster) -> None:
    """``get`` on ``services/proxy`` lets a user GET through a Service and nothing more (the
    request runs as ``alice`` by impersonation, whose headers are not passed on)."""
    async with backend() as port, http(cluster) as h:
        await running_pod(cluster, "head", "127.0.0.1", port)
        await service_with_endpoints(cluster, "svc", "127.0.0.1", port, "head")
        url = "/api/v1/namespaces/default/services/svc:dashboard/proxy/api/"
        alice = {"Impersonate-User": "alice"}
        assert status_of(await h.get(url, headers=alice)) == (
            403, "Forbidden", 'services "svc:dashboard" is forbidden: User "alice" cannot get resource '
                              '"services/proxy" in API group "" in the namespace "default"')
        rbac = "rbac.authorization.k8s.io"
        await cluster.client.create({"apiVersion": f"{rbac}/v1", "kind": "Role",
                                     "metadata": {"name": "proxy-get", "namespace": "default"},
                                     "rules": [{"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["get"]}]})
        await cluster.client.create({"apiVersion": f"{rbac}/v1", "kind": "RoleBinding",
                                     "metadata": {"name": "alice-proxy", "namespace": "default"},
                                     "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "proxy-get"},
                                     "subjects": [{"apiGroup": rbac, "kind": "User", "name": "alice"}]})
        r = await h.get(url, headers=alice)
        assert r.status_code == 200 and not any(k.startswith("impersonate-") for k in r.json()["headers"])
        code, _, message = status_of(await h.post(url, headers=alice, content=b"{}"))
        assert code == 403 and 'cannot create resource "services/proxy"' in message
        code, _, _ = status_of(await h.get("/api/v1/namespaces/default/pods/head/proxy/", headers=alice))
        assert code == 403


async def test_kuberay_use_kubernetes_proxy_client_reaches_the_dashboard_through_the_head_service(
        cluster: LocalCluster) -> None:
    """``pumice controller-manager --use-kubernetes-proxy``'s dashboard client: ``GET /api/jobs/``
    goes to ``<server>/api/v1/namespaces/<ns>/services/<head svc>:dashboard/proxy/api/jobs/`` with
    the manager's credentials (here the admin token) and reaches the head Pod."""
    from pumice.controllers.ray.dashboard import kubernetes_proxy_dashboard_client_factory

    async with backend() as port, http(cluster) as h:
        await running_pod(cluster, "head", "127.0.0.1", port)
        await service_with_endpoints(cluster, "ray-head-svc", "127.0.0.1", port, "head")
        rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "ray", "namespace": "default"},
              "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head"}]}}}}}
        dash = kubernetes_proxy_dashboard_client_factory(h)(rc, "")
        assert await dash.list_jobs() == []
        assert JOB_LISTS[-1]["x-forwarded-uri"] == (
            "/api/v1/namespaces/default/services/ray-head-svc:dashboard/proxy/api/jobs/")


async def test_kuberay_use_kubernetes_proxy_serve_health_check_goes_through_pods_proxy(cluster: LocalCluster) -> None:
    """The Serve proxy health check of ``--use-kubernetes-proxy``: ``GET .../pods/<head>:<port>/proxy/-/healthz``;
    200 is healthy, a closed port (503 from the proxy) is not."""
    from pumice.controllers.ray.dashboard import kubernetes_proxy_serve_health_check

    async with backend() as port, http(cluster) as h:
        await running_pod(cluster, "head", "127.0.0.1", port)
        head = await cluster.client.get(cluster.scheme.by_api_version_kind("v1", "Pod"), "head", "default")
        healthy = kubernetes_proxy_serve_health_check(h)
        assert await healthy(head, port) is True
        free = socket.socket()
        free.bind(("127.0.0.1", 0))
        closed = free.getsockname()[1]
        free.close()
        assert await healthy(head, closed) is False
        assert await healthy({"metadata": {"name": "head", "namespace": "default"}}, port) is False  # no IP yet
