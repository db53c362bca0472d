"""cohort: queues that borrow each other's idle quota, within borrowing and lending limits.

Pumice's extension (upstream Volcano has no cohorts); it follows Kueue's ClusterQueue cohorts
(kueue concepts/cluster_queue.md, ``borrowingLimit`` / ``lendingLimit``; see
../shared/reference/peers.md section 1.2), on Volcano Queues:

* ``scheduling.pumice.io/cohort: <name>`` (Queue annotation) puts the queue in a cohort; queues
  without it are not judged by this plugin.
* The queue's nominal quota is its ``spec.deserved``; only the resources named there are limited.
* ``scheduling.pumice.io/lending-limit`` (a JSON ResourceList, e.g. ``{"cpu": "2"}``): at most
  this much of its nominal quota may be used by others; the rest (nominal - lendingLimit) is its
  guaranteed part. Unset: all of its nominal quota may be lent.
* ``scheduling.pumice.io/borrowing-limit`` (same form): at most this much above its nominal quota.
  Unset: no limit but the cohort's.

A queue may use up to ``guaranteed + (pool - what the others use beyond their guarantees)``,
capped by ``nominal + borrowingLimit``, where ``pool`` is the sum of the members' lendable quota
(nominal - guaranteed). That is the capacity plugin's ``real_capability`` with the pool as the
parent and the others' borrowed usage as the siblings' guarantees, so the maths is
:func:`~pumice.scheduler.volcano.plugins._fair_share.real_capability`.

The plugin checks allocate (AllocatableFn, per task) and enqueue (JobEnqueueableFn: the job's
minResources plus what the queue uses and has reserved for admitted jobs). A rejected job gets a
Normal Event ``Unschedulable`` "cohort <c> quota insufficient for queue <q>: insufficient <dim>".
A queue whose limit annotation does not parse admits nothing and its jobs get a Warning Event
``InvalidQueueAnnotation`` naming the annotation.

Reclaim of lent quota (Kueue's ``preemption.reclaimWithinCohort``), per Queue annotation
``scheduling.pumice.io/reclaim-within-cohort``: ``Never`` (default, as Kueue), ``LowerPriority``
or ``Any``. A queue whose policy is not ``Never`` takes back what it lent once its own demand
returns:

* enqueue admits its job when the queue's usage, reservations and the job's minResources stay
  within its nominal quota, even while borrowers hold that quota (Kueue assigns such a workload
  in preempt mode);
* the ``reclaim`` action may act for its starving tasks while its usage plus the task stays within
  nominal (PreemptiveFn), and the victims (ReclaimableFn) are Running tasks of other queues of the
  same cohort that use more than their own nominal quota of a resource the task asks for, taken
  only while that queue stays above nominal (as capacity's reclaimable stops at ``deserved``);
  with ``LowerPriority`` only tasks of jobs of lower priority than the reclaiming job;
* on a node, reclaim evicts until the task fits the node and the queue's cohort quota
  (ReclaimFits, pumice's extension point): a lender whose quota is borrowed gets it back even
  while other nodes have room, as Kueue's quota-level preemption does.

For a reclaiming queue of a cohort the plugin decides the victims: tasks of queues outside its
cohort are never its victims (another plugin's verdict in the same tier is intersected with this
one, as every ReclaimableFn). Queues outside any cohort are not judged.

Deviates from Kueue: no resource flavors, no hierarchical cohorts, no ``borrowWithinCohort``;
reclaim evicts single tasks as Volcano's reclaim does (gang keeps each job at ``minAvailable``),
not whole workloads.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pumice.api.quantity import QuantityError
from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import PODS, Resource, exceeded_part, sum_resources
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import ALLOCATED_STATUSES, Vote
from pumice.scheduler.volcano.framework.arguments import NoArguments, parser
from pumice.scheduler.volcano.framework.interface import Event, EventHandler
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins._fair_share import real_capability
from pumice.scheduler.volcano.plugins._queue_util import inqueue_resource, min_resources_list

PLUGIN_NAME = "cohort"

COHORT_ANNOTATION = "scheduling.pumice.io/cohort"
BORROWING_LIMIT_ANNOTATION = "scheduling.pumice.io/borrowing-limit"
LENDING_LIMIT_ANNOTATION = "scheduling.pumice.io/lending-limit"
RECLAIM_ANNOTATION = "scheduling.pumice.io/reclaim-within-cohort"
RECLAIM_NEVER = "Never"
RECLAIM_LOWER_PRIORITY = "LowerPriority"
RECLAIM_ANY = "Any"
RECLAIM_POLICIES = (RECLAIM_NEVER, RECLAIM_LOWER_PRIORITY, RECLAIM_ANY)

log = logging.getLogger(__name__)

_INF = float("inf")


@dataclass
class Member:
    """One queue of a cohort: ``nominal`` (spec.deserved) on the ``names`` it lists,
    ``guaranteed`` = nominal - lendingLimit, ``ceiling`` = nominal + borrowingLimit (infinite
    where unset); ``used`` and ``reserved`` (Inqueue jobs' unallocated minResources) change during
    the session."""

    queue: str
    cohort: str
    names: tuple[str, ...]
    nominal: Resource
    guaranteed: Resource
    ceiling: Resource
    reclaim: str = RECLAIM_NEVER
    used: Resource = field(default_factory=Resource)
    reserved: Resource = field(default_factory=Resource)


def _limit(raw: str, annotation: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{annotation}: not JSON: {e}") from e
    if not isinstance(value, dict):
        raise ValueError(f"{annotation}: want a JSON object of quantities, got {raw!r}")
    return value


def member_of(q: QueueInfo) -> Member | None:
    """The queue's cohort membership from its annotations and ``spec.deserved``, or None.

    Raises:
        ValueError: a limit annotation is not a JSON ResourceList of quantities, or the reclaim
            policy is not one of Never, LowerPriority, Any.
    """
    ann = (q.queue.get("metadata") or {}).get("annotations") or {}
    cohort = ann.get(COHORT_ANNOTATION)
    if not cohort:
        return None
    deserved = ((q.queue.get("spec") or {}).get("deserved")) or {}
    names = tuple(sorted(str(n) for n in deserved if str(n) != PODS))
    nominal = Resource.from_list(deserved)
    try:
        lending = _limit(ann[LENDING_LIMIT_ANNOTATION], LENDING_LIMIT_ANNOTATION) if LENDING_LIMIT_ANNOTATION in ann else None
        borrowing = _limit(ann[BORROWING_LIMIT_ANNOTATION], BORROWING_LIMIT_ANNOTATION) if BORROWING_LIMIT_ANNOTATION in ann else {}
        lend = Resource.from_list(lending) if lending is not None else nominal
        borrow = Resource.from_list(borrowing)
    except QuantityError as e:
        raise ValueError(str(e)) from e
    guaranteed = exceeded_part(nominal, lend)
    ceiling = Resource(
        nominal.milli_cpu + borrow.milli_cpu if "cpu" in borrowing else _INF,
        nominal.memory + borrow.memory if "memory" in borrowing else _INF,
        {n: nominal.get(n) + borrow.get(n) for n in borrowing if n not in ("cpu", "memory")},
    )
    reclaim = str(ann.get(RECLAIM_ANNOTATION, RECLAIM_NEVER))
    if reclaim not in RECLAIM_POLICIES:
        raise ValueError(f"{RECLAIM_ANNOTATION}: want one of {', '.join(RECLAIM_POLICIES)}, got {reclaim!r}")
    return Member(q.name, str(cohort), names, nominal, guaranteed, ceiling, reclaim)


def within_nominal(m: Member, extra: Resource, *, reserved: bool) -> bool:
    """Would ``m`` stay within its nominal quota on every dimension ``extra`` asks for?"""
    after = m.used + (m.reserved if reserved else Resource()) + extra
    return all(after.get(n) <= m.nominal.get(n) + 1e-9 for n in m.names if extra.get(n) > 0)


def reclaim_victims(m: Member, members: Mapping[str, Member], request: Resource,
                    reclaimees: list[tuple[TaskInfo, str, int]], priority: int) -> list[TaskInfo]:
    """Victims for a task of ``m`` asking ``request``: among ``reclaimees`` (task, its queue, its
    job's priority) those of other members of ``m``'s cohort that use more than their nominal
    quota of a dimension ``request`` asks for, each taken while its queue is still above nominal
    there (in the given order); with policy ``LowerPriority`` only jobs below ``priority``."""
    dims = [n for n in m.names if request.get(n) > 0]
    left: dict[str, Resource] = {}
    out: list[TaskInfo] = []
    for t, qname, prio in reclaimees:
        v = members.get(qname)
        if v is None or v.queue == m.queue or v.cohort != m.cohort:
            continue
        if m.reclaim == RECLAIM_LOWER_PRIORITY and prio >= priority:
            continue
        used = left.get(qname, v.used)
        if not any(used.get(n) > v.nominal.get(n) + 1e-9 and t.resreq.get(n) > 0 for n in dims if n in v.names):
            continue
        left[qname] = exceeded_part(used, t.resreq)
        out.append(t)
    return out


def cap_of(m: Member, members: list[Member], *, reserved: bool) -> Resource:
    """What ``m`` may use in total now: its guaranteed part plus the cohort pool's unborrowed
    rest, capped by its ceiling (capacity's realCapability with the pool as the parent). With
    ``reserved`` the others' reservations for admitted jobs count as used (enqueue), without
    them only what is allocated (allocate), as capacity's enqueue and allocatable do."""
    pool = sum_resources(exceeded_part(p.nominal, p.guaranteed) for p in members)
    others = sum_resources(
        exceeded_part(p.used + (p.reserved if reserved else Resource()), p.guaranteed) for p in members if p.queue != m.queue)
    return real_capability(pool, others, m.guaranteed, m.ceiling)


def insufficient(m: Member, members: list[Member], extra: Resource, *, reserved: bool) -> list[str]:
    """The quota dimensions of ``m`` that ``extra`` more would exceed (empty: it fits)."""
    cap = cap_of(m, members, reserved=reserved)
    after = m.used + (m.reserved if reserved else Resource()) + extra
    return [n for n in m.names if extra.get(n) > 0 and after.get(n) > cap.get(n) + 1e-9]


class CohortPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NoArguments) -> None:
        self.args = args
        self.members: dict[str, Member] = {}
        self.invalid: dict[str, str] = {}

    def cohort_members(self, cohort: str) -> list[Member]:
        return [m for m in self.members.values() if m.cohort == cohort]

    def on_session_open(self, ssn: Session) -> None:
        self._read_members(ssn)
        self._account_jobs(ssn)
        self._register_reclaim_fns(ssn)
        self._register_quota_fns(ssn)

        def on_allocate(ev: Event) -> None:
            self._account(ssn, ev.task, +1)

        def on_deallocate(ev: Event) -> None:
            self._account(ssn, ev.task, -1)

        ssn.add_event_handler(EventHandler(allocate_func=on_allocate, deallocate_func=on_deallocate))

    def _read_members(self, ssn: Session) -> None:
        """The cohort member of each Queue from its annotations; a Queue whose annotations do not
        parse is logged and kept in :attr:`invalid` (its jobs are refused with the reason)."""
        for name in sorted(ssn.queues):
            q = ssn.queues[name]
            try:
                m = member_of(q)
            except ValueError as e:
                log.error("cohort: Queue %s: %s", name, e)
                self.invalid[name] = str(e)
                continue
            if m is not None:
                self.members[name] = m

    def _account_jobs(self, ssn: Session) -> None:
        """Each member's used (allocated tasks) and reserved (inqueue jobs' minResources)."""
        for job in ssn.jobs.values():
            m = self.members.get(job.queue)
            if m is None:
                continue
            for s in ALLOCATED_STATUSES:
                for t in job.task_status_index.get(s, {}).values():
                    m.used = m.used + t.resreq
            if job.phase == PodGroupPhase.INQUEUE and min_resources_list(job) is not None:
                m.reserved = m.reserved + inqueue_resource(job, job.allocated)

    def _register_reclaim_fns(self, ssn: Session) -> None:
        """Preemptive (within nominal quota, unless reclaim is Never), ReclaimFits and Reclaimable
        (borrowers' tasks above their nominal quota)."""

        def preemptive(q: QueueInfo, tasks: list[TaskInfo]) -> bool:
            m = self.members.get(q.name)
            if m is None:
                return q.name not in self.invalid
            if m.reclaim == RECLAIM_NEVER:
                return False
            return within_nominal(m, sum_resources(t.resreq for t in tasks), reserved=False)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            job = ssn.jobs.get(reclaimer.job)
            m = self.members.get(job.queue) if job is not None else None
            if job is None or m is None:
                return [], Vote.ABSTAIN
            if m.reclaim == RECLAIM_NEVER:
                return [], Vote.PERMIT
            cands = []
            for t in reclaimees:
                tj = ssn.jobs.get(t.job)
                if tj is not None:
                    cands.append((t, tj.queue, tj.priority))
            return reclaim_victims(m, self.members, reclaimer.resreq, cands, job.priority), Vote.PERMIT

        def reclaim_fits(q: QueueInfo, task: TaskInfo) -> bool:
            m = self.members.get(q.name)
            if m is None or m.reclaim == RECLAIM_NEVER:
                return True
            return not insufficient(m, self.cohort_members(m.cohort), task.resreq, reserved=False)

        ssn.add_preemptive_fn(PLUGIN_NAME, preemptive)
        ssn.add_reclaim_fits_fn(PLUGIN_NAME, reclaim_fits)
        ssn.add_reclaimable_fn(PLUGIN_NAME, reclaimable)

    def _register_quota_fns(self, ssn: Session) -> None:
        """Allocatable (the cohort's quota holds the task), JobEnqueueable (it holds the job's
        minResources, or a lender's job is within its nominal quota) and JobEnqueued."""

        def allocatable(q: QueueInfo, task: TaskInfo) -> bool:
            if q.name in self.invalid:
                return False
            m = self.members.get(q.name)
            if m is None:
                return True
            return not insufficient(m, self.cohort_members(m.cohort), task.resreq, reserved=False)

        def enqueueable(job: JobInfo) -> int:
            if job.queue in self.invalid:
                ssn.record_pod_group_event(job, "Warning", "InvalidQueueAnnotation", f"Queue {job.queue}: {self.invalid[job.queue]}")
                return Vote.REJECT
            m = self.members.get(job.queue)
            if m is None or min_resources_list(job) is None:
                return Vote.ABSTAIN
            names = insufficient(m, self.cohort_members(m.cohort), job.min_resources or Resource(), reserved=True)
            if names and m.reclaim != RECLAIM_NEVER and within_nominal(m, job.min_resources or Resource(), reserved=True):
                return Vote.PERMIT
            if names:
                ssn.record_pod_group_event(
                    job, "Normal", "Unschedulable",
                    f"cohort {m.cohort} quota insufficient for queue {m.queue}: " + ", ".join(f"insufficient {n}" for n in names))
                return Vote.REJECT
            return Vote.PERMIT

        def enqueued(job: JobInfo) -> None:
            m = self.members.get(job.queue)
            if m is not None and min_resources_list(job) is not None:
                m.reserved = m.reserved + (job.min_resources or Resource())

        ssn.add_allocatable_fn(PLUGIN_NAME, allocatable)
        ssn.add_job_enqueueable_fn(PLUGIN_NAME, enqueueable)
        ssn.add_job_enqueued_fn(PLUGIN_NAME, enqueued)

    def _account(self, ssn: Session, task: TaskInfo, sign: int) -> None:
        job = ssn.jobs.get(task.job)
        if job is None:
            return
        m = self.members.get(job.queue)
        if m is None:
            return
        m.used = m.used + task.resreq if sign > 0 else exceeded_part(m.used, task.resreq)

    def on_session_close(self, ssn: Session) -> None:
        self.members.clear()
        self.invalid.clear()


parse_arguments = parser(NoArguments)


new = CohortPlugin
