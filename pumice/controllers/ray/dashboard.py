"""The Ray dashboard seam: the Jobs REST API (and the Serve API for RayService).

:class:`RayDashboardClient` is the Protocol the controllers use; :class:`HttpDashboardClient` is
the real one over httpx2; :class:`pumice.testing.ray_dashboard.FakeRayDashboardClient` is the fake.

Where the dashboard is: upstream dials ``http://<head-svc>.<ns>.svc.<domain>:<dashboard port>``
(the ``status.dashboardURL`` of a RayJob), which resolves inside the cluster network. The pumice
operator runs on the host, where Service names do not resolve but Pod IPs are reachable, so
:func:`http_dashboard_client_factory` dials the head Pod IP from ``RayCluster.status.head.podIP``
and the head Service's ``dashboard`` port, and falls back to the dashboard URL only when the Pod IP
is not known yet. ``status.dashboardURL`` still holds the Service FQDN form, because the submitter
Pod (inside the Pod network, with Service names in its hosts file) uses it.

Token authentication: for a RayCluster with ``authOptions.mode: token`` the controllers open their
client with :func:`dashboard_client_for`, which reads ``auth_token`` from the cluster's auth Secret
(``authOptions.secretName``, else the cluster's name) and hands it to the factory; the client sends
it as ``x-ray-authorization: Bearer <token>`` on every request (upstream's
utils.GetRayDashboardClientFunc and RayDashboardClient.setAuthHeader).

Mirrors: kuberay ray-operator/controllers/ray/utils/dashboardclient/dashboard_httpclient.go and
utils/types/dashboard_httpclient.go.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

import httpx2

from pumice.api import Obj, scheme
from pumice.client.base import ApiError, KubeClient
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.association import head_service_name
from pumice.controllers.ray.common import pod as podb
from pumice.controllers.ray.common.job import runtime_env_json

DIRECT_TIMEOUT_SECONDS = 2.0
PROXY_TIMEOUT_SECONDS = 10.0
"""Per-request timeout through the API server's service proxy (KubeRay
RayHTTPClientProxyTimeoutSeconds)."""


class DashboardError(Exception):
    """A dashboard call failed (connection error, timeout, or an unexpected HTTP status)."""


class NoDashboardAddress(DashboardError):
    """No dashboard address is known yet (the head Pod has no IP and the RayJob no
    ``status.dashboardURL``), so no request was sent. Upstream builds ``http://`` with an empty host
    there and its request fails; pumice says so before sending anything."""


@dataclass(frozen=True)
class RayJobInfo:
    """One Ray job as the dashboard reports it (``GET /api/jobs/{id}``).

    Attributes:
        job_status: ``PENDING`` | ``RUNNING`` | ``STOPPED`` | ``SUCCEEDED`` | ``FAILED``.
        start_time / end_time: epoch milliseconds (0 when unset).
    """

    job_status: str
    entrypoint: str = ""
    job_id: str = ""
    submission_id: str = ""
    message: str = ""
    error_type: str = ""
    start_time: int = 0
    end_time: int = 0
    metadata: dict[str, str] = field(default_factory=dict)
    runtime_env: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, d: Obj) -> RayJobInfo:
        return cls(
            job_status=str(d.get("status") or ""),
            entrypoint=str(d.get("entrypoint") or ""),
            job_id=str(d.get("job_id") or ""),
            submission_id=str(d.get("submission_id") or ""),
            message=str(d.get("message") or ""),
            error_type=str(d.get("error_type") or ""),
            start_time=int(d.get("start_time") or 0),
            end_time=int(d.get("end_time") or 0),
            metadata=dict(d.get("metadata") or {}),
            runtime_env=dict(d.get("runtime_env") or {}),
        )


def submit_request_body(rayjob: Obj) -> Obj:
    """``POST /api/jobs/`` body for a RayJob (HTTPMode): entrypoint, submission_id (status.jobId),
    runtime_env, metadata, entrypoint_num_cpus/gpus/resources."""
    spec = rayjob.get("spec", {})
    body: Obj = {"entrypoint": spec.get("entrypoint", ""),
                 "submission_id": (rayjob.get("status") or {}).get("jobId", "")}
    renv = runtime_env_json(rayjob)
    if renv:
        body["runtime_env"] = json.loads(renv)
    if spec.get("metadata"):
        body["metadata"] = dict(spec["metadata"])
    if spec.get("entrypointNumCpus"):
        body["entrypoint_num_cpus"] = float(spec["entrypointNumCpus"])
    if spec.get("entrypointNumGpus"):
        body["entrypoint_num_gpus"] = float(spec["entrypointNumGpus"])
    if spec.get("entrypointResources"):
        body["entrypoint_resources"] = json.loads(spec["entrypointResources"])
    return body


class RayDashboardClient(Protocol):
    """What the controllers ask the Ray dashboard. Every method raises :class:`DashboardError`."""

    async def get_job_info(self, job_id: str) -> RayJobInfo | None:
        """The job, or None when the dashboard does not know ``job_id`` (HTTP 404)."""
        ...

    async def list_jobs(self) -> list[RayJobInfo]: ...

    async def submit_job(self, rayjob: Obj) -> str:
        """Submit with ``status.jobId`` as submission id; an "already used" answer is success.
        Returns the submission id."""
        ...

    async def get_job_log(self, job_id: str) -> str: ...

    async def stop_job(self, job_id: str) -> None:
        """Stop; when the dashboard says not stopped, accept a job that is already terminal."""
        ...

    async def delete_job(self, job_id: str) -> None: ...

    async def get_serve_details(self) -> Obj:
        """``GET /api/serve/applications/?api_type=declarative``."""
        ...

    async def update_deployments(self, config: Obj) -> None:
        """``PUT /api/serve/applications/`` with the Serve config (JSON)."""
        ...


class DashboardClientFactory(Protocol):
    """``(ray_cluster, dashboard_url, auth_token=None) -> client``; ``auth_token`` is the Ray auth
    token of a token-auth cluster (None: send no ``x-ray-authorization`` header)."""

    def __call__(self, cluster: Obj, dashboard_url: str, auth_token: str | None = None) -> RayDashboardClient: ...


async def cluster_auth_token(client: KubeClient, cluster: Obj) -> str | None:
    """The Ray auth token of ``cluster``: None unless ``spec.authOptions.mode`` is ``token``; else the
    decoded ``data.auth_token`` of Secret ``authOptions.secretName`` (default: the cluster's name)
    in the cluster's namespace.

    Raises:
        DashboardError: the Secret cannot be read, or has no ``auth_token`` (upstream's texts:
            "failed to get auth secret NS/NAME: ..." and "auth token key '"auth_token"' not found
            in secret NS/NAME").

    Mirrors: utils/util.go GetRayDashboardClientFunc (the token part)."""
    spec = cluster.get("spec") or {}
    if not podb.is_auth_enabled(spec):
        return None
    md = cluster.get("metadata") or {}
    ns = str(md.get("namespace") or "default")
    name = podb.auth_secret_name(str(md.get("name", "")), spec.get("authOptions"))
    try:
        secret = await client.get(scheme.SECRET, name, ns)
    except ApiError as e:
        raise DashboardError(f"failed to get auth secret {ns}/{name}: {e}") from e
    key = podb.RAY_AUTH_TOKEN_SECRET_KEY
    value = (secret.get("data") or {}).get(key)
    if value is None:
        raise DashboardError(f"auth token key '\"{key}\"' not found in secret {ns}/{name}")
    try:
        return base64.b64decode(str(value), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as e:
        raise DashboardError(f"auth token key '\"{key}\"' in secret {ns}/{name} is not base64 text: {e}") from e


async def dashboard_client_for(client: KubeClient, factory: DashboardClientFactory, cluster: Obj,
                               dashboard_url: str) -> RayDashboardClient:
    """The dashboard client the RayJob and RayService controllers use for ``cluster``: ``factory``
    with the cluster's auth token (:func:`cluster_auth_token`).

    Raises:
        DashboardError: the token of a token-auth cluster cannot be read."""
    return factory(cluster, dashboard_url, await cluster_auth_token(client, cluster))


class HttpDashboardClient:
    """:class:`RayDashboardClient` over HTTP.

    Args:
        base_url: ``http://host:port`` of the dashboard; one without a host (``""``) makes every
            call raise :class:`NoDashboardAddress` without sending anything.
        timeout: seconds per request (upstream: 2 s direct).
        token: optional Ray auth token (header ``x-ray-authorization: Bearer <token>``).
    """

    def __init__(self, base_url: str, *, timeout: float = DIRECT_TIMEOUT_SECONDS, token: str | None = None,
                 transport: Any = None, client: httpx2.AsyncClient | None = None) -> None:
        base_url = base_url.strip()
        if not base_url.startswith(("http://", "https://")):
            base_url = "http://" + base_url
        # no host (an empty dashboard URL): every request raises NoDashboardAddress instead
        self.base_url = base_url.rstrip("/") if urlsplit(base_url).netloc else ""
        headers = {"x-ray-authorization": f"Bearer {token}"} if token else {}
        kwargs: Obj = {"timeout": timeout, "headers": headers}
        if transport is not None:
            kwargs["transport"] = transport
        self._kwargs = kwargs
        self._client = client

    async def _request(self, method: str, path: str, **kw: Any) -> httpx2.Response:
        if not self.base_url:
            raise NoDashboardAddress(f"{method} {path}: no dashboard address yet (the head Pod has no IP "
                                     "and status.dashboardURL is empty)")
        try:
            if self._client is not None:  # a shared client (the API server's, with its credentials)
                return await self._client.request(method, self.base_url + path, timeout=self._kwargs["timeout"],
                                                  headers=self._kwargs["headers"], **kw)
            async with httpx2.AsyncClient(**self._kwargs) as http:
                return await http.request(method, self.base_url + path, **kw)
        except httpx2.HTTPError as e:
            raise DashboardError(f"{method} {self.base_url}{path}: {e!r}") from e

    async def get_job_info(self, job_id: str) -> RayJobInfo | None:
        r = await self._request("GET", f"/api/jobs/{job_id}")
        if r.status_code == 404:
            return None
        if r.status_code != 200:
            raise DashboardError(f"GET /api/jobs/{job_id}: HTTP {r.status_code}: {r.text[:200]}")
        return RayJobInfo.from_wire(r.json())

    async def list_jobs(self) -> list[RayJobInfo]:
        r = await self._request("GET", "/api/jobs/")
        if r.status_code != 200:
            raise DashboardError(f"GET /api/jobs/: HTTP {r.status_code}: {r.text[:200]}")
        return [RayJobInfo.from_wire(d) for d in r.json()]

    async def submit_job(self, rayjob: Obj) -> str:
        body = submit_request_body(rayjob)
        r = await self._request("POST", "/api/jobs/", json=body)
        if r.status_code == 200:
            return str(r.json().get("submission_id") or body["submission_id"])
        if "Please use a different submission_id" in r.text:
            return str(body["submission_id"])
        raise DashboardError(f"POST /api/jobs/: HTTP {r.status_code}: {r.text[:300]}")

    async def get_job_log(self, job_id: str) -> str:
        r = await self._request("GET", f"/api/jobs/{job_id}/logs")
        if r.status_code != 200:
            raise DashboardError(f"GET /api/jobs/{job_id}/logs: HTTP {r.status_code}")
        return str(r.json().get("logs", ""))

    async def stop_job(self, job_id: str) -> None:
        r = await self._request("POST", f"/api/jobs/{job_id}/stop")
        if r.status_code != 200:
            raise DashboardError(f"POST /api/jobs/{job_id}/stop: HTTP {r.status_code}: {r.text[:200]}")
        if not r.json().get("stopped", False):
            info = await self.get_job_info(job_id)
            if info is None or not c.is_job_terminal(info.job_status):
                raise DashboardError(f"failed to stop job {job_id}: not stopped and not terminal")

    async def delete_job(self, job_id: str) -> None:
        r = await self._request("DELETE", f"/api/jobs/{job_id}")
        if r.status_code not in (200, 404):
            raise DashboardError(f"DELETE /api/jobs/{job_id}: HTTP {r.status_code}")

    async def get_serve_details(self) -> Obj:
        r = await self._request("GET", "/api/serve/applications/", params={"api_type": "declarative"})
        if r.status_code != 200:
            raise DashboardError(f"GET /api/serve/applications/: HTTP {r.status_code}")
        data: Obj = r.json()
        return data

    async def update_deployments(self, config: Obj) -> None:
        r = await self._request("PUT", "/api/serve/applications/", json=config)
        if r.status_code != 200:
            raise DashboardError(f"PUT /api/serve/applications/: HTTP {r.status_code}: {r.text[:200]}")


def dashboard_port_of(cluster: Obj) -> int:
    """The ``dashboard`` container port of the head's Ray container (8265 by default)."""
    containers = cluster.get("spec", {}).get("headGroupSpec", {}).get("template", {}).get("spec", {}).get(
        "containers") or []
    if containers:
        for p in containers[0].get("ports") or []:
            if p.get("name") == c.DASHBOARD_PORT_NAME:
                return int(p["containerPort"])
    return c.DEFAULT_DASHBOARD_PORT


def http_dashboard_client_factory(cluster: Obj, dashboard_url: str, auth_token: str | None = None) -> RayDashboardClient:
    """Dial the head Pod IP (``status.head.podIP``) on the dashboard port; fall back to
    ``dashboard_url`` while the Pod IP is unknown (see the module docstring). ``auth_token``: sent
    as ``x-ray-authorization: Bearer <token>``."""
    pod_ip = ((cluster.get("status") or {}).get("head") or {}).get("podIP")
    if pod_ip:
        return HttpDashboardClient(f"http://{pod_ip}:{dashboard_port_of(cluster)}", token=auth_token)
    return HttpDashboardClient(dashboard_url, token=auth_token)


def proxied_dashboard_client_factory(base_url: str) -> DashboardClientFactory:
    """A factory that reaches RayCluster ``<ns>/<name>``'s dashboard at ``<base_url>/<ns>/<name>``
    (a proxy that routes by cluster, for an operator that cannot dial Pod IPs; the simulated node
    agent's ``--sim-ray-dashboard`` serves this layout)."""
    base = base_url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        base = "http://" + base

    def factory(cluster: Obj, dashboard_url: str, auth_token: str | None = None) -> RayDashboardClient:
        md = cluster.get("metadata") or {}
        return HttpDashboardClient(f"{base}/{quote(str(md.get('namespace', '')), safe='')}/"
                                   f"{quote(str(md.get('name', '')), safe='')}", token=auth_token)

    return factory


def kubernetes_proxy_dashboard_client_factory(api: httpx2.AsyncClient) -> DashboardClientFactory:
    """KubeRay's ``--use-kubernetes-proxy``: reach each RayCluster's dashboard through the API
    server's service proxy, ``<server>/api/v1/namespaces/<ns>/services/<head svc>:dashboard/proxy``,
    with the operator's own credentials (``api``: its client, base URL and auth set) and a 10 s
    timeout. The head Service is ``status.head.serviceName``, else the generated name.

    Mirrors: ray-operator controllers/ray/utils/util.go GetRayDashboardClientFunc."""
    server = str(api.base_url).rstrip("/")

    def factory(cluster: Obj, dashboard_url: str, auth_token: str | None = None) -> RayDashboardClient:
        md = cluster.get("metadata") or {}
        svc = ((cluster.get("status") or {}).get("head") or {}).get("serviceName") or head_service_name(cluster)
        base = (f"{server}/api/v1/namespaces/{quote(str(md.get('namespace', '')), safe='')}/services/"
                f"{quote(str(svc), safe='')}:{c.DASHBOARD_PORT_NAME}/proxy")
        return HttpDashboardClient(base, timeout=PROXY_TIMEOUT_SECONDS, token=auth_token, client=api)

    return factory


ServeProxyHealthCheck = Callable[[Obj, int], Awaitable[bool]]
"""``(head Pod, serve_port) -> healthy``: does the Serve proxy on the head Pod answer
``/-/healthz`` with HTTP 200."""


def pod_ip_of(pod: Obj) -> str:
    """``status.podIP`` ("" while the Pod has none)."""
    return str((pod.get("status") or {}).get("podIP") or "")


def proxied_serve_proxy_health_check(base_url: str, *, transport: httpx2.AsyncBaseTransport | None = None
                                     ) -> ServeProxyHealthCheck:
    """A :data:`ServeProxyHealthCheck` through the proxy of :func:`proxied_dashboard_client_factory`:
    ``GET <base_url>/serve-proxy/<pod_ip>/<port>/-/healthz`` stands for ``GET
    http://<pod_ip>:<port>/-/healthz`` (the simulated node agent's ``--sim-ray-dashboard`` answers
    it). True iff HTTP 200; a connection error or timeout is an unhealthy answer, as in
    :func:`http_serve_proxy_healthy`. ``transport``: for tests (an ASGI app)."""
    base = base_url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        base = "http://" + base

    async def healthy(pod: Obj, port: int) -> bool:
        pod_ip = pod_ip_of(pod)
        if not pod_ip:
            return False
        try:
            async with httpx2.AsyncClient(timeout=DIRECT_TIMEOUT_SECONDS, transport=transport) as http:
                r = await http.get(f"{base}/serve-proxy/{quote(pod_ip, safe='')}/{int(port)}{c.SERVE_PROXY_HEALTH_PATH}")
        except httpx2.HTTPError:
            return False
        return r.status_code == 200

    return healthy


def kubernetes_proxy_serve_health_check(api: httpx2.AsyncClient) -> ServeProxyHealthCheck:
    """KubeRay's ``--use-kubernetes-proxy`` Serve proxy health check: ``GET <server>/api/v1/
    namespaces/<ns>/pods/<head pod>:<port>/proxy/-/healthz`` with the operator's credentials
    (``api``) and a 10 s timeout; True iff HTTP 200 (a failure is an unhealthy answer).

    Mirrors: ray-operator controllers/ray/utils/util.go GetRayHttpProxyClientFunc."""
    server = str(api.base_url).rstrip("/")

    async def healthy(pod: Obj, port: int) -> bool:
        md = pod.get("metadata") or {}
        if not md.get("name") or not pod_ip_of(pod):
            return False
        url = (f"{server}/api/v1/namespaces/{quote(str(md.get('namespace', '')), safe='')}/pods/"
               f"{quote(str(md['name']), safe='')}:{int(port)}/proxy{c.SERVE_PROXY_HEALTH_PATH}")
        try:
            r = await api.get(url, timeout=PROXY_TIMEOUT_SECONDS)
        except httpx2.HTTPError:
            return False
        return r.status_code == 200

    return healthy


async def http_serve_proxy_healthy(pod: Obj, port: int) -> bool:
    """GET ``http://<pod IP>:<port>/-/healthz`` with a 2 s timeout; True iff HTTP 200. A connection
    error or timeout is an unhealthy answer, not an error (the label just stays ``false``).

    Mirrors: utils/httpproxy_httpclient.go CheckProxyActorHealth."""
    pod_ip = pod_ip_of(pod)
    if not pod_ip:
        return False
    try:
        async with httpx2.AsyncClient(timeout=DIRECT_TIMEOUT_SECONDS) as http:
            r = await http.get(f"http://{pod_ip}:{port}{c.SERVE_PROXY_HEALTH_PATH}")
    except httpx2.HTTPError:
        return False
    return r.status_code == 200
