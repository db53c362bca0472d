"""enqueue: admit Pending PodGroups into their queues (phase Pending -> Inqueue).

Mirrors: volcano pkg/scheduler/actions/enqueue/enqueue.go.
"""

from __future__ import annotations

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.framework.arguments import Configured, NoArguments
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.util import PriorityQueue

ACTION_NAME = "enqueue"


class EnqueueAction(Configured[NoArguments]):
    name = ACTION_NAME

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn, total=True)
        seen: set[str] = set()
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs.values():
            if job.schedule_start_timestamp == 0:
                job.schedule_start_timestamp = ssn.now
            q = ssn.queues.get(job.queue)
            if q is None:
                continue
            if q.uid not in seen:
                seen.add(q.uid)
                queues.push(q)
            if job.is_pending():
                jobs.setdefault(q.uid, PriorityQueue(ssn.job_order_fn, total=True)).push(job)
        while not queues.empty():
            q = queues.pop()
            pq = jobs.get(q.uid)
            if pq is None or pq.empty():
                continue
            job = pq.pop()
            if job.min_resources is None or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                job.set_phase(PodGroupPhase.INQUEUE)
            queues.push(q)
