"""allocate: place Pending tasks of admitted jobs, gang by gang, queue by queue.

Mirrors: volcano pkg/scheduler/actions/allocate/allocate.go (without HyperNode paths).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Dimension
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import FitErrors, PodGroupPhase, TaskStatus
from pumice.scheduler.volcano.framework.arguments import Arguments, arg, decode
from pumice.scheduler.volcano.framework.predicate_helper import (
    best_node,
    best_node_rows,
    predicate_nodes,
    predicate_rows,
)
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.statement import Statement
from pumice.scheduler.volcano.framework.util import PriorityQueue

ACTION_NAME = "allocate"


class AllocateArgs(Arguments, frozen=True):
    predicate_error_cache: bool = arg("predicateErrorCacheEnable", True)


class AllocateAction:
    name = ACTION_NAME

    def __init__(self, args: AllocateArgs) -> None:
        self.args = args

    @classmethod
    def parse_arguments(cls, arguments: Mapping[str, Any]) -> AllocateArgs:
        return decode(AllocateArgs, arguments)

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn, total=True)
        seen: set[str] = set()
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        worksheets: dict[str, PriorityQueue[TaskInfo]] = {}
        enqueue_on = "enqueue" in ssn.enabled_actions
        for job in ssn.jobs.values():
            if job.is_pending():
                if enqueue_on:
                    continue
                job.set_phase(PodGroupPhase.Inqueue)
            if ssn.job_valid(job) is not None:
                continue
            q = ssn.queues.get(job.queue)
            if q is None:
                continue
            tasks: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn, total=True)
            for t in job.tasks_in(TaskStatus.Pending):
                if t.best_effort:
                    continue
                tasks.push(t)
            if tasks.empty():
                continue
            worksheets[job.uid] = tasks
            jobs.setdefault(q.uid, PriorityQueue(ssn.job_order_fn, total=True)).push(job)
            if q.uid not in seen:
                seen.add(q.uid)
                queues.push(q)
        while not queues.empty():
            q = queues.pop()
            if ssn.overused(q):
                continue
            pq = jobs.get(q.uid)
            if pq is None or pq.empty():
                continue
            job = pq.pop()
            ws = worksheets[job.uid]
            stmt = self.allocate_for_tasks(ssn, job, q, ws)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                if not ws.empty():
                    pq.push(job)
            queues.push(q)

    def allocate_for_tasks(self, ssn: Session, job: JobInfo, q: QueueInfo, tasks: PriorityQueue[TaskInfo]) -> Statement | None:
        stmt = Statement(ssn)
        while not tasks.empty():
            task = tasks.pop()
            if not ssn.allocatable(q, task):
                continue
            if task.sch_gated:
                continue
            if job.task_has_fit_errors(task):
                fe = FitErrors()
                fe.set_error(f"Task {task.name} with role spec {task.role} has already predicated failed, skip")
                job.nodes_fit_errors[task.uid] = fe
                continue
            err = ssn.pre_predicate_fn(task)
            if err is not None:
                fe = FitErrors()
                fe.set_error(err)
                job.nodes_fit_errors[task.uid] = fe
                if job.need_continue_allocating():
                    continue
                break
            nodes: list[NodeInfo] = []
            fit_errors = FitErrors()
            nominated = task.nominated_node_name
            if nominated and nominated in ssn.nodes and task.resreq.less_equal(ssn.nodes[nominated].future_idle(), Dimension.ZERO):
                nodes, fit_errors = predicate_nodes(ssn, task, [ssn.nodes[nominated]], "allocate", sample=False)
            node: NodeInfo | None = None
            if nodes:
                node = best_node(ssn, task, nodes)
            else:
                feasible = 0
                vec = predicate_rows(ssn, task, "allocate")
                if vec is not None:
                    rows, fit_errors = vec
                    feasible = len(rows)
                    if feasible:
                        node = best_node_rows(ssn, task, rows)
                else:
                    nodes, fit_errors = predicate_nodes(ssn, task, None, "allocate")
                    feasible = len(nodes)
                    if feasible:
                        node = best_node(ssn, task, nodes)
                if not feasible:
                    job.nodes_fit_errors[task.uid] = fit_errors
                    if job.need_continue_allocating():
                        continue
                    break
            if node is None:
                continue
            try:
                if task.resreq.less_equal(node.idle, Dimension.ZERO):
                    stmt.allocate(task, node)
                elif task.resreq.less_equal(node.future_idle(), Dimension.ZERO):
                    stmt.pipeline(task, node.name, False)
            except Exception as e:
                ssn.record_error("allocate", task, node.name, e)
                continue
            if ssn.job_ready(job):
                break
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            return stmt
        stmt.discard()
        return None
