"""The simulated Ray dashboard's job and Serve models, on a settable clock."""

from __future__ import annotations

from typing import Any

import pytest

from pumice._util.clock import FakeClock, rfc3339
from pumice.api import Obj
from pumice.controllers.ray.rayservice import apps_from_serve_details
from pumice.simulate.ray_dashboard import SimulatedRayDashboard


def _pod(name: str, kind: str, phase: str, started: float | None, labels: dict[str, str]) -> Obj:
    st: Obj = {"phase": phase}
    if started is not None:
        st["containerStatuses"] = [{"name": "ray", "state": {"running": {"startedAt": rfc3339(started)}}}]
    ray = {"ray.io/cluster": "rc", "ray.io/node-type": kind} if kind else {}
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {**ray, **labels}},
            "status": st}


def _setup(clock: FakeClock, mode: str = "K8sJobMode") -> tuple[SimulatedRayDashboard, list[Obj], list[tuple[Any, ...]]]:
    pods: list[Obj] = []
    ended: list[tuple[Any, ...]] = []
    rayjob = {"metadata": {"name": "job", "namespace": "ns", "annotations": {"pumice.io/sim-duration-seconds": "60"}},
              "spec": {"submissionMode": mode, "entrypoint": "python x.py"}}

    def select(ns: str, sel: dict[str, str]) -> list[Obj]:
        return [p for p in pods if all(p["metadata"]["labels"].get(k) == v for k, v in sel.items())]

    dash = SimulatedRayDashboard(clock, pods=select, rayjobs=lambda ns, n: rayjob if n == "job" else None,
                                 finish_pod=lambda uid, code, container=None: ended.append(
                                     (uid, code) if container is None else (uid, code, container)) is None)
    return dash, pods, ended


CLUSTER = {"metadata": {"name": "rc", "namespace": "ns", "ownerReferences": [{"kind": "RayJob", "name": "job"}]},
           "spec": {"workerGroupSpecs": [{"replicas": 2}]}}


async def test_a_job_is_pending_until_the_gang_runs_then_succeeds_after_its_duration() -> None:
    clock = FakeClock(1_000.0)
    dash, pods, ended = _setup(clock)
    client = dash.factory(CLUSTER, "")
    assert await client.get_job_info("id-1") is None  # no submitter running yet
    pods.append(_pod("submitter", "", "Running", 1_000, {"batch.kubernetes.io/job-name": "job"}))
    pods.append(_pod("head", "head", "Running", 1_000, {}))
    pods.append(_pod("w1", "worker", "Running", 1_005, {}))
    info = await client.get_job_info("id-1")
    assert info is not None and info.job_status == "PENDING"  # one of two workers is missing
    pods.append(_pod("w2", "worker", "Running", 1_010, {}))
    clock.advance(20)
    info = await client.get_job_info("id-1")
    assert info is not None and info.job_status == "RUNNING" and info.start_time == 1_010_000
    clock.advance(60)
    info = await client.get_job_info("id-1")
    assert info is not None and info.job_status == "SUCCEEDED" and info.end_time == 1_070_000
    assert ended == [("uid-submitter", 0)]  # the submitter exits with the job


