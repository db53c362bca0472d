"""A simulated Ray dashboard: the Jobs and Serve APIs answered from the simulated runtime.

The KubeRay controllers reach it through the same :class:`~pumice.controllers.ray.dashboard.
RayDashboardClient` protocol as the real dashboard (pass :meth:`SimulatedRayDashboard.factory`
as their ``dashboard_client_factory``); nothing in them knows it is simulated.

Job model, per RayCluster (the cluster the RayJob created, found by the factory's ``cluster``, or
the existing cluster a ``clusterSelector`` RayJob names: then the job's RayJob is the one whose
``status.jobId`` is the id asked for and whose ``status.rayClusterName`` is that cluster):

- *submitted*: a job exists only once something submits it, at that moment: HTTPMode when the
  controller calls ``submit_job``; any mode through ``POST /api/jobs/`` of :func:`asgi_app` (the
  way a user's ``ray job submit`` reaches an InteractiveMode RayJob's cluster); K8sJobMode when
  the submitter Pod (label ``batch.kubernetes.io/job-name`` = the RayJob's name) is Running, at
  its container's start; SidecarMode when the cluster is ready (the sidecar in the head Pod
  submits then). InteractiveMode jobs are never made up: nothing runs until a submission arrives.
- the cluster is *ready* when the head Pod and every Pod the cluster should have (1 head +
  ``replicas x numOfHosts`` per worker group) are Running and Ready, at the latest of their
  Ready conditions' ``lastTransitionTime`` (a Pod that reports no conditions counts from its
  container start);
- ``PENDING`` until both; ``RUNNING`` from ``start`` = the later of the submission and readiness;
- ``SUCCEEDED`` ``pumice.io/sim-duration-seconds`` (annotation of the RayJob; default 0) after
  ``start``, or ``FAILED`` when the RayJob has ``pumice.io/sim-exit-code`` != 0. At that moment the
  submitter ends, as the command KubeRay gives it does when it stops tailing: the SidecarMode head
  Pod's ``ray-job-submitter`` container (``ray job submit``, which exits 1 iff the job FAILED; the
  other containers of the head Pod run on) and every Running K8sJobMode submitter Pod (its script
  ends with ``ray job logs --follow``, which exits 0 whatever the job's end). A K8sJobMode submitter
  Pod that starts after the job ended (a retry of the submitter Job) ends with 0 the next time the
  job is looked at, as ``ray job logs --follow`` of a terminal job returns at once. So ``startTime``
  is never before the cluster is ready nor before the submission, and ``endTime - startTime`` is
  the duration.

Serve, per RayCluster: ``update_deployments(config)`` (``PUT /api/serve/applications/``) records
the applications and starts Serve on the cluster; each application is ``DEPLOYING`` (deployments
``UPDATING``) and becomes ``RUNNING`` (deployments ``HEALTHY``) a start delay after it was first
put (or last changed): the annotation ``pumice.io/sim-serve-start-seconds`` of the RayService that
owns the cluster, else ``serve_start_delay``. The Serve proxy of a head Pod answers its health
check (:meth:`SimulatedRayDashboard.serve_proxy_healthy`, the RayService controller's
``serve_proxy_healthy`` seam) once Serve runs on its cluster, as Ray starts the head's proxy with
Serve.

Times come from the project clock (virtual under looptime). Mirrors the answers of Ray's job
manager (``JobStatus``, start/end in epoch milliseconds) and ``GET /api/serve/applications/``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2

from pumice._util.clock import Clock, parse_rfc3339
from pumice.api import Obj
from pumice.api.ray.constants import RAY_CLUSTER_LABEL_KEY, RAY_NODE_TYPE_LABEL_KEY, JobStatus
from pumice.controllers.ray.constants import DEFAULT_SERVING_PORT, SERVING_PORT_NAME, SUBMITTER_CONTAINER_NAME
from pumice.controllers.ray.dashboard import (
    DashboardError,
    RayDashboardClient,
    RayJobInfo,
    dashboard_port_of,
    submit_request_body,
)
from pumice.node.runtime.simulated import ANNOTATION_DURATION, ANNOTATION_EXIT_CODE, exit_codes

log = logging.getLogger(__name__)


class FinishPod(Protocol):
    """Ends the running containers of the Pod ``uid`` (only ``container`` when given) with ``code``;
    returns whether one ran."""

    def __call__(self, uid: str, code: int, container: str | None = None, /) -> bool: ...


JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
ANNOTATION_SERVE_START = "pumice.io/sim-serve-start-seconds"
"""RayService annotation: seconds from a Serve application being put to it running."""
TERMINAL = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED)


@dataclass
class _Job:
    job_id: str
    rayjob: str
    namespace: str
    entrypoint: str = ""
    status: str = JobStatus.PENDING
    start: float = 0.0
    end: float = 0.0
    submitter_ended: bool = False
    cluster: str = ""  # "<namespace>/<name>" of the RayCluster it runs on
    submissions: int = 0  # accepted POST /api/jobs/ (HTTPMode); a second one with this id is refused
    submitted: float = 0.0  # epoch seconds of the submission (0: at the cluster's readiness, SidecarMode)


@dataclass
class _App:
    name: str
    since: float
    config: Obj


@dataclass
class SimulatedRayDashboard:
    """State of every simulated Ray cluster.

    Args:
        clock: the project clock.
        pods: ``(namespace, label_selector) -> Pods`` (an informer lister's ``list``).
        rayjobs: ``(namespace, name) -> RayJob or None`` (an informer lister's ``get``).
        finish_pod: ``(pod uid, exit code[, container name]) -> bool``: ends a Pod's containers
            (or the named one) in the simulated runtime (:meth:`~pumice.node.runtime.simulated.
            SimulatedRuntime.finish_pod`).
        serve_start_delay: seconds from a Serve config being put to its applications RUNNING, unless
            the owning RayService says otherwise (:data:`ANNOTATION_SERVE_START`).
        rayservices: ``(namespace, name) -> RayService or None`` (an informer lister's ``get``;
            None: every cluster takes ``serve_start_delay``).
        list_rayjobs: ``namespace -> RayJobs`` (an informer lister's ``list``), to find the
            ``clusterSelector`` RayJob of a job on a cluster no RayJob owns (None: such a cluster
            has only the jobs submitted to it).
    """

    clock: Clock
    pods: Callable[[str, dict[str, str]], list[Obj]]
    rayjobs: Callable[[str, str], Obj | None]
    finish_pod: FinishPod | None = None
    serve_start_delay: float = 5.0
    rayservices: Callable[[str, str], Obj | None] | None = None
    list_rayjobs: Callable[[str], list[Obj]] | None = None
    jobs: dict[str, _Job] = field(default_factory=dict)
    apps: dict[str, dict[str, _App]] = field(default_factory=dict)

    def factory(self, cluster: Obj, dashboard_url: str, auth_token: str | None = None) -> RayDashboardClient:
        return SimulatedRayDashboardClient(self, cluster)

    async def serve_proxy_healthy(self, pod: Obj, port: int) -> bool:
        """The RayService controller's ``serve_proxy_healthy`` seam: :meth:`serve_proxy_healthy_at`
        the Pod's IP."""
        return await self.serve_proxy_healthy_at(str((pod.get("status") or {}).get("podIP") or ""), port)

    async def serve_proxy_healthy_at(self, pod_ip: str, port: int) -> bool:
        """The Serve proxy health check of the head Pod at ``pod_ip``: True iff a Running head Pod
        has that IP and Serve runs on its cluster (a Serve config was put). ``port`` is not
        checked (every simulated Pod listens on every port).

        Mirrors the answer of ``GET http://<pod_ip>:<port>/-/healthz`` (see
        :func:`pumice.controllers.ray.dashboard.http_serve_proxy_healthy`): no proxy before Serve
        starts, 200 after."""
        if not pod_ip:
            return False
        for p in self.pods("", {RAY_NODE_TYPE_LABEL_KEY: "head"}):
            st, md = p.get("status") or {}, p.get("metadata") or {}
            if st.get("podIP") == pod_ip and st.get("phase") == "Running" and not md.get("deletionTimestamp"):
                cluster = (md.get("labels") or {}).get(RAY_CLUSTER_LABEL_KEY, "")
                return f"{md.get('namespace', '')}/{cluster}" in self.apps
        return False

    def serve_delay(self, cluster: Obj) -> float:
        """Seconds from a Serve application being put on ``cluster`` to it running: the owning
        RayService's :data:`ANNOTATION_SERVE_START`, else ``serve_start_delay``."""
        owner = _owner(cluster, "RayService")
        if owner is None or self.rayservices is None:
            return self.serve_start_delay
        rs = self.rayservices((cluster.get("metadata") or {}).get("namespace", ""), owner) or {}
        value = ((rs.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SERVE_START)
        try:
            return max(0.0, float(value)) if value is not None else self.serve_start_delay
        except ValueError:
            log.warning("RayService %s: annotation %s=%r is not a number of seconds; using %s",
                        owner, ANNOTATION_SERVE_START, value, self.serve_start_delay)
            return self.serve_start_delay

    # -- the job model -----------------------------------------------------------------------
    def _cluster_pods(self, cluster: Obj) -> list[Obj]:
        md = cluster.get("metadata") or {}
        return self.pods(md.get("namespace", ""), {RAY_CLUSTER_LABEL_KEY: md.get("name", "")})

    def ready_at(self, cluster: Obj) -> float | None:
        """When every Pod of ``cluster`` was Running and Ready (epoch seconds), or None while one is not."""
        spec = cluster.get("spec") or {}
        want = 1 + sum(int(g.get("replicas", g.get("minReplicas", 0)) or 0) * int(g.get("numOfHosts", 1) or 1)
                       for g in spec.get("workerGroupSpecs") or [] if not g.get("suspend"))
        running = [p for p in self._cluster_pods(cluster)
                   if (p.get("status") or {}).get("phase") == "Running"
                   and not (p.get("metadata") or {}).get("deletionTimestamp")
                   and ((p.get("metadata") or {}).get("labels") or {}).get(RAY_NODE_TYPE_LABEL_KEY) in ("head", "worker")]
        heads = [p for p in running if (p["metadata"].get("labels") or {}).get(RAY_NODE_TYPE_LABEL_KEY) == "head"]
        if not heads or len(running) < want:
            return None
        times = [_ready_at(p) for p in running]
        if any(t is None for t in times):
            return None
        return max(t for t in times if t is not None)

    def _selecting_rayjob(self, cluster: Obj, job_id: str) -> str | None:
        """The name of the ``clusterSelector`` RayJob whose Ray job ``job_id`` runs on ``cluster``
        (its ``status.jobId`` and ``status.rayClusterName``), or None."""
        md = cluster.get("metadata") or {}
        if self.list_rayjobs is None or not job_id:
            return None
        for rj in self.list_rayjobs(md.get("namespace", "")):
            st = rj.get("status") or {}
            if (rj.get("spec") or {}).get("clusterSelector") and st.get("jobId") == job_id \
                    and st.get("rayClusterName") == md.get("name"):
                return str((rj.get("metadata") or {}).get("name", ""))
        return None

    def _submitted(self, cluster: Obj, job_id: str) -> _Job | None:
        owner = _owner_rayjob(cluster) or self._selecting_rayjob(cluster, job_id)
        ns = (cluster.get("metadata") or {}).get("namespace", "")
        if owner is None:
            return None
        rj = self.rayjobs(ns, owner) or {}
        mode = (rj.get("spec") or {}).get("submissionMode") or "K8sJobMode"
        at = 0.0
        if mode == "K8sJobMode":
            subs = [p for p in self.pods(ns, {JOB_NAME_LABEL: owner}) if (p.get("status") or {}).get("phase") == "Running"]
            if not subs:
                return None
            at = min(_started_at(p) for p in subs) or self.clock.now()
        elif mode != "SidecarMode" or self.ready_at(cluster) is None:
            return None  # HTTPMode and InteractiveMode: only a submission makes a job
        job = _Job(job_id, owner, ns, str((rj.get("spec") or {}).get("entrypoint", "")), cluster=_key(cluster),
                   submitted=at)
        self.jobs[job_id] = job
        return job

    def _advance(self, job: _Job, cluster: Obj) -> None:
        if job.status in TERMINAL:
            self._end_submitter(job)  # a submitter Pod that started after the end (K8sJobMode)
            return
        now = self.clock.now()
        ready = self.ready_at(cluster)
        if ready is None and not job.start:
            return
        rj = self.rayjobs(job.namespace, job.rayjob) or {}
        ann = (rj.get("metadata") or {}).get("annotations") or {}
        duration = float(ann.get(ANNOTATION_DURATION, 0) or 0)
        if not job.start:
            job.start = max(job.submitted, ready or 0.0)
        if now < job.start + duration:
            job.status = JobStatus.RUNNING
            return
        failed = exit_codes(ann.get(ANNOTATION_EXIT_CODE) or 0)[0] != 0  # a Ray job runs once: its first code
        job.status = JobStatus.FAILED if failed else JobStatus.SUCCEEDED
        job.end = job.start + duration
        self._end_submitter(job)

    def _end_submitter(self, job: _Job) -> None:
        """The submitter of the terminal ``job`` exits, as the command KubeRay gives it does when
        the job it tails has ended.

        SidecarMode, once: the ``ray-job-submitter`` container of the head Pod of the job's cluster
        runs ``ray job submit`` (no ``--no-wait``), which exits 1 iff the job FAILED (Ray's
        ``job_cli.submit``). K8sJobMode, on every call: each running submitter Pod (label
        ``batch.kubernetes.io/job-name``) exits 0, because its script ends with ``ray job logs
        --follow``, which returns 0 for any terminal job (Ray's ``job_cli.logs`` ignores the final
        status); a Pod of the submitter Job that starts after the job ended is ended too."""
        if self.finish_pod is None:
            return
        rj = self.rayjobs(job.namespace, job.rayjob) or {}
        if (rj.get("spec") or {}).get("submissionMode") == "SidecarMode":
            if job.submitter_ended:
                return
            job.submitter_ended = True
            code = 1 if job.status == JobStatus.FAILED else 0
            heads = {RAY_CLUSTER_LABEL_KEY: job.cluster.partition("/")[2], RAY_NODE_TYPE_LABEL_KEY: "head"}
            for p in self.pods(job.namespace, heads):
                self.finish_pod(str((p.get("metadata") or {}).get("uid", "")), code, SUBMITTER_CONTAINER_NAME)
            return
        for p in self.pods(job.namespace, {JOB_NAME_LABEL: job.rayjob}):
            self.finish_pod(str((p.get("metadata") or {}).get("uid", "")), 0)

    def info(self, job: _Job) -> RayJobInfo:
        message = {JobStatus.PENDING: "Job has not started yet.", JobStatus.RUNNING: "Job is currently running.",
                   JobStatus.SUCCEEDED: "Job finished successfully.", JobStatus.STOPPED: "Job was intentionally stopped.",
                   JobStatus.FAILED: "Job entrypoint command failed with exit code 1"}.get(JobStatus(job.status), "")
        return RayJobInfo(job_status=str(job.status), entrypoint=job.entrypoint, submission_id=job.job_id,
                          message=message, start_time=int(job.start * 1000), end_time=int(job.end * 1000))


class SimulatedRayDashboardClient:
    """:class:`RayDashboardClient` for one simulated Ray cluster."""

    def __init__(self, state: SimulatedRayDashboard, cluster: Obj) -> None:
        self.state = state
        self.cluster = cluster
        self.key = _key(cluster)

    def _job(self, job_id: str) -> _Job | None:
        job = self.state.jobs.get(job_id) or self.state._submitted(self.cluster, job_id)
        if job is not None:
            self.state._advance(job, self.cluster)
        return job

    async def get_job_info(self, job_id: str) -> RayJobInfo | None:
        job = self._job(job_id)
        return None if job is None else self.state.info(job)

    async def list_jobs(self) -> list[RayJobInfo]:
        """The jobs of this cluster, by submission id."""
        mine = [j for j in self.state.jobs.values() if j.cluster == self.key]
        for j in mine:
            self.state._advance(j, self.cluster)
        return [self.state.info(j) for j in sorted(mine, key=lambda j: j.job_id)]

    async def submit_job(self, rayjob: Obj) -> str:
        body = submit_request_body(rayjob)
        md = rayjob.get("metadata") or {}
        return self.submit(body, str(md.get("name", "")), accept_existing=True)

    def submit(self, body: Obj, rayjob: str, *, accept_existing: bool = False) -> str:
        """Record a ``POST /api/jobs/`` body; returns its submission id.

        Raises:
            DashboardError: the id is already used (Ray's answer, HTTP 400), unless
                ``accept_existing`` (the controller's client treats that answer as success).
        """
        job_id = str(body.get("submission_id") or "")
        job = self.state.jobs.get(job_id)
        if job is not None and job.submissions and not accept_existing:
            raise DashboardError(f"Job with submission_id {job_id} already exists. "
                                 "Please use a different submission_id.")
        if job is None:
            ns = (self.cluster.get("metadata") or {}).get("namespace", "")
            job = self.state.jobs[job_id] = _Job(job_id, rayjob, ns, str(body.get("entrypoint", "")), cluster=self.key,
                                                 submitted=self.state.clock.now())
        job.submissions += 1
        return job_id

    async def get_job_log(self, job_id: str) -> str:
        if job_id not in self.state.jobs:
            raise DashboardError(f"GET /api/jobs/{job_id}/logs: HTTP 404")
        return ""

    async def stop_job(self, job_id: str) -> None:
        job = self._job(job_id)
        if job is None:
            raise DashboardError(f"POST /api/jobs/{job_id}/stop: HTTP 404")
        if job.status not in TERMINAL:
            job.status = JobStatus.STOPPED
            job.end = self.state.clock.now()
            self.state._end_submitter(job)

    async def delete_job(self, job_id: str) -> None:
        self.state.jobs.pop(job_id, None)

    async def get_serve_details(self) -> Obj:
        now = self.state.clock.now()
        delay = self.state.serve_delay(self.cluster)
        apps: Obj = {}
        for name, app in sorted(self.state.apps.get(self.key, {}).items()):
            ready = now >= app.since + delay
            deployments = {d.get("name", ""): {"name": d.get("name", ""),
                                               "status": "HEALTHY" if ready else "UPDATING"}
                           for d in app.config.get("deployments") or []}
            apps[name] = {"name": name, "route_prefix": app.config.get("route_prefix", "/"),
                          "status": "RUNNING" if ready else "DEPLOYING", "message": "",
                          "last_deployed_time_s": app.since, "deployments": deployments}
        return {"applications": apps}

    async def update_deployments(self, config: Obj) -> None:
        """Record a ``PUT /api/serve/applications/`` body.

        Raises:
            DashboardError: a body Ray Serve's ``ServeDeploySchema`` refuses (HTTP 400): no
                ``applications`` list, or an application that is not a mapping with a string
                ``import_path``.
        """
        problem = serve_config_problem(config)
        if problem:
            raise DashboardError(f"PUT /api/serve/applications/: HTTP 400: {problem}")
        now = self.state.clock.now()
        mine = self.state.apps.setdefault(self.key, {})
        names = set()
        for app in config.get("applications") or []:
            name = str(app.get("name", "default"))
            names.add(name)
            old = mine.get(name)
            if old is None or old.config != app:
                mine[name] = _App(name, now, app)
        for gone in set(mine) - names:
            del mine[gone]


def on_informers(informers: Any, finish_pod: FinishPod, clock: Clock
                 ) -> tuple[SimulatedRayDashboard, Callable[[str, str], Obj | None]]:
    """A :class:`SimulatedRayDashboard` reading Pods, RayJobs and RayServices from ``informers`` (a
    :class:`~pumice.client.informer.SharedInformerFactory`, started by the caller), and the
    RayCluster getter ``(namespace, name) -> RayCluster or None`` that :func:`asgi_app` needs."""
    from pumice.api.scheme import POD, RAY_CLUSTER, RAY_JOB, RAY_SERVICE

    pods = informers.informer(POD)
    rayjobs = informers.informer(RAY_JOB)
    rayservices = informers.informer(RAY_SERVICE)
    clusters = informers.informer(RAY_CLUSTER)
    dashboard = SimulatedRayDashboard(clock, pods=lambda ns, sel: pods.lister.list(ns, sel),
                                      rayjobs=lambda ns, n: rayjobs.lister.get(ns, n), finish_pod=finish_pod,
                                      rayservices=lambda ns, n: rayservices.lister.get(ns, n),
                                      list_rayjobs=lambda ns: rayjobs.lister.list(ns))
    return dashboard, lambda ns, n: clusters.lister.get(ns, n)


def _key(cluster: Obj) -> str:
    md = cluster.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


def info_wire(info: RayJobInfo) -> Obj:
    """``info`` as Ray's job REST API answers it (``JobDetails``: the inverse of
    :meth:`RayJobInfo.from_wire`)."""
    return {"status": info.job_status, "entrypoint": info.entrypoint, "job_id": info.job_id or None,
            "submission_id": info.submission_id, "message": info.message, "error_type": info.error_type or None,
            "start_time": info.start_time, "end_time": info.end_time or None, "metadata": info.metadata,
            "runtime_env": info.runtime_env, "type": "SUBMISSION"}


def asgi_app(dashboard: SimulatedRayDashboard, clusters: Callable[[str, str], Obj | None]) -> Any:
    """The simulated dashboards of every Ray cluster as one HTTP app: the Jobs and Serve REST API of
    RayCluster ``<namespace>/<name>`` under ``/<namespace>/<name>/`` (``GET/POST /api/jobs/``,
    ``GET/DELETE /api/jobs/<id>``, ``GET /api/jobs/<id>/logs``, ``POST /api/jobs/<id>/stop``,
    ``GET/PUT /api/serve/applications/``), and each head Pod's Serve proxy health check
    ``GET /serve-proxy/<pod IP>/<port>/-/healthz`` (200 or 503; see
    :meth:`SimulatedRayDashboard.serve_proxy_healthy_at`), for controllers in another process
    (``pumice controller-manager --ray-dashboard-proxy``). ``clusters(namespace, name)`` gives the RayCluster
    (an informer lister's ``get``); one it does not know yet is answered 503, not 404 (a 404 would
    say "no such job").

    Mirrors: ray dashboard/modules/job/job_head.py (paths, bodies, the 400 on a reused
    submission_id, 404 on an unknown job).
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    def client(request: Request) -> SimulatedRayDashboardClient | JSONResponse:
        ns, name = request.path_params["ns"], request.path_params["name"]
        cluster = clusters(ns, name)
        if cluster is None:
            return JSONResponse({"error": f"no Ray cluster {ns}/{name} (yet)"}, status_code=503)
        return SimulatedRayDashboardClient(dashboard, cluster)

    async def jobs(request: Request) -> JSONResponse:
        c = client(request)
        if isinstance(c, JSONResponse):
            return c
        if request.method == "GET":
            return JSONResponse([info_wire(i) for i in await c.list_jobs()])
        body = await request.json()
        if not isinstance(body, dict) or not body.get("entrypoint"):
            return JSONResponse({"error": "entrypoint is required"}, status_code=400)
        try:
            job_id = c.submit(body, _owner_rayjob(c.cluster) or "")
        except DashboardError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return JSONResponse({"job_id": job_id, "submission_id": job_id})

    async def job(request: Request) -> JSONResponse:
        c = client(request)
        if isinstance(c, JSONResponse):
            return c
        job_id = request.path_params["job_id"]
        if request.method == "DELETE":
            await c.delete_job(job_id)
            return JSONResponse({"deleted": True})
        info = await c.get_job_info(job_id)
        if info is None:
            return JSONResponse({"error": f"Job {job_id} does not exist"}, status_code=404)
        return JSONResponse(info_wire(info))

    async def logs(request: Request) -> JSONResponse:
        c = client(request)
        if isinstance(c, JSONResponse):
            return c
        try:
            return JSONResponse({"logs": await c.get_job_log(request.path_params["job_id"])})
        except DashboardError as e:
            return JSONResponse({"error": str(e)}, status_code=404)

    async def stop(request: Request) -> JSONResponse:
        c = client(request)
        if isinstance(c, JSONResponse):
            return c
        job_id = request.path_params["job_id"]
        before = c._job(job_id)
        if before is None:
            return JSONResponse({"error": f"Job {job_id} does not exist"}, status_code=404)
        was_terminal = before.status in TERMINAL
        await c.stop_job(job_id)
        return JSONResponse({"stopped": not was_terminal})

    async def serve(request: Request) -> JSONResponse | PlainTextResponse:
        c = client(request)
        if isinstance(c, JSONResponse):
            return c
        if request.method == "PUT":
            body = await request.json()
            problem = serve_config_problem(body)
            if problem:  # Ray's answer to a config its schema refuses: 400 with the validation error
                return PlainTextResponse(problem, status_code=400)
            await c.update_deployments(body)
            return JSONResponse({})
        return JSONResponse(await c.get_serve_details())

    async def serve_proxy(request: Request) -> PlainTextResponse:
        healthy = await dashboard.serve_proxy_healthy_at(request.path_params["pod_ip"], int(request.path_params["port"]))
        return PlainTextResponse("success" if healthy else "no Serve proxy", status_code=200 if healthy else 503)

    prefix = "/{ns}/{name}"
    return Starlette(routes=[
        Route("/serve-proxy/{pod_ip}/{port:int}/-/healthz", serve_proxy, methods=["GET"]),
        Route(prefix + "/api/jobs/", jobs, methods=["GET", "POST"]),
        Route(prefix + "/api/jobs/{job_id}", job, methods=["GET", "DELETE"]),
        Route(prefix + "/api/jobs/{job_id}/logs", logs, methods=["GET"]),
        Route(prefix + "/api/jobs/{job_id}/stop", stop, methods=["POST"]),
        Route(prefix + "/api/serve/applications/", serve, methods=["GET", "PUT"]),
    ])


def proxy_backend(informers: Any, dashboard: SimulatedRayDashboard) -> Callable[[str, int], Any]:
    """The API server's in-process target for the simulated Pods (see
    :meth:`pumice.apiserver.proxy.ProxyAPI.add_backend`): ``(pod IP, port)`` of a RayCluster head
    Pod on its ``dashboard`` port is that cluster's simulated dashboard (:func:`asgi_app` under
    ``/<namespace>/<name>``), so ``services/<head svc>:dashboard/proxy/api/jobs/`` answers as Ray's
    does; any other port of a simulated Pod refuses the connection, as a port nothing listens on
    does, except the head's Serve proxy port, whose ``/-/healthz`` answers as
    :meth:`SimulatedRayDashboard.serve_proxy_healthy_at`. Addresses of no Pod in ``informers`` are
    not its own (None).

    ``informers``: the factory :func:`on_informers` read from (Pods and RayClusters)."""
    from pumice.api.scheme import POD, RAY_CLUSTER

    pods = informers.informer(POD)
    clusters = informers.informer(RAY_CLUSTER)
    app = asgi_app(dashboard, lambda ns, n: clusters.lister.get(ns, n))
    refused = _RefusedTransport()

    def backend(ip: str, port: int) -> Any:
        pod = next((p for p in pods.lister.list(None) if (p.get("status") or {}).get("podIP") == ip), None)
        if pod is None:
            return None
        md = pod.get("metadata") or {}
        labels = md.get("labels") or {}
        if labels.get(RAY_NODE_TYPE_LABEL_KEY) != "head":
            return refused
        cluster = clusters.lister.get(md.get("namespace", ""), labels.get(RAY_CLUSTER_LABEL_KEY, ""))
        if cluster is not None and port == dashboard_port_of(cluster):
            prefix = f"/{md.get('namespace', '')}/{(cluster.get('metadata') or {}).get('name', '')}"
        elif port == _serve_port(pod):  # the head's Serve proxy (its /-/healthz)
            prefix = f"/serve-proxy/{ip}/{port}"
        else:
            return refused

        async def prefixed(scope: Any, receive: Any, send: Any) -> None:
            scope = dict(scope, path=prefix + scope["path"],
                         raw_path=prefix.encode() + (scope.get("raw_path") or scope["path"].encode()))
            await app(scope, receive, send)

        return httpx2.ASGITransport(app=prefixed)

    return backend


def _serve_port(pod: Obj) -> int:
    """The head Ray container's ``serve`` port (8000 by default), as the RayService controller
    checks it."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return next((int(p["containerPort"]) for p in containers[0].get("ports") or []
                 if p.get("name") == SERVING_PORT_NAME), DEFAULT_SERVING_PORT)


