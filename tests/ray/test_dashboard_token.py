"""Ray token authentication from the RayJob and RayService controllers' side: the dashboard client
reads the cluster's auth Secret and sends ``x-ray-authorization: Bearer <token>``, as upstream's
GetRayDashboardClientFunc does.

The dashboard here is a real HTTP server on a loopback ephemeral port that, like Ray 2.52+ with
``RAY_AUTH_MODE=token``, answers 401 to any request without the right header.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pumice.api import Obj, scheme
from pumice.apiserver import defaults as api_defaults
from pumice.controllers.ray.common import job as jobb
from pumice.controllers.ray.dashboard import (
    DashboardError,
    HttpDashboardClient,
    cluster_auth_token,
    dashboard_client_for,
    http_dashboard_client_factory,
)
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme
from .test_rayjob import Harness as JobHarness
from .test_rayservice import NAME as RS_NAME
from .test_rayservice import Harness as ServiceHarness
from .test_rayservice import running

TOKEN = "c2VjcmV0LXRva2VuLWZvci10ZXN0cw=="


class TokenDashboard:
    """Ray's Jobs REST API, the part the RayJob controller uses, behind token auth."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.jobs: dict[str, Obj] = {}
        self.seen: list[tuple[str, str, str | None]] = []  # (method, path, header)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, code: int, body: Any) -> None:
                data = (json.dumps(body) if not isinstance(body, str) else body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json" if not isinstance(body, str) else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                header = self.headers.get("x-ray-authorization")
                outer.seen.append((self.command, self.path, header))
                if header != f"Bearer {outer.token}":
                    self._reply(401, "Missing authentication token" if header is None else "Invalid token")
                    return False
                return True

            def do_GET(self) -> None:
                if not self._authorized():
                    return
                sid = self.path.removeprefix("/api/jobs/")
                if sid in outer.jobs:
                    self._reply(200, outer.jobs[sid])
                else:
                    self._reply(404, f"Job {sid} does not exist")

            def do_POST(self) -> None:
                if not self._authorized():
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path == "/api/jobs/":
                    sid = body["submission_id"]
                    outer.jobs[sid] = {"status": "PENDING", "submission_id": sid, "entrypoint": body["entrypoint"],
                                       "start_time": 1000}
                    self._reply(200, {"submission_id": sid, "job_id": sid})
                elif self.path.endswith("/stop"):
                    self._reply(200, {"stopped": True})
                else:
                    self._reply(404, "not found")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="token-dashboard", daemon=True)

    def __enter__(self) -> TokenDashboard:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def server() -> Iterator[TokenDashboard]:
    with TokenDashboard(TOKEN) as s:
        yield s


def token_cluster(name: str = "c", *, secret_name: str | None = None, mode: str = "token") -> Obj:
    auth: Obj = {"mode": mode}
    if secret_name:
        auth["secretName"] = secret_name
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name, "namespace": "default"},
            "spec": {"rayVersion": "2.52.0", "authOptions": auth,
                     "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head"}]}}}}}


async def store_secret(client: FakeClient, name: str, string_data: dict[str, str]) -> None:
    """Create a Secret as the API server stores it (stringData merged into base64 ``data``; the
    FakeClient, like controller-runtime's fake, does not do that v1 conversion itself)."""
    secret: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"},
                   "stringData": dict(string_data)}
    api_defaults.secret(secret)
    await client.create(secret)


async def convert_stored_secret(client: FakeClient, name: str) -> None:
    """Apply the API server's stringData -> data conversion to a Secret a controller created."""
    secret = await client.get(scheme.SECRET, name, "default")
    api_defaults.secret(secret)
    await client.update(secret)


async def test_the_client_sends_the_token_header_and_the_server_refuses_without_it(server: TokenDashboard) -> None:
    url = f"http://127.0.0.1:{server.port}"
    assert await HttpDashboardClient(url, token=TOKEN).get_job_info("nope") is None
    with pytest.raises(DashboardError, match="HTTP 401"):
        await HttpDashboardClient(url).get_job_info("nope")
    with pytest.raises(DashboardError, match="HTTP 401"):
        await HttpDashboardClient(url, token="wrong").get_job_info("nope")
    assert [h for _, _, h in server.seen] == [f"Bearer {TOKEN}", None, "Bearer wrong"]


