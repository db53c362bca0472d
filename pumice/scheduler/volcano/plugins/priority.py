"""priority: order tasks and jobs by priority; victims must have strictly lower priority.

Mirrors: volcano pkg/scheduler/plugins/priority/priority.go.
"""

from __future__ import annotations

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import EvictionContext, EvictionKind, Vote
from pumice.scheduler.volcano.framework.arguments import NoArguments, parser
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "priority"


def _cmp_desc(a: int, b: int) -> int:
    if a == b:
        return 0
    return -1 if a > b else 1


class PriorityPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NoArguments) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_task_order_fn(PLUGIN_NAME, lambda a, b: _cmp_desc(a.priority, b.priority))
        ssn.add_job_order_fn(PLUGIN_NAME, lambda a, b: _cmp_desc(a.priority, b.priority))
        ssn.add_sub_job_order_fn(PLUGIN_NAME, lambda a, b: _cmp_desc(a.priority, b.priority))

        def unified_evictable(ctx: EvictionContext, cands: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            # reclaim is about fair share across queues; priority gates gang preemption only
            if ctx.kind is EvictionKind.GANG_RECLAIM:
                return cands, Vote.PERMIT
            prio = getattr(ctx.job, "priority", 0)
            return [c for c in cands if c.job in ssn.jobs and ssn.jobs[c.job].priority < prio], Vote.PERMIT

        ssn.add_unified_evictable_fn(PLUGIN_NAME, unified_evictable)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            pjob = ssn.jobs.get(preemptor.job)
            out = []
            for p in preemptees:
                job = ssn.jobs.get(p.job)
                if job is None or pjob is None:
                    continue
                if job.uid != pjob.uid:
                    if job.priority < pjob.priority:
                        out.append(p)
                elif p.priority < preemptor.priority:
                    out.append(p)
            return out, Vote.PERMIT

        ssn.add_preemptable_fn(PLUGIN_NAME, preemptable)

        def starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add_job_starving_fns(PLUGIN_NAME, starving)

    def on_session_close(self, ssn: Session) -> None:
        pass


parse_arguments = parser(NoArguments)


new = PriorityPlugin