class _RefusedTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport whose every connection is refused (a simulated Pod's closed port)."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request) from ConnectionRefusedError(
            111, "Connection refused")


def serve_config_problem(config: Any) -> str:
    """Why Ray Serve's ``ServeDeploySchema`` refuses ``config`` ("" when it accepts its shape): the
    required ``applications`` list and each application's required string ``import_path``.

    Mirrors: ray python/ray/serve/schema.py ServeDeploySchema / ServeApplicationSchema (required
    fields only; the other fields are not checked)."""
    if not isinstance(config, dict):
        return "1 validation error for ServeDeploySchema: Input should be a valid dictionary"
    apps = config.get("applications")
    if apps is None:
        return "1 validation error for ServeDeploySchema: applications: Field required"
    if not isinstance(apps, list):
        return "1 validation error for ServeDeploySchema: applications: Input should be a valid list"
    for i, app in enumerate(apps):
        if not isinstance(app, dict):
            return f"1 validation error for ServeDeploySchema: applications.{i}: Input should be a valid dictionary"
        if not isinstance(app.get("import_path"), str):
            return f"1 validation error for ServeDeploySchema: applications.{i}.import_path: Field required"
    return ""


def _owner_rayjob(cluster: Obj) -> str | None:
    return _owner(cluster, "RayJob")


def _owner(cluster: Obj, kind: str) -> str | None:
    for ref in (cluster.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == kind:
            return str(ref.get("name"))
    return None


def _started_at(pod: Obj) -> float:
    best = 0.0
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        at = ((cs.get("state") or {}).get("running") or {}).get("startedAt")
        if at:
            best = max(best, parse_rfc3339(at))
    if not best and (pod.get("status") or {}).get("startTime"):
        best = parse_rfc3339(pod["status"]["startTime"])
    return best


def _ready_at(pod: Obj) -> float | None:
    """When ``pod`` became Ready (its Ready condition's ``lastTransitionTime``), None while it is not;
    a Pod that reports no conditions counts from its container start."""
    conds = (pod.get("status") or {}).get("conditions")
    if not conds:
        return _started_at(pod)
    ready = next((c for c in conds if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        return None
    at = ready.get("lastTransitionTime")
    return parse_rfc3339(at) if at else _started_at(pod)
