"""Real Ray end to end (issue 5 acceptance): the in-process API server, the kube controllers (Job,
GC, endpoints), the default scheduler, one node agent with the process runtime (real ``ray start``
in per-Pod network namespaces) and the KubeRay operator with the HTTP dashboard client.

Serial and slow (Ray starts, pip installs): marked ``ray``. The operator runs in its own Manager so
the restart test can stop it and start a fresh one (new in-memory state) against the same world.

A wait that runs out, and a test that overruns its stack's ``budget``, fail with the objects'
status and the telling lines of Ray's logs (:mod:`pumice.testing.ray_logs`) in the message: a hang
in CI is diagnosed from the CI output. The budget is an ``asyncio.timeout`` around the test body,
below the module's pytest-timeout, because pytest-timeout's SIGALRM lands in whichever asyncio task
runs at that moment and is kept there as that task's result (``Task.__step`` keeps a BaseException
other than SystemExit/KeyboardInterrupt) when it is a background task (node agent, operator), so
the test would go on waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pumice.api import Obj, scheme
from pumice.controllers.ray import setup
from pumice.controllers.ray.dashboard import DashboardError, RayDashboardClient, http_dashboard_client_factory
from pumice.controllers.ray.status import format_rayjob_status
from pumice.runtime.manager import Manager
from pumice.testing.ray_logs import diagnosis

from .conftest import QUICK_READINESS, load_sample

T = TypeVar("T")

pytestmark = [
    pytest.mark.ray,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not (Path(sys.executable).parent / "ray").exists(), reason="ray is not installed"),
]



class Stack:
    """Handles to the running system."""

    def __init__(self, lc: Any, stop: asyncio.Event) -> None:
        self.lc = lc
        self.client = lc.client
        self.stop = stop
        self.operator: Manager | None = None
        self.operator_task: asyncio.Task[None] | None = None
        self.submissions: list[str] = []
        self.job_info_calls = 0
        self.agent: Any = None

    def counting_factory(self, cluster: Obj, url: str, auth_token: str | None = None) -> RayDashboardClient:
        inner = http_dashboard_client_factory(cluster, url, auth_token)
        outer = self

        class Counting:
            def __getattr__(self, name: str) -> Any:
                return getattr(inner, name)

            async def submit_job(self, rayjob: Obj) -> str:
                sid = await inner.submit_job(rayjob)
                outer.submissions.append(sid)
                return sid

            async def get_job_info(self, job_id: str) -> Any:
                outer.job_info_calls += 1
                return await inner.get_job_info(job_id)

        return Counting()  # type: ignore[return-value]

    async def start_operator(self) -> None:
        mgr = Manager(self.lc.new_client(field_manager="kuberay-operator"))
        setup(mgr, dashboard_client_factory=self.counting_factory)
        self.operator = mgr
        self.operator_task = asyncio.create_task(mgr.start(), name="kuberay-operator")
        await mgr.wait_started()

    async def kill_operator(self) -> None:
        assert self.operator is not None and self.operator_task is not None
        self.operator.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.operator_task, 30)
        self.operator = None

    async def rayjob(self, name: str) -> Obj:
        return await self.client.get(scheme.RAY_JOB, name, "default")

    async def diagnosis(self) -> str:
        """The objects' status, the Pods, Warning Events and Ray's log digest of every Pod."""
        return await diagnosis(self.client, self.agent.data_dir / "pods")

    async def until(self, what: str | Callable[[], str], probe: Callable[[], Awaitable[T]],
                    timeout: float = 300, period: float = 1.0) -> T:
        """Poll ``probe`` every ``period`` s until it returns a truthy value, and return it.

        Raises:
            AssertionError: not so within ``timeout`` s; the message names ``what`` (or what it
                returns then) and carries :meth:`diagnosis`.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            got = await probe()
            if got:
                return got
            if loop.time() >= deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for "
                                     f"{what() if callable(what) else what}\n{await self.diagnosis()}")
            await asyncio.sleep(period)

    async def wait_rayjob(self, name: str, pred: Callable[[Obj], bool], timeout: float = 600) -> Obj:
        """Poll RayJob ``name`` until ``pred(status)``, printing each new status line; see :meth:`until`."""
        last = ""

        async def probe() -> Obj | None:
            nonlocal last
            job = await self.rayjob(name)
            line = format_rayjob_status(job)
            if line != last:
                print(line, flush=True)
                last = line
            return job if pred(job.get("status") or {}) else None

        return await self.until(lambda: f"RayJob {name}; last status: {last}", probe, timeout)