async def test_a_cluster_selector_rayjobs_submitter_runs_its_job_on_the_selected_cluster() -> None:
    """KubeRay's ``ray-job.use-existing-raycluster.yaml``: the cluster has no owner RayJob; the RayJob
    that selects it (``status.jobId``, ``status.rayClusterName``) gets its job once its submitter
    runs, and the submitter exits when the job ends (trial 19 F-2)."""
    clock = FakeClock(1_000.0)
    pods: list[Obj] = []
    ended: list[tuple[Any, ...]] = []
    selector_job = {"metadata": {"name": "sel", "namespace": "ns",
                                 "annotations": {"pumice.io/sim-duration-seconds": "30"}},
                    "spec": {"clusterSelector": {"ray.io/cluster": "rc"}, "entrypoint": "python y.py"},
                    "status": {"jobId": "sel-x7k2q", "rayClusterName": "rc"}}
    other = {"metadata": {"name": "other", "namespace": "ns"}, "spec": {"clusterSelector": {"ray.io/cluster": "rc"}},
             "status": {"jobId": "other-1", "rayClusterName": "rc"}}
    rayjobs = {"sel": selector_job, "other": other}

    def select(ns: str, sel: dict[str, str]) -> list[Obj]:
        return [p for p in pods if all(p["metadata"]["labels"].get(k) == v for k, v in sel.items())]

    dash = SimulatedRayDashboard(clock, pods=select, rayjobs=lambda ns, n: rayjobs.get(n) if ns == "ns" else None,
                                 list_rayjobs=lambda ns: list(rayjobs.values()) if ns == "ns" else [],
                                 finish_pod=lambda uid, code, container=None: ended.append((uid, code)) is None)
    cluster = {"metadata": {"name": "rc", "namespace": "ns"}, "spec": {"workerGroupSpecs": [{"replicas": 1}]}}
    pods += [_pod("head", "head", "Running", 1_000, {}), _pod("w1", "worker", "Running", 1_000, {})]
    client = dash.factory(cluster, "")
    assert await client.get_job_info("sel-x7k2q") is None  # its submitter is not running yet
    pods.append(_pod("submitter", "", "Running", 1_010, {"batch.kubernetes.io/job-name": "sel"}))
    info = await client.get_job_info("sel-x7k2q")
    assert info is not None and info.job_status == "RUNNING" and info.entrypoint == "python y.py"
    assert await client.get_job_info("unknown-id") is None
    clock.advance(40)
    info = await client.get_job_info("sel-x7k2q")
    assert info is not None and info.job_status == "SUCCEEDED" and info.end_time == 1_040_000
    assert ended == [("uid-submitter", 0)]


async def test_a_sidecar_job_ends_the_head_pods_submitter_container_with_its_exit_code() -> None:
    """Trial 7 F-2: in SidecarMode the submitter is the head Pod's ``ray-job-submitter`` container;
    it must exit when the Ray job ends (0 on SUCCEEDED, 1 on FAILED), as ``ray job submit`` does,
    or the RayJob stays Running until the transition grace period."""
    for exit_code, status in ((None, "SUCCEEDED"), ("3", "FAILED")):
        clock = FakeClock(1_000.0)
        dash, pods, ended = _setup(clock, "SidecarMode")
        if exit_code is not None:
            rayjob = dash.rayjobs("ns", "job")
            assert rayjob is not None
            rayjob["metadata"]["annotations"]["pumice.io/sim-exit-code"] = exit_code
        client = dash.factory(CLUSTER, "")
        pods += [_pod("head", "head", "Running", 1_000, {}), _pod("w1", "worker", "Running", 1_000, {}),
                 _pod("w2", "worker", "Running", 1_000, {})]
        info = await client.get_job_info("id-s")
        assert info is not None and info.job_status == "RUNNING" and ended == []
        clock.advance(60)
        info = await client.get_job_info("id-s")
        assert info is not None and info.job_status == status
        assert ended == [("uid-head", 0 if status == "SUCCEEDED" else 1, "ray-job-submitter")]


async def test_http_mode_jobs_exist_once_submitted() -> None:
    clock = FakeClock(1_000.0)
    dash, _pods, _ = _setup(clock, "HTTPMode")
    client = dash.factory(CLUSTER, "")
    assert await client.get_job_info("id-2") is None
    await client.submit_job({"metadata": {"name": "job", "namespace": "ns"}, "spec": {"entrypoint": "x"},
                             "status": {"jobId": "id-2"}})
    info = await client.get_job_info("id-2")
    assert info is not None and info.job_status == "PENDING"


async def test_serve_applications_run_after_the_start_delay() -> None:
    clock = FakeClock(1_000.0)
    dash, _, _ = _setup(clock)
    client = dash.factory(CLUSTER, "")
    await client.update_deployments({"applications": [{"name": "app", "route_prefix": "/", "import_path": "m:app",
                                                       "deployments": [{"name": "Model"}]}]})
    ready, apps = apps_from_serve_details(await client.get_serve_details())
    assert not ready and apps["app"]["status"] == "DEPLOYING"
    clock.advance(dash.serve_start_delay)
    ready, apps = apps_from_serve_details(await client.get_serve_details())
    assert ready and apps["app"]["status"] == "RUNNING"
    assert apps["app"]["serveDeploymentStatuses"]["Model"]["status"] == "HEALTHY"


