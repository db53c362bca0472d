"""Running sums kept across sessions equal a fresh fold of the parts float for float (scalar order
and group order included), take changed parts in place of stale ones, give no total when it
would not be exact, and verify mode reports a stale one."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator

import pytest

from pumice.scheduler.volcano.api.job_info import exact_data
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.running_sum import RunningSums, RunningTally, fold, tally
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.cache.live import SnapshotMismatch
from pumice.scheduler.volcano.framework.session import open_session
from pumice.scheduler.volcano.scheduler import Scheduler
from pumice.testing.cluster import local_cluster
from pumice.testing.volcano import node, pod, podgroup, queue

from .test_incremental_snapshot import _create, _settle

NAMES = ["nvidia.com/gpu", "pods", "example.com/fpga", "hugepages-2Mi"]


def _part(rng: random.Random) -> Resource | None:
    if rng.random() < 0.2:
        return None
    names = rng.sample(NAMES, rng.randint(0, 3))
    return Resource(rng.randint(0, 64) * 1000, rng.randint(0, 1 << 40), {n: float(rng.randint(0, 8) * 1000) for n in names})


def _fresh(items: dict[str, tuple[str, tuple, int]], width: int) -> dict[str, tuple[Resource, ...]]:
    by_group: dict[str, list[tuple]] = {}
    for _item, (group, parts, _order) in sorted(items.items(), key=lambda kv: kv[1][2]):
        by_group.setdefault(group, []).append(parts)
    return {g: fold(ps, width) for g, ps in by_group.items()}


@contextlib.asynccontextmanager
async def two_jobs(mode: str, nodes: int = 1, sessions: int = 3) -> AsyncIterator[Scheduler]:
    """A live scheduler (``snapshot_mode`` ``mode``) over namespace c1 with ``nodes`` Nodes n0.. of
    4 cpu, Queue q1 and two Inqueue one-Pod jobs a and b, after ``sessions`` sessions (none
    mismatched in verify mode)."""
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        for o in [*(node(f"n{i}", "4,8Gi,pods=10") for i in range(nodes)), queue("q1")]:
            await _create(client, o)
        for g in ("a", "b"):
            await _create(client, podgroup(g, queue="q1", min_member=1, phase="Inqueue"))
            await _create(client, pod(f"{g}-0", group=g, requests="1,1Gi"))
        sched = Scheduler(client, schedule_period=0.05, snapshot_mode=mode)
        await sched.cache.start(timeout=5)
        try:
            for _ in range(sessions):
                await _settle(sched)
                sched.run_once()
            assert sched.cache.snapshot_mismatches == 0
            yield sched
        finally:
            await sched.cache.stop()


@pytest.mark.parametrize(("stay", "same_names"), [(0.0, 0.0), (0.8, 0.0), (0.8, 0.9)])
def test_running_sums_equal_a_fresh_fold_through_random_changes(stay: float, same_names: float) -> None:
    """``stay``: how often a changed item keeps its group (new parts moved into the totals in
    place, RunningSums._replace); ``same_names``: how often a part that stays keeps its scalar
    names in their order, its amounts changed (only the totals move)."""
    rng = random.Random(11)
    rs = RunningSums(2)
    items: dict[str, tuple[str, tuple, int]] = {}
    orders = rng.sample(range(10_000), 400)
    for step in range(3000):
        item = f"j{rng.randrange(60)}"
        if item in items and rng.random() < 0.3:
            rs.remove(item)
            del items[item]
        else:
            group = items[item][0] if item in items and rng.random() < stay else rng.choice(["q1", "q2", "q3"])
            # an item keeps its order unless it leaves and comes back (a rebuilt job keeps its key)
            order = items[item][2] if item in items else orders[step % len(orders)] * 100 + int(item[1:])
            parts = (_part(rng), _part(rng))
            if item in items and group == items[item][0] and rng.random() < same_names:
                parts = tuple(None if p is None else Resource(rng.randint(0, 64) * 1000, p.memory + 1000,
                                                               {n: float(rng.randint(0, 8) * 1000) for n in p.scalars})
                              for p in items[item][1])
            rs.set(item, group, parts, order)
            items[item] = (group, parts, order)
        want = _fresh(items, 2)
        assert rs.groups() == list(want)
        for g, sums in want.items():
            got = rs.sums(g)
            assert got is not None and exact_data(got) == exact_data(sums), (step, g)
        assert len(rs) == len(items)
    # a group without items sums to nothing
    assert exact_data(rs.sums("nope")) == exact_data((Resource(), Resource()))


def test_a_changed_part_replaces_the_stale_one() -> None:
    rs = RunningSums(1)
    rs.set("a", "q", (Resource(1000, 10, {"nvidia.com/gpu": 1000.0}),), 1)
    rs.set("b", "q", (Resource(2000, 20),), 2)
    # the job changed (a task ended): its new part counts, the old one no longer does
    rs.set("a", "q", (Resource(500, 5, {"pods": 1.0}),), 1)
    got = rs.sums("q")
    assert got is not None and exact_data(got) == exact_data((Resource(2500, 25, {"pods": 1.0}),))
    # b now carries the first gpu: the scalar order follows b's position after a's pods
    rs.set("b", "q", (Resource(2000, 20, {"nvidia.com/gpu": 2000.0, "pods": 2.0}),), 2)
    got = rs.sums("q")
    assert got is not None and list(got[0].scalars) == ["pods", "nvidia.com/gpu"]
    rs.remove("a")
    got = rs.sums("q")
    assert got is not None and list(got[0].scalars) == ["nvidia.com/gpu", "pods"]
    assert exact_data(got) == exact_data((Resource(2000, 20, {"nvidia.com/gpu": 2000.0, "pods": 2.0}),))


def test_an_equal_part_of_another_object_leaves_the_totals_as_they_were() -> None:
    """A changed job whose parts came out the same (e.g. its Pod went from Binding to Running) moves
    no total: the sums are the very objects given before, and equal a fresh fold; a part with
    the same amounts under another scalar order, or -0.0 for 0.0, still comes out as a fold."""
    rs = RunningSums(1)
    rs.set("a", "q", (Resource(1000, 10, {"nvidia.com/gpu": 1000.0, "pods": 1.0}),), 1)
    rs.set("b", "q", (Resource(0.0, 20),), 2)
    before = rs.sums("q")
    rs.set("a", "q", (Resource(1000, 10, {"nvidia.com/gpu": 1000.0, "pods": 1.0}),), 1)
    rs.set("b", "q", (Resource(-0.0, 20),), 2)
    assert rs.sums("q") is before
    want = fold([(Resource(1000, 10, {"nvidia.com/gpu": 1000.0, "pods": 1.0}),), (Resource(-0.0, 20),)], 1)
    assert exact_data(before) == exact_data(want)
    rs.set("a", "q", (Resource(1000, 10, {"pods": 1.0, "nvidia.com/gpu": 1000.0}),), 1)
    got = rs.sums("q")
    assert got is not None and list(got[0].scalars) == ["pods", "nvidia.com/gpu"]
    assert exact_data(got) == exact_data(fold([(Resource(1000, 10, {"pods": 1.0, "nvidia.com/gpu": 1000.0}),),
                                               (Resource(-0.0, 20),)], 1))


def test_no_running_total_while_a_part_is_not_whole_or_a_total_is_too_big() -> None:
    rs = RunningSums(1)
    rs.set("a", "q", (Resource(1000, 10),), 1)
    rs.set("b", "q", (Resource(0.1, 10),), 2)
    assert rs.sums("q") is None
    rs.set("c", "r", (Resource(1, 1),), 3, exact=False)
    assert rs.sums("r") is None
    # once the inexact part is gone the total is exact again (it was never added)
    rs.remove("b")
    got = rs.sums("q")
    assert got is not None and exact_data(got) == exact_data((Resource(1000, 10),))
    rs.set("d", "q", (Resource(0, float(2**52)),), 4)
    rs.set("e", "q", (Resource(0, float(2**52)),), 5)
    assert rs.sums("q") is None


def test_stale_heap_entries_are_dropped() -> None:
    rs = RunningSums(1)
    for i in range(200):
        rs.set("a", "q", (Resource(i, 0, {"pods": float(i)}),), 1)
    # one live item: its heaps stay small although it was set 200 times
    g = rs._groups["q"]
    assert len(g.order_heap) <= 18 and len(g.slots[0].heaps["pods"]) <= 18


async def test_verify_mode_reports_a_running_sum_that_missed_a_change() -> None:
    async with two_jobs("verify") as sched:
        inc = sched.cache.incremental
        assert inc is not None
        running = inc._running
        assert {"proportion.sums", "overcommit.inqueue", "overcommit.used", "close.allocated"} <= set(running)
        # job a's parts as if a change of it had been missed
        rs = running["proportion.sums"]
        group, parts, order, _exact, _ok = rs._items["c1/a"]
        rs.set("c1/a", group, (Resource(7000, 7), *parts[1:]), order)
        await _settle(sched)
        snap = sched.cache.snapshot()
        assert "c1/a" not in snap.changes.jobs
        with pytest.raises(SnapshotMismatch, match=r"running sums proportion\.sums"):
            open_session(snap, sched.conf, sched.cache)


def test_running_tally_equals_a_fresh_count_through_random_changes() -> None:
    rng = random.Random(12)
    rt = RunningTally()
    items: dict[str, dict[str, int]] = {}
    for step in range(3000):
        item = f"j{rng.randrange(60)}"
        if item in items and rng.random() < 0.3:
            rt.remove(item)
            del items[item]
        else:
            counts = {k: rng.randint(0, 3) for k in rng.sample(["gpu", "binding", "pending", "pods"], rng.randint(0, 3))}
            rt.set(item, counts)
            items[item] = counts
        want = tally(items.values())
        assert rt.totals == want, step
        assert 0 not in rt.totals.values() and len(rt) == len(items)
    rt.clear()
    assert rt.totals == {} and len(rt) == 0


async def test_verify_mode_reports_a_running_tally_that_missed_a_change() -> None:
    async with two_jobs("verify") as sched:
        inc = sched.cache.incremental
        assert inc is not None
        rt = inc._running["session.scalars"]
        assert isinstance(rt, RunningTally)
        # job a counted as requesting a scalar it does not request, as if a change were missed
        rt.set("c1/a", {"example.com/fpga": 1})
        await _settle(sched)
        snap = sched.cache.snapshot()
        assert "c1/a" not in snap.changes.jobs
        with pytest.raises(SnapshotMismatch, match=r"running tally session\.scalars"):
            open_session(snap, sched.conf, sched.cache)


async def test_the_snapshot_names_the_jobs_and_nodes_that_changed() -> None:
    async with two_jobs("incremental", nodes=2, sessions=0) as sched:
        client = sched.client
        await _settle(sched)
        first = sched.cache.snapshot()
        assert first.changes is not None and first.changes.jobs == {"c1/a", "c1/b"} and first.changes.nodes is None
        second = sched.cache.snapshot()
        assert second.changes is not None and second.changes.generation == first.changes.generation + 1
        assert not second.changes.jobs and not second.changes.nodes
        # a session touches job a and Node n1: the next snapshot names both (and only them)
        second.jobs["c1/a"].waiting_tier = 1
        second.nodes["n1"].add_task(next(iter(second.jobs["c1/b"].tasks.values())).clone())
        third = sched.cache.snapshot()
        assert third.changes is not None and third.changes.jobs == {"c1/a"} and third.changes.nodes == {"n1"}
        # a job that goes away is named too
        await client.delete(client.scheme.resolve("podgroups.scheduling.volcano.sh"), "b", "c1")
        await _settle(sched)
        fourth = sched.cache.snapshot()
        assert fourth.changes is not None and "c1/b" in fourth.changes.jobs and "c1/b" not in fourth.jobs


async def test_drf_job_attrs_kept_across_sessions_are_made_afresh_for_a_touched_job_and_checked_in_verify_mode() -> None:
    async with two_jobs("verify") as sched:
        await _settle(sched)
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        drf = ssn.plugins["drf"]
        table = sched.cache.incremental._running["drf.attrs"]
        assert drf.job_attrs is table.values and set(table.values) == {"c1/a", "c1/b"}
        # a session moves a's task and changes a's attr in place, as drf's event handler does
        job = ssn.jobs["c1/a"]
        task = next(iter(job.tasks.values()))
        was = table.values["c1/a"].allocated
        job.update_task_status(task, TaskStatus.Pipelined if task.status is TaskStatus.Pending else TaskStatus.Pending)
        table.values["c1/a"].allocated = was + Resource(3000, 3)
        b_attr = table.values["c1/b"]
        ssn.close()
        # the stale value is not handed on: the next session makes a's attr afresh and keeps b's
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        assert exact_data((ssn.plugins["drf"].job_attrs["c1/a"].allocated,)) == exact_data((was,))
        assert ssn.plugins["drf"].job_attrs["c1/b"] is b_attr
        ssn.close()
        # a value changed behind the table's back is reported in verify mode
        table.values["c1/b"].share = 0.5
        with pytest.raises(SnapshotMismatch, match=r"job table drf\.attrs of c1/b"):
            open_session(sched.cache.snapshot(), sched.conf, sched.cache)