def stack_root_ca() -> str:
    """A CA certificate for ``kube-root-ca.crt``: every Pod's ServiceAccount volume projects that
    ConfigMap, so the root-CA publisher must run (Pods of this in-process stack do not call the API
    server, so any valid certificate serves)."""
    import datetime

    from pumice._util.tls import self_signed

    return self_signed("pumice-test-ca", ["127.0.0.1"], now=datetime.datetime.now(datetime.UTC))[0].decode()


@contextlib.asynccontextmanager
async def stack(budget: float = 720, **agent_kwargs: Any) -> AsyncIterator[Stack]:
    """The whole system on one process-runtime Node; ``agent_kwargs`` go to the NodeAgent
    (e.g. ``node_cpu`` / ``node_memory``: the capacity the Node publishes).

    ``budget`` (s) bounds the body: past it the body is cancelled and the test fails with
    :meth:`Stack.diagnosis`. Keep it below the test's pytest-timeout by the teardown's ~2 minutes."""
    from pumice.controllers import kube
    from pumice.node import agent as agent_mod
    from pumice.scheduler.default import scheduler as sched
    from pumice.testing import cluster as cluster_mod
    data = Path(tempfile.mkdtemp(prefix="pumice-kuberay-e2e-", dir="/var/tmp"))
    stop = asyncio.Event()
    tasks: list[asyncio.Task[Any]] = []
    try:
        async with cluster_mod.local_cluster() as lc:
            s = Stack(lc, stop)
            kube_mgr = Manager(lc.new_client(field_manager="kube-controller-manager"))
            kube.setup(kube_mgr, root_ca=stack_root_ca())
            tasks.append(asyncio.create_task(kube_mgr.start(), name="kube-controllers"))
            tasks.append(asyncio.create_task(sched.run_scheduler(lc.new_client(), stop_event=stop),
                                             name="scheduler"))
            agent = agent_mod.NodeAgent(lc.new_client(), runtime="process", data_dir=data / "node",
                                        stop_grace=10.0, **agent_kwargs)
            s.agent = agent
            tasks.append(asyncio.create_task(agent.run(stop_event=stop), name="node-agent"))
            await kube_mgr.wait_started()
            await s.start_operator()
            try:
                budget_cm = asyncio.timeout(budget)
                try:
                    async with budget_cm:
                        yield s
                except TimeoutError as e:
                    if not budget_cm.expired():
                        raise
                    raise AssertionError(f"the test did not finish within its budget of {budget:.0f} s\n"
                                         f"{await s.diagnosis()}") from e
            finally:
                if s.operator is not None:
                    await s.kill_operator()
                stop.set()
                kube_mgr.stop()
                for t in tasks:
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await asyncio.wait_for(t, 60)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def small_cluster_spec(*, workers: bool = True) -> Obj:
    """The sample's cluster, with resources small enough for a 2-CPU machine; without its worker
    group when not ``workers`` (a test about the job's lifecycle, not the cluster's shape, spares
    the machine a second Ray node: each takes 10-40 s of the 2 CPUs to start)."""
    spec = load_sample("ray-job.sample.yaml", "RayJob")["spec"]["rayClusterSpec"]
    if not workers:
        del spec["workerGroupSpecs"]
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}
    spec["headGroupSpec"]["template"]["spec"].pop("volumes", None)
    spec["headGroupSpec"]["template"]["spec"]["containers"][0].pop("volumeMounts", None)
    for group in [spec["headGroupSpec"], *spec.get("workerGroupSpecs", [])]:
        group["template"]["spec"]["containers"][0]["readinessProbe"] = QUICK_READINESS
    return spec



