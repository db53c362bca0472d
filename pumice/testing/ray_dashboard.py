"""A fake Ray dashboard for controller tests: jobs live in memory and change only when the test
says so.

``dash = FakeRayDashboard()``; pass ``dash.factory`` as the controllers' dashboard client factory;
drive jobs with :meth:`FakeRayDashboard.set_job_status`; inspect ``dash.submissions`` (every
accepted ``submit_job``), ``dash.stopped`` and ``dash.calls``. Set ``dash.unreachable = True`` to make
every call raise :class:`DashboardError`.

Mirrors: kuberay ray-operator/controllers/ray/utils/fake_serve_httpclient.go (FakeRayDashboardClient).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pumice.api import Obj
from pumice.controllers.ray.dashboard import (
    DashboardError,
    RayDashboardClient,
    RayJobInfo,
    submit_request_body,
)


@dataclass
class FakeRayDashboard:
    """State shared by every fake client (one fake "Ray cluster" for all dashboard URLs)."""

    jobs: dict[str, RayJobInfo] = field(default_factory=dict)
    submissions: list[Obj] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)
    serve_details: Obj = field(default_factory=dict)
    serve_configs: list[Obj] = field(default_factory=list)
    unreachable: bool = False
    fail_submit: bool = False
    urls: list[str] = field(default_factory=list)
    tokens: list[str | None] = field(default_factory=list)

    def factory(self, cluster: Obj, dashboard_url: str, auth_token: str | None = None) -> RayDashboardClient:
        self.urls.append(dashboard_url)
        self.tokens.append(auth_token)
        return FakeRayDashboardClient(self, dashboard_url)

    def set_job_status(self, job_id: str, status: str, *, message: str = "", start_time: int = 0,
                       end_time: int = 0) -> None:
        """Create or change a job (as if Ray ran it). Times are epoch milliseconds."""
        old = self.jobs.get(job_id) or RayJobInfo(job_status=status, submission_id=job_id)
        self.jobs[job_id] = replace(old, job_status=status, message=message or old.message,
                                    start_time=start_time or old.start_time, end_time=end_time or old.end_time)


class FakeRayDashboardClient:
    """:class:`RayDashboardClient` over a :class:`FakeRayDashboard`."""

    def __init__(self, state: FakeRayDashboard, url: str = "") -> None:
        self.state = state
        self.url = url

    def _call(self, what: str, arg: str = "") -> None:
        self.state.calls.append((what, arg))
        if self.state.unreachable:
            raise DashboardError(f"fake dashboard {self.url} unreachable")

    async def get_job_info(self, job_id: str) -> RayJobInfo | None:
        self._call("get_job_info", job_id)
        return self.state.jobs.get(job_id)

    async def list_jobs(self) -> list[RayJobInfo]:
        self._call("list_jobs")
        return list(self.state.jobs.values())

    async def submit_job(self, rayjob: Obj) -> str:
        body = submit_request_body(rayjob)
        self._call("submit_job", body["submission_id"])
        if self.state.fail_submit:
            raise DashboardError("fake submit failure")
        sid = str(body["submission_id"])
        if sid not in self.state.jobs:
            self.state.submissions.append(body)
            self.state.jobs[sid] = RayJobInfo(job_status="PENDING", submission_id=sid,
                                              entrypoint=str(body.get("entrypoint", "")))
        return sid

    async def get_job_log(self, job_id: str) -> str:
        self._call("get_job_log", job_id)
        return self.state.logs.get(job_id, "")

    async def stop_job(self, job_id: str) -> None:
        self._call("stop_job", job_id)
        self.state.stopped.append(job_id)
        if job_id in self.state.jobs:
            self.state.set_job_status(job_id, "STOPPED")

    async def delete_job(self, job_id: str) -> None:
        self._call("delete_job", job_id)
        self.state.jobs.pop(job_id, None)

    async def get_serve_details(self) -> Obj:
        self._call("get_serve_details")
        return self.state.serve_details

    async def update_deployments(self, config: Obj) -> None:
        self._call("update_deployments")
        self.state.serve_configs.append(config)
