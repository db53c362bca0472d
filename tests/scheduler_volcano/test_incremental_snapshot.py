"""The live cache's incremental snapshot equals the full build after every kind of change, and
hands a session only what changed as new objects; results memoized over unchanged jobs equal
fresh ones."""

from __future__ import annotations

import asyncio
import random

import pytest

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import FitErrors, TaskStatus
from pumice.scheduler.volcano.cache.incremental import snapshot_digest
from pumice.scheduler.volcano.cache.live import SnapshotMismatch
from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.framework.session import open_session
from pumice.scheduler.volcano.scheduler import Scheduler
from pumice.testing.cluster import local_cluster
from pumice.testing.volcano import default_conf_with_actions, node, pod, podgroup, queue

PREEMPT_CONF = default_conf_with_actions("enqueue, allocate, preempt, reclaim, backfill")


def _bare(o: dict) -> dict:
    o = dict(o)
    md = dict(o["metadata"])
    for k in ("uid", "creationTimestamp"):
        md.pop(k, None)
    o["metadata"] = md
    if o["kind"] == "PodGroup":
        o.pop("status", None)
    return o


async def _create(client, o: dict) -> dict:
    st = o.get("status")
    created = await client.create(_bare(o))
    if o["kind"] == "Node" and st:
        created["status"] = st
        created = await client.update_status(created)
    return created


async def _settle(sched: Scheduler) -> None:
    await sched.cache.flush()
    for _ in range(20):
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)


async def _check(sched: Scheduler) -> None:
    """One verify-mode cycle: the incremental snapshot is compared with the full build."""
    await _settle(sched)
    sched.run_once()
    assert sched.cache.snapshot_mismatches == 0
    assert sched.cache.incremental is not None and not sched.cache.incremental.exotic
    await _settle(sched)


async def test_incremental_snapshot_equals_the_full_build_through_arrivals_binds_ends_and_deletions(tmp_path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(PREEMPT_CONF)
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        for pc, value in (("low", 10), ("high", 1000)):
            await client.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                 "metadata": {"name": pc}, "value": value})
        for o in [node(f"n{i}", "4,8Gi,pods=10,nvidia.com/gpu=2") for i in range(4)] + [queue("q1"), queue("q2", weight=3)]:
            await _create(client, o)
        sched = Scheduler(client, conf_path=str(conf), schedule_period=0.05, snapshot_mode="verify")
        await sched.cache.start(timeout=5)
        pods_kind = client.scheme.resolve("pods")
        nodes_kind = client.scheme.resolve("nodes")
        pg_kind = client.scheme.resolve("podgroups.scheduling.volcano.sh")
        rng = random.Random(7)
        try:
            await _check(sched)
            for g in range(8):
                size = rng.choice([1, 2, 3])
                q = rng.choice(["q1", "q2"])
                await _create(client, podgroup(f"pg{g}", queue=q, min_member=size, phase="",
                                               priority_class="high" if g % 3 == 0 else "low"))
                for i in range(size):
                    # some Pods spread by pod anti-affinity: the cache keeps the Nodes holding them
                    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"spread": "yes"}}, "topologyKey": "kubernetes.io/hostname"}]}}
                    p = pod(f"pg{g}-p-{i}", group=f"pg{g}", requests=rng.choice(["1,1Gi", "2,2Gi,nvidia.com/gpu=1"]),
                            priority_class="high" if g % 3 == 0 else "low", affinity=anti if g % 4 == 1 else None)
                    if g % 4 == 1:
                        p["metadata"].setdefault("labels", {})["spread"] = "yes"
                    res = p["spec"]["containers"][0]["resources"]
                    if "nvidia.com/gpu" in res["requests"]:  # an extended resource needs its limit (API rule)
                        res["limits"] = {"nvidia.com/gpu": res["requests"]["nvidia.com/gpu"]}
                    await _create(client, p)
                await _check(sched)
            # Pods start, some end, some go away; a Node goes NotReady and comes back; a Queue's
            # weight changes; a global default PriorityClass appears
            for p in sorted((await client.list(pods_kind, "c1")).items, key=lambda p: p["metadata"]["name"]):
                if p["spec"].get("nodeName"):
                    p["status"] = {"phase": "Running"}
                    await client.update_status(p)
            await _check(sched)
            done = [p for p in (await client.list(pods_kind, "c1")).items if p["status"].get("phase") == "Running"][:3]
            for p in done:
                p["status"] = {"phase": "Succeeded"}
                await client.update_status(p)
            await _check(sched)
            await client.delete(pods_kind, done[0]["metadata"]["name"], "c1")
            await _check(sched)
            n1 = await client.get(nodes_kind, "n1")
            n1["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
            await client.update_status(n1)
            await _check(sched)
            n1 = await client.get(nodes_kind, "n1")
            n1["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            await client.update_status(n1)
            await _check(sched)
            q2 = await client.get(client.scheme.resolve("queues.scheduling.volcano.sh"), "q2")
            q2["spec"]["weight"] = 1
            await client.update(q2)
            await _check(sched)
            await client.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                 "metadata": {"name": "mid"}, "value": 500, "globalDefault": True})
            await _create(client, podgroup("pg-default", queue="q1", min_member=1, phase=""))
            await _check(sched)
            await client.delete(pg_kind, "pg1", "c1")
            await client.delete(nodes_kind, "n3")
            await _check(sched)
            await _create(client, node("n9", "8,16Gi,pods=20"))
            await _check(sched)
            assert sched.cycles >= 14
            # the plugins' memoized per-job and per-queue results were used and, in verify
            # mode, each one was recomputed and found equal (a difference counts a mismatch)
            assert sched.cache.incremental is not None and sched.cache.incremental._job_memo.hits > 0
            # verify mode also compared the Nodes known to hold pod-affinity Pods with a scan
            assert sched.cache.snapshot().pod_affinity_nodes
        finally:
            await sched.cache.stop()