async def test_token_is_read_from_the_cluster_secret_or_the_named_secret() -> None:
    client = FakeClient(ray_scheme())
    await store_secret(client, "c", {"auth_token": TOKEN})
    await store_secret(client, "mine", {"auth_token": "other"})
    assert await cluster_auth_token(client, token_cluster()) == TOKEN
    assert await cluster_auth_token(client, token_cluster(secret_name="mine")) == "other"
    # Not token mode: no Secret is read, no header is sent.
    assert await cluster_auth_token(client, token_cluster(mode="disabled")) is None
    plain = token_cluster()
    del plain["spec"]["authOptions"]
    assert await cluster_auth_token(client, plain) is None


async def test_a_missing_secret_or_key_is_an_error_with_upstreams_text() -> None:
    client = FakeClient(ray_scheme())
    with pytest.raises(DashboardError, match=r"^failed to get auth secret default/c: "):
        await cluster_auth_token(client, token_cluster())
    await store_secret(client, "c", {"other": "x"})
    with pytest.raises(DashboardError) as e:
        await cluster_auth_token(client, token_cluster())
    assert str(e.value) == "auth token key '\"auth_token\"' not found in secret default/c"


async def test_dashboard_client_for_dials_the_head_with_the_token(server: TokenDashboard) -> None:
    client = FakeClient(ray_scheme())
    await store_secret(client, "c", {"auth_token": TOKEN})
    cluster = token_cluster()
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "dashboard", "containerPort": server.port}]
    cluster["status"] = {"head": {"podIP": "127.0.0.1"}}
    dash = await dashboard_client_for(client, http_dashboard_client_factory, cluster, "unused:8265")
    assert await dash.get_job_info("j") is None
    assert server.seen == [("GET", "/api/jobs/j", f"Bearer {TOKEN}")]


