"""Queues end to end (API server, admission, controllers, the scheduler's sessions stepped, node
agent): 1:3 sharing, reclaim back to the deserved share, preemption that keeps gangs at
minMember, and closing a queue that still runs work."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pumice.api import scheme
from pumice.client.base import ApiError
from pumice.scheduler.volcano import load_conf
from pumice.testing.volcano_controllers import add_nodes, eventually, ready_node, schedule_once

FAIR_CONF = """
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

ENQUEUE_ONLY = """
actions: "enqueue"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: proportion
"""

PREEMPT_CONF = """
actions: "enqueue, allocate, backfill, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def queue(name: str, weight: int = 1) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": weight}}


def vcjob(name: str, *, queue: str = "default", replicas: int, min_available: int, cpu: str = "1",
          priority_class: str | None = None) -> dict:
    spec: dict = {"minAvailable": min_available, "queue": queue, "tasks": [
        {"name": "w", "replicas": replicas, "template": {"spec": {"restartPolicy": "OnFailure", "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


async def open_queue(c: Any, q: dict) -> None:
    await c.client.create(q)
    await eventually(lambda: _state(c, q["metadata"]["name"], "Open"))


async def _state(c: Any, name: str, state: str) -> dict | None:
    try:
        q = await c.client.get(scheme.QUEUE, name)
    except ApiError:
        return None
    return q if (q.get("status") or {}).get("state") == state else None


async def running_pods(c: Any, job: str) -> list[dict]:
    items = (await c.client.list(scheme.POD, "default", label_selector=f"volcano.sh/job-name={job}")).items
    return [p for p in items if not p["metadata"].get("deletionTimestamp")
            and p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") in ("Running", "Pending")]


async def cycles_until(c: Any, conf: Any, cond: Callable[[], Awaitable[bool]], *, max_cycles: int = 40,
                       each: Callable[[], Awaitable[None]] | None = None) -> int:
    """Run scheduling cycles (letting controllers and the node agent react) until ``cond``."""
    for i in range(max_cycles):
        if await cond():
            return i
        await schedule_once(c.client, conf)
        await asyncio.sleep(0.05)
        if each is not None:
            await each()
    if await cond():
        return max_cycles
    raise AssertionError(f"not converged in {max_cycles} cycles")


async def test_two_queues_weighted_1_to_3_share_the_cluster_1_to_3(cluster: Any) -> None:
    c = cluster
    conf = load_conf(FAIR_CONF)
    await add_nodes(c.client, [ready_node("n1", cpu="4"), ready_node("n2", cpu="4")])
    await open_queue(c, queue("qa", 1))
    await open_queue(c, queue("qb", 3))
    await c.client.create(vcjob("ja", queue="qa", replicas=8, min_available=1))
    await c.client.create(vcjob("jb", queue="qb", replicas=8, min_available=1))
    # pending work in both queues: both PodGroups enqueued, all 16 Pods created, before allocating
    await eventually(lambda: _n_podgroups(c, 2))
    await schedule_once(c.client, load_conf(ENQUEUE_ONLY))
    await eventually(lambda: _n_pods(c, 16))

    async def shared() -> bool:
        return len(await running_pods(c, "ja")) == 2 and len(await running_pods(c, "jb")) == 6

    await cycles_until(c, conf, shared)
    for _ in range(3):  # and stays there
        await schedule_once(c.client, conf)
        await asyncio.sleep(0.05)
    assert await shared()


async def _n_podgroups(c: Any, n: int) -> bool:
    return len((await c.client.list(scheme.POD_GROUP, "default")).items) == n


async def _n_pods(c: Any, n: int) -> bool:
    return len((await c.client.list(scheme.POD, "default")).items) == n


async def test_reclaim_brings_a_borrowing_queue_back_to_its_share(cluster: Any) -> None:
    c = cluster
    conf = load_conf(FAIR_CONF)
    await add_nodes(c.client, [ready_node("n1", cpu="4"), ready_node("n2", cpu="4")])
    await open_queue(c, queue("qa", 1))
    await open_queue(c, queue("qb", 3))
    await c.client.create(vcjob("ja", queue="qa", replicas=8, min_available=1))

    async def qa_has_all() -> bool:
        return len(await running_pods(c, "ja")) == 8

    await cycles_until(c, conf, qa_has_all)
    # a starving gang of 6 arrives in the heavier queue: reclaim evicts what qa borrowed
    await c.client.create(vcjob("jb", queue="qb", replicas=6, min_available=6))

    async def back_to_share() -> bool:
        return len(await running_pods(c, "ja")) == 2 and len(await running_pods(c, "jb")) == 6

    await cycles_until(c, conf, back_to_share, max_cycles=60)


async def test_preemption_in_a_queue_never_takes_a_gang_below_min_member(cluster: Any) -> None:
    c = cluster
    conf = load_conf(PREEMPT_CONF)
    for name, value in (("low", 1), ("high", 1000)):
        await c.client.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": name}, "value": value})
    await add_nodes(c.client, [ready_node("n1", cpu="2"), ready_node("n2", cpu="2")])
    await eventually(lambda: _state(c, "default", "Open"))
    await c.client.create(vcjob("low", replicas=4, min_available=3, priority_class="low"))

    async def low_runs() -> bool:
        return len(await running_pods(c, "low")) == 4

    await cycles_until(c, conf, low_runs)
    await c.client.create(vcjob("high", replicas=2, min_available=2, priority_class="high"))
    seen: list[int] = []

    async def watch_low() -> None:
        seen.append(len(await running_pods(c, "low")))

    # the high-priority gang needs 2 cpu, but the low gang may give only 1 (4 running, minMember 3)
    for _ in range(10):
        await schedule_once(c.client, conf)
        await asyncio.sleep(0.05)
        await watch_low()
    assert min(seen) >= 3, seen
    assert await running_pods(c, "high") == []


async def test_preemption_takes_what_the_gang_can_spare(cluster: Any) -> None:
    c = cluster
    conf = load_conf(PREEMPT_CONF)
    for name, value in (("low", 1), ("high", 1000)):
        await c.client.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": name}, "value": value})
    await add_nodes(c.client, [ready_node("n1", cpu="2"), ready_node("n2", cpu="2")])
    await eventually(lambda: _state(c, "default", "Open"))
    await c.client.create(vcjob("low", replicas=4, min_available=2, priority_class="low"))

    async def low_runs() -> bool:
        return len(await running_pods(c, "low")) == 4

    await cycles_until(c, conf, low_runs)
    await c.client.create(vcjob("high", replicas=2, min_available=2, priority_class="high"))
    seen: list[int] = []

    async def watch_low() -> None:
        seen.append(len(await running_pods(c, "low")))

    async def high_runs() -> bool:
        return len(await running_pods(c, "high")) == 2

    await cycles_until(c, conf, high_runs, each=watch_low)
    assert min(seen) >= 2, seen
    assert len(await running_pods(c, "low")) == 2


async def test_closing_a_queue_with_running_work(cluster: Any) -> None:
    c = cluster
    conf = load_conf(FAIR_CONF)
    await add_nodes(c.client, [ready_node("n1", cpu="4")])
    await open_queue(c, queue("q1"))
    await c.client.create(vcjob("j1", queue="q1", replicas=2, min_available=2))

    async def runs() -> bool:
        return len(await running_pods(c, "j1")) == 2

    await cycles_until(c, conf, runs)
    q1 = await c.client.get(scheme.QUEUE, "q1")
    await c.client.create({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                           "metadata": {"name": "close-q1", "namespace": "default"}, "action": "CloseQueue",
                           "target": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                      "name": "q1", "uid": q1["metadata"]["uid"]}})
    await eventually(lambda: _state(c, "q1", "Closing"))
    try:
        await c.client.create(vcjob("j2", queue="q1", replicas=1, min_available=1))
    except ApiError as e:
        assert "can only submit job to queue with state `Open`, queue `q1` status is `Closing`" in e.message
    else:
        raise AssertionError("a job was admitted to a Closing queue")
    for p in await running_pods(c, "j1"):
        await c.kubelet.finish(p["metadata"]["name"])
    await eventually(lambda: _state(c, "q1", "Closed"))
