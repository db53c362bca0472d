"""preempt: starving jobs evict lower-priority tasks inside their own queue.

Two modes, as upstream: *normal* (walk nodes best-scored first, evict victims in victim order
until the preemptor fits) and, with ``enableTopologyAwarePreemption``, a dry run per candidate
node (evict until it fits, then reprieve victims in reverse order while it still fits) that
picks the node whose victims have the lowest highest Pod priority, then the lowest priority sum,
the fewest victims and the latest start time.

Mirrors: volcano pkg/scheduler/actions/preempt/preempt.go.
Deviates: the topology-aware dry run evicts in the session (and discards) instead of on cloned
nodes through the simulate callbacks, so predicates see the evictions as in normal mode; the
candidate scan starts at node 0 instead of a random offset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pumice.scheduler.volcano.actions._order import pending_tasks
from pumice.scheduler.volcano.actions._victims import validate_victims, victims_queue
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Dimension
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import PREEMPTABLE_STATUSES
from pumice.scheduler.volcano.framework.arguments import Arguments, Configured, arg
from pumice.scheduler.volcano.framework.predicate_helper import predicate_nodes
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.statement import Statement
from pumice.scheduler.volcano.framework.util import PriorityQueue

ACTION_NAME = "preempt"


class PreemptArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    topology_aware: bool = arg("enableTopologyAwarePreemption", False)
    min_candidate_pct: int = arg("minCandidateNodesPercentage", 10)
    min_candidate_abs: int = arg("minCandidateNodesAbsolute", 1)
    max_candidate_abs: int = arg("maxCandidateNodesAbsolute", 100)
    workers: int = arg("topologyAwarePreemptWorkerNum", 16)
    predicate_error_cache: bool = arg("predicateErrorCacheEnable", True)


def _may_preempt(preemptor: TaskInfo, victim: TaskInfo) -> bool:
    """The victim checks both preempt passes share: ``victim`` is in a preemptable status, marked
    preemptable, and BestEffort when ``preemptor`` is."""
    if victim.status not in PREEMPTABLE_STATUSES:
        return False
    if preemptor.best_effort and not victim.best_effort:
        return False
    return victim.preemptable


class PreemptAction(Configured[PreemptArgs]):
    name = ACTION_NAME
    arguments = PreemptArgs

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
            preemptor_tasks[job.uid] = pending_tasks(ssn, job)
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
                        if not _may_preempt(task, t):
                            return False
                        tj = ssn.jobs.get(t.job)
                        return tj is not None and tj.queue == job.queue and t.job != task.job

                    self.preempt(ssn, stmt, task, between_jobs)
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()
            for job in under_request.get(q.uid, []):
                tq = pending_tasks(ssn, job)
                while not tq.empty():
                    task = tq.pop()
                    stmt = Statement(ssn)

                    def within_job(t: TaskInfo, task: TaskInfo = task) -> bool:
                        return _may_preempt(task, t) and t.job == task.job

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
        if self.args.topology_aware:
            return self._topology_aware(ssn, stmt, preemptor, filt, nodes, queue)
        scores = ssn.prioritize(preemptor, nodes)
        shard = ssn.nodes_in_shard
        # soft sharding: this scheduler's shard's Nodes first, each group by score
        order = sorted(range(len(nodes)), key=lambda i: (shard is not None and nodes[i].name not in shard, -scores[i], i))
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
                except Exception as e:
                    ssn.record_error("evict", v, "preempt", e)
                    continue
            if fits():
                if not node_stmt.try_pipeline(preemptor, node.name, evicted):
                    continue
                stmt.merge(node_stmt)
                return True
            node_stmt.discard()
        return False

    def _fits(self, ssn: Session, queue: QueueInfo, preemptor: TaskInfo, node: NodeInfo) -> bool:
        return (
            ssn.allocatable(queue, preemptor)
            and preemptor.resreq.less_equal(node.future_idle(), Dimension.ZERO)
            and ssn.predicate_for_allocate(preemptor, node) is None
        )

    def _select_victims_on_node(
        self, ssn: Session, preemptor: TaskInfo, queue: QueueInfo, node: NodeInfo, filt: Callable[[TaskInfo], bool]
    ) -> list[TaskInfo] | None:
        """The victims a dry run needs on ``node`` (None: the node cannot host the preemptor).

        Mirrors: preempt.go SelectVictimsOnNode.
        """
        preemptees = [
            ssn.jobs[t.job].tasks[t.uid]
            for t in node.tasks.values()
            if filt(t) and t.job in ssn.jobs and t.uid in ssn.jobs[t.job].tasks
        ]
        all_victims = ssn.preemptable(preemptor, preemptees)
        if not validate_victims(preemptor, node, all_victims):
            return None
        vq = victims_queue(ssn, all_victims, preemptor)
        dry = Statement(ssn)
        potential: list[TaskInfo] = []
        try:
            while not vq.empty():
                v = vq.pop()
                dry.evict(v, "preempt")
                potential.append(v)
                if self._fits(ssn, queue, preemptor, node):
                    break
            if not potential or not self._fits(ssn, queue, preemptor, node):
                return None
            victims: list[TaskInfo] = []
            for p in reversed(potential):
                dry.undo_evict(p)
                if not self._fits(ssn, queue, preemptor, node):
                    dry.evict(p, "preempt")
                    victims.append(p)
            return victims or None
        finally:
            dry.discard()

    def _topology_aware(
        self,
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        filt: Callable[[TaskInfo], bool],
        nodes: list[NodeInfo],
        queue: QueueInfo,
    ) -> bool:
        want = max(self.args.min_candidate_abs, min(self.args.max_candidate_abs, len(nodes) * self.args.min_candidate_pct // 100))
        want = min(want, len(nodes))
        found: list[tuple[NodeInfo, list[TaskInfo]]] = []
        for node in nodes:
            victims = self._select_victims_on_node(ssn, preemptor, queue, node, filt)
            if victims:
                found.append((node, victims))
                if len(found) >= want:
                    break
        if not found:
            return False
        node, victims = _pick_one_node(found)
        tmp = Statement(ssn)
        for v in victims:
            tmp.evict(v, "preempt")
        if not tmp.try_pipeline(preemptor, node.name, True):
            return False
        stmt.merge(tmp)
        return True


def _pod_priority(t: TaskInfo) -> int:
    return int((t.pod.get("spec") or {}).get("priority") or 0)


def _start_time(t: TaskInfo) -> str:
    return str((t.pod.get("status") or {}).get("startTime") or "")


def _pick_one_node(found: list[tuple[NodeInfo, list[TaskInfo]]]) -> tuple[NodeInfo, list[TaskInfo]]:
    """Lowest highest victim priority, lowest priority sum, fewest victims, latest earliest start.

    Mirrors: preempt.go pickOneNodeForPreemption.
    """
    scores: list[Callable[[list[TaskInfo]], Any]] = [
        lambda vs: -_pod_priority(vs[0]),
        lambda vs: -sum(_pod_priority(v) + 2**31 for v in vs),
        lambda vs: -len(vs),
        lambda vs: min((_start_time(v) for v in vs), default=""),
    ]
    cands = found
    for f in scores:
        best = max(f(vs) for _n, vs in cands)
        cands = [(n, vs) for n, vs in cands if f(vs) == best]
        if len(cands) == 1:
            break
    return cands[0]