async def test_an_http_mode_rayjob_on_a_token_cluster_submits_and_completes(server: TokenDashboard) -> None:
    h = JobHarness()
    h.rj.dashboard_client_factory = http_dashboard_client_factory
    await h.create(submissionMode="HTTPMode")
    job = await h.job()
    cspec = job["spec"]["rayClusterSpec"]
    cspec["rayVersion"] = "2.52.0"
    cspec["authOptions"] = {"mode": "token"}
    head = cspec["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["ports"] = [p for p in head.get("ports") or [] if p.get("name") != "dashboard"] + [
        {"name": "dashboard", "containerPort": server.port}]
    await h.client.update(job)
    await h.step()  # New -> Initializing
    await h.step()  # creates the RayCluster
    name = (await h.status())["rayClusterName"]
    await h.rc.reconcile(Request("default", name))  # creates the auth Secret and the Pods
    await convert_stored_secret(h.client, name)
    secret = await h.client.get(scheme.SECRET, name, "default")
    server.token = base64.b64decode(secret["data"]["auth_token"]).decode()  # what RAY_AUTH_TOKEN gives Ray
    assert len(server.token) == 44
    for p in (await h.client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={name}")).items:
        p["apiVersion"], p["kind"] = "v1", "Pod"
        p["status"] = {"phase": "Running", "podIP": "127.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
        await h.client.update_status(p)
    await h.rc.reconcile(Request("default", name))
    await h.step()  # -> Running
    await h.step()  # the job is unknown to Ray: submitted over HTTP
    job_id = (await h.status())["jobId"]
    assert job_id in server.jobs
    server.jobs[job_id].update(status="SUCCEEDED", end_time=2000)
    for _ in range(3):
        await h.step()
    st = await h.status()
    assert (st["jobStatus"], st["jobDeploymentStatus"]) == ("SUCCEEDED", "Complete"), st
    assert server.seen and all(hdr == f"Bearer {server.token}" for _, _, hdr in server.seen), server.seen
    assert ("POST", "/api/jobs/", f"Bearer {server.token}") in server.seen


async def test_a_rayjob_whose_token_secret_is_missing_fails_the_pass_and_sends_nothing(server: TokenDashboard) -> None:
    h = JobHarness()
    h.rj.dashboard_client_factory = http_dashboard_client_factory
    await h.create(submissionMode="HTTPMode")
    job = await h.job()
    job["spec"]["rayClusterSpec"]["rayVersion"] = "2.52.0"
    job["spec"]["rayClusterSpec"]["authOptions"] = {"mode": "token", "secretName": "absent"}
    await h.client.update(job)
    await h.step()
    await h.step()
    await h.cluster_ready()
    await h.step()  # -> Running
    with pytest.raises(DashboardError, match="failed to get auth secret default/absent"):
        await h.step()
    assert server.seen == []


async def test_the_rayservice_controller_opens_its_dashboard_client_with_the_token() -> None:
    h = ServiceHarness()
    await h.create(rayClusterConfig={**(await _sample_cluster_config(h)), "rayVersion": "2.52.0",
                                     "authOptions": {"mode": "token"}})
    await h.step(2)
    with pytest.raises(LookupError, match="found 0 head"):
        await h.step()
    name = (await h.status())["pendingServiceStatus"]["rayClusterName"]
    await h.cluster_ready(name)
    await convert_stored_secret(h.client, name)
    secret = await h.client.get(scheme.SECRET, name, "default")
    token = base64.b64decode(secret["data"]["auth_token"]).decode()
    h.dash(name).serve_details = running("fruit_app", "math_app")
    await h.serve_endpoints(name, 2)
    await h.step()
    assert (await h.status())["activeServiceStatus"]["rayClusterName"] == name
    assert h.dash(name).tokens and set(h.dash(name).tokens) == {token}
    assert h.dash(name).serve_configs, "the Serve config was PUT"


async def _sample_cluster_config(h: ServiceHarness) -> Obj:
    rs = load_sample("ray-service.sample.yaml", "RayService")
    assert rs["metadata"]["name"] == RS_NAME
    cfg: Obj = rs["spec"]["rayClusterConfig"]
    return cfg


TOKEN_ENV = [{"name": "RAY_AUTH_MODE", "value": "token"},
             {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": "rayjob-sample-abcde", "key": "auth_token"}}}]


def test_the_k8sjobmode_submitter_gets_the_token_env_so_ray_job_submit_authenticates() -> None:
    job = load_sample("ray-job.sample.yaml", "RayJob")
    job["status"] = {"dashboardURL": "h:8265", "jobId": "id-1"}
    spec = job["spec"]["rayClusterSpec"]
    spec["authOptions"] = {"mode": "token"}
    tmpl = jobb.build_submitter_pod_template(job, spec, cluster_name="rayjob-sample-abcde")
    env = tmpl["spec"]["containers"][0]["env"]
    assert env[-2:] == TOKEN_ENV
    assert "volumes" not in tmpl["spec"]
    spec["authOptions"] = {"mode": "token", "secretName": "mine"}
    env = jobb.build_submitter_pod_template(job, spec, cluster_name="x")["spec"]["containers"][0]["env"]
    assert env[-1]["valueFrom"]["secretKeyRef"] == {"name": "mine", "key": "auth_token"}
    del spec["authOptions"]
    env = jobb.build_submitter_pod_template(job, spec, cluster_name="x")["spec"]["containers"][0]["env"]
    assert not any(e["name"].startswith("RAY_AUTH") for e in env)


def test_the_sidecar_submitter_gets_the_token_env() -> None:
    job = load_sample("ray-job.sample.yaml", "RayJob")
    job["spec"]["submissionMode"] = "SidecarMode"
    job["status"] = {"dashboardURL": "h:8265", "jobId": "id-1"}
    job["spec"]["rayClusterSpec"]["authOptions"] = {"mode": "token"}
    cluster = jobb.build_cluster_for_rayjob(job, "rayjob-sample-abcde")
    sidecar = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][-1]
    assert sidecar["name"] == "ray-job-submitter"
    assert sidecar["env"][-2:] == TOKEN_ENV
