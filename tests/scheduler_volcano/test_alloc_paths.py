"""Per-session shortcut of enqueue's queue order: it gives what the full path gives, with the
cases where the shortcut must not apply."""

from __future__ import annotations

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.actions._order import jobs_by_queue
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.framework.session import open_session
from pumice.testing.volcano import podgroup, queue

from .test_incremental_snapshot import _create, _settle
from .test_running_sum import two_jobs


def _popped(queues) -> list[str]:
    out = []
    while not queues.empty():
        out.append(queues.pop().name)
    return out


async def test_enqueue_queue_heap_holds_only_the_queue_with_pending_jobs() -> None:
    async with two_jobs("verify") as sched:
        for name in ("q0", "q2"):
            await _create(sched.client, queue(name))
        await _create(sched.client, podgroup("p", queue="q2", min_member=1))  # Pending
        await _settle(sched)
        ssn = open_session(sched.cache.snapshot(), sched.conf, sched.cache)
        asked: list[bool] = []

        def names() -> list[str]:
            asked.append(True)
            return ssn.job_queues()

        queues, jobs = jobs_by_queue(ssn, ssn.jobs.values(), JobInfo.is_pending, ssn.active_jobs(), queue_names=names)
        # one queue with pending jobs: the others (q1: a, b placed) are left out of the heap,
        # and the queue list of every job is not asked for
        assert _popped(queues) == ["q2"] and not asked
        pq = jobs[ssn.queues["q2"].uid]
        assert pq.pop().name == "p" and pq.empty()
        # two queues with pending jobs: every queue of the jobs, in queue order (the full path)
        ssn.jobs["c1/a"].set_phase(PodGroupPhase.PENDING)
        queues, jobs = jobs_by_queue(ssn, ssn.jobs.values(), JobInfo.is_pending, ssn.active_jobs(), queue_names=names)
        assert asked and sorted(_popped(queues)) == ["q1", "q2"]
        assert set(jobs) == {ssn.queues["q1"].uid, ssn.queues["q2"].uid}
        # no pending job: an empty heap
        ssn.jobs["c1/a"].set_phase(PodGroupPhase.INQUEUE)
        ssn.jobs["c1/p"].set_phase(PodGroupPhase.INQUEUE)
        queues, jobs = jobs_by_queue(ssn, ssn.jobs.values(), JobInfo.is_pending, ssn.active_jobs(), queue_names=names)
        assert queues.empty() and not jobs
        ssn.close()

