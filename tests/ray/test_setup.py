"""``pumice.controllers.ray.setup`` on a real runtime Manager: informers, watches and work queues
drive both controllers end to end (FakeClient as the API, a tiny simulated kubelet, the fake Ray
dashboard)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pumice._util.clock import rfc3339
from pumice.api import scheme
from pumice.controllers.ray import setup
from pumice.controllers.ray.batchscheduler import UnknownBatchSchedulerError
from pumice.runtime.manager import Manager
from pumice.testing.fake_client import FakeClient
from pumice.testing.ray_dashboard import FakeRayDashboard

from .conftest import load_sample


async def kubelet(client: FakeClient, dash: FakeRayDashboard) -> None:
    """Mark every Pod Running/Ready; when a submitter Job appears, let Ray run the job and complete it."""
    while True:
        for p in (await client.list(scheme.POD, "default")).items:
            if (p.get("status") or {}).get("phase") != "Running" and not p["metadata"].get("deletionTimestamp"):
                p["apiVersion"], p["kind"] = "v1", "Pod"
                p["status"] = {"phase": "Running", "podIP": "10.244.0.7",
                               "conditions": [{"type": "Ready", "status": "True"}]}
                with contextlib.suppress(Exception):
                    await client.update_status(p)
        for j in (await client.list(scheme.JOB, "default")).items:
            if not j.get("status"):
                job_id = next(e["value"] for e in j["spec"]["template"]["spec"]["containers"][0]["env"]
                              if e["name"] == "RAY_JOB_SUBMISSION_ID")
                dash.set_job_status(job_id, "SUCCEEDED", start_time=1, end_time=2)
                j["apiVersion"], j["kind"] = "batch/v1", "Job"
                j["status"] = {"conditions": [{"type": "Complete", "status": "True",
                                               "lastTransitionTime": rfc3339(client.clock.now())}]}
                with contextlib.suppress(Exception):
                    await client.update_status(j)
        for sid, info in list(dash.jobs.items()):
            if info.job_status == "PENDING":  # HTTPMode submissions finish at once
                dash.set_job_status(sid, "SUCCEEDED", start_time=1, end_time=2)
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running(client: FakeClient, dash: FakeRayDashboard, *, seed: int = 1,
                  manager_client: Any = None, **kw: Any) -> AsyncIterator[Manager]:
    """The operator (on ``manager_client``, default ``client``) and the simulated kubelet (on
    ``client``) running until the block ends."""
    mgr = Manager(manager_client if manager_client is not None else client)
    setup(mgr, dashboard_client_factory=dash.factory, seed=seed, **kw)
    tasks = [asyncio.create_task(mgr.start()), asyncio.create_task(kubelet(client, dash))]
    await mgr.wait_started()
    try:
        yield mgr
    finally:
        mgr.stop()
        tasks[1].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def wait_for(pred: Any, timeout: float = 60.0) -> None:
    async def loop() -> None:
        while not await pred():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(loop(), timeout)


async def test_setup_runs_a_raycluster_to_ready(client: FakeClient) -> None:
    dash = FakeRayDashboard()
    async with running(client, dash):
        await client.create(load_sample("ray-cluster.sample.yaml", "RayCluster"))

        async def ready() -> bool:
            cl = await client.get(scheme.RAY_CLUSTER, "raycluster-kuberay", "default")
            return (cl.get("status") or {}).get("state") == "ready"

        await wait_for(ready)


async def test_setup_runs_the_sample_rayjob_to_complete_and_tears_the_cluster_down(client: FakeClient) -> None:
    dash = FakeRayDashboard()
    async with running(client, dash):
        job = load_sample("ray-job.sample.yaml", "RayJob")
        job["spec"]["shutdownAfterJobFinishes"] = True
        await client.create(job)

        async def complete() -> bool:
            st = (await client.get(scheme.RAY_JOB, "rayjob-sample", "default")).get("status") or {}
            return st.get("jobDeploymentStatus") == "Complete"

        await wait_for(complete)

        async def cluster_gone() -> bool:
            return not (await client.list(scheme.RAY_CLUSTER, "default")).items

        await wait_for(cluster_gone)
    st = (await client.get(scheme.RAY_JOB, "rayjob-sample", "default"))["status"]
    assert (st["jobStatus"], st["succeeded"], st["failed"]) == ("SUCCEEDED", 1, 0)


def test_setup_rejects_an_unknown_batch_scheduler(client: FakeClient) -> None:
    with pytest.raises(UnknownBatchSchedulerError):
        setup(Manager(client), batch_scheduler="kube-batch")
