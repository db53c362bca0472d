"""The walk order the actions share: queues in queue order, each queue's jobs in job order, a
job's Pending tasks in task order.

Mirrors: the collection loops at the top of volcano pkg/scheduler/actions/*/*.go Execute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.util import PriorityQueue


def jobs_by_queue(ssn: Session, jobs: Iterable[JobInfo], keep: Callable[[JobInfo], bool],
                  candidates: Iterable[JobInfo] | None = None,
                  queue_names: Callable[[], Iterable[str]] | None = None,
                  ) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]]]:
    """The queues of ``jobs`` (those the session knows; each once, in queue order) and, per
    queue uid, the jobs for which ``keep(job)`` holds, in job order. ``keep`` is called once per
    job whose queue is known, in the order of ``jobs``; with ``candidates`` (a part of ``jobs``
    in the same order, holding every job ``keep`` would take) only on those, and then
    ``queue_names`` may give the queues of ``jobs`` in the order of their first jobs
    (e.g. :meth:`Session.job_queues`; called only when needed).

    With ``candidates``, when the kept jobs are in one queue or none, the queue heap holds just
    that queue: the caller must be a loop for which popping a queue without kept jobs does
    nothing (enqueue's), so the other queues' places in the order cannot matter."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn, total=True)
    by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    known = ssn.queues
    if candidates is not None:
        first: QueueInfo | None = None
        for job in candidates:
            q = known.get(job.queue)
            if q is not None and keep(job):
                pq = by_queue.get(q.uid)
                if pq is None:
                    pq = by_queue[q.uid] = PriorityQueue(ssn.job_order_fn, total=True)
                    first = q
                pq.push(job)
        if len(by_queue) <= 1:
            if first is not None:
                queues.push(first)
            return queues, by_queue
        # the queues pushed in the order of their first jobs, as the loop below pushes them
        for name in queue_names() if queue_names is not None else dict.fromkeys([job.queue for job in jobs]):
            q = known.get(name)
            if q is not None:
                queues.push(q)
        return queues, by_queue
    seen: set[str] = set()
    for job in jobs:
        q = known.get(job.queue)
        if q is None:
            continue
        if q.uid not in seen:
            seen.add(q.uid)
            queues.push(q)
        if keep(job):
            by_queue.setdefault(q.uid, PriorityQueue(ssn.job_order_fn, total=True)).push(job)
    return queues, by_queue


def running_valid_jobs(ssn: Session) -> list[JobInfo]:
    """The session's jobs that are past Pending and pass ``job_valid`` (the preempt/reclaim set)."""
    return [job for job in ssn.jobs.values() if not job.is_pending() and ssn.job_valid(job) is None]


def pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    """``job``'s Pending tasks without scheduling gates, in task order."""
    tq: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn, total=True)
    for t in job.tasks_in(TaskStatus.Pending):
        if not t.sch_gated:
            tq.push(t)
    return tq
