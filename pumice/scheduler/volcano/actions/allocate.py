"""allocate: place Pending tasks of admitted jobs, gang by gang, queue by queue.

A job with a network topology (hard mode with a tier limit; soft mode arrives converted to hard
at the root's tier) takes the HyperNode path: the gradient plugin lists candidate HyperNodes by
tier, lowest first; within the first gradient where any candidate can hold the job (ready or
pipelined), the best-scoring candidate wins. Its dry-run placements are replayed into the
statement and the job's allocated HyperNode becomes the LCA of the previous one and the winner.

Mirrors: volcano pkg/scheduler/actions/allocate/allocate.go (allocateResources, allocateForJob,
allocateForSubJob, allocateResourcesForTasks, getNewAllocatedHyperNode).
Deviates: a job is one sub-job (``subGroupPolicy`` sub-groups are not scheduled separately);
candidates of one gradient are dry-run in descending HyperNode score and the first that holds
the job is taken -- the same winner as upstream's dry-run-all-then-pick-best, since the score is
read from the state before the dry runs; equal scores go to the first in gradient (name) order
(upstream: map order).
"""

from __future__ import annotations

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.hyper_node_info import CLUSTER_TOP_HYPERNODE
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Dimension
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import FitErrors, TaskStatus
from pumice.scheduler.volcano.framework.arguments import Arguments, Configured, arg
from pumice.scheduler.volcano.framework.predicate_helper import (
    best_node,
    best_node_rows,
    predicate_nodes,
    predicate_rows,
)
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.statement import Op, Statement
from pumice.scheduler.volcano.framework.util import PriorityQueue

ACTION_NAME = "allocate"


class AllocateArgs(Arguments, frozen=True):
    predicate_error_cache: bool = arg("predicateErrorCacheEnable", True)


class AllocateAction(Configured[AllocateArgs]):
    name = ACTION_NAME
    arguments = AllocateArgs

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
                job.set_phase(PodGroupPhase.INQUEUE)
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
            if job.is_hard_topology_mode()[0]:
                stmt, best, rest = self.allocate_for_topology_job(ssn, job, q, ws)
                if stmt is not None and ssn.job_ready(job):
                    stmt.commit()
                    job.allocated_hypernode = ssn.hypernodes.lca(job.allocated_hypernode, best)
                    if rest is not None and not rest.empty():
                        worksheets[job.uid] = rest
                        pq.push(job)
            else:
                stmt = self.allocate_for_tasks(ssn, job, q, ws)
                if stmt is not None and ssn.job_ready(job):
                    stmt.commit()
                    if not ws.empty():
                        pq.push(job)
            queues.push(q)

    def allocate_for_topology_job(
        self, ssn: Session, job: JobInfo, q: QueueInfo, tasks: PriorityQueue[TaskInfo]
    ) -> tuple[Statement | None, str, PriorityQueue[TaskInfo] | None]:
        """Dry-run ``job`` in its gradient's HyperNodes; replay the winner.

        Returns ``(statement, winning HyperNode, remaining worksheet)``; ``(None, "", None)``
        when no HyperNode of any gradient can hold the job.
        """
        hns = ssn.hypernodes
        job.waiting_tier = 0
        for gradient in ssn.hyper_node_gradient_for_job(job, CLUSTER_TOP_HYPERNODE):
            if not gradient:
                continue
            job.waiting_tier = hns.infos[gradient[0]].tier
            scores = ssn.hyper_node_order(job, gradient)
            order = sorted(range(len(gradient)), key=lambda i: (-scores[gradient[i]], i))
            for i in order:
                hn = gradient[i]
                job.reset_fit_err()
                ws = tasks.clone()
                stmt = self.allocate_for_tasks(ssn, job, q, ws, hypernode=hn)
                if stmt is None or not stmt.operations:
                    continue
                plan = [(op.name, op.task, op.task.node_name, op.task.eviction_occurred) for op in stmt.operations]
                stmt.discard()
                final = Statement(ssn)
                for name, task, node_name, evicted in plan:
                    if name is Op.Allocate:
                        final.allocate(task, ssn.nodes[node_name])
                    else:
                        final.pipeline(task, node_name, evicted)
                return final, hn, ws
        return None, "", None

    def allocate_for_tasks(
        self, ssn: Session, job: JobInfo, q: QueueInfo, tasks: PriorityQueue[TaskInfo], *, hypernode: str = ""
    ) -> Statement | None:
        """Place ``job``'s tasks (all nodes, or only ``hypernode``'s); the statement when the job
        is ready or pipelined, else None (everything undone)."""
        stmt = Statement(ssn)
        subset = ssn.hypernode_nodes(hypernode) if hypernode and hypernode != CLUSTER_TOP_HYPERNODE else None
        topo = job.network_topology is not None
        allocated_hn = job.allocated_hypernode
        while not tasks.empty():
            task = tasks.pop()
            if not _worth_trying(ssn, job, q, task):
                continue
            err = ssn.pre_predicate_fn(task)
            if err is not None:
                fe = FitErrors()
                fe.set_error(err)
                if _record_unfit(job, task, fe):
                    continue
                break
            nodes = _nominated_nodes(ssn, task, subset)
            if topo:
                task.job_allocated_hypernode = allocated_hn
            node: NodeInfo | None = None
            if nodes:
                node = best_node(ssn, task, nodes)
            else:
                node, fit_errors = _search_nodes(ssn, task, subset)
                if fit_errors is not None:
                    if _record_unfit(job, task, fit_errors):
                        continue
                    break
            if node is None:
                continue
            if not _allocate_or_pipeline(ssn, stmt, task, node):
                continue
            if topo:
                leaf = ssn.hypernodes.leaf_of(node.name)
                if leaf:
                    allocated_hn = ssn.hypernodes.lca(leaf, allocated_hn)
            if ssn.job_ready(job):
                break
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            return stmt
        stmt.discard()
        return None