async def test_a_session_gets_the_untouched_nodes_of_the_last_one_and_fresh_copies_of_the_changed_ones() -> None:
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        for o in [node(f"n{i}", "2,4Gi,pods=10") for i in range(3)] + [queue("q1")]:
            await _create(client, o)
        sched = Scheduler(client, schedule_period=0.05, snapshot_mode="incremental")
        await sched.cache.start(timeout=5)
        try:
            # a snapshot's Nodes dict and list are the cache's own, handed out without a copy and
            # brought up to date by the next snapshot (taken once the session closed): what a
            # session had is kept here as copies of them
            first = dict(sched.cache.snapshot().nodes)
            # nothing changed: the same NodeInfo objects, and they carry no session's changes
            again = sched.cache.snapshot()
            assert all(again.nodes[n] is first[n] for n in first)
            assert again.node_list == list(again.nodes.values())
            # a session changes n0's accounting: the next snapshot has a fresh copy of n0 only
            t = TaskInfo.from_pod(pod("x", requests="1,1Gi"))
            touched = again.nodes["n0"]
            touched.add_task(t)
            third = sched.cache.snapshot()
            assert third.nodes["n0"] is not touched
            assert "c1/x" not in third.nodes["n0"].tasks and third.nodes["n0"].idle.milli_cpu == 2000
            assert third.nodes["n1"] is first["n1"] and third.nodes["n2"] is first["n2"]
            assert third.node_list is not None and all(a is b for a, b in zip(third.node_list, third.nodes.values(),
                                                                            strict=True))
            third_nodes = dict(third.nodes)
            # a Pod bound to n2 replaces n2's NodeInfo (and nothing else)
            await _create(client, podgroup("pg", queue="q1", min_member=1, phase=""))
            await _create(client, pod("p", group="pg", requests="1,1Gi"))
            for _ in range(5):
                await _settle(sched)
                if any(p["spec"].get("nodeName") for p in sched.cache.informers["Pod"].lister.list()):
                    break
                sched.run_once()
            await _settle(sched)
            fourth = sched.cache.snapshot()
            bound = next(n for n, ni in fourth.nodes.items() if ni.tasks)
            assert fourth.nodes[bound] is not third_nodes[bound]
            assert sum(1 for n in fourth.nodes if fourth.nodes[n] is third_nodes[n]) == 2
            assert fourth.node_list is not None and all(a is b for a, b in zip(fourth.node_list, fourth.nodes.values(),
                                                                             strict=True))
            assert isinstance(fourth.nodes[bound], NodeInfo) and list(fourth.nodes[bound].tasks) == ["c1/p"]
            assert snapshot_digest(fourth) == snapshot_digest(
                build_snapshot(sched.cache.objects(), clock=sched.clock, scheduler_names=("volcano",)))
        finally:
            await sched.cache.stop()


