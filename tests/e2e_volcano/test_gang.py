"""The seeds' example end to end: API server + Volcano admission + controllers + the scheduler's
session (stepped) + a node agent; and ``pumice explain`` on the waiting job."""

from __future__ import annotations

from typing import Any

from pumice.api import scheme
from pumice.cli.explain import explain_live
from pumice.client.base import ApiError
from pumice.scheduler.volcano import default_conf
from pumice.testing.volcano_controllers import add_nodes, eventually, ready_node, schedule_once


def vcjob(name: str, *, replicas: int = 3, min_available: int = 3, cpu: str = "1", queue: str | None = None,
          **spec: Any) -> dict:
    s: dict = {"minAvailable": min_available, "schedulerName": "volcano", "tasks": [
        {"name": "worker", "replicas": replicas, "template": {"spec": {"restartPolicy": "OnFailure", "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}], **spec}
    if queue:
        s["queue"] = queue
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"}, "spec": s}


async def get(c: Any, kind: Any, name: str, ns: str | None = "default") -> dict | None:
    try:
        return await c.client.get(kind, name, ns)
    except ApiError:
        return None


async def pg_of(c: Any, job: str) -> dict | None:
    j = await get(c, scheme.VCJOB, job)
    return await get(c, scheme.POD_GROUP, f"{job}-{j['metadata']['uid']}") if j else None


async def job_pods(c: Any, job: str) -> list[dict]:
    items = (await c.client.list(scheme.POD, "default", label_selector=f"volcano.sh/job-name={job}")).items
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


async def phase(c: Any, job: str) -> str:
    j = await get(c, scheme.VCJOB, job)
    return str((((j or {}).get("status") or {}).get("state") or {}).get("phase") or "")


async def default_queue_open(c: Any) -> bool:
    q = await get(c, scheme.QUEUE, "default", None)
    return bool(q and (q.get("status") or {}).get("state") == "Open")


async def settle(c: Any, conf: Any, cycles: int = 3) -> None:
    """A few scheduling cycles, letting controllers and the node agent react in between."""
    import asyncio

    for _ in range(cycles):
        await schedule_once(c.client, conf)
        await asyncio.sleep(0.05)


async def test_two_gangs_of_three_on_room_for_four_run_one_after_the_other(cluster: Any) -> None:
    c = cluster
    conf = default_conf()
    await add_nodes(c.client, [ready_node("n1", cpu="2"), ready_node("n2", cpu="2")])
    await eventually(lambda: default_queue_open(c))
    await c.client.create(vcjob("j1"))
    await eventually(lambda: pg_of(c, "j1"))
    await c.client.create(vcjob("j2"))
    await eventually(lambda: pg_of(c, "j2"))

    await schedule_once(c.client, conf)  # enqueue j1 (j2 is refused), pods of j1 follow
    await eventually(lambda: _n(job_pods(c, "j1"), 3))
    await settle(c, conf)
    await eventually(lambda: _phase_is(c, "j1", "Running"))
    pods = await job_pods(c, "j1")
    assert all(p["spec"].get("nodeName") for p in pods)
    pg2 = await pg_of(c, "j2")
    assert pg2 is not None and (pg2.get("status") or {}).get("phase", "Pending") in ("Pending", "Inqueue")
    assert all(not p["spec"].get("nodeName") for p in await job_pods(c, "j2"))

    ex = await explain_live(c.client, "vcjob/j2", "default")
    assert ex.gate in ("enqueue-overcommit", "enqueue-quota", "gang")
    assert "gang short by 2" in ex.reason, ex.render()

    for p in await job_pods(c, "j1"):
        await c.kubelet.finish(p["metadata"]["name"])
    await eventually(lambda: _phase_is(c, "j1", "Completed"))
    await settle(c, conf)
    await eventually(lambda: _n(job_pods(c, "j2"), 3))
    await settle(c, conf)
    await eventually(lambda: _phase_is(c, "j2", "Running"))
    assert all(p["spec"].get("nodeName") for p in await job_pods(c, "j2"))


async def _n(coro: Any, n: int) -> list | None:
    items = await coro
    return items if len(items) == n else None


async def _phase_is(c: Any, job: str, want: str) -> bool:
    return await phase(c, job) == want


async def test_job_to_a_closed_queue_is_rejected_by_the_api_server(cluster: Any) -> None:
    c = cluster
    await c.client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                           "metadata": {"name": "q1"}, "spec": {}})
    q = await eventually(lambda: _state(c, "q1", "Open"))
    assert q["spec"]["weight"] == 1 and q["spec"]["reclaimable"] is True
    await c.client.create(command("close-q1", "CloseQueue", q))
    await eventually(lambda: _state(c, "q1", "Closed"))
    try:
        await c.client.create(vcjob("late", queue="q1"))
    except ApiError as e:
        assert "can only submit job to queue with state `Open`, queue `q1` status is `Closed`" in e.message
    else:
        raise AssertionError("job admitted to a closed queue")


def command(name: str, action: str, target: dict) -> dict:
    """A bus.volcano.sh Command aimed at ``target`` (as ``vcctl`` writes it)."""
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
            "metadata": {"name": name, "namespace": "default"}, "action": action,
            "target": {"apiVersion": target["apiVersion"], "kind": target["kind"],
                       "name": target["metadata"]["name"], "uid": target["metadata"]["uid"]}}


async def _state(c: Any, name: str, state: str) -> dict | None:
    q = await get(c, scheme.QUEUE, name, None)
    return q if q and (q.get("status") or {}).get("state") == state else None
