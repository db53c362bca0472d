"""Gang-aware, topology-aware eviction shared by gangpreempt and gangreclaim.

A starving job looks for a HyperNode *domain* (its eviction gradient under the job's tier
limit, widest first, at most ``maxDomains``; the whole cluster for a job without a hard
topology) where the idle + releasing resources plus the resources of some victims hold its
Pending tasks. Victims come in *bundles* per victim job: the *safe* bundle is the tasks that
job can lose and stay gang-ready (minAvailable, minTaskMember, minSubGroups); the *whole*
bundle is the rest, costing the job its gang. Bundles are taken in order (safe before whole,
then the victim-job / victim-queue order, then the share of the need they cover per resource of
the job they break) until the resources add up; then the job's sub-jobs are dry-run into the
domain -- each inside one HyperNode of its own eviction gradient when the job has a hard
topology -- with the victims evicted, and the plan is kept only when the job becomes
pipelined.

Mirrors: volcano pkg/scheduler/actions/utils/bundle.go (CreateJobBundles, FlattenBundles,
ApplyAllowedTasks, SortBundlesForPreempt/ForReclaim, bundleROI), utils/util.go
(PickDomainsFromGradients, GetCandidateDomains, IsJobPreemptableForGangEviction,
SumIdleAndReleasing) and utils/simulate.go (BuildNominationPlanInDomain,
runSimulateTrialAtHyperNode, CollectPendingTasksForGangEviction).
Deviates: the sub-job nomination (``NominatedHyperNode``) that upstream keeps in its cache for
the next session's allocate is not kept (pumice rebuilds the snapshot every session); the
pipelined Pods' ``nominatedNodeName`` carries the placement instead. Bundles of equal rank keep
the session's victim-job order (upstream: a stable sort over Go map order).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pumice.api.volcano.constants import POD_PREEMPTABLE
from pumice.scheduler.volcano.actions._order import jobs_by_queue, running_valid_jobs
from pumice.scheduler.volcano.actions._worksheet import (
    PlannedOp,
    organize_job_worksheet,
    replay,
    save_operations,
)
from pumice.scheduler.volcano.api.hyper_node_info import CLUSTER_TOP_HYPERNODE
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Dimension, Resource, sum_resources
from pumice.scheduler.volcano.api.sub_job_info import SubJobInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import (
    ALLOCATED_STATUSES,
    PREEMPTABLE_STATUSES,
    EvictionContext,
    EvictionKind,
    TaskStatus,
)
from pumice.scheduler.volcano.framework.arguments import Arguments, arg
from pumice.scheduler.volcano.framework.predicate_helper import best_node, predicate_nodes
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.statement import Statement
from pumice.scheduler.volcano.framework.util import PriorityQueue

REASON_GANG_PREEMPT = "gangpreempt"
REASON_GANG_RECLAIM = "gangreclaim"
SAFE, WHOLE = 0, 1


@dataclass
class Bundle:
    """Victims of one job: ``kind`` SAFE (the job stays gang-ready) or WHOLE (it does not);
    ``local`` their request; ``total`` the whole job's request (0 for a safe bundle)."""

    kind: int
    job: JobInfo
    tasks: list[TaskInfo]
    local: Resource = field(default_factory=Resource)
    total: Resource = field(default_factory=Resource)


