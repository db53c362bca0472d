"""The live Agent Scheduler against the in-process API server: binds its own Pods (not the
batch scheduler's), parks a Pod that fits nowhere with PodScheduled=False/Unschedulable and a
FailedScheduling Event naming the per-Node reasons, and binds
it once a Pod is deleted (a cluster event)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from pumice.api import scheme
from pumice.scheduler.volcano.agent.live import run as run_agent
from pumice.testing.volcano_controllers import add_nodes, eventually, ready_node


def agent_pod(name: str, cpu: str, scheduler: str = "agent-scheduler") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": scheduler, "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}


async def test_live_agent_scheduler_binds_parks_and_retries(cluster: Any) -> None:
    c = cluster.client
    await add_nodes(c, [ready_node(f"n{i}", cpu="2") for i in range(2)])
    stop = asyncio.Event()
    task = asyncio.create_task(run_agent(cluster.new_client() if hasattr(cluster, "new_client") else c,
                                         workers=2, stop_event=stop))
    try:
        for i in range(4):
            await c.create(agent_pod(f"a{i}", "1"))
        await c.create(agent_pod("other", "1", scheduler="volcano"))

        async def nodes_of() -> dict[str, str] | None:
            pods = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in (await c.list(scheme.POD, "default")).items}
            return pods if all(pods[f"a{i}"] for i in range(4)) else None

        got = await eventually(nodes_of, timeout=15)
        assert sorted(got[f"a{i}"] for i in range(4)) == ["n0", "n0", "n1", "n1"] and not got["other"]

        await c.create(agent_pod("late", "1"))

        async def parked() -> bool:
            conds = ((await c.get(scheme.POD, "late", "default")).get("status") or {}).get("conditions") or []
            return any(x["type"] == "PodScheduled" and x["reason"] == "Unschedulable" for x in conds)

        await eventually(parked, timeout=15)
        cond = next(x for x in (await c.get(scheme.POD, "late", "default"))["status"]["conditions"]
                    if x["type"] == "PodScheduled")
        assert cond["message"] == "0/2 nodes are unavailable: 2 Insufficient cpu."

        async def failed_scheduling() -> list[dict]:
            return [e for e in (await c.list(scheme.EVENT, "default")).items
                    if e["involvedObject"]["name"] == "late" and e["reason"] == "FailedScheduling"]

        [ev] = await eventually(failed_scheduling, timeout=15)
        assert (ev["type"], ev["message"], ev["source"]["component"]) == (
            "Warning", "0/2 nodes are unavailable: 2 Insufficient cpu.", "agent-scheduler")
        await c.delete(scheme.POD, "a0", "default")

        async def late_bound() -> str | None:
            return (await c.get(scheme.POD, "late", "default"))["spec"].get("nodeName")

        assert await eventually(late_bound, timeout=20) == got["a0"]
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)


async def test_live_bind_by_another_scheduler_makes_the_agent_result_stale(cluster: Any) -> None:
    from pumice.scheduler.volcano.agent.live import LiveAgentScheduler

    c = cluster.client
    await add_nodes(c, [ready_node("n0", cpu="2")])
    await c.create({**agent_pod("busy", "1", scheduler="volcano"), "spec": {**agent_pod("busy", "1")["spec"], "nodeName": "n0"}})
    sched = LiveAgentScheduler(cluster.new_client() if hasattr(cluster, "new_client") else c)
    await sched.cache.start(timeout=10)
    try:
        await c.create(agent_pod("a0", "1"))
        await c.create(agent_pod("b0", "1", scheduler="volcano"))

        async def queued() -> bool:
            sched.refresh()
            return "default/a0" in sched.core.tasks

        await eventually(queued, timeout=10)
        results = sched.core.compute(sched.clock.monotonic())
        assert [x.node for x in results[0].candidates] == ["n0"]
        await c.bind("default", "b0", "n0")  # the batch scheduler takes the last cpu meanwhile

        async def seen() -> bool:
            pods = sched.cache.informers["Pod"].lister.list()
            return any(p["metadata"]["name"] == "b0" and p["spec"].get("nodeName") for p in pods)

        await eventually(seen, timeout=10)
        sched.refresh()
        rep = sched.core.resolve(results, sched.clock.monotonic())
        assert rep.conflicted == ["default/a0"] and rep.bound == {}
        again = sched.core.step(sched.clock.monotonic())
        assert again.unschedulable == {"default/a0": "0/1 nodes are unavailable: 1 Insufficient cpu."}
        await sched.cache.flush()
        assert not (await c.get(scheme.POD, "a0", "default"))["spec"].get("nodeName")
    finally:
        await sched.cache.stop()


async def test_live_agent_scheduler_parks_a_pod_with_an_unbound_claim_until_it_binds(cluster: Any) -> None:
    """VolumeBinding in the Agent Scheduler: a Pod whose claim is unbound is parked with upstream's
    agent message, and bound once its claim is."""
    c = cluster.client
    await add_nodes(c, [ready_node("n0", cpu="2")])
    await c.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": "data", "namespace": "default"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    stop = asyncio.Event()
    task = asyncio.create_task(run_agent(cluster.new_client() if hasattr(cluster, "new_client") else c,
                                         workers=1, stop_event=stop))
    try:
        p = agent_pod("user", "1")
        p["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
        await c.create(p)

        async def parked() -> str | None:
            conds = ((await c.get(scheme.POD, "user", "default")).get("status") or {}).get("conditions") or []
            return next((x["message"] for x in conds if x["type"] == "PodScheduled" and x["status"] == "False"), None)

        assert await eventually(parked, timeout=15) == (
            "pre-predicate failed for task default/user: plugin VolumeBinding pre-predicates failed pod has "
            "unbound immediate PersistentVolumeClaims")
        await c.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
                        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                 "hostPath": {"path": "/tmp/pv1"},
                                 "claimRef": {"namespace": "default", "name": "data"}}})
        pvc = await c.get(scheme.PERSISTENT_VOLUME_CLAIM, "data", "default")
        pvc["spec"]["volumeName"] = "pv1"
        pvc["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
        await c.update(pvc)

        async def bound() -> str | None:
            return (await c.get(scheme.POD, "user", "default"))["spec"].get("nodeName")

        assert await eventually(bound, timeout=20) == "n0"
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)
