"""allocate: place Pending tasks of admitted jobs, gang by gang, queue by queue.

A job with a network topology (hard mode with a tier limit; soft mode arrives converted to hard
at the root's tier) takes the HyperNode path: the gradient plugin lists candidate HyperNodes by
tier, lowest first; within the first gradient where any candidate can hold the job (ready or
pipelined), the best-scoring candidate wins. Its dry-run placements are replayed into the
statement and the job's allocated HyperNode becomes the LCA of the previous one and the winner.

A job with ``subGroupPolicy`` sub-groups is placed sub-job by sub-job (upstream's SubJobInfo
path): for each candidate HyperNode of the job's gradient, its sub-jobs are taken in order (the
ones needed for ``minSubGroups`` first, then not-ready before ready, priority, match index) and
each is dry-run in every HyperNode of its own gradient under the job's HyperNode (its own
``networkTopology``: all of a sub-job's tasks inside one HyperNode of its allowed tier); the
sub-job's best-scoring HyperNode is kept, and the job's HyperNode with the highest summed
sub-job score wins and is replayed. Each sub-job must reach its own minimum (``subGroupSize``)
and the job its ``minMember`` and ``minSubGroups`` before anything is committed.

Mirrors: volcano pkg/scheduler/actions/allocate/allocate.go (allocateResources, allocateForJob,
allocateForSubJob, allocateResourcesForTasks, organizeJobWorksheet, getNewAllocatedHyperNode)
and recorder.go.
Deviates: a job without sub-group policies takes the one-level HyperNode search (it is its own
only sub-job, and the sub-job search inside the job's HyperNode adds nothing); its candidates of
one gradient are dry-run in descending HyperNode score and the first that holds the job is
taken -- the same winner as upstream's dry-run-all-then-pick-best, since the score is read from
the state before the dry runs. Equal scores go to the first in gradient (name) order (upstream:
map order). The gangpreempt/gangreclaim nomination fast path is not ported.
"""

from __future__ import annotations

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.actions._worksheet import (
    JobWorksheet,
    PlannedOp,
    organize_job_worksheet,
    replay,
    save_operations,
)
from pumice.scheduler.volcano.api.hyper_node_info import CLUSTER_TOP_HYPERNODE
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Dimension
from pumice.scheduler.volcano.api.sub_job_info import SubJobInfo
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
from pumice.scheduler.volcano.framework.statement import Statement
from pumice.scheduler.volcano.framework.util import PriorityQueue

ACTION_NAME = "allocate"


class AllocateArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    predicate_error_cache: bool = arg("predicateErrorCacheEnable", True)


