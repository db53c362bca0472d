"""The live cache after an eviction: a Pod recreated under the evicted Pod's name (as the vcjob
controller recreates them) is a new Pod, not the Releasing old one; and every eviction leaves
upstream's ``Evict`` Events on the victim Pod and its PodGroup."""

from __future__ import annotations

import asyncio

import pytest

from pumice.scheduler.volcano.scheduler import Scheduler
from pumice.testing.cluster import local_cluster
from pumice.testing.volcano import node, pod, podgroup, queue

# wait-for-pods-ready with no timeout and no backoff: the gang is evicted the session after the
# one that saw it bound, and may be scheduled again at once
WFPR_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: wait-for-pods-ready
    arguments:
      waitForPodsReady.timeout: 0
      waitForPodsReady.backoffBaseSeconds: 0
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def _strip(o: dict) -> dict:
    o = dict(o)
    if o["kind"] == "PodGroup":
        o.pop("status", None)
    md = dict(o["metadata"])
    for k in ("uid", "creationTimestamp"):
        md.pop(k, None)
    o["metadata"] = md
    return o


async def _seed(client, objs: list[dict]) -> None:
    for o in objs:
        created = await client.create(_strip(o))
        if o["kind"] == "Node" and o.get("status"):
            created["status"] = o["status"]
            await client.update_status(created)


async def _wait(pred, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if await pred():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met")


def _pods(sched: Scheduler) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in sched.cache.informers["Pod"].lister.list()}


async def _cycle(sched: Scheduler) -> None:
    sched.run_once()
    await sched.cache.flush()


async def _all_bound(sched: Scheduler) -> bool:
    ps = _pods(sched)
    return len(ps) == 2 and all(p["spec"].get("nodeName") for p in ps.values())


async def _bind_and_evict(client, sched: Scheduler) -> dict[str, str]:
    """Bind the gang w-0/w-1, mark its Pods Running (never Ready) and run sessions until
    wait-for-pods-ready evicted both; the Pods' uids by name."""
    pods_kind = client.scheme.resolve("pods")
    await _cycle(sched)
    await _wait(lambda: _all_bound(sched))
    old_uids = {n: p["metadata"]["uid"] for n, p in _pods(sched).items()}
    for name in old_uids:
        p = await client.get(pods_kind, name, "c1")
        p["status"] = {"phase": "Running"}
        await client.update_status(p)
    await _wait(lambda: _async(all((p.get("status") or {}).get("phase") == "Running" for p in _pods(sched).values())))
    for _ in range(3):
        await _cycle(sched)
        if all(k in sched.cache.releasing for k in ("c1/w-0", "c1/w-1")):
            break
        await asyncio.sleep(0.05)
    assert {"c1/w-0", "c1/w-1"} <= set(sched.cache.releasing)
    return old_uids


@pytest.mark.parametrize("snapshot_mode", ["full", "incremental", "verify"])
async def test_a_gang_evicted_by_the_pods_ready_timeout_and_recreated_under_the_same_names_runs_again(
        tmp_path, snapshot_mode: str) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(WFPR_CONF)
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        await _seed(client, [node("n1", "4,8Gi,pods=10"), queue("q1"),
                             podgroup("pg1", queue="q1", min_member=2, phase="Inqueue")])
        await _seed(client, [pod(f"w-{i}", group="pg1", requests="1,1Gi") for i in range(2)])
        pods_kind = client.scheme.resolve("pods")
        sched = Scheduler(client, conf_path=str(conf), schedule_period=0.05, snapshot_mode=snapshot_mode)
        await sched.cache.start(timeout=5)
        try:
            old_uids = await _bind_and_evict(client, sched)

            # the kubelet finishes the deletion; the vcjob controller recreates the Pods under the
            # same names before the scheduler's next session
            for name in old_uids:
                await client.delete(pods_kind, name, "c1", grace_period_seconds=0)

            async def gone() -> bool:
                return not _pods(sched)

            await _wait(gone)
            await _seed(client, [pod(f"w-{i}", group="pg1", requests="1,1Gi") for i in range(2)])

            async def recreated() -> bool:
                ps = _pods(sched)
                return len(ps) == 2 and all(p["metadata"]["uid"] != old_uids[n] for n, p in ps.items())

            await _wait(recreated)
            for _ in range(3):
                await _cycle(sched)
                await asyncio.sleep(0.05)
                if await _all_bound(sched):
                    break
            await _wait(lambda: _all_bound(sched))
            for name in old_uids:
                p = await client.get(pods_kind, name, "c1")
                assert p["spec"]["nodeName"] == "n1"
                assert not p["metadata"].get("deletionTimestamp")
            assert sched.cache.snapshot_mismatches == 0
        finally:
            await sched.cache.stop()


async def test_every_eviction_records_upstreams_evict_events_on_the_pod_and_its_podgroup(tmp_path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(WFPR_CONF)
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        await _seed(client, [node("n1", "4,8Gi,pods=10"), queue("q1"),
                             podgroup("pg1", queue="q1", min_member=2, phase="Inqueue")])
        await _seed(client, [pod(f"w-{i}", group="pg1", requests="1,1Gi") for i in range(2)])
        events_kind = client.scheme.resolve("events")
        sched = Scheduler(client, conf_path=str(conf), schedule_period=0.05)
        await sched.cache.start(timeout=5)
        try:
            await _bind_and_evict(client, sched)
            # upstream's evictor: a Warning Evict on each victim Pod, a Normal Evict on its PodGroup
            async def evict_events() -> bool:
                evs = (await client.list(events_kind, "c1")).items
                got = {(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["type"], e["reason"], e["message"])
                       for e in evs}
                return {("Pod", "w-0", "Warning", "Evict", "Pod is evicted, because of PodsReadyTimeout"),
                        ("Pod", "w-1", "Warning", "Evict", "Pod is evicted, because of PodsReadyTimeout"),
                        ("PodGroup", "pg1", "Normal", "Evict", "PodsReadyTimeout")} <= got

            await _wait(evict_events)
        finally:
            await sched.cache.stop()


async def _async(v: bool) -> bool:
    return v


async def test_a_pod_recreated_under_the_same_name_gets_its_own_pod_scheduled_condition() -> None:
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        await _seed(client, [node("n1", "2,4Gi,pods=10"), queue("q1"),
                             podgroup("big", queue="q1", min_member=1, phase="Inqueue"),
                             pod("huge", group="big", requests="64,1Gi")])
        pods_kind = client.scheme.resolve("pods")
        sched = Scheduler(client)
        await sched.cache.start(timeout=5)
        try:
            async def condition_on(uid: str) -> bool:
                p = await client.get(pods_kind, "huge", "c1")
                return p["metadata"]["uid"] == uid and any(
                    x["type"] == "PodScheduled" and x["status"] == "False" for x in (p.get("status") or {}).get("conditions") or [])

            first = (await client.get(pods_kind, "huge", "c1"))["metadata"]["uid"]
            await _cycle(sched)
            await _wait(lambda: condition_on(first))
            await client.delete(pods_kind, "huge", "c1", grace_period_seconds=0)
            await _seed(client, [pod("huge", group="big", requests="64,1Gi")])
            second = (await client.get(pods_kind, "huge", "c1"))["metadata"]["uid"]
            assert second != first

            async def cache_has_second() -> bool:
                return (_pods(sched).get("huge") or {}).get("metadata", {}).get("uid") == second

            await _wait(cache_has_second)
            await _cycle(sched)
            await _wait(lambda: condition_on(second), timeout=5)
        finally:
            await sched.cache.stop()
