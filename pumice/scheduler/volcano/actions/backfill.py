"""backfill: place BestEffort (empty-request) tasks.

Mirrors: volcano pkg/scheduler/actions/backfill/backfill.go.
"""

from __future__ import annotations

from pumice.scheduler.volcano.actions._order import jobs_by_queue
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import FitErrors, TaskStatus
from pumice.scheduler.volcano.framework.arguments import Configured, NoArguments
from pumice.scheduler.volcano.framework.predicate_helper import predicate_nodes
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.util import PriorityQueue

ACTION_NAME = "backfill"


class BackfillAction(Configured[NoArguments]):
    name = ACTION_NAME

    def pick_up_tasks(self, ssn: Session) -> list[TaskInfo]:
        # a job without BestEffort tasks has nothing to pick (so neither has one left out of
        # active_jobs: no Pending or Pipelined task); skipping it changes no order
        candidates = [job for job in ssn.active_jobs() if _has_best_effort(job)]
        queues, jobs = jobs_by_queue(
            ssn, (job for job in candidates if not job.is_pending() and ssn.job_valid(job) is None), lambda _: True)
        out: list[TaskInfo] = []
        while not queues.empty():
            q = queues.pop()
            pq = jobs.get(q.uid)
            while pq is not None and not pq.empty():
                job = pq.pop()
                tq: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn, total=True)
                for t in job.tasks_in(TaskStatus.Pending):
                    if t.best_effort and not t.sch_gated:
                        tq.push(t)
                for t in job.tasks_in(TaskStatus.Pipelined):
                    if t.best_effort:
                        ssn.unpipeline(t)
                        tq.push(t)
                while not tq.empty():
                    out.append(tq.pop())
        return out

    def execute(self, ssn: Session) -> None:
        for task in self.pick_up_tasks(ssn):
            job = ssn.jobs[task.job]
            err = ssn.pre_predicate_fn(task)
            if err is not None:
                fe = FitErrors()
                fe.set_nodes_error([n.name for n in ssn.node_list], err)
                job.record_fit_error(task.uid, fe)
                continue
            nodes, fit_errors = predicate_nodes(ssn, task, None, "backfill")
            if not nodes:
                job.record_fit_error(task.uid, fit_errors)
                continue
            # soft sharding: this scheduler's shard first (upstream GetPredicatedNodeByShard)
            node = nodes[0] if len(nodes) == 1 else next(
                ssn.best_node(task, group) for group in ssn.by_shard(nodes) if group)
            try:
                ssn.allocate(task, node)
            except Exception as e:
                ssn.record_error("allocate", task, node.name, e)
                continue


def _has_best_effort(job: JobInfo) -> bool:
    if job.pending_best_effort:
        return True
    return any(t.best_effort for t in job.task_status_index.get(TaskStatus.Pipelined, {}).values())
