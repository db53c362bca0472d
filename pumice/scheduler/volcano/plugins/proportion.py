"""proportion: weight-based fair share between queues (water-filling ``deserved``).

Registers QueueOrder (priority, then lower share), Reclaimable, Overused, Allocatable,
Preemptive, JobEnqueueable (vote), JobEnqueued and allocate/deallocate handlers.

Mirrors: volcano pkg/scheduler/plugins/proportion/proportion.go.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.job_info import JobInfo, JobMemo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Dimension, Resource, exceeded_part, sum_resources, whole
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import ALLOCATED_STATUSES, TaskStatus, Vote
from pumice.scheduler.volcano.framework.arguments import NoArguments, parser
from pumice.scheduler.volcano.framework.interface import Event, EventHandler
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins._fair_share import (
    Claim,
    capped_capability,
    proportion_deserved,
    usage_share,
)
from pumice.scheduler.volcano.plugins._queue_util import (
    allocated_task_num,
    deduct_sch_gated,
    elastic_resources,
    inqueue_resource,
    min_resources_list,
)

PLUGIN_NAME = "proportion"


@dataclass(slots=True)
class QueueAttr:
    """One queue's figures for a session (every Resource given: no default is built per queue
    and session; ``deserved`` is set by the water filling)."""

    queue_id: str
    name: str
    weight: int
    capability: Resource | None
    real_capability: Resource
    guarantee: Resource
    allocated: Resource
    request: Resource
    inqueue: Resource
    elastic: Resource
    deserved: Resource
    share: float = 0.0


QueueCaps = dict[str, tuple[Resource | None, Resource, Resource]]

_LAST_CAPS: list[tuple[Resource, list[tuple[str, Resource | None, Resource | None]], QueueCaps]] = []
"""The last :func:`queue_caps` inputs (the very objects) and result."""


def queue_caps(total: Resource, queues: dict[str, QueueInfo]) -> QueueCaps:
    """Queue uid -> (capability with an unset or zero cpu/memory as infinite, guarantee
    (``Resource()`` when unset), realCapability) for every queue, each a function of ``total``
    and the queues' capability and guarantee Resources alone.

    The last result is given again (the same dict: read it, never change it) when ``total`` and
    every queue's capability and guarantee are the very objects of the last call (Resources are
    immutable, and the snapshot's QueueInfos get the same parsed objects while the Queues do
    not change: :meth:`Resource.from_list` is memoized)."""
    key = [(q.uid, q.capability, q.guarantee) for q in queues.values()]
    if _LAST_CAPS:
        last_total, last_key, last = _LAST_CAPS[0]
        if last_total is total and len(last_key) == len(key) and all(
                a[0] == b[0] and a[1] is b[1] and a[2] is b[2] for a, b in zip(last_key, key, strict=True)):
            return last
    total_guarantee = sum_resources(g for _u, _c, g in key if g is not None)
    # realCapability's cluster part, the same for every queue (see real_capability)
    free = exceeded_part(total, total_guarantee)
    out: QueueCaps = {}
    for uid, cap, guarantee in key:
        capability = None
        if cap is not None:
            capability = Resource(
                cap.milli_cpu if cap.milli_cpu > 0 else math.inf,
                cap.memory if cap.memory > 0 else math.inf,
                cap.scalars,
            )
        g = guarantee if guarantee is not None else Resource()
        out[uid] = (capability, g, capped_capability(free, g, capability))
    _LAST_CAPS[:] = [(total, key, out)]
    return out


def _queue_sums(jobs: Sequence[JobInfo]) -> tuple[Resource, Resource, Resource, Resource]:
    """(allocated, request, inqueue, elastic) of one queue's jobs, added up in order."""
    allocated = request = inqueue = elastic = Resource()
    for job in jobs:
        for s, b in job.task_status_index.items():
            if s in ALLOCATED_STATUSES:
                for t in b.values():
                    allocated = allocated + t.resreq
                    request = request + t.resreq
            elif s is TaskStatus.Pending:
                for t in b.values():
                    request = request + t.resreq
        has_min = min_resources_list(job) is not None
        if job.phase == PodGroupPhase.INQUEUE and has_min:
            inqueue = inqueue + deduct_sch_gated(job, inqueue_resource(job, job.allocated))
        min_member = int(((job.pod_group or {}).get("spec") or {}).get("minMember") or 0)
        if job.phase == PodGroupPhase.RUNNING and has_min and allocated_task_num(job) >= min_member:
            inqueue = inqueue + deduct_sch_gated(job, inqueue_resource(job, job.allocated))
        elastic = elastic + elastic_resources(job)
    return allocated, request, inqueue, elastic