async def test_a_session_gets_the_queue_infos_of_the_last_one_until_their_queue_changes() -> None:
    async with local_cluster() as c:
        client = c.client
        for o in [node("n0", "2,4Gi,pods=10"), queue("q1"), queue("q2", weight=2)]:
            await _create(client, o)
        sched = Scheduler(client, schedule_period=0.05, snapshot_mode="incremental")
        await sched.cache.start(timeout=5)
        try:
            first = sched.cache.snapshot().queues
            again = sched.cache.snapshot().queues
            assert list(again) == ["q1", "q2"] and all(again[q] is first[q] for q in first)
            with pytest.raises(AttributeError):
                again["q1"].weight = 5  # type: ignore[misc]
            # stale case: q2's weight changes, a new Queue comes: new QueueInfos for those only
            q2 = await client.get(client.scheme.resolve("queues.scheduling.volcano.sh"), "q2")
            q2["spec"]["weight"] = 7
            await client.update(q2)
            await _create(client, queue("q0", weight=3))
            await _settle(sched)
            third = sched.cache.snapshot()
            assert third.queues["q1"] is first["q1"] and third.queues["q2"] is not first["q2"]
            assert third.queues["q2"].weight == 7 and third.queues["q0"].weight == 3
            assert snapshot_digest(third) == snapshot_digest(
                build_snapshot(sched.cache.objects(), clock=sched.clock, scheduler_names=("volcano",)))
        finally:
            await sched.cache.stop()


async def test_a_session_gets_the_jobs_the_last_one_left_untouched_and_fresh_clones_of_the_changed_ones() -> None:
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        for o in [node("n0", "4,8Gi,pods=10"), queue("q1")]:
            await _create(client, o)
        for g in ("a", "b", "c", "d", "e"):
            await _create(client, podgroup(g, queue="q1", min_member=1, phase="Inqueue"))
            await _create(client, pod(f"{g}-0", group=g, requests="1,1Gi"))
        sched = Scheduler(client, schedule_period=0.05, snapshot_mode="incremental")
        await sched.cache.start(timeout=5)
        inc = sched.cache.incremental
        assert inc is not None

        def full() -> list:
            return snapshot_digest(build_snapshot(sched.cache.objects(), clock=sched.clock, scheduler_names=("volcano",)))

        try:
            await _settle(sched)
            first = sched.cache.snapshot()
            again = sched.cache.snapshot()
            assert all(again.jobs[u] is first.jobs[u] for u in first.jobs) and inc.jobs_kept == 5
            # what a session may leave in a job: a fit error (added in place), a task moved by
            # the job's own methods, a rebound field, a new phase, a sub-job index built on use
            again.jobs["c1/a"].nodes_fit_errors[next(iter(again.jobs["c1/a"].tasks))] = FitErrors()
            b = again.jobs["c1/b"]
            bt = next(iter(b.tasks.values()))
            b.update_task_status(bt, TaskStatus.Allocated)
            bt.node_name = "n0"
            again.jobs["c1/c"].waiting_tier = 2
            phase = again.jobs["c1/d"].phase
            again.jobs["c1/d"].set_phase(PodGroupPhase.RUNNING)
            again.jobs["c1/e"].sub_jobs  # noqa: B018
            third = sched.cache.snapshot()
            for u in ("c1/a", "c1/b", "c1/c", "c1/d", "c1/e"):
                assert third.jobs[u] is not again.jobs[u], u
            # none of it reached the cache's jobs: each clone is as the full build makes it
            assert not third.jobs["c1/a"].nodes_fit_errors
            assert third.jobs["c1/b"].tasks[bt.uid].status is TaskStatus.Pending
            assert third.jobs["c1/b"].tasks[bt.uid].node_name == ""
            assert third.jobs["c1/c"].waiting_tier == 0
            assert third.jobs["c1/d"].phase == phase != "Running"
            assert third.pod_group_status["c1/d"].get("phase", "") == phase
            assert snapshot_digest(third) == full()
            # and the next one gets them again
            fourth = sched.cache.snapshot()
            assert all(fourth.jobs[u] is third.jobs[u] for u in third.jobs)
            # a PodGroup changed by the API: its job is rebuilt and handed out as a new clone
            pg_kind = client.scheme.resolve("podgroups.scheduling.volcano.sh")
            e = await client.get(pg_kind, "e", "c1")
            e["spec"]["minMember"] = 2
            await client.update(e)
            await _settle(sched)
            fifth = sched.cache.snapshot()
            assert fifth.jobs["c1/e"] is not fourth.jobs["c1/e"] and fifth.jobs["c1/e"].min_available == 2
            assert sum(1 for u in fifth.jobs if fifth.jobs[u] is fourth.jobs[u]) == 4
            assert snapshot_digest(fifth) == full()
        finally:
            await sched.cache.stop()