async def test_the_http_app_serves_each_cluster_under_its_name_to_the_operators_http_client() -> None:
    import httpx2

    from pumice.controllers.ray.dashboard import (
        DashboardError,
        HttpDashboardClient,
        proxied_dashboard_client_factory,
    )
    from pumice.simulate.ray_dashboard import asgi_app

    clock = FakeClock(1_000.0)
    dash, _pods, _ = _setup(clock, "HTTPMode")
    app = asgi_app(dash, lambda ns, n: CLUSTER if (ns, n) == ("ns", "rc") else None)
    transport = httpx2.ASGITransport(app=app)
    client = proxied_dashboard_client_factory("http://sim:1")(CLUSTER, "unused")
    assert isinstance(client, HttpDashboardClient) and client.base_url == "http://sim:1/ns/rc"
    client._kwargs["transport"] = transport
    rayjob = {"metadata": {"name": "job", "namespace": "ns"}, "spec": {"entrypoint": "x"}, "status": {"jobId": "id-3"}}
    assert await client.get_job_info("id-3") is None  # 404: no such job
    assert await client.submit_job(rayjob) == "id-3"
    assert await client.submit_job(rayjob) == "id-3"  # Ray refuses the reused id; the operator takes it as done
    assert dash.jobs["id-3"].submissions == 1
    info = await client.get_job_info("id-3")
    assert info is not None and info.job_status == "PENDING" and info.submission_id == "id-3"
    assert [j.submission_id for j in await client.list_jobs()] == ["id-3"]
    other = HttpDashboardClient("http://sim:1/ns/unknown", transport=transport)
    with pytest.raises(DashboardError, match="503"):  # a cluster not known yet is an error, not "no such job"
        await other.get_job_info("id-3")
    # a Serve config Ray's schema refuses: 400 with the validation error, as one line
    with pytest.raises(DashboardError, match=r"^PUT /api/serve/applications/: HTTP 400: 1 validation error for "
                                             r"ServeDeploySchema: applications: Field required$"):
        await client.update_deployments({"::": "not yaml ["})


def _ready(pod: Obj, at: float | None) -> Obj:
    """``pod`` with a Ready condition: True since ``at``, or False when ``at`` is None."""
    cond = {"type": "Ready", "status": "False"} if at is None else {
        "type": "Ready", "status": "True", "lastTransitionTime": rfc3339(at)}
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}, cond]
    return pod


async def test_a_k8sjob_starts_at_its_submitter_after_the_cluster_is_ready_and_lasts_its_duration() -> None:
    """Trial 3 finding 10: start was the gang's container start (before readiness, before the
    submitter existed) and the duration was lost."""
    clock = FakeClock(1_000.0)
    dash, pods, ended = _setup(clock)
    client = dash.factory(CLUSTER, "")
    head = _ready(_pod("head", "head", "Running", 1_000, {}), None)
    pods += [head, _ready(_pod("w1", "worker", "Running", 1_002, {}), 1_008),
             _ready(_pod("w2", "worker", "Running", 1_003, {}), 1_009)]
    clock.advance(20)
    assert dash.ready_at(CLUSTER) is None  # head Running but not Ready
    assert await client.get_job_info("id-1") is None  # no submitter yet: no job
    _ready(head, 1_011)
    assert dash.ready_at(CLUSTER) == 1_011
    assert await client.get_job_info("id-1") is None
    pods.append(_pod("submitter", "", "Running", 1_025, {"batch.kubernetes.io/job-name": "job"}))
    clock.advance(10)  # 1_030
    info = await client.get_job_info("id-1")
    assert info is not None and info.job_status == "RUNNING" and info.start_time == 1_025_000
    clock.advance(60)
    info = await client.get_job_info("id-1")
    assert info is not None and info.job_status == "SUCCEEDED"
    assert (info.start_time, info.end_time) == (1_025_000, 1_085_000)  # the 60 s annotation
    assert ended == [("uid-submitter", 0)]


async def test_an_interactive_job_exists_only_once_submitted_over_http() -> None:
    """Trial 3 finding 5: an InteractiveMode RayJob went SUCCEEDED although nothing was submitted."""
    clock = FakeClock(1_000.0)
    dash, pods, _ = _setup(clock, "InteractiveMode")
    client = dash.factory(CLUSTER, "")
    pods += [_ready(_pod("head", "head", "Running", 1_000, {}), 1_005),
             _ready(_pod("w1", "worker", "Running", 1_000, {}), 1_005),
             _ready(_pod("w2", "worker", "Running", 1_000, {}), 1_006)]
    clock.advance(100)
    assert await client.get_job_info("id-3") is None
    assert await client.list_jobs() == []
    client.submit({"submission_id": "id-3", "entrypoint": "python x.py"}, "job")  # POST /api/jobs/
    info = await client.get_job_info("id-3")
    assert info is not None and info.job_status == "RUNNING" and info.start_time == 1_100_000
    clock.advance(60)
    info = await client.get_job_info("id-3")
    assert info is not None and info.job_status == "SUCCEEDED" and info.end_time == 1_160_000


