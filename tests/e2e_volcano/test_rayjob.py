"""A KubeRay RayJob gang-scheduled by Volcano, end to end: API server with the Volcano admission,
the Volcano, KubeRay (Volcano adapter) and batch Job/GC controllers, the scheduler's sessions
(stepped), a node agent and a fake Ray dashboard. Upstream sample:
samples/kuberay/ray-job.volcano-scheduler-queue.yaml (queue capability 4 cpu / 6Gi)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator
from typing import Any

import yaml

from pumice.api import scheme
from pumice.api.scheme import RAY_JOB
from pumice.cli.explain import explain_live
from pumice.client.base import ApiError
from pumice.runtime.manager import Manager
from pumice.scheduler.volcano import default_conf
from pumice.testing.cluster import running
from pumice.testing.paths import shared_dir
from pumice.testing.volcano_controllers import add_nodes, eventually, ready_node, schedule_once

SAMPLE = shared_dir() / "samples" / "kuberay" / "ray-job.volcano-scheduler-queue.yaml"


def sample_docs() -> dict[str, dict]:
    docs = [d for d in yaml.safe_load_all(SAMPLE.read_text()) if d]
    out = {}
    for d in docs:
        if d["kind"] != "Queue":
            d["metadata"].setdefault("namespace", "default")
        out[d["kind"]] = d
    return out


@contextlib.asynccontextmanager
async def ray_controllers(client: Any) -> AsyncIterator[Any]:
    from pumice.controllers.kube import setup as kube_setup
    from pumice.controllers.ray import setup as ray_setup
    from pumice.testing.ray_dashboard import FakeRayDashboard

    dash = FakeRayDashboard()
    mgr = Manager(client)
    ray_setup(mgr, batch_scheduler="volcano", dashboard_client_factory=dash.factory, seed=7)
    kube_setup(mgr, controllers=["job", "garbagecollector"])
    async with running(mgr):
        yield dash


async def _get(c: Any, kind: Any, name: str, ns: str | None = "default") -> dict | None:
    try:
        return await c.client.get(kind, name, ns)
    except ApiError:
        return None


async def ray_pods(c: Any, rayjob: str) -> list[dict]:
    rj = await _get(c, RAY_JOB, rayjob)
    cluster = ((rj or {}).get("status") or {}).get("rayClusterName")
    if not cluster:
        return []
    items = (await c.client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={cluster}")).items
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


async def test_a_volcano_rayjob_is_bound_in_one_session_and_waits_when_the_queue_is_full(cluster: Any) -> None:
    c = cluster
    conf = default_conf()
    docs = sample_docs()
    await add_nodes(c.client, [ready_node("n1", cpu="4", memory="8Gi"), ready_node("n2", cpu="4", memory="8Gi")])
    await c.client.create(docs["Queue"])
    await eventually(lambda: _open(c, "kuberay-test-queue"))
    await c.client.create(docs["ConfigMap"])
    first = copy.deepcopy(docs["RayJob"])
    first["spec"]["shutdownAfterJobFinishes"] = True
    async with ray_controllers(c.client) as dash:
        await c.client.create(first)
        pg = await eventually(lambda: _get(c, scheme.POD_GROUP, "ray-rayjob-sample-0-pg"))
        assert pg["spec"]["queue"] == "kuberay-test-queue"
        assert pg["spec"]["minMember"] == 3
        pods = await eventually(lambda: _n(ray_pods(c, "rayjob-sample-0"), 3))
        assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
        # one session binds the whole gang (head + 2 workers), never a part of it
        sessions = []
        for _ in range(5):
            res = await schedule_once(c.client, conf)
            bound = {k for k in res.binds if k.split("/", 1)[1] in {p["metadata"]["name"] for p in pods}}
            if bound:
                sessions.append(bound)
                break
            await asyncio.sleep(0.05)
        assert sessions and len(sessions[0]) == 3, sessions

        # the same RayJob again: the queue (capability 4 cpu) cannot hold a second gang
        second = copy.deepcopy(docs["RayJob"])
        second["metadata"]["name"] = "rayjob-sample-1"
        await c.client.create(second)
        await eventually(lambda: _get(c, scheme.POD_GROUP, "ray-rayjob-sample-1-pg"))
        await eventually(lambda: _n(ray_pods(c, "rayjob-sample-1"), 3))
        for _ in range(3):
            await schedule_once(c.client, conf)
            await asyncio.sleep(0.05)
        pg1 = await c.client.get(scheme.POD_GROUP, "ray-rayjob-sample-1-pg", "default")
        assert (pg1.get("status") or {}).get("phase", "Pending") == "Pending"
        assert not any(p["spec"].get("nodeName") for p in await ray_pods(c, "rayjob-sample-1"))
        ex = await explain_live(c.client, "rayjob/rayjob-sample-1", "default")
        assert ex.gate == "enqueue-quota", ex.render()
        assert "raise queue kuberay-test-queue capability.cpu to" in ex.remedy, ex.render()

        # the first job finishes: its cluster goes, the queue has room, the second gang runs
        rj = await eventually(lambda: _job_id(c, "rayjob-sample-0"))
        dash.set_job_status(rj, "SUCCEEDED")
        for _ in range(40):  # the submitter Pod (K8sJobMode) runs in the same gang, then ends
            sub = await _submitter_pod(c, "rayjob-sample-0")
            if sub is not None and (sub.get("status") or {}).get("phase") == "Running":
                await c.kubelet.finish(sub["metadata"]["name"])
                break
            await schedule_once(c.client, conf)
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the submitter Pod of rayjob-sample-0 never ran")

        async def second_bound() -> bool:
            pods1 = await ray_pods(c, "rayjob-sample-1")
            return len(pods1) == 3 and all(p["spec"].get("nodeName") for p in pods1)

        for _ in range(60):
            if await second_bound():
                break
            await schedule_once(c.client, conf)
            await asyncio.sleep(0.05)
        assert await second_bound()


async def _n(coro: Any, n: int) -> list | None:
    items = await coro
    return items if len(items) == n else None


async def _open(c: Any, name: str) -> bool:
    q = await _get(c, scheme.QUEUE, name, None)
    return bool(q and (q.get("status") or {}).get("state") == "Open")


async def _job_id(c: Any, name: str) -> str | None:
    rj = await _get(c, RAY_JOB, name)
    return ((rj or {}).get("status") or {}).get("jobId") or None


async def _submitter_pod(c: Any, rayjob: str) -> dict | None:
    items = (await c.client.list(scheme.POD, "default", label_selector=f"job-name={rayjob}")).items
    live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    return live[0] if live else None
