"""capacity: queue quotas from ``spec.deserved`` (elastic up to capability), optionally
hierarchical through ``spec.parent``.

Allocatable caps by realCapability (a queue may borrow above deserved); Preemptive lets a queue
reclaim while some requested dimension is still under deserved; Reclaimable takes victims from
queues above deserved without going below guarantee.

Mirrors: volcano pkg/scheduler/plugins/capacity/capacity.go.
With ``enableHierarchy`` and ``ancestorReclaimLevel`` N > 0, a queue with nothing left under its
own deserved may still reclaim while one of its ancestors up to N levels is under deserved; a
cross-parent victim must also
leave each of its ancestors up to N levels (those the reclaimer does not share) above deserved,
and an immediate victim under a shared non-root ancestor is spared when the reclaimer's queue
promises nothing for what it asks.

Deviates: hierarchy checks ancestors for allocatable/enqueue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import (
    MIN_RESOURCE,
    PODS,
    Dimension,
    Resource,
    sum_resources,
)
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import (
    ALLOCATED_STATUSES,
    EvictionContext,
    EvictionKind,
    TaskStatus,
    Vote,
)
from pumice.scheduler.volcano.framework.arguments import Arguments, arg, parser
from pumice.scheduler.volcano.framework.interface import Event, EventHandler
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins._fair_share import clamp_deserved, real_capability, usage_share
from pumice.scheduler.volcano.plugins._queue_util import (
    allocated_task_num,
    deduct_sch_gated,
    elastic_resources,
    inqueue_resource,
    min_resources_list,
)

PLUGIN_NAME = "capacity"
ROOT = "root"


class CapacityArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    ancestor_reclaim_level: int = arg("ancestorReclaimLevel", 0)


@dataclass
class QueueAttr:
    queue_id: str
    name: str
    parent: str = ""
    deserved: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    capability: Resource = field(default_factory=Resource)
    real_capability: Resource = field(default_factory=Resource)
    guarantee: Resource = field(default_factory=Resource)
    share: float = 0.0
    children: list[str] = field(default_factory=list)
    best_effort: bool = False


def _cap(r: Resource | None) -> Resource:
    if r is None:
        return Resource.infinite()
    return Resource(
        r.milli_cpu if r.milli_cpu > 0 else math.inf, r.memory if r.memory > 0 else math.inf, r.scalars
    )


def update_share(attr: QueueAttr) -> None:
    if attr.best_effort:
        attr.share = 1.0
        return
    attr.share = usage_share(attr.allocated, attr.deserved)


class CapacityPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: CapacityArgs) -> None:
        self.args = args
        self.attrs: dict[str, QueueAttr] = {}
        self.hierarchy = False

    def _ancestors(self, qid: str) -> list[QueueAttr]:
        out = []
        seen = set()
        cur = self.attrs.get(qid)
        while cur is not None and cur.queue_id not in seen:
            seen.add(cur.queue_id)
            out.append(cur)
            if not self.hierarchy or not cur.parent or cur.queue_id == ROOT:
                break
            cur = self.attrs.get(cur.parent)
        return out

    @property
    def _reclaim_level(self) -> int:
        """How many ancestor levels reclaim looks through (``ancestorReclaimLevel``; 0 when flat)."""
        return self.args.ancestor_reclaim_level if self.hierarchy else 0

    def on_session_open(self, ssn: Session) -> None:
        opt = ssn.plugin_option(PLUGIN_NAME)
        self.hierarchy = bool(opt and opt.enabled("enableHierarchy"))
        self._build_queue_attrs(ssn)
        self._account_jobs(ssn)
        for a in self.attrs.values():
            update_share(a)
        self._register_order_fns(ssn)
        self._register_quota_fns(ssn)
        ssn.add_reclaimable_fn(PLUGIN_NAME, lambda reclaimer, reclaimees: self._reclaim_victims(ssn, reclaimer, reclaimees))
        ssn.add_unified_evictable_fn(PLUGIN_NAME, lambda ctx, cands: self._gang_reclaim_victims(ssn, ctx, cands))
        self._register_enqueue_fns(ssn)

        def on_event(ev: Event, sign: int) -> None:
            job = ssn.jobs.get(ev.task.job)
            if job is None:
                return
            for a in self._ancestors(job.queue):
                a.allocated = a.allocated + ev.task.resreq if sign > 0 else a.allocated - ev.task.resreq
                update_share(a)

        ssn.add_event_handler(EventHandler(lambda e: on_event(e, 1), lambda e: on_event(e, -1)))

    def _build_queue_attrs(self, ssn: Session) -> None:
        """One QueueAttr per queue (every queue when hierarchical, else the queues with jobs), with
        realCapability and deserved clamped between guarantee and realCapability.

        Mirrors: capacity.go buildQueueAttrs / buildHierarchicalQueueAttrs."""
        total = ssn.total_resource
        total_guarantee = sum_resources(q.guarantee for q in ssn.queues.values() if q.guarantee is not None)
        queues = ssn.queues if self.hierarchy else {j.queue: ssn.queues[j.queue] for j in ssn.jobs.values() if j.queue in ssn.queues}
        for q in sorted(queues.values(), key=lambda q: q.name):
            attr = QueueAttr(q.uid, q.name, parent=(q.parent or (ROOT if q.name != ROOT else "")))
            attr.capability = _cap(q.capability)
            attr.guarantee = q.guarantee or Resource()
            attr.deserved = q.deserved or Resource()
            attr.best_effort = q.deserved is None or q.deserved.is_empty()
            self.attrs[q.uid] = attr
        if self.hierarchy:
            for a in self.attrs.values():
                if a.parent in self.attrs and a.queue_id != ROOT:
                    self.attrs[a.parent].children.append(a.queue_id)
            root = self.attrs.get(ROOT)
            if root is not None:
                root.real_capability = root.capability.min_dimension(total, Dimension.INFINITY) if not math.isinf(root.capability.milli_cpu) else total
                self._real_caps(root)
        else:
            for a in self.attrs.values():
                a.real_capability = real_capability(total, total_guarantee, a.guarantee, a.capability)
        for a in self.attrs.values():
            a.deserved = clamp_deserved(a.deserved, a.real_capability, a.guarantee)

    def _account_jobs(self, ssn: Session) -> None:
        """Add each job's allocated, requested, inqueue and elastic resources to its queue and
        (when hierarchical) every ancestor."""
        for job in ssn.jobs.values():
            if job.queue not in self.attrs:
                continue
            chain = self._ancestors(job.queue)
            for s, b in job.task_status_index.items():
                for t in b.values():
                    for a in chain:
                        if s in ALLOCATED_STATUSES:
                            a.allocated = a.allocated + t.resreq
                            a.request = a.request + t.resreq
                        elif s is TaskStatus.Pending:
                            a.request = a.request + t.resreq
            has_min = min_resources_list(job) is not None
            min_member = int(((job.pod_group or {}).get("spec") or {}).get("minMember") or 0)
            inq = Resource()
            if has_min and (
                job.phase == PodGroupPhase.INQUEUE
                or (job.phase == PodGroupPhase.RUNNING and allocated_task_num(job) >= min_member)
            ):
                inq = deduct_sch_gated(job, inqueue_resource(job, job.allocated))
            el = elastic_resources(job)
            for a in chain:
                a.inqueue = a.inqueue + inq
                a.elastic = a.elastic + el

    def _register_order_fns(self, ssn: Session) -> None:
        """QueueOrder (priority, then lower share; leaves first and by sibling share when
        hierarchical) and, when hierarchical, VictimQueueOrder (closest to the preemptor first)."""

        def compare(la: QueueAttr, ra: QueueAttr) -> int:
            if la.share == ra.share:
                if la.best_effort != ra.best_effort:
                    return 1 if la.best_effort else -1
                return 0
            return -1 if la.share < ra.share else 1

        def queue_order(l: QueueInfo, r: QueueInfo) -> int:  # noqa: E741
            if l.priority != r.priority:
                return r.priority - l.priority
            la, ra = self.attrs.get(l.uid), self.attrs.get(r.uid)
            if la is None or ra is None:
                return 0
            if not self.hierarchy:
                return compare(la, ra)
            ll, rl = not la.children, not ra.children
            if ll != rl:
                return -1 if ll else 1
            if not ll:
                return compare(la, ra)
            lp, rp = self.path(la.queue_id), self.path(ra.queue_id)
            level = _common_level(lp, rp)
            lq = lp[level + 1] if level + 1 < len(lp) else la.queue_id
            rq = rp[level + 1] if level + 1 < len(rp) else ra.queue_id
            return compare(self.attrs[lq], self.attrs[rq])

        ssn.add_queue_order_fn(PLUGIN_NAME, queue_order)

        if self.hierarchy:

            def victim_queue_order(l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:  # noqa: E741
                pp = self.path(preemptor.uid)
                ll = _common_level(self.path(l.uid), pp)
                rl = _common_level(self.path(r.uid), pp)
                if ll == rl:
                    return 0
                return -1 if ll > rl else 1

            ssn.add_victim_queue_order_fn(PLUGIN_NAME, victim_queue_order)

    def _register_quota_fns(self, ssn: Session) -> None:
        """Allocatable (within realCapability up the chain) and Preemptive (some requested
        dimension still under deserved, here or at an ancestor within ``ancestorReclaimLevel``)."""

        def allocatable(q: QueueInfo, task: TaskInfo) -> bool:
            if not q.is_open():
                return False
            if self.hierarchy and self.attrs.get(q.uid) and self.attrs[q.uid].children:
                return False
            for a in self._ancestors(q.uid):
                ok, _ = (a.allocated + task.resreq).less_equal_in_request_dims(a.real_capability, task.resreq)
                if not ok:
                    return False
            return q.uid in self.attrs

        ssn.add_allocatable_fn(PLUGIN_NAME, allocatable)

        def preemptive(q: QueueInfo, tasks: list[TaskInfo]) -> bool:
            if not q.is_open():
                return False
            attr = self.attrs.get(q.uid)
            if attr is None:
                return False
            req = sum_resources(t.resreq for t in tasks)
            future = attr.allocated + req
            ok, _ = future.less_equal_in_request_dims(attr.real_capability, req)
            if not ok:
                return False
            filtered = _filter_zero(req, future, attr.deserved)
            found, _ = future.less_equal_partly_in_request_dims(attr.deserved, filtered)
            for depth in range(1, self._reclaim_level + 1):
                if found:
                    break
                anc = self.attrs.get(self._ancestor_at(attr, depth) or "")
                if anc is None or anc.queue_id == ROOT:
                    continue
                anc_future = anc.allocated + req
                found, _ = anc_future.less_equal_partly_in_request_dims(anc.deserved, _filter_zero(req, anc_future, anc.deserved))
            return found

        ssn.add_preemptive_fn(PLUGIN_NAME, preemptive)

    def _gang_reclaim_victims(self, ssn: Session, ctx: EvictionContext, cands: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """UnifiedEvictable: gang preemption is not filtered; for gang reclaim, the candidates (in
        the order given) whose queue stays at or above guarantee and either has no deserved on
        the victim's dimensions or is above deserved on one of them.

        Mirrors: capacity.go its UnifiedEvictableFn (no ancestor levels, as upstream)."""
        if ctx.kind is not EvictionKind.GANG_RECLAIM:
            return cands, Vote.PERMIT
        victims = []
        allocations: dict[str, Resource] = {}
        for r in cands:
            job = ssn.jobs.get(r.job)
            attr = self.attrs.get(job.queue) if job is not None else None
            if job is None or attr is None:
                continue
            alloc = allocations.get(job.queue, attr.allocated)
            after = alloc - r.resreq
            if not attr.guarantee.less_equal(after, Dimension.ZERO):
                continue
            if _immediate_victim(r, attr.deserved) or _exceeds(alloc, attr.deserved, r):
                allocations[job.queue] = after
                victims.append(r)
        return victims, Vote.PERMIT

    def _reclaim_victims(self, ssn: Session, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Reclaimable: victims, in the session's victim order, whose queue (and each checked
        ancestor) stays at or above guarantee and is above deserved on a dimension the victim uses.

        Mirrors: capacity.go reclaimableFn."""
        level = self._reclaim_level
        victims = []
        allocations: dict[str, Resource] = {}
        rnames = {n for n in reclaimer.resreq.resource_names() if n != PODS}
        rjob = ssn.jobs.get(reclaimer.job)
        rattr = self.attrs.get(rjob.queue) if rjob is not None else None
        order = ssn.build_victims_priority_queue(reclaimees, reclaimer)
        while not order.empty():
            r = order.pop()
            job = ssn.jobs.get(r.job)
            if job is None:
                continue
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue
            if not rnames & {n for n in r.resreq.resource_names() if n != PODS}:
                continue
            alloc = allocations.get(job.queue, attr.allocated)
            after = alloc - r.resreq
            if not attr.guarantee.less_equal(after, Dimension.ZERO):
                continue
            if _immediate_victim(r, attr.deserved):
                if level > 0 and rattr is not None and self._share_non_root_ancestor(rattr, attr, level) and not _relevant(
                        reclaimer, rattr.deserved):
                    continue
            elif not _exceeds(alloc, attr.deserved, r):
                continue
            ancestors = self._ancestors_over_deserved(rattr, attr, r, allocations, level)
            if ancestors is None:
                continue
            allocations[job.queue] = after
            for qid, a_alloc in ancestors.items():
                allocations[qid] = a_alloc - r.resreq
            victims.append(r)
        return victims, Vote.PERMIT

    def _ancestors_over_deserved(
        self, rattr: QueueAttr | None, attr: QueueAttr, victim: TaskInfo, allocations: dict[str, Resource], level: int
    ) -> dict[str, Resource] | None:
        """The victim's checked ancestors (queue id -> allocation so far), or None when one of
        them is missing or not above its deserved on a dimension the victim uses."""
        ancestors: dict[str, Resource] = {}
        for lv in range(1, level + 1):
            anc, need = self._reclaimee_ancestor(rattr, attr, lv)
            if not need:
                continue
            if anc is None:
                return None
            a_alloc = allocations.get(anc.queue_id, anc.allocated)
            ancestors[anc.queue_id] = a_alloc
            if not _immediate_victim(victim, anc.deserved) and not _exceeds(a_alloc, anc.deserved, victim):
                return None
        return ancestors

    def _register_enqueue_fns(self, ssn: Session) -> None:
        """JobEnqueueable (the job's minResources fit realCapability up the chain, else an
        Unschedulable event) and JobEnqueued (count them as inqueue)."""

        def enqueueable(job: JobInfo) -> int:
            q = ssn.queues[job.queue]
            if not q.is_open():
                return Vote.REJECT
            attr = self.attrs.get(job.queue)
            if attr is None:
                return Vote.REJECT
            if self.hierarchy and attr.children:
                return Vote.REJECT
            if min_resources_list(job) is None:
                return Vote.PERMIT
            min_req = job.min_resources or Resource()
            for a in self._ancestors(job.queue):
                r = min_req + a.allocated + a.inqueue - a.elastic
                ok, names = r.less_equal_in_request_dims(a.real_capability, min_req)
                if not ok:
                    ssn.record_pod_group_event(
                        job, "Normal", "Unschedulable",
                        "queue resource quota insufficient: " + ", ".join(f"insufficient {n}" for n in names),
                    )
                    return Vote.REJECT
            return Vote.PERMIT

        ssn.add_job_enqueueable_fn(PLUGIN_NAME, enqueueable)

        def enqueued(job: JobInfo) -> None:
            if min_resources_list(job) is None:
                return
            add = deduct_sch_gated(job, job.min_resources or Resource())
            for a in self._ancestors(job.queue):
                a.inqueue = a.inqueue + add

        ssn.add_job_enqueued_fn(PLUGIN_NAME, enqueued)

    def _ancestor_at(self, attr: QueueAttr, depth: int) -> str | None:
        """The queue ``depth`` levels above ``attr`` (1 = parent); None above the root."""
        up = self.path(attr.queue_id)[:-1]
        return up[len(up) - depth] if 0 < depth <= len(up) else None

    def _share_non_root_ancestor(self, a: QueueAttr, b: QueueAttr, level: int) -> bool:
        mine = {self._ancestor_at(a, d) for d in range(1, level + 1)} - {None, ROOT}
        theirs = {self._ancestor_at(b, d) for d in range(1, level + 1)}
        return bool(mine & theirs)

    def _reclaimee_ancestor(self, reclaimer: QueueAttr | None, reclaimee: QueueAttr, depth: int) -> tuple[QueueAttr | None, bool]:
        """The reclaimee's ancestor ``depth`` levels up that must also exceed its deserved, and
        whether one must be checked (not when it is the root or the reclaimer's own ancestor at
        that depth). Mirrors: capacity.go getReclaimeeAncestorToCheck."""
        if reclaimer is None:
            return None, False
        anc = self._ancestor_at(reclaimee, depth)
        if anc is None or anc == ROOT:
            return None, False
        if self._ancestor_at(reclaimer, depth) == anc:
            return None, False
        return self.attrs.get(anc), True

    def path(self, qid: str) -> list[str]:
        """Queue ids from the root down to ``qid``."""
        return [a.queue_id for a in reversed(self._ancestors(qid))]

    def _real_caps(self, parent: QueueAttr) -> None:
        sib_guarantee = sum_resources(self.attrs[c].guarantee for c in parent.children)
        for cid in parent.children:
            c = self.attrs[cid]
            cap = c.capability
            pc = parent.capability
            c.capability = Resource(
                cap.milli_cpu if not math.isinf(cap.milli_cpu) else pc.milli_cpu,
                cap.memory if not math.isinf(cap.memory) else pc.memory,
                {**dict(pc.scalars), **dict(cap.scalars)},
            )
            c.real_capability = real_capability(parent.real_capability, sib_guarantee, c.guarantee, c.capability)
            self._real_caps(c)

    def on_session_close(self, ssn: Session) -> None:
        ssn.queue_metrics.update(
            {a.name: {"deserved": a.deserved, "allocated": a.allocated, "share": a.share} for a in self.attrs.values()}
        )
        self.attrs = {}


