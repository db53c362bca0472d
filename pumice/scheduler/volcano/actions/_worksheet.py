"""Worksheets and replayable plans shared by allocate and the gang-aware eviction actions.

A worksheet is what is left to place of one job, sub-job by sub-job; a plan is the operations
of a dry-run statement, taken before it is discarded and applied again to a new statement
when the dry run won.

Mirrors: volcano pkg/scheduler/actions/allocate/allocate.go (JobWorksheet, SubJobWorksheet,
organizeJobWorksheet), actions/utils/simulate.go organizeEvictionWorksheet and framework
SaveOperations / Statement.RecoverOperations.
"""

from __future__ import annotations

import functools

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.sub_job_info import SubJobInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.statement import Op, Statement
from pumice.scheduler.volcano.framework.util import PriorityQueue

PlannedOp = tuple[Op, TaskInfo, str, bool, str]
"""(operation, task, node name, eviction occurred, eviction reason) of a dry run, to replay."""


def save_operations(*stmts: Statement) -> list[PlannedOp]:
    """The operations of ``stmts`` as one replayable plan (take it before discarding them).

    Mirrors: framework.SaveOperations."""
    return [(op.name, op.task, op.task.node_name, op.task.eviction_occurred, op.reason) for st in stmts for op in st.operations]


def replay(ssn: Session, plan: list[PlannedOp]) -> Statement:
    """A new statement applying ``plan`` again. Mirrors: Statement.RecoverOperations."""
    final = Statement(ssn)
    for name, task, node_name, evicted, reason in plan:
        if name is Op.Allocate:
            final.allocate(task, ssn.nodes[node_name])
        elif name is Op.Pipeline:
            final.pipeline(task, node_name, evicted)
        else:
            final.evict(task, reason)
    return final


class JobWorksheet:
    """What is left to place of a job with sub-group policies: its sub-jobs in order, and each
    sub-job's Pending tasks in task order. Mirrors: allocate.go JobWorksheet/SubJobWorksheet."""

    def __init__(self, sub_jobs: PriorityQueue[SubJobInfo], tasks: dict[str, PriorityQueue[TaskInfo]]) -> None:
        self.sub_jobs = sub_jobs
        self.tasks = tasks

    def empty(self) -> bool:
        return self.sub_jobs.empty()

    def clone(self) -> JobWorksheet:
        return JobWorksheet(self.sub_jobs.clone(), {k: v.clone() for k, v in self.tasks.items()})


def organize_job_worksheet(ssn: Session, job: JobInfo, *, skip_gated: bool = False) -> JobWorksheet:
    """The worksheet of a job's sub-jobs: those with Pending (not BestEffort; with
    ``skip_gated`` not scheduling-gated either) tasks; the sub-jobs still needed to reach each
    policy's ``minSubGroups`` go first, then the session's sub-job order.

    Mirrors: allocate.go organizeJobWorksheet (and actions/utils organizeEvictionWorksheet with
    ``skip_gated``).
    """
    count: dict[str, int] = {}
    not_ready: list[SubJobInfo] = []
    for sub in job.sub_jobs.values():
        if ssn.sub_job_ready(job, sub):
            count[sub.gid] = count.get(sub.gid, 0) + 1
        else:
            not_ready.append(sub)
    not_ready.sort(key=functools.cmp_to_key(lambda a, b: -1 if ssn.sub_job_order_fn(a, b) else 1))
    required: set[str] = set()
    mins = job.min_sub_jobs
    for sub in not_ready:
        if count.get(sub.gid, 0) < mins.get(sub.gid, 0):
            required.add(sub.uid)
            count[sub.gid] = count.get(sub.gid, 0) + 1

    def less(a: SubJobInfo, b: SubJobInfo) -> bool:
        ra, rb = a.uid in required, b.uid in required
        if ra != rb:
            return ra
        return ssn.sub_job_order_fn(a, b)

    queue: PriorityQueue[SubJobInfo] = PriorityQueue(less, total=True)
    tasks: dict[str, PriorityQueue[TaskInfo]] = {}
    for uid, sub in sorted(job.sub_jobs.items()):
        pq: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn, total=True)
        for t in sub.task_status_index.get(TaskStatus.Pending, {}).values():
            if t.best_effort or (skip_gated and t.sch_gated):
                continue
            pq.push(t)
        if not pq.empty():
            queue.push(sub)
            tasks[uid] = pq
    return JobWorksheet(queue, tasks)