def _job_parts(job: JobInfo) -> tuple[Resource, Resource, Resource | None, Resource, bool]:
    """One job's share of :func:`_queue_sums`: its allocated and requested tasks' resources (added
    up task by task as there), what it adds to inqueue (None: nothing) and to elastic, and
    whether every task amount is whole (:func:`whole`)."""
    allocated, request, inqueue, elastic = _queue_sums((job,))
    whole_amounts = all(whole(t.resreq) for t in job.tasks.values())
    has_min = min_resources_list(job) is not None
    part: Resource | None = None
    if has_min and job.phase == PodGroupPhase.INQUEUE:
        part = inqueue
    elif has_min and job.phase == PodGroupPhase.RUNNING:
        min_member = int(((job.pod_group or {}).get("spec") or {}).get("minMember") or 0)
        if allocated_task_num(job) >= min_member:
            part = inqueue
    return allocated, request, part, elastic, whole_amounts


def queue_sums_by_job(memo: JobMemo, jobs: Sequence[JobInfo]) -> tuple[Resource, Resource, Resource, Resource]:
    """:func:`_queue_sums` from each job's memoized parts (:func:`_job_parts`), equal float for
    float. inqueue and elastic are added job by job there too. allocated and request are added
    task by task there: adding the jobs' part sums instead gives the same floats when every task
    amount is a whole number and the totals stay below 2**53 (every addition is then exact), and
    the same scalar order (each name first appears with the same task); otherwise the sums are
    taken task by task."""
    parts = [memo.job("proportion.parts", job, None, _job_parts) for job in jobs]
    if not all(p[4] for p in parts):
        return _queue_sums(jobs)
    allocated = sum_resources(p[0] for p in parts)
    request = sum_resources(p[1] for p in parts)
    if not (whole(request) and whole(allocated)):
        return _queue_sums(jobs)
    # sum_resources adds in the same order as repeated +, which is how inqueue and elastic are
    # added up job by job in _queue_sums
    inqueue = sum_resources(p[2] for p in parts if p[2] is not None)
    elastic = sum_resources(p[3] for p in parts)
    return allocated, request, inqueue, elastic


def _jobs_by_queue(ssn: Session) -> dict[str, list[JobInfo]]:
    """The session's jobs of each queue that exists, in snapshot order (queues in the order of
    their first jobs)."""
    by_queue: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.queue in ssn.queues:
            by_queue.setdefault(job.queue, []).append(job)
    return by_queue


def update_share(attr: QueueAttr) -> None:
    attr.share = usage_share(attr.allocated, attr.deserved)


def format_names(prefix: str, word: str, names: list[str]) -> str:
    return f"{prefix}: " + ", ".join(f"{word} {n}" for n in names)


class ProportionPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NoArguments) -> None:
        self.args = args
        self.queue_opts: dict[str, QueueAttr] = {}
        self.total = Resource()

    def on_session_open(self, ssn: Session) -> None:
        self.total = ssn.total_resource
        self._account_jobs(ssn)
        self._set_deserved()
        self._register_order_and_reclaim_fns(ssn)
        self._register_quota_fns(ssn)
        self._register_enqueue_fns(ssn)
        self._register_event_handler(ssn)

    def _account_jobs(self, ssn: Session) -> None:
        """One QueueAttr per queue that has jobs (capability, guarantee, realCapability), with
        the jobs' allocated, requested, inqueue and elastic resources added up.

        Each queue's sums are over its own jobs in snapshot order (the same additions, in the
        same order, as one pass over all jobs), from each job's parts memoized in
        ``ssn.job_memo`` (:func:`queue_sums_by_job`). With the live cache they are running
        sums of those parts (:meth:`Session.job_sums`), brought up to date from the jobs that
        changed; equal float for float where every part is whole, the fold otherwise."""
        caps = queue_caps(self.total, ssn.queues)
        memo = ssn.job_memo

        def entry(job: JobInfo) -> tuple[str, tuple[Resource | None, ...], bool]:
            p = memo.job("proportion.parts", job, None, _job_parts)
            return job.queue, p[:4], p[4]

        running = ssn.job_sums("proportion.sums", 4, entry)
        by_queue: dict[str, list[JobInfo]] | None = None
        names = [] if running is None else [g for g in running.groups() if g in ssn.queues]
        if running is None:
            by_queue = _jobs_by_queue(ssn)
            names = list(by_queue)
        empty = Resource.empty()
        for name in names:
            q = ssn.queues[name]
            sums = None if running is None else running.sums(name)
            if sums is None:
                if by_queue is None:
                    by_queue = _jobs_by_queue(ssn)
                sums = queue_sums_by_job(memo, by_queue[name])
            allocated, request, inqueue, elastic = sums
            capability, guarantee, real = caps[name]
            self.queue_opts[name] = QueueAttr(q.uid, q.name, q.weight, capability, real, guarantee,
                                              allocated, request, inqueue, elastic, empty)  # type: ignore[arg-type]

    def _set_deserved(self) -> None:
        """Water-fill ``deserved`` by weight over the queues (pure maths in _fair_share)."""
        order = sorted(self.queue_opts.values(), key=lambda a: a.name)
        claims = [Claim(a.queue_id, a.weight, a.request, a.real_capability, a.guarantee) for a in order]
        for qid, d in proportion_deserved(claims, self.total).items():
            attr = self.queue_opts[qid]
            attr.deserved = d
            update_share(attr)

    def _register_order_and_reclaim_fns(self, ssn: Session) -> None:
        """QueueOrder (priority, then lower share) and Reclaimable (victims from queues above
        deserved)."""

        def queue_order(l: QueueInfo, r: QueueInfo) -> int:  # noqa: E741
            if l.priority != r.priority:
                return r.priority - l.priority
            la, ra = self.queue_opts.get(l.uid), self.queue_opts.get(r.uid)
            ls = la.share if la else 0.0
            rs = ra.share if ra else 0.0
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        ssn.add_queue_order_fn(PLUGIN_NAME, queue_order)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            victims = []
            allocations: dict[str, Resource] = {}
            for r in reclaimees:
                job = ssn.jobs.get(r.job)
                if job is None:
                    continue
                attr = self.queue_opts.get(job.queue)
                if attr is None:
                    continue
                if job.queue not in allocations:
                    allocations[job.queue] = attr.allocated
                if not allocations[job.queue].less_equal(attr.deserved, Dimension.ZERO):
                    allocations[job.queue] = allocations[job.queue] - r.resreq
                    victims.append(r)
            return victims, Vote.PERMIT

        ssn.add_reclaimable_fn(PLUGIN_NAME, reclaimable)

    def _register_quota_fns(self, ssn: Session) -> None:
        """Overused (allocated reached deserved), Allocatable and Preemptive (within deserved in
        the requested dimensions)."""

        def overused(q: QueueInfo) -> bool:
            attr = self.queue_opts.get(q.uid)
            if attr is None:
                return False
            return attr.deserved.less_equal(attr.allocated, Dimension.ZERO)

        ssn.add_overused_fn(PLUGIN_NAME, overused)

        def queue_allocatable(q: QueueInfo, candidates: list[TaskInfo]) -> bool:
            if not q.is_open():
                return False
            attr = self.queue_opts.get(q.uid)
            if attr is None:
                return False
            total_req = sum_resources(t.resreq for t in candidates)
            ok, _ = (attr.allocated + total_req).less_equal_in_request_dims(attr.deserved, total_req)
            return ok

        ssn.add_allocatable_fn(PLUGIN_NAME, lambda q, t: queue_allocatable(q, [t]))
        ssn.add_preemptive_fn(PLUGIN_NAME, queue_allocatable)

    def _register_enqueue_fns(self, ssn: Session) -> None:
        """JobEnqueueable (minResources fit realCapability, else an Unschedulable event) and
        JobEnqueued (count them as inqueue)."""

        def enqueueable(job: JobInfo) -> int:
            q = ssn.queues[job.queue]
            if not q.is_open():
                return Vote.REJECT
            attr = self.queue_opts.get(job.queue)
            if attr is None or min_resources_list(job) is None:
                return Vote.PERMIT
            min_req = job.min_resources or Resource()
            r = min_req + attr.allocated + attr.inqueue - attr.elastic
            ok, names = r.less_equal_in_request_dims(attr.real_capability, min_req)
            if ok:
                return Vote.PERMIT
            ssn.record_pod_group_event(
                job, "Normal", "Unschedulable", format_names("queue resource quota insufficient", "insufficient", names)
            )
            return Vote.REJECT

        ssn.add_job_enqueueable_fn(PLUGIN_NAME, enqueueable)

        def enqueued(job: JobInfo) -> None:
            if min_resources_list(job) is None:
                return
            attr = self.queue_opts.get(job.queue)
            if attr is None:
                return
            attr.inqueue = attr.inqueue + deduct_sch_gated(job, job.min_resources or Resource())

        ssn.add_job_enqueued_fn(PLUGIN_NAME, enqueued)

    def _register_event_handler(self, ssn: Session) -> None:
        """Allocate/deallocate events move the queue's allocated and share."""

        def on_alloc(ev: Event) -> None:
            job = ssn.jobs.get(ev.task.job)
            attr = self.queue_opts.get(job.queue) if job else None
            if attr is not None:
                attr.allocated = attr.allocated + ev.task.resreq
                update_share(attr)

        def on_dealloc(ev: Event) -> None:
            job = ssn.jobs.get(ev.task.job)
            attr = self.queue_opts.get(job.queue) if job else None
            if attr is not None:
                attr.allocated = attr.allocated - ev.task.resreq
                update_share(attr)

        ssn.add_event_handler(EventHandler(on_alloc, on_dealloc))

    def on_session_close(self, ssn: Session) -> None:
        ssn.queue_metrics.update(
            {a.name: {"deserved": a.deserved, "allocated": a.allocated, "share": a.share} for a in self.queue_opts.values()}
        )
        self.queue_opts = {}


parse_arguments = parser(NoArguments)


new = ProportionPlugin