def create_job_bundles(job: JobInfo, local: list[TaskInfo]) -> list[Bundle]:
    """Split ``job``'s candidate tasks (lowest priority, then uid, first) into a safe and a
    whole bundle: a task is safe while taking it keeps the job above minAvailable, its role
    above minTaskMember and its sub-group policy above minSubGroups ready sub-jobs."""
    if not local:
        return []
    local = sorted(local, key=lambda t: (t.priority, t.uid))
    job_surplus = job.ready_task_num() - job.min_available
    if job_surplus < 0:
        return [Bundle(SAFE, job, local, sum_resources(t.resreq for t in local))]
    enforce_roles = job.min_available >= job.task_min_available_total
    role_surplus: dict[str, int] = {}
    if enforce_roles:
        ready: dict[str, int] = {}
        for status, bucket in job.task_status_index.items():
            for t in bucket.values():
                if status in ALLOCATED_STATUSES or status is TaskStatus.Succeeded or (status is TaskStatus.Pending and t.best_effort):
                    ready[t.role] = ready.get(t.role, 0) + 1
        role_surplus = {r: ready.get(r, 0) - m for r, m in job.task_min_available.items()}
    mins = job.min_sub_jobs
    enforce_subs = bool(mins)
    broken: set[str] = set()
    group_surplus: dict[str, int] = {}
    if enforce_subs:
        for each in job.sub_jobs.values():
            if each.is_ready():
                group_surplus[each.gid] = group_surplus.get(each.gid, 0) + 1
            else:
                broken.add(each.uid)
        for gid, m in mins.items():
            group_surplus[gid] = group_surplus.get(gid, 0) - m
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for t in local:
        has_role_min = enforce_roles and t.role in job.task_min_available
        role_safe = role_surplus.get(t.role, 0) > 0 if has_role_min else True
        sj: SubJobInfo | None = None
        group_safe = True
        if enforce_subs:
            sj = job.sub_job_of(t.uid)
            group_safe = sj is not None and (sj.uid in broken or group_surplus.get(sj.gid, 0) > 0)
        if job_surplus > 0 and role_safe and group_safe:
            safe.append(t)
            job_surplus -= 1
            if has_role_min:
                role_surplus[t.role] -= 1
            if sj is not None and sj.uid not in broken:
                broken.add(sj.uid)
                group_surplus[sj.gid] = group_surplus.get(sj.gid, 0) - 1
        else:
            whole.append(t)
    out = []
    if safe:
        out.append(Bundle(SAFE, job, safe, sum_resources(t.resreq for t in safe)))
    if whole:
        out.append(Bundle(WHOLE, job, whole, sum_resources(t.resreq for t in whole),
                          sum_resources(t.resreq for t in job.tasks.values())))
    return out


def flatten(bundles: Sequence[Bundle]) -> list[TaskInfo]:
    return [t for b in bundles for t in b.tasks]


def apply_allowed(bundles: Sequence[Bundle], allowed: set[str]) -> list[Bundle]:
    """Keep the allowed tasks (task uids) of each safe bundle; a whole bundle stays only when
    every one of its tasks is allowed."""
    out = []
    for b in bundles:
        ok = [t for t in b.tasks if t.uid in allowed]
        if b.kind == WHOLE:
            if b.tasks and len(ok) == len(b.tasks):
                out.append(b)
        elif ok:
            out.append(Bundle(b.kind, b.job, ok, sum_resources(t.resreq for t in ok), b.total))
    return out


def _against_need(res: Resource, need: Resource, cap: bool) -> float:
    score = 0.0
    for name in need.resource_names():
        n = need.get(name)
        if n <= 0:
            continue
        v = res.get(name)
        if cap and v > n:
            v = n
        score += v / n
    return score


def bundle_roi(b: Bundle, need: Resource) -> float:
    """The share of ``need`` a bundle covers (capped per resource) per share of the job it
    breaks; infinite for a safe bundle."""
    glob = _against_need(b.total, need, False)
    if glob == 0:
        return math.inf
    return _against_need(b.local, need, True) / glob


def _sort(bundles: list[Bundle], need: Resource, first: Callable[[Bundle, Bundle], bool] | None) -> None:
    def cmp(a: Bundle, b: Bundle) -> int:
        if a.kind != b.kind:
            return -1 if a.kind < b.kind else 1
        if first is not None:
            ab, ba = first(a, b), first(b, a)
            if ab != ba:
                return -1 if ab else 1
        ra, rb = bundle_roi(a, need), bundle_roi(b, need)
        if ra != rb:
            return -1 if ra > rb else 1
        ka = (a.job.uid, a.tasks[0].uid if a.tasks else "", len(a.tasks))
        kb = (b.job.uid, b.tasks[0].uid if b.tasks else "", len(b.tasks))
        return -1 if ka < kb else (1 if ka > kb else 0)

    bundles.sort(key=functools.cmp_to_key(cmp))


def sort_for_preempt(bundles: list[Bundle], need: Resource, less_victim_job: Callable[[JobInfo, JobInfo], bool]) -> None:
    """Safe first; then victim-job order; then coverage per broken job; then job and task uid."""
    _sort(bundles, need, lambda a, b: a.job.uid != b.job.uid and less_victim_job(a.job, b.job))


