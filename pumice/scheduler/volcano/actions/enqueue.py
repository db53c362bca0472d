"""enqueue: admit Pending PodGroups into their queues (phase Pending -> Inqueue).

Mirrors: volcano pkg/scheduler/actions/enqueue/enqueue.go.
"""

from __future__ import annotations

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.actions._order import jobs_by_queue
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.framework.arguments import Configured, NoArguments
from pumice.scheduler.volcano.framework.session import Session

ACTION_NAME = "enqueue"


class EnqueueAction(Configured[NoArguments]):
    name = ACTION_NAME

    def execute(self, ssn: Session) -> None:
        if ssn.schedule_start_timestamp is None:
            ssn.schedule_start_timestamp = ssn.now
        # a Pending job is among the session's active jobs
        queues, jobs = jobs_by_queue(ssn, ssn.jobs.values(), JobInfo.is_pending, ssn.active_jobs(),
                                     queue_names=ssn.job_queues)
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