async def apply_sample_rayjob(s: Stack) -> None:
    path = "ray-job.sample.yaml"
    await s.client.create(load_sample(path, "ConfigMap"))
    await s.client.create(load_sample(path, "RayJob"))


async def test_sample_rayjob_succeeds() -> None:
    async with stack() as s:
        await apply_sample_rayjob(s)
        job = await s.wait_rayjob("rayjob-sample", lambda st: st.get("jobDeploymentStatus") in ("Complete", "Failed"))
        st = job["status"]
        assert (st["jobStatus"], st["jobDeploymentStatus"]) == ("SUCCEEDED", "Complete"), st
        # the kept cluster's real dashboard through the API server's services/proxy (the head Pod IP
        # on the Pod bridge), as `kubectl get --raw .../services/<head svc>:dashboard/proxy/...`
        import httpx2

        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=s.lc.app), base_url="http://apiserver",
                                      headers={"Authorization": f"Bearer {s.lc.server.token}"}) as h:
            r = await h.get(f"/api/v1/namespaces/default/services/{st['rayClusterName']}-head-svc:dashboard/proxy"
                            f"/api/jobs/{st['jobId']}")
        assert r.status_code == 200 and r.json()["status"] == "SUCCEEDED", r.text


async def test_failing_entrypoint_with_backoff_limit_1_fails_twice() -> None:
    async with stack() as s:
        await s.client.create({
            "apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rayjob-fail", "namespace": "default"},
            "spec": {"entrypoint": "python -c 'import sys; sys.exit(1)'", "submissionMode": "HTTPMode",
                     "backoffLimit": 1, "shutdownAfterJobFinishes": True,
                     "rayClusterSpec": small_cluster_spec(workers=False)},
        })
        job = await s.wait_rayjob("rayjob-fail", lambda st: st.get("jobDeploymentStatus") == "Failed")
        st = job["status"]
        assert (st["jobStatus"], st["reason"], st["failed"]) == ("FAILED", "AppFailed", 2)
        assert len(s.submissions) == 2 and len(set(s.submissions)) == 2


async def ray_nodes(cluster: Obj) -> int:
    """Alive Ray nodes as the head's dashboard reports them (state API)."""
    import httpx2

    ip = cluster["status"]["head"]["podIP"]
    async with httpx2.AsyncClient(timeout=5) as http:
        r = await http.get(f"http://{ip}:8265/api/v0/nodes", params={"limit": 100})
    if r.status_code != 200:
        raise DashboardError(f"nodes: HTTP {r.status_code}")
    nodes = r.json()["data"]["result"]["result"]
    return sum(1 for n in nodes if n.get("state") == "ALIVE")


