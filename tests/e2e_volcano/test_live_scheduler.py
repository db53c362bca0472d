"""The seeds' example with the live Volcano scheduler loop (``pumice.scheduler.volcano.run``)
instead of stepped sessions: API server + Volcano admission + controllers + scheduler + node agent,
all concurrent, as ``pumice up`` runs them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from pumice.api import scheme
from pumice.cli.explain import explain_live
from pumice.client.base import ApiError
from pumice.scheduler.volcano import run
from pumice.testing.volcano_controllers import add_nodes, eventually, ready_node


@contextlib.asynccontextmanager
async def live_scheduler(client: Any) -> AsyncIterator[None]:
    stop = asyncio.Event()
    task = asyncio.create_task(run(client, schedule_period=0.05, stop_event=stop))
    try:
        yield
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)
        if not task.done():
            task.cancel()


def vcjob(name: str) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 3, "schedulerName": "volcano", "tasks": [
                {"name": "worker", "replicas": 3, "template": {"spec": {"restartPolicy": "OnFailure", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


async def pods(c: Any, job: str) -> list[dict]:
    items = (await c.client.list(scheme.POD, "default", label_selector=f"volcano.sh/job-name={job}")).items
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


async def pod_group_of(c: Any, job: str) -> bool:
    """Whether the vcjob controller made ``job``'s PodGroup (named ``<job>-<uid>``)."""
    return any(pg["metadata"]["name"].startswith(f"{job}-")
               for pg in (await c.client.list(scheme.POD_GROUP, "default")).items)


async def phase(c: Any, job: str) -> str:
    try:
        j = await c.client.get(scheme.VCJOB, job, "default")
    except ApiError:
        return ""
    return str(((j.get("status") or {}).get("state") or {}).get("phase") or "")


async def test_seeds_example_with_the_live_scheduler(cluster: Any) -> None:
    c = cluster
    await add_nodes(c.client, [ready_node("n1", cpu="2"), ready_node("n2", cpu="2")])
    async with live_scheduler(c.client):
        await c.client.create(vcjob("j1"))
        await eventually(lambda: _is(c, "j1", "Running"), timeout=15)
        await c.client.create(vcjob("j2"))
        # the vcjob controller makes j2's PodGroup first (until then explain answers no-podgroup,
        # which a loaded machine showed after a bare sleep), then ten scheduling cycles run over it
        await eventually(lambda: pod_group_of(c, "j2"), timeout=15)
        await asyncio.sleep(0.5)
        assert await phase(c, "j2") == "Pending"
        assert not any(p["spec"].get("nodeName") for p in await pods(c, "j2"))
        ex = await explain_live(c.client, "vcjob/j2", "default")
        assert "gang short by 2 members" in ex.reason, ex.render()
        for p in await pods(c, "j1"):
            await c.kubelet.finish(p["metadata"]["name"])
        await eventually(lambda: _is(c, "j2", "Running"), timeout=15)
        assert all(p["spec"].get("nodeName") for p in await pods(c, "j2"))
        assert await phase(c, "j1") == "Completed"


async def _is(c: Any, job: str, want: str) -> bool:
    return await phase(c, job) == want


async def test_a_settled_cluster_writes_nothing(cluster: Any) -> None:
    c = cluster
    await add_nodes(c.client, [ready_node("n1", cpu="2"), ready_node("n2", cpu="2")])
    async with live_scheduler(c.client):
        await c.client.create(vcjob("j1"))
        await eventually(lambda: _is(c, "j1", "Running"), timeout=15)
        await asyncio.sleep(0.3)
        before = await _versions(c)
        await asyncio.sleep(0.5)  # ten more cycles, controllers idle
        assert await _versions(c) == before


async def _versions(c: Any) -> dict[tuple[str, str], str]:
    out = {}
    for kind in (scheme.VCJOB, scheme.POD_GROUP, scheme.QUEUE, scheme.POD):
        for o in (await c.client.list(kind)).items:
            out[(kind.kind, o["metadata"]["name"])] = o["metadata"]["resourceVersion"]
    return out
