"""The KubeRay controllers against the in-process API server (real validation, defaulting, CRD
schemas and watches), with a simulated kubelet: Pods, Services and status writes are accepted by
the server, and scaling with workersToDelete removes exactly the named Pod."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from pumice.api import scheme
from pumice.testing import cluster as cluster_mod
from pumice.testing.ray_dashboard import FakeRayDashboard

from .conftest import load_sample
from .test_setup import running, wait_for


@contextlib.asynccontextmanager
async def stack() -> AsyncIterator[Any]:
    async with cluster_mod.local_cluster() as lc, running(
        lc.client, FakeRayDashboard(), seed=3, manager_client=lc.new_client(field_manager="kuberay-operator")
    ):
        yield lc.client


async def worker_names(client: Any) -> list[str]:
    pods = (await client.list(scheme.POD, "default",
                              label_selector="ray.io/cluster=raycluster-kuberay,ray.io/node-type=worker")).items
    return sorted(p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp"))


async def test_raycluster_scales_1_2_1_with_workers_to_delete_on_the_api_server() -> None:
    async with stack() as client:
        await client.create(load_sample("ray-cluster.sample.yaml", "RayCluster"))

        async def state_ready() -> bool:
            cl = await client.get(scheme.RAY_CLUSTER, "raycluster-kuberay", "default")
            return (cl.get("status") or {}).get("state") == "ready"

        await wait_for(state_ready)
        first = await worker_names(client)
        assert len(first) == 1
        cl = await client.get(scheme.RAY_CLUSTER, "raycluster-kuberay", "default")
        cl["spec"]["workerGroupSpecs"][0]["replicas"] = 2
        await client.update(cl)

        async def two() -> bool:
            return len(await worker_names(client)) == 2

        await wait_for(two)
        both = await worker_names(client)
        second = next(n for n in both if n not in first)
        cl = await client.get(scheme.RAY_CLUSTER, "raycluster-kuberay", "default")
        cl["spec"]["workerGroupSpecs"][0]["replicas"] = 1
        cl["spec"]["workerGroupSpecs"][0]["scaleStrategy"] = {"workersToDelete": [second]}
        await client.update(cl)

        async def back_to_first() -> bool:
            return await worker_names(client) == first

        await wait_for(back_to_first)
        await asyncio.sleep(0.3)  # a few more passes: nothing else is deleted or created
        assert await worker_names(client) == first
        svc = await client.get(scheme.SERVICE, "raycluster-kuberay-head-svc", "default")
        assert svc["spec"]["clusterIP"] == "None"


async def test_sample_rayjob_completes_on_the_api_server() -> None:
    async with stack() as client:
        job = load_sample("ray-job.sample.yaml", "RayJob")
        job["spec"]["shutdownAfterJobFinishes"] = True
        await client.create(job)

        async def complete() -> bool:
            st = (await client.get(scheme.RAY_JOB, "rayjob-sample", "default")).get("status") or {}
            return st.get("jobDeploymentStatus") == "Complete"

        await wait_for(complete)
        st = (await client.get(scheme.RAY_JOB, "rayjob-sample", "default"))["status"]
        assert st["jobStatus"] == "SUCCEEDED"