async def test_an_http_submission_before_readiness_starts_when_the_cluster_is_ready() -> None:
    clock = FakeClock(1_000.0)
    dash, pods, _ = _setup(clock, "HTTPMode")
    client = dash.factory(CLUSTER, "")
    head = _ready(_pod("head", "head", "Running", 1_000, {}), None)
    pods += [head, _ready(_pod("w1", "worker", "Running", 1_000, {}), 1_001),
             _ready(_pod("w2", "worker", "Running", 1_000, {}), 1_001)]
    await client.submit_job({"metadata": {"name": "job", "namespace": "ns"}, "spec": {"entrypoint": "x"},
                             "status": {"jobId": "id-4"}})
    clock.advance(5)
    info = await client.get_job_info("id-4")
    assert info is not None and info.job_status == "PENDING" and info.start_time == 0
    _ready(head, 1_007)
    clock.advance(5)
    info = await client.get_job_info("id-4")
    assert info is not None and info.job_status == "RUNNING" and info.start_time == 1_007_000


async def test_serve_refuses_a_config_without_applications_as_ray_does() -> None:
    """``serveConfigV2: "::: not yaml ["`` is YAML (the map {"::": "not yaml ["}); Ray Serve's schema
    refuses it with HTTP 400, so the controller records FailedToUpdateServeApplications."""
    from pumice.controllers.ray.dashboard import DashboardError

    clock = FakeClock(1_000.0)
    dash, _pods, _ = _setup(clock)
    client = dash.factory(CLUSTER, "")
    with pytest.raises(DashboardError, match=r"HTTP 400: .*applications: Field required"):
        await client.update_deployments({"::": "not yaml ["})
    with pytest.raises(DashboardError, match=r"applications\.0\.import_path: Field required"):
        await client.update_deployments({"applications": [{"name": "a"}]})
    assert (await client.get_serve_details()) == {"applications": {}}
    await client.update_deployments({"applications": [{"name": "a", "import_path": "m:app"}]})
    assert set((await client.get_serve_details())["applications"]) == {"a"}


SERVE = {"applications": [{"name": "app", "import_path": "m:app", "deployments": [{"name": "Model"}]}]}


def _serve_setup(clock: FakeClock, annotations: dict[str, str] | None = None
                 ) -> tuple[SimulatedRayDashboard, list[Obj], Obj]:
    pods: list[Obj] = []
    rayservice = {"metadata": {"name": "svc", "namespace": "ns", "annotations": dict(annotations or {})}}

    def select(ns: str, sel: dict[str, str]) -> list[Obj]:
        return [p for p in pods if (not ns or p["metadata"]["namespace"] == ns)
                and all(p["metadata"]["labels"].get(k) == v for k, v in sel.items())]

    dash = SimulatedRayDashboard(clock, pods=select, rayjobs=lambda ns, n: None,
                                 rayservices=lambda ns, n: rayservice if (ns, n) == ("ns", "svc") else None)
    cluster = {"metadata": {"name": "rc", "namespace": "ns", "ownerReferences": [{"kind": "RayService", "name": "svc"}]},
               "spec": {"workerGroupSpecs": [{"replicas": 1}]}}
    return dash, pods, cluster


async def test_a_rayservice_annotation_sets_the_serve_start_delay_of_its_cluster() -> None:
    clock = FakeClock(1_000.0)
    dash, _, cluster = _serve_setup(clock, {"pumice.io/sim-serve-start-seconds": "30"})
    client = dash.factory(cluster, "")
    await client.update_deployments(SERVE)
    clock.advance(29.5)
    assert apps_from_serve_details(await client.get_serve_details())[0] is False
    clock.advance(0.5)
    ready, apps = apps_from_serve_details(await client.get_serve_details())
    assert ready and apps["app"]["status"] == "RUNNING"


async def test_a_bad_serve_start_annotation_falls_back_to_the_default_delay() -> None:
    clock = FakeClock(1_000.0)
    dash, _, cluster = _serve_setup(clock, {"pumice.io/sim-serve-start-seconds": "soon"})
    assert dash.serve_delay(cluster) == dash.serve_start_delay


