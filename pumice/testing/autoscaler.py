"""The in-tree autoscaler scenario on real Ray, shared by the acceptance test
(tests/ray/test_e2e_autoscaler.py) and ``bench/kuberay.py --autoscaler``.

KubeRay's ray-cluster.autoscaler.yaml runs in ``pumice up``: the head has ``num-cpus: 0``, so a
task asking for one CPU stays queued until the unmodified Ray autoscaler (the head Pod's
``autoscaler`` container, talking to pumice's API server with its ServiceAccount token) raises the
worker group's ``replicas``; once the worker has been idle for ``idleTimeoutSeconds`` the
autoscaler names it in ``workersToDelete`` and lowers ``replicas`` again.

Times come from the host's wall clock (polls every 0.2 s) and from the Ray driver and task, which
run on the same machine and print ``time.time()``: they share the clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pumice._util.clock import default_clock
from pumice.api import Obj, scheme
from pumice.api.meta import pod_is_ready
from pumice.controllers.ray.dashboard import DashboardError, HttpDashboardClient

__all__ = ["TASK_SECONDS", "AutoscalerTimings", "autoscaler_log", "scale_up_and_down", "wait_head_ready"]

T = TypeVar("T")

TASK_SECONDS = 5
"""How long the one-CPU task sleeps."""

_ENTRYPOINT = (
    "python -c \"import ray, time; ray.init(); "
    f"f = ray.remote(num_cpus=1)(lambda: (time.time(), time.sleep({TASK_SECONDS}), time.time())); "
    "q = time.time(); r = ray.get(f.remote()); print('answer', 7); print('TIMES', q, r[0], r[2])\"")
"""A driver that queues one task needing a CPU the head does not have and prints when it queued
it and when the task started and ended."""


@dataclass(frozen=True)
class AutoscalerTimings:
    """Seconds, measured in one scale-up/scale-down cycle.

    Attributes:
        queued_to_pod_created: task queued by the driver -> worker Pod in the API (the autoscaler's
            decision, its PATCH of ``replicas`` and the operator creating the Pod).
        queued_to_pod_running: -> worker Pod phase Running.
        queued_to_task_started: -> the task's first line runs in the worker (Ray node joined).
        pod_created_to_running: the Pod's own start (scheduling, node agent, containers): the
            baseline a manual ``replicas`` change would cost too.
        task_ended_to_scaled_down: task ended (the worker idles from here) -> ``replicas`` back
            to 0 in the RayCluster (the autoscaler's scale-down PATCH with ``workersToDelete``).
        task_ended_to_pod_gone: -> the worker Pod gone from the API.
        idle_timeout_seconds: the cluster's ``autoscalerOptions.idleTimeoutSeconds``.
        worker_pod: the name of the worker Pod the autoscaler started.
        workers_to_delete: the group's ``scaleStrategy.workersToDelete`` when ``replicas`` went
            back to 0.
        job_log: the Ray job's log.
    """

    queued_to_pod_created: float
    queued_to_pod_running: float
    queued_to_task_started: float
    pod_created_to_running: float
    task_ended_to_scaled_down: float
    task_ended_to_pod_gone: float
    idle_timeout_seconds: float
    worker_pod: str
    workers_to_delete: tuple[str, ...]
    job_log: str


async def _wait(what: str, probe: Callable[[], Awaitable[T | None]], timeout: float, period: float = 0.2) -> T:
    clock = default_clock()
    deadline = clock.now() + timeout
    while clock.now() < deadline:
        got = await probe()
        if got:
            return got
        await asyncio.sleep(period)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _head_selector(cluster: str) -> str:
    return f"ray.io/cluster={cluster},ray.io/node-type=head"


async def wait_head_ready(client: Any, cluster: str, namespace: str = "default", timeout: float = 600) -> Obj:
    """Wait for the head Pod to be Ready, its ``autoscaler`` container to run and its dashboard to
    answer the Jobs API (the containers run about a second after binding, long before ``ray
    start`` listens). Returns the head Pod.

    Raises:
        AssertionError: not so within ``timeout`` s.
    """
    async def probe() -> Obj | None:
        pods = (await client.list(scheme.POD, namespace, label_selector=_head_selector(cluster))).items
        if not pods or not pod_is_ready(pods[0]):
            return None
        st = pods[0].get("status") or {}
        running = {cs["name"]: bool((cs.get("state") or {}).get("running")) for cs in st.get("containerStatuses") or []}
        if not (running.get("autoscaler") and st.get("podIP")):
            return None
        try:
            await HttpDashboardClient(f"http://{st['podIP']}:8265", timeout=5).list_jobs()
        except DashboardError:
            return None
        return dict(pods[0])

    return await _wait("the head Ready with its autoscaler and its dashboard answering", probe, timeout, period=1.0)


async def autoscaler_log(client: Any, cluster: str, namespace: str = "default", lines: int = 80) -> str:
    """The last ``lines`` lines of the head Pod's ``autoscaler`` container."""
    pods = (await client.list(scheme.POD, namespace, label_selector=_head_selector(cluster))).items
    if not pods:
        return "(no head Pod)"
    chunks = [c async for c in client.logs(namespace, pods[0]["metadata"]["name"], container="autoscaler",
                                           tail_lines=lines)]
    return b"".join(chunks).decode(errors="replace")


async def scale_up_and_down(client: Any, cluster: str, head_ip: str, namespace: str = "default",
                            job_id: str = "scale-1", timeout: float = 600) -> AutoscalerTimings:
    """Submit the one-CPU task, follow the worker Pod up and, once the task ended, down again.

    Raises:
        AssertionError: a step did not happen within ``timeout`` s, the job did not succeed, or
            a worker Pod existed before the task was submitted.
    """
    clock = default_clock()
    sel = f"ray.io/cluster={cluster},ray.io/node-type=worker"

    async def workers() -> list[Obj]:
        return [p for p in (await client.list(scheme.POD, namespace, label_selector=sel)).items
                if not p["metadata"].get("deletionTimestamp")]

    if await workers():
        raise AssertionError("a worker Pod exists before any task asked for one")
    cl = await client.get(scheme.RAY_CLUSTER, cluster, namespace)
    idle = float(((cl.get("spec") or {}).get("autoscalerOptions") or {}).get("idleTimeoutSeconds") or 60)
    dash = HttpDashboardClient(f"http://{head_ip}:8265", timeout=30)
    await dash.submit_job({"spec": {"entrypoint": _ENTRYPOINT}, "status": {"jobId": job_id}})

    async def created() -> float:
        return clock.now() if await workers() else 0.0

    async def running() -> float:
        ws = await workers()
        return clock.now() if ws and all((w.get("status") or {}).get("phase") == "Running" for w in ws) else 0.0

    t_created = await _wait("a worker Pod", created, timeout)
    worker_pod = str((await workers())[0]["metadata"]["name"])
    t_running = await _wait("the worker Pod to run", running, timeout)

    async def done() -> str:
        info = await dash.get_job_info(job_id)
        return info.job_status if info and info.job_status in ("SUCCEEDED", "FAILED", "STOPPED") else ""

    status = await _wait("the Ray job to end", done, timeout, period=1.0)
    text = await dash.get_job_log(job_id)
    if status != "SUCCEEDED":
        raise AssertionError(f"the Ray job ended {status}: {text[-2000:]}")
    times = next((line.split()[1:] for line in text.splitlines() if line.startswith("TIMES ")), None)
    if times is None:
        raise AssertionError(f"the job printed no TIMES line: {text[-2000:]}")
    queued, started, ended = (float(x) for x in times)

    to_delete: list[str] = []

    async def scaled_down() -> float:
        group = (await client.get(scheme.RAY_CLUSTER, cluster, namespace))["spec"]["workerGroupSpecs"][0]
        if group.get("replicas") != 0:
            return 0.0
        to_delete.extend((group.get("scaleStrategy") or {}).get("workersToDelete") or [])
        return clock.now()

    async def gone() -> float:
        return 0.0 if await workers() else clock.now()

    t_scaled = await _wait("replicas back to 0", scaled_down, idle + timeout)
    t_gone = await _wait("the idle worker Pod to go", gone, timeout)
    return AutoscalerTimings(
        queued_to_pod_created=t_created - queued, queued_to_pod_running=t_running - queued,
        queued_to_task_started=started - queued, pod_created_to_running=t_running - t_created,
        task_ended_to_scaled_down=t_scaled - ended, task_ended_to_pod_gone=t_gone - ended,
        idle_timeout_seconds=idle, worker_pod=worker_pod, workers_to_delete=tuple(to_delete), job_log=text)