async def test_raycluster_scales_1_2_1_with_workers_to_delete() -> None:
    async with stack() as s:
        spec = small_cluster_spec()
        spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"] = {
            "limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "200m", "memory": "512Mi"}}
        await s.client.create({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                               "metadata": {"name": "scale", "namespace": "default"}, "spec": spec})

        async def get() -> Obj:
            return await s.client.get(scheme.RAY_CLUSTER, "scale", "default")

        async def workers() -> list[str]:
            pods = (await s.client.list(scheme.POD, "default",
                                        label_selector="ray.io/cluster=scale,ray.io/node-type=worker")).items
            return sorted(p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp"))

        async def nodes_are(n: int) -> bool:
            try:
                return await ray_nodes(await get()) == n
            except Exception:
                return False

        await s.until("RayCluster scale ready", lambda: _state_ready(get))
        await s.until("2 Ray nodes", lambda: nodes_are(2))
        first = await workers()
        cl = await get()
        cl["spec"]["workerGroupSpecs"][0]["replicas"] = 2
        await s.client.update(cl)
        await s.until("3 Ray nodes", lambda: nodes_are(3))
        second = next(n for n in await workers() if n not in first)
        cl = await get()
        cl["spec"]["workerGroupSpecs"][0]["replicas"] = 1
        cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"] = {"workersToDelete": [second]}
        await s.client.update(cl)

        async def only_first() -> bool:
            return await workers() == first

        await s.until(f"only the first worker {first} left", only_first)
        await s.until("2 Ray nodes again", lambda: nodes_are(2))


async def _state_ready(get: Callable[[], Any]) -> bool:
    return ((await get()).get("status") or {}).get("state") == "ready"


async def test_operator_restart_while_running_neither_resubmits_nor_recreates() -> None:
    async with stack() as s:
        # the entrypoint runs until the test releases it (a host path: the Pods' /tmp is private),
        # so the job is RUNNING for the whole restart however slow the machine, and ends right after
        release = s.agent.data_dir.parent / "release-rayjob-restart"
        await s.client.create({
            "apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rayjob-restart", "namespace": "default"},
            "spec": {"entrypoint": ("python -c 'import os, time; [time.sleep(0.2) for _ in iter(lambda: "
                                    f"os.path.exists(\"{release}\"), True)]; print(\"done\")'"),
                     "rayClusterSpec": small_cluster_spec(workers=False)},
        })
        job = await s.wait_rayjob("rayjob-restart", lambda st: st.get("jobStatus") == "RUNNING")
        before = job["status"]
        await s.kill_operator()
        await asyncio.sleep(3)
        s.job_info_calls = 0
        await s.start_operator()

        async def new_operator_polled_the_running_job() -> bool:
            return s.job_info_calls >= 2

        await s.until("the restarted operator to poll the running job twice", new_operator_polled_the_running_job)
        release.touch()
        job = await s.wait_rayjob("rayjob-restart", lambda st: st.get("jobDeploymentStatus") in ("Complete", "Failed"))
        st = job["status"]
        assert (st["jobStatus"], st["jobDeploymentStatus"]) == ("SUCCEEDED", "Complete")
        assert (st["jobId"], st["rayClusterName"]) == (before["jobId"], before["rayClusterName"])
        clusters = (await s.client.list(scheme.RAY_CLUSTER, "default")).items
        assert [c["metadata"]["name"] for c in clusters] == [before["rayClusterName"]]
        cluster = clusters[0]
        dash = http_dashboard_client_factory(cluster, st["dashboardURL"])
        assert [j.submission_id for j in await dash.list_jobs() if j.submission_id] == [st["jobId"]]
        submitter = await s.client.get(scheme.JOB, "rayjob-restart", "default")
        assert (submitter.get("status") or {}).get("succeeded") == 1






async def test_sidecar_mode_rayjob_succeeds() -> None:
    async with stack() as s:
        await s.client.create({
            "apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rayjob-sidecar", "namespace": "default"},
            "spec": {"entrypoint": "python -c 'import ray; ray.init(); print(ray.cluster_resources())'",
                     "submissionMode": "SidecarMode", "shutdownAfterJobFinishes": True,
                     "rayClusterSpec": small_cluster_spec(workers=False)},
        })
        job = await s.wait_rayjob("rayjob-sidecar", lambda st: st.get("jobDeploymentStatus") in ("Complete", "Failed"))
        st = job["status"]
        assert (st["jobStatus"], st["jobDeploymentStatus"]) == ("SUCCEEDED", "Complete"), st


async def test_a_test_past_its_stack_budget_fails_with_the_diagnosis() -> None:
    """A hang fails at the stack's budget with the objects' status in the message (no Ray needed:
    the body just waits)."""
    with pytest.raises(AssertionError, match="did not finish within its budget of 3 s") as failed:
        async with stack(budget=3):
            await asyncio.sleep(3600)
    text = str(failed.value)
    assert "=== objects" in text and "=== Ray logs" in text and "(no Ray logs under" in text