class AllocateAction(Configured[AllocateArgs]):
    name = ACTION_NAME
    arguments = AllocateArgs

    def execute(self, ssn: Session) -> None:
        self._shapes: dict[str, tuple[object, ...]] = {}
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn, total=True)
        seen: set[str] = set()
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        worksheets: dict[str, PriorityQueue[TaskInfo]] = {}
        job_worksheets: dict[str, JobWorksheet] = {}
        enqueue_on = "enqueue" in ssn.enabled_actions
        # a job left out of active_jobs is past Pending, has no Pending task and no sub-group
        # policy: the loop below would only ask job_valid (no side effect) and skip it
        for job in ssn.active_jobs():
            if job.is_pending():
                if enqueue_on:
                    continue
                job.set_phase(PodGroupPhase.INQUEUE)
            if ssn.job_valid(job) is not None:
                continue
            q = ssn.queues.get(job.queue)
            if q is None:
                continue
            if job.contains_sub_job_policy():
                jws = organize_job_worksheet(ssn, job)
                if jws.empty():
                    continue
                job_worksheets[job.uid] = jws
            else:
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
            if job.uid in job_worksheets:
                jws = job_worksheets[job.uid]
                got = self.allocate_for_job(ssn, job, q, jws)
                if got is not None and ssn.job_ready(job):
                    job_stmt, best, decisions = got
                    job_stmt.commit()
                    job.allocated_hypernode = ssn.hypernodes.lca(job.allocated_hypernode, best)
                    for uid, hn in decisions.items():
                        sub = job.sub_jobs.get(uid)
                        if sub is not None:
                            sub.allocated_hypernode = ssn.hypernodes.lca(sub.allocated_hypernode, hn)
                    if not jws.empty():
                        pq.push(job)
                queues.push(q)
                continue
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

    def allocate_for_job(
        self, ssn: Session, job: JobInfo, q: QueueInfo, jws: JobWorksheet
    ) -> tuple[Statement, str, dict[str, str]] | None:
        """Place a job with sub-group policies: dry-run its sub-jobs in each HyperNode of the
        job's gradient, keep the HyperNode with the highest summed sub-job score, replay it.

        Returns ``(statement, the job's HyperNode, sub-job uid -> its new allocated HyperNode)``,
        or None when no HyperNode of any gradient takes any sub-job with the job ready or
        pipelined. ``jws`` keeps what is left of the winner's worksheet.
        Mirrors: allocate.go allocateForJob.
        """
        hns = ssn.hypernodes
        saved = {uid: sub.allocated_hypernode for uid, sub in job.sub_jobs.items()}
        fresh = not job.allocated_hypernode and not any(saved.values()) and job.ready_task_num() + job.waiting_task_num() == 0
        job.waiting_tier = 0
        for gradient in ssn.hyper_node_gradient_for_job(job, CLUSTER_TOP_HYPERNODE):
            if not gradient:
                continue
            if gradient[0] in hns.infos:
                job.waiting_tier = hns.infos[gradient[0]].tier
            solutions: dict[str, tuple[float, list[PlannedOp], JobWorksheet, dict[str, str]]] = {}
            tried: set[tuple[object, ...]] = set()
            for hn in gradient:
                if fresh and self._same_as_tried(ssn, hn, tried):
                    continue
                job.reset_fit_err()
                copy = jws.clone()
                stmts: list[Statement] = []
                total = 0.0
                decisions: dict[str, str] = {}
                while not copy.sub_jobs.empty():
                    sub = copy.sub_jobs.pop()
                    sws = copy.tasks[sub.uid]
                    stmt, score = self.allocate_for_sub_job(ssn, job, q, sub, sws, hn)
                    if stmt is not None and stmt.operations:
                        stmts.append(stmt)
                        total += score
                        decisions[sub.uid] = sub.allocated_hypernode
                        if not sws.empty():
                            copy.sub_jobs.push(sub)
                        if ssn.job_ready(job):
                            break
                for uid, allocated in saved.items():
                    if uid in job.sub_jobs:
                        job.sub_jobs[uid].allocated_hypernode = allocated
                plan = save_operations(*stmts)
                if plan and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                    solutions[hn] = (total, plan, copy, decisions)
                for st in reversed(stmts):
                    st.discard()
            if not solutions:
                continue
            best = max(gradient, key=lambda h: solutions[h][0] if h in solutions else float("-inf"))
            _, plan, rest, decisions = solutions[best]
            jws.sub_jobs, jws.tasks = rest.sub_jobs, rest.tasks
            return replay(ssn, plan), best, decisions
        return None

    def allocate_for_sub_job(
        self, ssn: Session, job: JobInfo, q: QueueInfo, sub: SubJobInfo, tasks: PriorityQueue[TaskInfo], hn_for_job: str
    ) -> tuple[Statement | None, float]:
        """Dry-run ``sub`` in each HyperNode of its gradient under ``hn_for_job``; replay the
        best-scoring one, move the sub-job's allocated HyperNode to its LCA with the winner and
        leave ``tasks`` as the winner left them. ``(None, 0)`` when no HyperNode takes it.

        Mirrors: allocate.go allocateForSubJob.
        """
        if tasks.empty():
            return None, 0.0
        fresh = not sub.allocated_hypernode and sub.ready_task_num() + sub.waiting_task_num() == 0
        for gradient in ssn.hyper_node_gradient_for_sub_job(sub, hn_for_job):
            solutions: dict[str, tuple[list[PlannedOp], PriorityQueue[TaskInfo]]] = {}
            tried: set[tuple[object, ...]] = set()
            for hn in gradient:
                if fresh and self._same_as_tried(ssn, hn, tried):
                    continue
                job.reset_sub_job_fit_err(sub.uid)
                copy = tasks.clone()
                stmt = self.allocate_for_tasks(ssn, job, q, copy, hypernode=hn, sub=sub)
                if stmt is not None and stmt.operations:
                    solutions[hn] = (save_operations(stmt), copy)
                    stmt.discard()
            if not solutions:
                continue
            cands = [h for h in gradient if h in solutions]
            scores = ssn.hyper_node_order(sub, cands)
            best = max(cands, key=lambda h: scores[h])
            plan, rest = solutions[best]
            sub.allocated_hypernode = ssn.hypernodes.lca(sub.allocated_hypernode, best)
            tasks._heap, tasks._seq = rest._heap, rest._seq
            return replay(ssn, plan), scores[best]
        return None, 0.0

    def _same_as_tried(self, ssn: Session, hn: str, tried: set[tuple[object, ...]]) -> bool:
        """Whether ``hn`` is an empty HyperNode exactly like one already dry-run for this job in
        this gradient (same tier, and Node by Node the same allocatable, labels, taints,
        schedulability and images, none running anything); records it otherwise.

        For a job (sub-job) with nothing placed and no allocated HyperNode, such a twin gives
        the same dry run and the same score, so it can neither win the tie (the first in
        gradient order does) nor succeed where its twin failed; skipping it keeps the winner and
        saves upstream's dry run per eligible HyperNode, which dominates large clusters.
        """
        nodes = ssn.hypernode_nodes(hn) if hn != CLUSTER_TOP_HYPERNODE else ssn.node_list
        if any(n.tasks for n in nodes):
            return False
        info = ssn.hypernodes.infos.get(hn)
        key = (info.tier if info is not None else -1, *(self._node_shape(n) for n in nodes))
        if key in tried:
            return True
        tried.add(key)
        return False

    def _node_shape(self, node: NodeInfo) -> tuple[object, ...]:
        shapes = self._shapes
        got = shapes.get(node.name)
        if got is None:
            st = node.node.get("status") or {}
            spec = node.node.get("spec") or {}
            got = (
                tuple(sorted(node.labels.items())),
                repr(node.taints),
                bool(spec.get("unschedulable")),
                repr(node.allocatable),
                repr([sorted(i.get("names") or []) for i in st.get("images") or []]),
            )
            shapes[node.name] = got
        return got

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
                plan = save_operations(stmt)
                stmt.discard()
                return replay(ssn, plan), hn, ws
        return None, "", None

    def allocate_for_tasks(
        self,
        ssn: Session,
        job: JobInfo,
        q: QueueInfo,
        tasks: PriorityQueue[TaskInfo],
        *,
        hypernode: str = "",
        sub: SubJobInfo | None = None,
    ) -> Statement | None:
        """Place ``job``'s tasks (or sub-job ``sub``'s: its readiness, fit-error cache and
        allocated HyperNode) on all nodes, or only ``hypernode``'s; the statement when the job
        (sub-job) is ready or pipelined, else None (everything undone)."""
        stmt = Statement(ssn)
        subset = ssn.hypernode_nodes(hypernode) if hypernode and hypernode != CLUSTER_TOP_HYPERNODE else None
        if sub is not None:
            if subset is not None and not subset:
                return None
            topo = sub.with_network_topology()
            allocated_hn = sub.allocated_hypernode
            sub_uid: str | None = sub.uid

            def ready() -> bool:
                return ssn.sub_job_ready(job, sub)

            def pipelined() -> bool:
                return ssn.sub_job_pipelined(job, sub)
        else:
            topo = job.network_topology is not None
            allocated_hn = job.allocated_hypernode
            sub_uid = None

            def ready() -> bool:
                return ssn.job_ready(job)

            def pipelined() -> bool:
                return ssn.job_pipelined(job)

        while not tasks.empty():
            task = tasks.pop()
            if not _worth_trying(ssn, job, q, task, sub_uid):
                continue
            err = ssn.pre_predicate_fn(task)
            if err is not None:
                fe = FitErrors()
                fe.set_nodes_error([n.name for n in ssn.node_list], err)
                if _record_unfit(job, task, fe, sub_uid):
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
                    if _record_unfit(job, task, fit_errors, sub_uid):
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
            if ready():
                break
        if ready() or pipelined():
            return stmt
        stmt.discard()
        return None


def _worth_trying(ssn: Session, job: JobInfo, q: QueueInfo, task: TaskInfo, sub_uid: str | None = None) -> bool:
    """False for a task the queue cannot take now, a scheduling-gated task, or one whose role
    already failed predicates this session (recorded as its fit error)."""
    if not ssn.allocatable(q, task):
        return False
    if task.sch_gated:
        return False
    if job.task_has_fit_errors(task, sub_uid):
        fe = FitErrors()
        fe.set_error(f"Task {task.name} with role spec {task.role} has already predicated failed, skip")
        job.record_fit_error(task.uid, fe)
        return False
    return True


def _record_unfit(job: JobInfo, task: TaskInfo, fit_errors: FitErrors, sub_uid: str | None = None) -> bool:
    """Record why ``task`` fits nowhere; True to go on with the job's (sub-job ``sub_uid``'s)
    next task, False to stop."""
    job.record_fit_error(task.uid, fit_errors)
    return job.need_continue_allocating(sub_uid)


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

