"""The HTTP dashboard client against a small in-process stand-in for Ray's Jobs REST API
(request shapes and status codes as Ray 2.x serves them)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from pumice.api import Obj
from pumice.controllers.ray.dashboard import (
    DashboardError,
    HttpDashboardClient,
    NoDashboardAddress,
    http_dashboard_client_factory,
)


def ray_jobs_app() -> tuple[Starlette, dict[str, Obj]]:
    jobs: dict[str, Obj] = {}

    async def submit(req: Request) -> Any:
        body = await req.json()
        sid = body["submission_id"]
        if sid in jobs:
            return PlainTextResponse(f"Job with submission_id {sid} already exists. "
                                     "Please use a different submission_id.", status_code=500)
        jobs[sid] = {"status": "PENDING", "submission_id": sid, "entrypoint": body["entrypoint"],
                     "runtime_env": body.get("runtime_env", {}), "start_time": 1000, "end_time": None}
        return JSONResponse({"submission_id": sid, "job_id": sid})

    async def get(req: Request) -> Any:
        sid = req.path_params["sid"]
        if sid not in jobs:
            return PlainTextResponse(f"Job {sid} does not exist", status_code=404)
        return JSONResponse(jobs[sid])

    async def stop(req: Request) -> Any:
        sid = req.path_params["sid"]
        jobs[sid]["status"] = "STOPPED"
        return JSONResponse({"stopped": True})

    async def logs(req: Request) -> Any:
        return JSONResponse({"logs": "test_counter got 5\n"})

    async def serve(req: Request) -> Any:
        if req.method == "PUT":
            return JSONResponse({})
        return JSONResponse({"applications": {}})

    app = Starlette(routes=[
        Route("/api/jobs/", submit, methods=["POST"]),
        Route("/api/jobs/{sid}", get, methods=["GET"]),
        Route("/api/jobs/{sid}/stop", stop, methods=["POST"]),
        Route("/api/jobs/{sid}/logs", logs, methods=["GET"]),
        Route("/api/serve/applications/", serve, methods=["GET", "PUT"]),
    ])
    return app, jobs


RAYJOB = {"metadata": {"name": "j"}, "spec": {"entrypoint": "python x.py", "runtimeEnvYAML": "pip: [a==1]"},
          "status": {"jobId": "j-abcde"}}


@pytest.fixture
def dash() -> tuple[HttpDashboardClient, dict[str, Obj]]:
    app, jobs = ray_jobs_app()
    return HttpDashboardClient("http://10.244.0.5:8265", transport=httpx2.ASGITransport(app=app)), jobs


async def test_unknown_job_is_none_and_submit_uses_the_persisted_id(dash: Any) -> None:
    client, jobs = dash
    assert await client.get_job_info("j-abcde") is None
    assert await client.submit_job(RAYJOB) == "j-abcde"
    assert jobs["j-abcde"]["runtime_env"] == {"pip": ["a==1"]}
    info = await client.get_job_info("j-abcde")
    assert info is not None and (info.job_status, info.start_time, info.end_time) == ("PENDING", 1000, 0)


async def test_resubmitting_an_existing_id_counts_as_success(dash: Any) -> None:
    client, jobs = dash
    await client.submit_job(RAYJOB)
    assert await client.submit_job(RAYJOB) == "j-abcde"
    assert len(jobs) == 1


async def test_stop_and_logs(dash: Any) -> None:
    client, jobs = dash
    await client.submit_job(RAYJOB)
    await client.stop_job("j-abcde")
    assert jobs["j-abcde"]["status"] == "STOPPED"
    assert await client.get_job_log("j-abcde") == "test_counter got 5\n"
    assert await client.get_serve_details() == {"applications": {}}


async def test_connection_errors_raise_dashboard_error() -> None:
    client = HttpDashboardClient("http://127.0.0.1:9", timeout=0.5)
    with pytest.raises(DashboardError):
        await client.get_job_info("x")


@pytest.mark.parametrize("url", ["", "  ", "http://", "https://"])
async def test_no_dashboard_address_sends_nothing(url: str) -> None:
    """trial-6 F-5: no head Pod IP and no dashboardURL used to POST ``http:/api/jobs/<id>/stop``."""
    sent: list[str] = []

    def record(req: httpx2.Request) -> httpx2.Response:
        sent.append(str(req.url))
        return httpx2.Response(200, json={"stopped": True})

    client = HttpDashboardClient(url, transport=httpx2.MockTransport(record))
    with pytest.raises(NoDashboardAddress, match="no dashboard address yet"):
        await client.stop_job("j-abcde")
    with pytest.raises(NoDashboardAddress):
        await http_dashboard_client_factory({}, url).stop_job("j-abcde")
    assert sent == []


def test_factory_dials_the_head_pod_ip_and_falls_back_to_the_url() -> None:
    cluster = {"status": {"head": {"podIP": "10.244.0.5"}},
               "spec": {"headGroupSpec": {"template": {"spec": {"containers": [
                   {"ports": [{"name": "dashboard", "containerPort": 8266}]}]}}}}}
    client = http_dashboard_client_factory(cluster, "c-head-svc.default.svc.cluster.local:8265")
    assert isinstance(client, HttpDashboardClient) and client.base_url == "http://10.244.0.5:8266"
    client = http_dashboard_client_factory({}, "c-head-svc.default.svc.cluster.local:8265")
    assert isinstance(client, HttpDashboardClient)
    assert client.base_url == "http://c-head-svc.default.svc.cluster.local:8265"