async def test_the_head_pods_serve_proxy_is_healthy_once_serve_runs_on_its_cluster() -> None:
    """The RayService controller's ``serve_proxy_healthy`` seam: GET /-/healthz on the head Pod's
    IP has no proxy to answer before Serve starts (the first PUT), and 200 after."""
    clock = FakeClock(1_000.0)
    dash, pods, cluster = _serve_setup(clock)
    head = _pod("head", "head", "Running", 1_000, {})
    head["status"]["podIP"] = "10.244.0.7"
    pods.append(head)
    worker = _pod("w", "worker", "Running", 1_000, {})
    worker["status"]["podIP"] = "10.244.0.8"
    pods.append(worker)
    assert await dash.serve_proxy_healthy_at("10.244.0.7", 8000) is False
    await dash.factory(cluster, "").update_deployments(SERVE)
    assert await dash.serve_proxy_healthy_at("10.244.0.7", 8000) is True
    assert await dash.serve_proxy_healthy_at("10.244.0.8", 8000) is False  # not a head Pod
    assert await dash.serve_proxy_healthy_at("", 8000) is False
    head["status"]["phase"] = "Failed"
    assert await dash.serve_proxy_healthy_at("10.244.0.7", 8000) is False


async def test_the_http_app_answers_the_operators_proxied_serve_proxy_health_check() -> None:
    """``pumice controller-manager --ray-dashboard-proxy`` in another process asks the simulated node
    agent instead of dialing the head Pod IP."""
    import httpx2

    from pumice.controllers.ray.dashboard import proxied_serve_proxy_health_check
    from pumice.simulate.ray_dashboard import asgi_app

    clock = FakeClock(1_000.0)
    dash, pods, cluster = _serve_setup(clock)
    head = _pod("head", "head", "Running", 1_000, {})
    head["status"]["podIP"] = "10.244.0.7"
    pods.append(head)
    app = asgi_app(dash, lambda ns, n: cluster if (ns, n) == ("ns", "rc") else None)
    healthy = proxied_serve_proxy_health_check("sim:1", transport=httpx2.ASGITransport(app=app))
    assert await healthy(head, 8000) is False  # Serve not started: no proxy (503)
    await dash.factory(cluster, "").update_deployments(SERVE)
    assert await healthy(head, 8000) is True
    assert await healthy({"status": {"podIP": "10.244.0.9"}}, 8000) is False and await healthy({}, 8000) is False


def test_controller_manager_with_a_dashboard_proxy_sends_both_dashboard_and_serve_proxy_checks_there() -> None:
    from pumice.cli.controller_manager import _ray_options

    assert _ray_options(None) == {}
    opts = _ray_options("http://sim:1")
    assert set(opts) == {"dashboard_client_factory", "serve_proxy_healthy"}
    client = opts["dashboard_client_factory"]({"metadata": {"namespace": "ns", "name": "rc"}}, "unused")  # type: ignore[operator]
    assert client.base_url == "http://sim:1/ns/rc"


async def test_a_failed_k8sjob_ends_its_submitter_with_0_and_a_retry_pod_started_after_the_end_too() -> None:
    """Trial 8 F-7: the K8sJobMode script ends with ``ray job logs --follow``, which exits 0 for any
    terminal job and returns at once for one already ended; a retry Pod of the submitter Job
    that started after the end never ended, holding the RayJob until the 300-s grace period."""
    clock = FakeClock(1_000.0)
    dash, pods, ended = _setup(clock)
    rayjob = dash.rayjobs("ns", "job")
    assert rayjob is not None
    rayjob["metadata"]["annotations"]["pumice.io/sim-exit-code"] = "1"
    client = dash.factory(CLUSTER, "")
    pods += [_pod("head", "head", "Running", 1_000, {}), _pod("w1", "worker", "Running", 1_000, {}),
             _pod("w2", "worker", "Running", 1_000, {}),
             _pod("submitter", "", "Running", 1_000, {"batch.kubernetes.io/job-name": "job"})]
    assert (info := await client.get_job_info("id-f")) is not None and info.job_status == "RUNNING"
    clock.advance(60)
    assert (info := await client.get_job_info("id-f")) is not None and info.job_status == "FAILED"
    assert ended == [("uid-submitter", 0)]
    pods.append(_pod("retry", "", "Running", 1_070, {"batch.kubernetes.io/job-name": "job"}))
    clock.advance(10)
    assert (info := await client.get_job_info("id-f")) is not None and info.job_status == "FAILED"
    assert ("uid-retry", 0) in ended