def sort_for_reclaim(bundles: list[Bundle], need: Resource, less_queue: Callable[[QueueInfo, QueueInfo], bool] | None,
                     queues: Mapping[str, QueueInfo]) -> None:
    """Safe first; then victim-queue order (when given); then coverage per broken job; then job
    and task uid."""
    def first(a: Bundle, b: Bundle) -> bool:
        qa, qb = queues.get(a.job.queue), queues.get(b.job.queue)
        return less_queue is not None and qa is not None and qb is not None and qa.uid != qb.uid and less_queue(qa, qb)

    _sort(bundles, need, first)


# ----- domains ---------------------------------------------------------------------------------
def pick_domains(gradients: Sequence[Sequence[str]], max_domains: int, fallback: str) -> list[str]:
    """The gradients' HyperNodes in order without repeats, at most ``max_domains``;
    ``[fallback]`` when there are none (and a fallback is given)."""
    seen: set[str] = set()
    out: list[str] = []
    for g in gradients:
        for hn in g:
            if not hn or hn in seen:
                continue
            seen.add(hn)
            out.append(hn)
            if max_domains > 0 and len(out) >= max_domains:
                return out
    if not out and fallback:
        out.append(fallback)
    return out


def candidate_domains(ssn: Session, job: JobInfo, max_domains: int) -> list[str]:
    """The job's eviction gradient (widest first) as domains; the cluster when the job has no
    hard topology and no gradient."""
    gradients = ssn.hyper_node_gradient_for_job(job, CLUSTER_TOP_HYPERNODE, "evict")
    fallback = "" if job.contains_hard_topology() else CLUSTER_TOP_HYPERNODE
    return pick_domains(gradients, max_domains, fallback)


def domain_nodes(ssn: Session, domain: str) -> list[NodeInfo]:
    return ssn.node_list if domain == CLUSTER_TOP_HYPERNODE else ssn.hypernode_nodes(domain)


def job_preemptable(job: JobInfo | None) -> bool:
    """A victim job may lose tasks to gang eviction unless its PodGroup says
    ``volcano.sh/preemptable: "false"`` (unset: allowed)."""
    if job is None or job.pod_group is None:
        return True
    md = job.pod_group.get("metadata") or {}
    if POD_PREEMPTABLE in (md.get("annotations") or {}) or POD_PREEMPTABLE in (md.get("labels") or {}):
        return job.preemptable
    return True


def idle_and_releasing(nodes: Sequence[NodeInfo]) -> Resource:
    return sum_resources(n.idle + n.releasing for n in nodes)


