"""What the live cache keeps across sessions so that a session follows what changed instead of
walking every job and Node: the jobs an action may act on (and the jobs a session changed),
the PodGroup statuses as handed out, close's verdict on the jobs it left untouched, the
session's Node list and node arrays, and the scheduler's per-session counts. Each is checked
with a stale-value case, and verify mode reports a change the index missed."""

from __future__ import annotations

import pytest

from pumice.scheduler.volcano import metrics
from pumice.scheduler.volcano.api.job_info import WriteLoggedJob
from pumice.scheduler.volcano.api.types import FitErrors, TaskStatus
from pumice.scheduler.volcano.cache.incremental import clone_node
from pumice.scheduler.volcano.cache.live import SnapshotMismatch
from pumice.scheduler.volcano.framework.node_arrays import NodeArrays
from pumice.scheduler.volcano.framework.session import open_session
from pumice.testing.volcano import pod, podgroup, queue

from .test_incremental_snapshot import _create, _settle
from .test_running_sum import two_jobs


def _uids(ssn) -> list[str]:
    return [j.uid for j in ssn.active_jobs()]


async def test_active_jobs_are_those_that_may_act_and_those_the_session_changed() -> None:
    async with two_jobs("verify") as sched:
        await _create(sched.client, podgroup("c", queue="q1", min_member=1, phase="Inqueue"))
        await _create(sched.client, pod("c-0", group="c", requests="64,1Gi"))  # fits no Node
        await _settle(sched)
        snap = sched.cache.snapshot()
        # a and b are placed (no Pending task, past Pending); c has a Pending task
        assert snap.active_jobs == {"c1/c"}
        ssn = open_session(snap, sched.conf, sched.cache)
        assert _uids(ssn) == ["c1/c"]
        # the session moves a's task back to Pending: a is active from then on, in job order
        job = ssn.jobs["c1/a"]
        job.update_task_status(next(iter(job.tasks.values())), TaskStatus.Pending)
        assert _uids(ssn) == ["c1/a", "c1/c"]
        ssn.close()
        # the stale case: the next session gets a afresh (its task placed again), not active
        snap = sched.cache.snapshot()
        assert snap.active_jobs == {"c1/c"} and "c1/a" in snap.changes.jobs
        ssn = open_session(snap, sched.conf, sched.cache)
        assert _uids(ssn) == ["c1/c"]
        # a change that bypasses the log (and so the index) is reported in verify mode
        job = ssn.jobs["c1/b"]
        job.touch_log = None
        job.update_task_status(next(iter(job.tasks.values())), TaskStatus.Pending)
        with pytest.raises(SnapshotMismatch, match=r"active jobs: \['c1/b'\]"):
            ssn.active_jobs()


async def test_kept_pod_group_statuses_follow_a_status_change() -> None:
    async with two_jobs("verify") as sched:
        await _settle(sched)
        first = sched.cache.snapshot()
        b_status = first.pod_group_status["c1/b"]
        assert set(first.pod_group_status) == {"c1/a", "c1/b"}
        open_session(first, sched.conf, sched.cache).close()
        pgs = sched.client.scheme.resolve("podgroups.scheduling.volcano.sh")
        await sched.client.patch(pgs, "a", {"status": {"phase": "Running", "running": 1}}, "c1", patch_type="merge")
        await _settle(sched)
        second = sched.cache.snapshot()
        assert second.pod_group_status["c1/a"].get("running") == 1  # not the stale status
        assert second.pod_group_status["c1/b"] is b_status
        # a job that goes away leaves the kept statuses
        await sched.client.delete(pgs, "b", "c1")
        await _settle(sched)
        assert set(sched.cache.snapshot().pod_group_status) == {"c1/a"}


async def test_a_job_changed_after_close_found_it_untouched_is_reported_in_verify_mode() -> None:
    async with two_jobs("verify") as sched:
        await _settle(sched)
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        ssn.close()
        inc = sched.cache.incremental
        assert inc is not None and inc._close_touched is not None and inc._close_touched[1] == set()
        # the next snapshot takes close's verdict; here a changes behind it
        ssn.jobs["c1/a"].waiting_tier = 2
        with pytest.raises(SnapshotMismatch, match=r"job c1/a: untouched at the last close"):
            sched.cache.snapshot()


