"""The in-tree autoscaler on real Ray (issue 10 acceptance): ``pumice up`` runs KubeRay's
ray-cluster.autoscaler.yaml; the unmodified Ray autoscaler process in the head Pod's ``autoscaler``
container talks to pumice's API server with its ServiceAccount token, scales the worker group up
when a task needs a CPU (the head has ``num-cpus: 0``) and back down through ``workersToDelete``
after ``idleTimeoutSeconds`` (60 in the sample).

Runs ``pumice up`` as a subprocess, as a user does; marked ``ray_long``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from pumice.api import Obj, scheme
from pumice.api.meta import pod_is_ready
from pumice.controllers.ray.dashboard import DashboardError, HttpDashboardClient

from .conftest import load_sample

pytestmark = [
    pytest.mark.ray,
    pytest.mark.ray_long,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(not (Path(sys.executable).parent / "ray").exists(), reason="ray is not installed"),
]

NAME = "raycluster-autoscaler"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def pumice_up() -> AsyncIterator[Any]:
    """``pumice up`` in a subprocess; yields a client from its kubeconfig."""
    from pumice.client.kubeconfig import connect

    data = Path(tempfile.mkdtemp(prefix="pumice-autoscaler-e2e-", dir="/var/tmp"))
    log = (data / "up.log").open("w")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "pumice"), "up", "--data-dir", str(data / "d"),
                             "--port", str(_free_port()), "--batch-scheduler", "none", "--node-cpu", "8",
                             "--node-memory", "24Gi"], stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ),
                            start_new_session=True)
    client = None
    try:
        for _ in range(120):
            if (data / "d" / "kubeconfig").exists():
                break
            if proc.poll() is not None:
                raise AssertionError(f"pumice up exited: {(data / 'up.log').read_text()[-2000:]}")
            await asyncio.sleep(0.5)
        client = connect(data / "d" / "kubeconfig")
        for _ in range(120):
            try:
                await client.list(scheme.NAMESPACE)
                break
            except Exception:
                await asyncio.sleep(0.5)
        yield client
    finally:
        if client is not None:
            await client.close()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        print((data / "up.log").read_text()[-3000:], flush=True)
        shutil.rmtree(data, ignore_errors=True)


async def wait_for(what: str, pred: Callable[[], Any], timeout: float = 600) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        got = await pred()
        if got:
            return got
        await asyncio.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


async def test_autoscaler_scales_up_on_a_queued_task_and_down_when_idle() -> None:
    async with pumice_up() as client:
        for kind in ("ConfigMap", "RayCluster"):
            await client.create(load_sample("ray-cluster.autoscaler.yaml", kind))
        async def head_ready() -> str:
            # The head's containers run ~1 s after the Pod is bound, but `ray start` needs several
            # seconds more before GCS and the dashboard listen: wait for the Pod's Ready condition
            # (KubeRay's readiness probe checks the raylet and GCS through the dashboard agent),
            # the autoscaler container running, and the dashboard answering the Jobs API.
            pods = (await client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={NAME},ray.io/node-type=head")).items
            if not pods or not pod_is_ready(pods[0]):
                return ""
            st = pods[0].get("status") or {}
            running = {cs["name"]: bool((cs.get("state") or {}).get("running")) for cs in st.get("containerStatuses") or []}
            if not (running.get("autoscaler") and running.get("ray-head") and st.get("podIP")):
                return ""
            try:
                await HttpDashboardClient(f"http://{st['podIP']}:8265", timeout=5).list_jobs()
            except DashboardError:
                return ""
            return str(st["podIP"])
        ip = await wait_for("the head Ready with its autoscaler and its dashboard answering", head_ready)
        head_name = (await client.list(scheme.POD, "default",
                                       label_selector=f"ray.io/cluster={NAME},ray.io/node-type=head")).items[0]["metadata"]["name"]
        try:
            await scale_up_and_down(client, ip)
        except BaseException:
            # What the autoscaler said is the first thing to read when scaling did not happen.
            text = b"".join([c async for c in client.logs("default", head_name, container="autoscaler", tail_lines=80)])
            print("autoscaler container log (tail):\n" + text.decode(errors="replace"), flush=True)
            raise


async def scale_up_and_down(client: Any, ip: str) -> None:
    """Submit a task that needs a worker, wait for it, then for the idle worker's removal."""
    loop = asyncio.get_running_loop()

    async def workers() -> list[Obj]:
        return [p for p in (await client.list(scheme.POD, "default",
                                              label_selector=f"ray.io/cluster={NAME},ray.io/node-type=worker")).items
                if not p["metadata"].get("deletionTimestamp")]
    assert await workers() == []
    dash = HttpDashboardClient(f"http://{ip}:8265", timeout=30)
    entrypoint = ("python -c \"import ray, time; ray.init(); "
                  "f = ray.remote(num_cpus=1)(lambda: (time.sleep(5), 7)[1]); print('answer', ray.get(f.remote()))\"")
    t0 = loop.time()
    await dash.submit_job({"spec": {"entrypoint": entrypoint}, "status": {"jobId": "scale-1"}})

    async def worker_running() -> bool:
        ws = await workers()
        return bool(ws) and all((w.get("status") or {}).get("phase") == "Running" for w in ws)
    await wait_for("a worker Pod to run", worker_running)
    t_worker = loop.time() - t0

    async def done() -> str:
        info = await dash.get_job_info("scale-1")
        return info.job_status if info and info.job_status in ("SUCCEEDED", "FAILED", "STOPPED") else ""
    assert await wait_for("the job", done) == "SUCCEEDED"
    t_task = loop.time() - t0
    assert "answer 7" in await dash.get_job_log("scale-1")
    cl = await client.get(scheme.RAY_CLUSTER, NAME, "default")
    assert cl["spec"]["workerGroupSpecs"][0]["replicas"] >= 1
    t1 = loop.time()

    async def scaled_down() -> bool:
        return not await workers()
    await wait_for("the idle worker to be removed", scaled_down, timeout=400)
    t_down = loop.time() - t1
    cl = await client.get(scheme.RAY_CLUSTER, NAME, "default")
    print(f"autoscaler: task submitted -> worker Running {t_worker:.0f} s, -> task done {t_task:.0f} s; "
          f"idle -> worker removed {t_down:.0f} s (idleTimeoutSeconds 60)", flush=True)
    assert cl["spec"]["workerGroupSpecs"][0]["replicas"] == 0