# ----- pending tasks and the dry run -----------------------------------------------------------
def collect_pending(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """The Pending tasks to make room for: a ready job's first sub-job with any (in worksheet
    order), else every sub-job's, each in task order."""
    ws = organize_job_worksheet(ssn, job, skip_gated=True)
    if ws.empty():
        return []
    ready = ssn.job_ready(job)
    out: list[TaskInfo] = []
    subs = ws.sub_jobs.clone()
    while not subs.empty():
        sj = subs.pop()
        tq = ws.tasks[sj.uid].clone()
        while not tq.empty():
            out.append(tq.pop())
        if ready and out:
            return out
    return out


def _trial(ssn: Session, queue: QueueInfo | None, job: JobInfo, sub: SubJobInfo, tasks: PriorityQueue[TaskInfo],
           nodes: list[NodeInfo], victims_present: bool) -> Statement | None:
    """Pipeline ``sub``'s tasks onto ``nodes``; the statement (left applied) when the sub-job is
    then ready or pipelined, else None (undone)."""
    if not nodes:
        return None
    trial = Statement(ssn)
    pending = tasks.clone()
    while not pending.empty():
        task = pending.pop()
        if queue is not None and not ssn.allocatable(queue, task):
            trial.discard()
            return None
        if ssn.pre_predicate_fn(task) is not None:
            trial.discard()
            return None
        feasible, _ = predicate_nodes(ssn, task, nodes, "preempt")
        feasible = [n for n in feasible if task.resreq.less_equal(n.future_idle(), Dimension.ZERO)]
        node = best_node(ssn, task, feasible)
        if node is None:
            trial.discard()
            return None
        if not trial.try_pipeline(task, node.name, victims_present):
            return None
    if not trial.operations or not (ssn.sub_job_ready(job, sub) or ssn.sub_job_pipelined(job, sub)):
        trial.discard()
        return None
    return trial


def build_plan_in_domain(ssn: Session, queue: QueueInfo | None, job: JobInfo, domain: str, victims: list[TaskInfo],
                         reason: str) -> tuple[list[PlannedOp], dict[str, str]] | None:
    """Dry-run evicting ``victims`` and placing ``job``'s sub-jobs in ``domain`` (each inside
    one HyperNode of its eviction gradient when the job has a hard topology). Returns the plan
    and the HyperNode each placed sub-job took when the job ends up pipelined, else None. The
    session is left as it was either way."""
    if not domain_nodes(ssn, domain):
        return None
    ws = organize_job_worksheet(ssn, job, skip_gated=True)
    if ws.empty():
        return None
    was_ready = ssn.job_ready(job)
    chain: list[Statement] = []
    try:
        if victims:
            vs = Statement(ssn)
            for v in victims:
                vs.evict(v, reason)
            chain.append(vs)
        placed: dict[str, str] = {}
        pipelined = False
        hard = job.contains_hard_topology()
        while not ws.sub_jobs.empty():
            sub = ws.sub_jobs.pop()
            tasks = ws.tasks.get(sub.uid)
            if tasks is None or tasks.empty():
                continue
            winner: Statement | None = None
            where = ""
            candidates = [hn for g in ssn.hyper_node_gradient_for_sub_job(sub, domain, "evict") for hn in g] if hard else [domain]
            for hn in candidates:
                winner = _trial(ssn, queue, job, sub, tasks, domain_nodes(ssn, hn), bool(victims))
                if winner is not None:
                    where = hn
                    break
            if winner is None:
                return None
            chain.append(winner)
            placed[sub.uid] = where
            pipelined = ssn.job_pipelined(job)
            if was_ready or pipelined:
                break
        if not pipelined:
            return None
        return save_operations(*chain), placed
    finally:
        for st in reversed(chain):
            st.discard()


# ----- the action driver ----------------------------------------------------------------------
class GangEvictionArgs(Arguments, frozen=True):
    """Upstream keys ``maxDomains`` (<= 0: 8) and ``allowWholeBundle``."""
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default

    max_domains: int = arg("maxDomains", 8)
    allow_whole_bundle: bool = arg("allowWholeBundle", True)

    @property
    def domains(self) -> int:
        return self.max_domains if self.max_domains > 0 else 8


SelectFn = Callable[[Session, JobInfo, Resource, str], list[Bundle]]


def run(ssn: Session, kind: EvictionKind, args: GangEvictionArgs, select: SelectFn) -> None:
    """Walk queues in order and each queue's starving jobs in job order; for each, find the
    first domain (of at most ``maxDomains``) where the chosen victim bundles make room for the
    job's Pending tasks and the dry run pipelines the job; commit when the job is pipelined.

    Mirrors: gangpreempt.go / gangreclaim.go Execute and preemptJobInDomains / reclaimJobInDomains.
    """
    reclaim = kind is EvictionKind.GANG_RECLAIM
    reason = REASON_GANG_RECLAIM if reclaim else REASON_GANG_PREEMPT
    queues, starving = jobs_by_queue(ssn, running_valid_jobs(ssn), ssn.job_starving)
    while not queues.empty():
        q = queues.pop()
        if reclaim and ssn.overused(q):
            continue
        jobs = starving.get(q.uid)
        while jobs is not None and not jobs.empty():
            job = jobs.pop()
            stmt = _evict_for_job(ssn, q, job, args, select, reason, reclaim)
            if stmt is not None and ssn.job_pipelined(job):
                stmt.commit()
            elif stmt is not None:
                stmt.discard()


def _evict_for_job(ssn: Session, q: QueueInfo, job: JobInfo, args: GangEvictionArgs, select: SelectFn, reason: str,
                   reclaim: bool) -> Statement | None:
    pending = collect_pending(ssn, job)
    if not pending:
        return None
    if reclaim and not ssn.preemptive(q, pending):
        return None
    need = sum_resources(t.resreq for t in pending)
    for domain in candidate_domains(ssn, job, args.domains):
        nodes = domain_nodes(ssn, domain)
        if not nodes:
            continue
        bundles = [b for b in select(ssn, job, need, domain) if b.kind == SAFE or args.allow_whole_bundle]
        if not bundles:
            continue
        free = idle_and_releasing(nodes)
        chosen: list[TaskInfo] = []
        for b in bundles:
            chosen += b.tasks
            if not need.less_equal(free + sum_resources(t.resreq for t in chosen), Dimension.ZERO):
                continue
            got = build_plan_in_domain(ssn, q, job, domain, list(chosen), reason)
            if got is None:
                continue
            return replay(ssn, got[0])
    return None


def _candidates(ssn: Session, domain: str, keep: Callable[[TaskInfo, JobInfo], bool]) -> dict[str, list[TaskInfo]]:
    out: dict[str, list[TaskInfo]] = {}
    for n in domain_nodes(ssn, domain):
        for k, t in n.tasks.items():
            if k in n.evicted or not t.preemptable:
                continue
            vjob = ssn.jobs.get(t.job)
            if vjob is None or t.uid not in vjob.tasks or not job_preemptable(vjob) or not keep(t, vjob):
                continue
            # node.tasks holds clones: evict the job's own task object
            out.setdefault(t.job, []).append(vjob.tasks[t.uid])
    return out


def _allowed(ssn: Session, ctx: EvictionContext, bundles: list[Bundle]) -> list[Bundle]:
    allowed = ssn.unified_evictable(ctx, flatten(bundles))
    if not allowed:
        return []
    return apply_allowed(bundles, {t.uid for t in allowed})


def select_preempt(ssn: Session, job: JobInfo, need: Resource, domain: str) -> list[Bundle]:
    """Victim bundles in ``domain`` for a preemptor job: Running/Bound preemptable tasks of
    lower-priority jobs of the same queue, ordered and filtered by the UnifiedEvictable plugins.
    Mirrors: gangpreempt.go selectDomainBundles."""
    def keep(t: TaskInfo, vjob: JobInfo) -> bool:
        return (t.status in PREEMPTABLE_STATUSES and vjob.queue == job.queue and t.job != job.uid
                and job.priority > vjob.priority)

    bundles = [b for uid, ts in sorted(_candidates(ssn, domain, keep).items()) for b in create_job_bundles(ssn.jobs[uid], ts)]
    if not bundles:
        return []

    def less(a: JobInfo, b: JobInfo) -> bool:
        return not ssn.job_order_fn(a, b)

    sort_for_preempt(bundles, need, less)
    valid = _allowed(ssn, EvictionContext(EvictionKind.GANG_PREEMPT, job, domain), bundles)
    sort_for_preempt(valid, need, less)
    return valid


def select_reclaim(ssn: Session, job: JobInfo, need: Resource, domain: str) -> list[Bundle]:
    """Victim bundles in ``domain`` for a reclaiming job: Running preemptable tasks of other,
    reclaimable queues, ordered by the victim-queue order and filtered by the UnifiedEvictable
    plugins. Mirrors: gangreclaim.go selectDomainBundles."""
    def keep(t: TaskInfo, vjob: JobInfo) -> bool:
        vq = ssn.queues.get(vjob.queue)
        return t.status is TaskStatus.Running and vjob.queue != job.queue and vq is not None and vq.reclaimable

    bundles = [b for uid, ts in sorted(_candidates(ssn, domain, keep).items()) for b in create_job_bundles(ssn.jobs[uid], ts)]
    if not bundles:
        return []
    mine = ssn.queues.get(job.queue)

    def less(a: QueueInfo, b: QueueInfo) -> bool:
        return ssn.victim_queue_order_fn(a, b, mine) if mine is not None else ssn.queue_order_fn(a, b)

    sort_for_reclaim(bundles, need, less, ssn.queues)
    valid = _allowed(ssn, EvictionContext(EvictionKind.GANG_RECLAIM, job, domain), bundles)
    sort_for_reclaim(valid, need, less, ssn.queues)
    return valid