async def test_a_job_touched_in_a_session_is_handed_out_afresh_with_close_verdicts() -> None:
    async with two_jobs("incremental") as sched:
        await _settle(sched)
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        a, b = ssn.jobs["c1/a"], ssn.jobs["c1/b"]
        a.waiting_tier = 2  # before close: close finds a touched
        ssn.close()
        jobs = ssn.jobs
        snap = sched.cache.snapshot()
        # the same jobs in the same order: the dict the last session had, brought up to date
        assert snap.jobs is jobs and list(snap.jobs) == ["c1/a", "c1/b"]
        assert snap.jobs["c1/a"] is not a and snap.jobs["c1/a"].waiting_tier == 0
        assert snap.jobs["c1/b"] is b and snap.changes.jobs == {"c1/a"}
        # a new job after the others changes the order: the same dict, the new job at its end,
        # the untouched jobs kept
        await _create(sched.client, podgroup("c", queue="q1", min_member=1, phase="Inqueue"))
        await _settle(sched)
        a = snap.jobs["c1/a"]
        open_session(snap, sched.conf, sched.cache).close()
        snap = sched.cache.snapshot()
        assert snap.jobs is jobs and list(snap.jobs) == ["c1/a", "c1/b", "c1/c"]
        assert snap.jobs["c1/a"] is a and snap.jobs["c1/b"] is b and snap.changes.jobs == {"c1/c"}


async def test_the_node_list_and_arrays_follow_the_nodes_a_session_changed() -> None:
    async with two_jobs("verify", nodes=3) as sched:
        await _settle(sched)
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        arrays = ssn.arrays
        t = next(iter(ssn.jobs["c1/a"].tasks.values())).clone()
        t.uid, t.name, t.node_name = "extra", "extra", "n2"
        touched = ssn.nodes["n2"]
        touched.add_task(t)
        ssn.close()
        snap = sched.cache.snapshot()
        assert snap.changes.nodes == {"n2"}
        ssn = open_session(snap, sched.conf, sched.cache)
        # the same arrays, row n2 rebuilt from the fresh copy (the stale row had the extra task)
        assert ssn.arrays is arrays and ssn.node_list[2] is not touched and ssn.node_list[2] is ssn.nodes["n2"]
        fresh = NodeArrays(ssn.node_list, ssn.arrays.dims[len(ssn.arrays.node_dims):])
        for col in ("idle", "future_idle", "used", "allocatable"):
            assert (getattr(ssn.arrays, col) == getattr(fresh, col)).all(), col
        ssn.close()
        # a Node replaced behind the cache's back is reported in verify mode
        inc = sched.cache.incremental
        assert inc is not None
        inc._session_nodes["n0"] = clone_node(inc._base_nodes["n0"])
        with pytest.raises(SnapshotMismatch, match="Node list differs"):
            sched.cache.snapshot()


async def test_the_scheduler_counts_follow_the_jobs_that_changed() -> None:
    async with two_jobs("verify") as sched:
        await _create(sched.client, podgroup("c", queue="q1", min_member=2, phase="Inqueue"))
        for i in range(2):
            await _create(sched.client, pod(f"c-{i}", group="c", requests="3,1Gi"))  # only one fits
        unschedulable = metrics.child(metrics.schedule_attempts, "unschedulable")
        for _ in range(3):
            await _settle(sched)
            before = unschedulable._value.get()
            sched.run_once()
            assert sched.cache.snapshot_mismatches == 0
            # c is the one unscheduled job, with its two Pending tasks
            assert metrics.unschedule_job_count._value.get() == 1
            assert unschedulable._value.get() - before == 2