async def _settled_job_cluster(client) -> None:
    """Node n0, queue q1 and job c1/a: one Pod bound to n0 and Running."""
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
    for o in [node("n0", "4,8Gi,pods=10"), queue("q1"), podgroup("a", queue="q1", min_member=1, phase="")]:
        await _create(client, o)
    p = await _create(client, pod("a-0", group="a", requests="1,1Gi", node="n0"))
    p["status"] = {"phase": "Running"}
    await client.update_status(p)


async def _run_until_quiet(sched: Scheduler) -> None:
    """Run sessions until one skips c1/a at close (its status written and read back)."""
    for _ in range(8):
        await _settle(sched)
        if "c1/a" not in sched.run_once().pod_groups:
            return
    raise AssertionError("c1/a was computed at every close")


async def test_close_skips_a_job_left_untouched_whose_last_close_emitted_nothing_and_computes_a_touched_one() -> None:
    async with local_cluster() as c:
        client = c.client
        await _settled_job_cluster(client)
        sched = Scheduler(client, schedule_period=0.05, snapshot_mode="incremental")
        await sched.cache.start(timeout=5)
        try:
            await _run_until_quiet(sched)
            pg = sched.cache.informers["PodGroup"].lister.get_by_key("c1/a")
            assert pg["status"]["phase"] == "Running" and pg["status"]["running"] == 1
            await _settle(sched)
            # the same job, but this session ends its task: a kept "emits nothing" would leave
            # the PodGroup Running with running=1
            ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
            job = ssn.jobs["c1/a"]
            job.update_task_status(next(iter(job.tasks.values())), TaskStatus.Failed)
            res = ssn.close()
            assert res.changed == ["c1/a"]
            assert res.pod_groups["c1/a"]["running"] == 0 and res.pod_groups["c1/a"]["failed"] == 1
            # a fit error alone (no status change): computed too, and emits nothing new
            ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
            ssn.jobs["c1/a"].job_fit_errors = "0/1 nodes are available"
            assert "c1/a" in ssn.close().pod_groups
        finally:
            await sched.cache.stop()


async def test_verify_mode_reports_a_close_skip_that_would_have_emitted_something() -> None:
    async with local_cluster() as c:
        client = c.client
        await _settled_job_cluster(client)
        sched = Scheduler(client, schedule_period=0.05, snapshot_mode="verify")
        await sched.cache.start(timeout=5)
        try:
            # verify mode computes every job, and checks each one it would have skipped
            for _ in range(6):
                await _settle(sched)
                assert "c1/a" in sched.run_once().pod_groups
            assert sched.cache.incremental is not None and "c1/a" in sched.cache.incremental._close_quiet
            await _settle(sched)
            ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
            # the status last written is not what the job's version stood for
            ssn.pod_group_status["c1/a"] = {"phase": "Pending"}
            with pytest.raises(SnapshotMismatch, match="close of c1/a"):
                ssn.close()
        finally:
            await sched.cache.stop()


async def test_verify_mode_reports_a_snapshot_that_differs_from_the_full_build() -> None:
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        for o in [node("n0", "2,4Gi,pods=10"), queue("q1")]:
            await _create(client, o)
        sched = Scheduler(client, schedule_period=0.05, snapshot_mode="verify")
        await sched.cache.start(timeout=5)
        try:
            snap = sched.cache.snapshot()
            # a change made behind the cache's back (not through a session's NodeInfo methods)
            snap.nodes["n0"].__dict__["used"] = snap.nodes["n0"].allocatable
            with pytest.raises(SnapshotMismatch, match="differs from the full build"):
                sched.cache.snapshot()
            assert sched.cache.snapshot_mismatches == 1
        finally:
            await sched.cache.stop()


def test_an_unknown_snapshot_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="snapshot_mode"):
        Scheduler(_NoClient(), snapshot_mode="sometimes")  # type: ignore[arg-type]


class _NoClient:
    class scheme:
        @staticmethod
        def resolve(name: str) -> object:
            return name

        @staticmethod
        def resolve_or_add(name: str, kind: object) -> object:
            return kind