def _relevant(task: TaskInfo, deserved: Resource) -> bool:
    """Does ``task`` request a dimension that ``deserved`` names? (upstream hasRelevantDeserved)"""
    req = {n for n in task.resreq.resource_names() if n != PODS}
    return bool(req & set(deserved.resource_names()))


def _immediate_victim(task: TaskInfo, deserved: Resource) -> bool:
    """No dimension in common with the queue's deserved: the queue promised nothing for it."""
    return not _relevant(task, deserved)


def _exceeds(allocated: Resource, deserved: Resource, task: TaskInfo) -> bool:
    """Allocated above deserved on a dimension the task requests (upstream checkDeservedExceedance)."""
    over, _ = allocated.greater_partly_in_request_dims(deserved, _only(task.resreq, set(deserved.resource_names())))
    return bool(over)


def _only(r: Resource, names: set[str]) -> Resource:
    return Resource(
        r.milli_cpu if "cpu" in names else 0.0,
        r.memory if "memory" in names else 0.0,
        {n: v for n, v in r.scalars.items() if n in names},
    )


def _filter_zero(req: Resource, a: Resource, b: Resource) -> Resource:
    def keep(n: str) -> bool:
        return not (a.get(n) < MIN_RESOURCE and b.get(n) < MIN_RESOURCE)

    return Resource(
        req.milli_cpu if keep("cpu") else 0.0,
        req.memory if keep("memory") else 0.0,
        {n: v for n, v in req.scalars.items() if keep(n)},
    )


parse_arguments = parser(CapacityArgs)


new = CapacityPlugin


def _common_level(lp: list[str], rp: list[str]) -> int:
    """Index of the deepest common ancestor of two root-first paths (volcano getQueueLevel)."""
    level = 0
    for i in range(min(len(lp), len(rp))):
        if lp[i] != rp[i]:
            return level
        level = i
    return level