async def test_close_trusts_the_write_log_of_the_jobs_it_handed_out() -> None:
    async with two_jobs("verify", sessions=2) as sched:
        await _settle(sched)
        snap = sched.cache.snapshot()
        assert snap.job_writes == set()
        ssn = open_session(snap, sched.conf, sched.cache)
        a, b = ssn.jobs["c1/a"], ssn.jobs["c1/b"]
        assert isinstance(a, WriteLoggedJob)
        b.nodes_fit_errors["c1/b-0"] = FitErrors()  # an entry added in place is logged too
        ssn.close()
        inc = sched.cache.incremental
        assert inc is not None and inc._close_touched is not None and inc._close_touched[1] == {"c1/b"}
        # the stale case: the next snapshot clears the log and hands b out afresh, a kept
        snap = sched.cache.snapshot()
        assert snap.job_writes == set() and snap.jobs["c1/a"] is a and snap.jobs["c1/b"] is not b
        assert not snap.jobs["c1/b"].nodes_fit_errors
        ssn = open_session(snap, sched.conf, sched.cache)
        a = ssn.jobs["c1/a"]
        a.waiting_tier = 2  # a field set: logged
        assert snap.job_writes == {"c1/a"}
        ssn.close()
        assert inc._close_touched is not None and inc._close_touched[1] == {"c1/a"}
        # a change that bypasses the log is reported in verify mode
        snap = sched.cache.snapshot()
        ssn = open_session(snap, sched.conf, sched.cache)
        ssn.jobs["c1/b"].__dict__["waiting_tier"] = 3
        with pytest.raises(SnapshotMismatch, match=r"jobs \['c1/b'\] logged no write"):
            ssn.close()


async def test_close_walks_only_the_jobs_it_does_not_skip_in_job_order() -> None:
    async with two_jobs("incremental") as sched:
        await _create(sched.client, podgroup("c", queue="q1", min_member=1, phase="Inqueue"))
        await _create(sched.client, pod("c-0", group="c", requests="64,1Gi"))  # fits no Node
        for _ in range(3):
            await _settle(sched)
            sched.run_once()
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        res = ssn.close()
        # a and b emitted nothing at their last close and were left untouched: skipped; c, which
        # fits nowhere, is closed (its Warning and Pod condition again)
        assert ssn.close_skips == {"c1/a", "c1/b"}
        assert [j.uid for j in ssn.jobs_to_close()] == ["c1/c"]
        assert list(res.pod_groups) == ["c1/c"] and res.pod_conditions


async def test_job_queues_follow_a_queue_set_in_the_session() -> None:
    async with two_jobs("verify") as sched:
        await _create(sched.client, queue("q0"))
        await _create(sched.client, podgroup("c", queue="q0", min_member=1, phase="Inqueue"))
        await _settle(sched)
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        assert ssn.job_queues() == ["q1", "q0"]
        ssn.close()
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        # a plugin (placement) sets a job's queue: the written job's entry is made again (the
        # stale one would keep q1 first)
        ssn.jobs["c1/a"].queue = "q0"
        ssn.jobs["c1/b"].queue = "q0"
        assert ssn.job_queues() == ["q0"]
        ssn.close()
        # the next session has the jobs afresh, in their own queues again
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        assert ssn.job_queues() == ["q1", "q0"]
        # a queue set behind the log is reported in verify mode
        ssn.jobs["c1/a"].__dict__["queue"] = "q0"
        ssn.jobs["c1/b"].__dict__["queue"] = "q0"
        with pytest.raises(SnapshotMismatch, match=r"session.job_queues: groups \['q1', 'q0'\] != \['q0'\]"):
            ssn.job_queues()


