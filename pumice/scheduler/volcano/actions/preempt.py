"""preempt: starving jobs evict lower-priority tasks inside their own queue.

Mirrors: volcano pkg/scheduler/actions/preempt/preempt.go (normal mode; the topology-aware
dry-run mode is accepted as an argument but runs the normal mode).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pumice.scheduler.volcano.actions._victims import validate_victims, victims_queue
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Dimension
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import PREEMPTABLE_STATUSES, TaskStatus
from pumice.scheduler.volcano.framework.arguments import arg, decode
from pumice.scheduler.volcano.framework.predicate_helper import predicate_nodes
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.statement import Statement
from pumice.scheduler.volcano.framework.util import PriorityQueue

ACTION_NAME = "preempt"


@dataclass(frozen=True)
class PreemptArgs:
    topology_aware: bool = arg("enableTopologyAwarePreemption", False)
    min_candidate_pct: int = arg("minCandidateNodesPercentage", 10)
    min_candidate_abs: int = arg("minCandidateNodesAbsolute", 1)
    max_candidate_abs: int = arg("maxCandidateNodesAbsolute", 100)
    workers: int = arg("topologyAwarePreemptWorkerNum", 16)
    predicate_error_cache: bool = arg("predicateErrorCacheEnable", True)


class Action:
    name = ACTION_NAME

    def __init__(self, args: PreemptArgs) -> None:
        self.args = args

    @classmethod
    def parse_arguments(cls, arguments: Mapping[str, Any]) -> PreemptArgs:
        return decode(PreemptArgs, arguments)

    def execute(self, ssn: Session) -> None:
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        preemptor_tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        under_request: dict[str, list[JobInfo]] = {}
        queues: dict[str, QueueInfo] = {}
        for job in ssn.jobs.values():
            if job.is_pending() or ssn.job_valid(job) is not None:
                continue
            q = ssn.queues.get(job.queue)
            if q is None:
                continue
            if not ssn.job_starving(job):
                continue
            queues.setdefault(q.uid, q)
            preemptors.setdefault(q.uid, PriorityQueue(ssn.job_order_fn, total=True)).push(job)
            under_request.setdefault(q.uid, []).append(job)
            tq: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn, total=True)
            for t in job.tasks_in(TaskStatus.Pending):
                if not t.sch_gated:
                    tq.push(t)
            preemptor_tasks[job.uid] = tq
        qpq: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn, queues.values(), total=True)
        while not qpq.empty():
            q = qpq.pop()
            pq = preemptors.get(q.uid)
            while pq is not None and not pq.empty():
                job = pq.pop()
                stmt = Statement(ssn)
                tq = preemptor_tasks[job.uid]
                while ssn.job_starving(job) and not tq.empty():
                    task = tq.pop()

                    def between_jobs(t: TaskInfo, job: JobInfo = job, q: QueueInfo = q, task: TaskInfo = task) -> bool:
                        if t.status not in PREEMPTABLE_STATUSES:
                            return False
                        if task.best_effort and not t.best_effort:
                            return False
                        if not t.preemptable:
                            return False
                        tj = ssn.jobs.get(t.job)
                        return tj is not None and tj.queue == job.queue and t.job != task.job

                    self.preempt(ssn, stmt, task, between_jobs)
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()
            for job in under_request.get(q.uid, []):
                tq = PriorityQueue(ssn.task_order_fn, total=True)
                for t in job.tasks_in(TaskStatus.Pending):
                    if not t.sch_gated:
                        tq.push(t)
                while not tq.empty():
                    task = tq.pop()
                    stmt = Statement(ssn)

                    def within_job(t: TaskInfo, task: TaskInfo = task) -> bool:
                        if t.status not in PREEMPTABLE_STATUSES:
                            return False
                        if task.best_effort and not t.best_effort:
                            return False
                        if not t.preemptable:
                            return False
                        return t.job == task.job

                    assigned = self.preempt(ssn, stmt, task, within_job)
                    if assigned:
                        stmt.commit()
                    else:
                        stmt.discard()
                        break

    def preempt(self, ssn: Session, stmt: Statement, preemptor: TaskInfo, filt: Callable[[TaskInfo], bool]) -> bool:
        if (preemptor.pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            return False
        if ssn.pre_predicate_fn(preemptor) is not None:
            return False
        job = ssn.jobs[preemptor.job]
        queue = ssn.queues[job.queue]
        skip = set()
        fe = job.nodes_fit_errors.get(preemptor.uid)
        if fe is not None:
            skip = fe.unresolvable_nodes()
        candidates = [n for n in ssn.node_list if n.name not in skip]
        nodes, _ = predicate_nodes(ssn, preemptor, candidates, "preempt", sample=False)
        if not nodes:
            return False
        scores = ssn.prioritize(preemptor, nodes)
        order = sorted(range(len(nodes)), key=lambda i: (-scores[i], i))
        for i in order:
            node = nodes[i]
            preemptees = [t for t in node.tasks.values() if filt(t)]
            # node.tasks holds clones: map back to the job's task objects
            preemptees = [ssn.jobs[t.job].tasks[t.uid] for t in preemptees if t.job in ssn.jobs and t.uid in ssn.jobs[t.job].tasks]
            victims = ssn.preemptable(preemptor, preemptees)
            if not validate_victims(preemptor, node, victims):
                continue
            vq = victims_queue(ssn, victims, preemptor)
            node_stmt = Statement(ssn)
            evicted = False

            def fits(node: NodeInfo = node) -> bool:
                return (
                    ssn.allocatable(queue, preemptor)
                    and preemptor.resreq.less_equal(node.future_idle(), Dimension.ZERO)
                    and ssn.predicate_for_allocate(preemptor, node) is None
                )

            while not fits():
                if vq.empty():
                    break
                v = vq.pop()
                try:
                    node_stmt.evict(v, "preempt")
                    evicted = True
                except Exception:
                    continue
            if fits():
                try:
                    node_stmt.pipeline(preemptor, node.name, evicted)
                except Exception:
                    node_stmt.discard()
                    continue
                stmt.merge(node_stmt)
                return True
            node_stmt.discard()
        return False
