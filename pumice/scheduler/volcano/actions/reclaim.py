"""reclaim: starving jobs take resources back from other (reclaimable) queues.

Mirrors: volcano pkg/scheduler/actions/reclaim/reclaim.go.

Deviates: on a node, victims are evicted until the task fits the node *and* every ReclaimFits
function (pumice's own extension point, e.g. the cohort plugin's quota) says the reclaimer's
queue has room; with no such function registered this is upstream's loop.
"""

from __future__ import annotations

from pumice.scheduler.volcano.actions._order import jobs_by_queue, pending_tasks, running_valid_jobs
from pumice.scheduler.volcano.actions._victims import validate_victims, victims_queue
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Dimension
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.framework.arguments import Configured, NoArguments
from pumice.scheduler.volcano.framework.predicate_helper import predicate_nodes
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.statement import Statement
from pumice.scheduler.volcano.framework.util import PriorityQueue

ACTION_NAME = "reclaim"


class ReclaimAction(Configured[NoArguments]):
    name = ACTION_NAME

    def execute(self, ssn: Session) -> None:
        preemptor_tasks: dict[str, PriorityQueue[TaskInfo]] = {}

        def starving(job: JobInfo) -> bool:
            if not ssn.job_starving(job):
                return False
            preemptor_tasks[job.uid] = pending_tasks(ssn, job)
            return True

        queues, preemptors = jobs_by_queue(ssn, running_valid_jobs(ssn), starving)
        while not queues.empty():
            q = queues.pop()
            if ssn.overused(q):
                continue
            jobs = preemptors.get(q.uid)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            tq = preemptor_tasks[job.uid]
            stmt = Statement(ssn)
            while ssn.job_starving(job) and not tq.empty():
                task = tq.pop()
                if (task.pod.get("spec") or {}).get("preemptionPolicy") == "Never":
                    continue
                if not ssn.preemptive(q, [task]):
                    continue
                if ssn.pre_predicate_fn(task) is not None:
                    continue
                self.reclaim_for_task(ssn, stmt, task, job, q)
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
            if not jobs.empty():
                queues.push(q)

    def reclaim_for_task(self, ssn: Session, stmt: Statement, task: TaskInfo, job: JobInfo, queue: QueueInfo) -> bool:
        nodes, _ = predicate_nodes(ssn, task, None, "preempt", sample=False)
        # soft sharding: this scheduler's shard's Nodes first (upstream GetPredicatedNodeByShard)
        for node in (n for group in ssn.by_shard(nodes) for n in group):
            reclaimees = []
            for t in node.tasks.values():
                if t.status is not TaskStatus.Running or not t.preemptable:
                    continue
                tj = ssn.jobs.get(t.job)
                if tj is None or tj.queue == job.queue:
                    continue
                tq = ssn.queues.get(tj.queue)
                if tq is None or not tq.reclaimable:
                    continue
                reclaimees.append(tj.tasks.get(t.uid, t))
            if not reclaimees:
                continue
            victims = ssn.reclaimable(task, reclaimees)
            if not validate_victims(task, node, victims):
                continue
            vq = victims_queue(ssn, victims, task)
            available = node.future_idle()
            node_stmt = Statement(ssn)
            evicted = False
            while not task.resreq.less_equal(available, Dimension.ZERO) or not ssn.reclaim_fits(queue, task):
                if vq.empty():
                    break
                v = vq.pop()
                try:
                    node_stmt.evict(v, "reclaim")
                except Exception as e:
                    ssn.record_error("evict", v, "reclaim", e)
                    continue
                evicted = True
                available = available + v.resreq
            if not task.resreq.less_equal(available, Dimension.ZERO) or not ssn.reclaim_fits(queue, task):
                node_stmt.discard()
                continue
            if not node_stmt.try_pipeline(task, node.name, evicted):
                continue
            stmt.merge(node_stmt)
            return True
        return False