async def test_a_new_job_order_is_patched_from_the_last_sessions_jobs() -> None:
    async with two_jobs("verify") as sched:
        await _create(sched.client, podgroup("c", queue="q1", min_member=1, phase="Inqueue"))
        await _settle(sched)
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        a, b = ssn.jobs["c1/a"], ssn.jobs["c1/b"]
        b.waiting_tier = 2  # b is touched in this session
        ssn.close()
        # a new job d after the others and a deleted one c: a new order list that only dropped c
        # and put d at its end, so the last dict with c deleted and d added at its end
        pgs = sched.client.scheme.resolve("podgroups.scheduling.volcano.sh")
        await sched.client.delete(pgs, "c", "c1")
        await _create(sched.client, podgroup("d", queue="q1", min_member=1, phase="Inqueue"))
        await _settle(sched)
        jobs = ssn.jobs
        snap = sched.cache.snapshot()
        assert snap.jobs is jobs and list(snap.jobs) == ["c1/a", "c1/b", "c1/d"]
        # a kept; the stale b (touched) and the new d cloned; c named changed as gone
        assert snap.jobs["c1/a"] is a and snap.jobs["c1/b"] is not b and snap.jobs["c1/b"].waiting_tier == 0
        assert snap.changes.jobs == {"c1/b", "c1/c", "c1/d"}
        ssn = open_session(snap, sched.conf, sched.cache)
        ssn.close()
        # a job lost from the last session's dict (so not kept, not cloned) is reported
        inc = sched.cache.incremental
        assert inc is not None and inc._out is not None
        await _create(sched.client, podgroup("e", queue="q1", min_member=1, phase="Inqueue"))
        await _settle(sched)
        inc._out["c1/x"] = inc._out.pop("c1/a")
        with pytest.raises(SnapshotMismatch, match=r"jobs of the last session \['c1/a'\] not in its patched dict"):
            sched.cache.snapshot()


async def test_a_job_joining_the_session_before_the_last_one_gets_a_new_dict_in_job_order() -> None:
    async with two_jobs("verify") as sched:
        # c waits for a queue that does not exist: not in the sessions
        await _create(sched.client, podgroup("c", queue="q9", min_member=1, phase="Inqueue"))
        await _settle(sched)
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        assert list(ssn.jobs) == ["c1/a", "c1/b"]
        a = ssn.jobs["c1/a"]
        ssn.close()
        # c moves to q1 and d is created after it: d goes at the end of the order, c before it,
        # so the last dict cannot be patched at its end
        pgs = sched.client.scheme.resolve("podgroups.scheduling.volcano.sh")
        await sched.client.patch(pgs, "c", {"spec": {"queue": "q1"}}, "c1", patch_type="merge")
        await _create(sched.client, podgroup("d", queue="q1", min_member=1, phase="Inqueue"))
        await _settle(sched)
        jobs = ssn.jobs
        snap = sched.cache.snapshot()
        assert snap.jobs is not jobs and list(snap.jobs) == ["c1/a", "c1/b", "c1/c", "c1/d"]
        assert snap.jobs["c1/a"] is a and snap.changes.jobs == {"c1/c", "c1/d"}
        open_session(snap, sched.conf, sched.cache).close()
        # the next job after the others: that dict again, patched at its end
        await _create(sched.client, podgroup("e", queue="q1", min_member=1, phase="Inqueue"))
        await _settle(sched)
        jobs = snap.jobs
        snap = sched.cache.snapshot()
        assert snap.jobs is jobs and list(snap.jobs) == ["c1/a", "c1/b", "c1/c", "c1/d", "c1/e"]
        open_session(snap, sched.conf, sched.cache).close()
        assert sched.cache.snapshot_mismatches == 0


async def test_close_finds_the_jobs_without_a_quiet_entry_from_the_last_close_and_the_changes() -> None:
    async with two_jobs("verify") as sched:
        await _create(sched.client, podgroup("c", queue="q1", min_member=1, phase="Inqueue"))
        await _create(sched.client, pod("c-0", group="c", requests="64,1Gi"))  # fits no Node
        for _ in range(3):
            await _settle(sched)
            sched.run_once()
        inc = sched.cache.incremental
        assert inc is not None
        # a and b emitted nothing at their last close; c, which fits nowhere, emits every time
        assert set(inc._close_quiet) == {"c1/a", "c1/b"}
        assert inc._running["close.loud"]["uids"] == {"c1/c"}
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        # an entry dropped behind the cache's back (not by a close or a rebuild) is reported
        del inc._close_quiet["c1/a"]
        with pytest.raises(SnapshotMismatch, match=r"close: jobs without a quiet entry \['c1/c'\] != \['c1/a', 'c1/c'\]"):
            ssn.close()
