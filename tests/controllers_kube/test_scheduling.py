"""The default scheduler in the chain: Pending with the upstream message, then bound when room appears;
other schedulerNames are left alone."""

from __future__ import annotations

from pumice.api import Obj
from pumice.api.scheme import EVENT, POD

from .conftest import Env, chain, eventually


def big_pod(name: str, cpu: str = "16", scheduler: str | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


async def test_a_pod_that_fits_no_node_stays_pending_then_binds_when_a_node_with_room_appears() -> None:
    async with chain(nodes=3, manager=False) as env:
        await env.client.create(big_pod("huge"))

        async def unschedulable() -> Obj | None:
            p = await env.client.get(POD, "huge", "default")
            return next((c for c in (p.get("status") or {}).get("conditions") or []
                         if c["type"] == "PodScheduled" and c["status"] == "False"), None)

        await eventually(unschedulable, what="PodScheduled=False")
        cond = await unschedulable()
        assert cond is not None and cond["reason"] == "Unschedulable"
        assert cond["message"] == ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
                                   "3 No preemption victims found for incoming pod.")
        pod = await env.client.get(POD, "huge", "default")
        assert pod["status"].get("phase", "Pending") == "Pending" and not pod["spec"].get("nodeName")

        async def failed_event() -> bool:
            evs = (await env.client.list(EVENT, "default")).items
            return any(e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "huge"
                       and e["message"] == cond["message"] for e in evs)

        await eventually(failed_event, what="FailedScheduling event")
        await env.kubelet.add_node("roomy", cpu="32")

        async def bound() -> bool:
            p = await env.client.get(POD, "huge", "default")
            return p["spec"].get("nodeName") == "roomy" and p["status"].get("phase") == "Running"

        await eventually(bound, what="bound to the new node")


async def test_pods_of_another_scheduler_are_never_touched(env: Env) -> None:
    await env.client.create(big_pod("theirs", cpu="100m", scheduler="volcano"))
    await env.client.create(big_pod("ours", cpu="100m"))

    async def ours_bound() -> bool:
        return bool((await env.client.get(POD, "ours", "default"))["spec"].get("nodeName"))

    await eventually(ours_bound)
    theirs = await env.client.get(POD, "theirs", "default")
    assert not theirs["spec"].get("nodeName") and not (theirs.get("status") or {}).get("conditions")


async def test_node_resources_are_never_double_booked() -> None:
    async with chain(nodes=2, manager=False, kubelet={"cpu": "1"}) as env:
        for i in range(5):
            await env.client.create(big_pod(f"p{i}", cpu="500m"))

        async def settled() -> bool:
            pods = (await env.client.list(POD, "default")).items
            return sum(1 for p in pods if p["spec"].get("nodeName")) == 4 and any(
                c["type"] == "PodScheduled" and c["status"] == "False"
                for p in pods for c in (p.get("status") or {}).get("conditions") or [])

        await eventually(settled, what="4 bound, 1 unschedulable")
        per_node: dict[str, int] = {}
        for p in (await env.client.list(POD, "default")).items:
            if p["spec"].get("nodeName"):
                per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
        assert per_node == {"fake-node-0": 2, "fake-node-1": 2}


async def test_gated_pod_waits_with_scheduling_gated_until_the_gates_are_removed() -> None:
    async with chain(nodes=1, manager=False) as env:
        p = big_pod("gated", cpu="100m")
        p["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
        await env.client.create(p)

        async def gated() -> bool:
            pod = await env.client.get(POD, "gated", "default")
            return any(c["type"] == "PodScheduled" and c["reason"] == "SchedulingGated"
                       and c["message"] == "Scheduling is blocked due to non-empty scheduling gates"
                       for c in (pod.get("status") or {}).get("conditions") or [])

        await eventually(gated, what="SchedulingGated condition")
        assert not (await env.client.get(POD, "gated", "default"))["spec"].get("nodeName")
        await env.client.patch(POD, "gated", {"spec": {"schedulingGates": None}}, "default")

        async def bound() -> bool:
            return bool((await env.client.get(POD, "gated", "default"))["spec"].get("nodeName"))

        await eventually(bound, what="bound after the gates were removed")