def _worth_trying(ssn: Session, job: JobInfo, q: QueueInfo, task: TaskInfo) -> bool:
    """False for a task the queue cannot take now, a scheduling-gated task, or one whose role
    already failed predicates this session (recorded as its fit error)."""
    if not ssn.allocatable(q, task):
        return False
    if task.sch_gated:
        return False
    if job.task_has_fit_errors(task):
        fe = FitErrors()
        fe.set_error(f"Task {task.name} with role spec {task.role} has already predicated failed, skip")
        job.nodes_fit_errors[task.uid] = fe
        return False
    return True


def _record_unfit(job: JobInfo, task: TaskInfo, fit_errors: FitErrors) -> bool:
    """Record why ``task`` fits nowhere; True to go on with the job's next task, False to stop."""
    job.nodes_fit_errors[task.uid] = fit_errors
    return job.need_continue_allocating()


def _nominated_nodes(ssn: Session, task: TaskInfo, subset: list[NodeInfo] | None) -> list[NodeInfo]:
    """The task's nominated node when it is in ``subset`` (if any), its future idle holds the
    task and it passes the predicates; else []."""
    nominated = task.nominated_node_name
    if subset is not None and nominated and ssn.nodes.get(nominated) not in subset:
        nominated = ""
    if nominated and nominated in ssn.nodes and task.resreq.less_equal(ssn.nodes[nominated].future_idle(), Dimension.ZERO):
        nodes, _ = predicate_nodes(ssn, task, [ssn.nodes[nominated]], "allocate", sample=False)
        return nodes
    return []


def _search_nodes(ssn: Session, task: TaskInfo, subset: list[NodeInfo] | None) -> tuple[NodeInfo | None, FitErrors | None]:
    """The best feasible node in ``subset`` (or the cluster, vectorised when possible):
    ``(node, None)``; ``(None, fit_errors)`` when no node is feasible; ``(None, None)`` when
    nodes are feasible but none was chosen."""
    if subset is not None:
        nodes, fit_errors = predicate_nodes(ssn, task, subset, "allocate")
        if not nodes:
            return None, fit_errors
        return best_node(ssn, task, nodes), None
    vec = predicate_rows(ssn, task, "allocate")
    if vec is not None:
        rows, fit_errors = vec
        if len(rows) == 0:
            return None, fit_errors
        return best_node_rows(ssn, task, rows), None
    nodes, fit_errors = predicate_nodes(ssn, task, None, "allocate")
    if not nodes:
        return None, fit_errors
    return best_node(ssn, task, nodes), None


def _allocate_or_pipeline(ssn: Session, stmt: Statement, task: TaskInfo, node: NodeInfo) -> bool:
    """Allocate ``task`` on ``node`` when it fits the idle resources, pipeline it when it fits
    the future idle; False (error recorded) when the statement refused."""
    try:
        if task.resreq.less_equal(node.idle, Dimension.ZERO):
            stmt.allocate(task, node)
        elif task.resreq.less_equal(node.future_idle(), Dimension.ZERO):
            stmt.pipeline(task, node.name, False)
    except Exception as e:
        ssn.record_error("allocate", task, node.name, e)
        return False
    return True
