"""drf: dominant resource fairness between jobs, optionally hierarchical between queues.

A job's share is the max over the cluster's resource dimensions (``pods`` included) of
allocated/total. JobOrder: lower share first. Preemptable: a victim's job share after losing
the victim must stay >= the preemptor's share after gaining its task. With
``enableHierarchy`` the queues' ``volcano.sh/hierarchy`` paths form a tree that orders queues
and decides reclaim victims.

Mirrors: volcano pkg/scheduler/plugins/drf/drf.go.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import ALLOCATED_STATUSES, Vote
from pumice.scheduler.volcano.framework.arguments import NoArguments, parser
from pumice.scheduler.volcano.framework.interface import Event, EventHandler
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins._fair_share import dominant_share

PLUGIN_NAME = "drf"
SHARE_DELTA = 0.000001


@dataclass
class DrfAttr:
    allocated: Resource = field(default_factory=Resource)
    share: float = 0.0
    dominant_resource: str = ""


@dataclass
class HNode:
    """A node of the hierarchical-DRF tree (leaves are jobs)."""

    hierarchy: str
    weight: float = 1.0
    attr: DrfAttr = field(default_factory=DrfAttr)
    request: Resource = field(default_factory=Resource)
    saturated: bool = False
    children: dict[str, HNode] | None = field(default_factory=dict)

    def clone(self) -> HNode:
        return HNode(
            self.hierarchy,
            self.weight,
            DrfAttr(self.attr.allocated, self.attr.share, self.attr.dominant_resource),
            self.request,
            self.saturated,
            None if self.children is None else {k: c.clone() for k, c in self.children.items()},
        )


class DrfPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NoArguments) -> None:
        self.args = args
        self.total = Resource()
        self.total_allocated = Resource()
        self.job_attrs: dict[str, DrfAttr] = {}
        self.root = HNode("root")

    def calculate_share(self, allocated: Resource) -> tuple[str, float]:
        return dominant_share(allocated, self.total)

    def update_share(self, attr: DrfAttr) -> None:
        attr.dominant_resource, attr.share = self.calculate_share(attr.allocated)

    # ----- hierarchy ----------------------------------------------------------------------
    def _build(self, root: HNode, job: JobInfo, attr: DrfAttr, hierarchy: str, weights: str) -> None:
        node = root
        paths = hierarchy.split("/")
        ws = weights.split("/")
        for i in range(1, len(paths)):
            assert node.children is not None
            child = node.children.get(paths[i])
            if child is None:
                try:
                    w = float(ws[i])
                except (IndexError, ValueError):
                    w = 0.0
                child = HNode(paths[i], max(w, 1.0))
                node.children[paths[i]] = child
            node = child
        assert node.children is not None
        node.children[job.uid] = HNode(job.uid, 1.0, attr, job.total_request, children=None)

    def _update_h(self, node: HNode, demanding: set[str]) -> None:
        if node.children is None:
            node.saturated = _resource_saturated(node.attr.allocated, node.request, demanding)
            return
        mdr = 1.0
        for c in node.children.values():
            self._update_h(c, demanding)
            if c.attr.share != 0 and not c.saturated:
                _, s = self.calculate_share(c.attr.allocated)
                mdr = min(mdr, s)
        alloc = Resource()
        saturated = True
        for c in node.children.values():
            if not c.saturated:
                saturated = False
            if c.attr.share != 0:
                alloc = alloc + (c.attr.allocated if c.saturated else c.attr.allocated.multi(mdr / c.attr.share))
        node.attr.allocated = alloc
        node.attr.dominant_resource, node.attr.share = self.calculate_share(alloc)
        node.saturated = saturated

    def update_hierarchical_share(
        self, root: HNode, total_allocated: Resource, job: JobInfo, attr: DrfAttr, hierarchy: str, weights: str
    ) -> None:
        demanding = {rn for rn in self.total.resource_names() if total_allocated.get(rn) < self.total.get(rn)}
        self._build(root, job, attr, hierarchy, weights)
        self._update_h(root, demanding)

    @staticmethod
    def compare_queues(root: HNode, lq: QueueInfo, rq: QueueInfo) -> float:
        ln, rn = root, root
        lp, rp = lq.hierarchy.split("/"), rq.hierarchy.split("/")
        depth = min(len(lp), len(rp))
        for i in range(depth):
            if not ln.saturated and rn.saturated:
                return -1
            if ln.saturated and not rn.saturated:
                return 1
            lv, rv = ln.attr.share / ln.weight, rn.attr.share / rn.weight
            if lv == rv:
                if i < depth - 1:
                    assert ln.children is not None and rn.children is not None
                    nl, nr = ln.children.get(lp[i + 1]), rn.children.get(rp[i + 1])
                    if nl is None or nr is None:
                        return 0
                    ln, rn = nl, nr
            else:
                return lv - rv
        return 0

    # ----- session ------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self.total = ssn.total_resource
        opt = ssn.plugin_option(PLUGIN_NAME)
        hierarchy = bool(opt and opt.enabled("enableHierarchy"))
        self._account_jobs(ssn, hierarchy)
        self._register_preemptable_fn(ssn)
        if hierarchy:
            self._register_hierarchy_fns(ssn)
        self._register_job_order_fn(ssn)

        def on_alloc(ev: Event) -> None:
            self._apply(ssn, ev.task, +1, hierarchy)

        def on_dealloc(ev: Event) -> None:
            self._apply(ssn, ev.task, -1, hierarchy)

        ssn.add_event_handler(EventHandler(on_alloc, on_dealloc))

    def _account_jobs(self, ssn: Session, hierarchy: bool) -> None:
        """Each job's allocated resources and dominant share; when hierarchical, also the queue tree."""
        total = self.total
        total_key = (total.milli_cpu, total.memory, tuple(total.scalars.items()))

        def share(job: JobInfo) -> tuple[Resource, str, float]:
            alloc = _allocated(job)
            return (alloc, *dominant_share(alloc, total))

        def make(job: JobInfo) -> DrfAttr:
            alloc, dominant, job_share = ssn.job_memo.job("drf.share", job, total_key, share)
            return DrfAttr(alloc, job_share, dominant)

        if not hierarchy:
            # kept across sessions by the live cache: _apply changes an attr in place only for
            # a job whose task it moves, which the next snapshot names as changed
            self.job_attrs = ssn.job_table("drf.attrs", total_key, make, _attr_key)
            return
        for job in ssn.jobs.values():
            attr = make(job)
            self.job_attrs[job.uid] = attr
            if hierarchy:
                q = ssn.queues.get(job.queue)
                if q is not None:
                    self.total_allocated = self.total_allocated + attr.allocated
                    self.update_hierarchical_share(self.root, self.total_allocated, job, attr, q.hierarchy, q.weights)

    def _register_preemptable_fn(self, ssn: Session) -> None:
        """Preemptable: a victim's job share after losing it stays >= the preemptor's after gaining."""

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            latt = self.job_attrs.get(preemptor.job)
            if latt is None:
                return [], Vote.PERMIT
            _, ls = self.calculate_share(latt.allocated + preemptor.resreq)
            allocations: dict[str, Resource] = {}
            victims = []
            for p in preemptees:
                if p.job not in allocations:
                    ratt = self.job_attrs.get(p.job)
                    if ratt is None:
                        continue
                    allocations[p.job] = ratt.allocated
                allocations[p.job] = allocations[p.job] - p.resreq
                _, rs = self.calculate_share(allocations[p.job])
                if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                    victims.append(p)
            return victims, Vote.PERMIT

        ssn.add_preemptable_fn(PLUGIN_NAME, preemptable)

    def _register_hierarchy_fns(self, ssn: Session) -> None:
        """QueueOrder by the hierarchical-DRF tree and Reclaimable (victims whose queue would
        still compare above the reclaimer's)."""

        def queue_order(l: QueueInfo, r: QueueInfo) -> int:  # noqa: E741
            ret = self.compare_queues(self.root, _hq(l), _hq(r))
            return -1 if ret < 0 else (1 if ret > 0 else 0)

        ssn.add_queue_order_fn(PLUGIN_NAME, queue_order)

        ssn.add_reclaimable_fn(PLUGIN_NAME, lambda reclaimer, reclaimees: self._reclaim_victims(ssn, reclaimer, reclaimees))

    def _reclaim_victims(self, ssn: Session, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Reclaimable under enableHierarchy, on a clone of the tree. Mirrors: drf.go reclaimFn."""
        total_alloc = self.total_allocated
        root = self.root.clone()
        ljob = ssn.jobs.get(reclaimer.job)
        if ljob is None or ljob.queue not in ssn.queues or ljob.uid not in self.job_attrs:
            return [], Vote.PERMIT
        lq = _hq(ssn.queues[ljob.queue])
        lattr = DrfAttr(self.job_attrs[ljob.uid].allocated + reclaimer.resreq)
        total_alloc = total_alloc + reclaimer.resreq
        self.update_share(lattr)
        self.update_hierarchical_share(root, total_alloc, ljob, lattr, lq.hierarchy, lq.weights)
        victims = []
        for p in reclaimees:
            rjob = ssn.jobs.get(p.job)
            if rjob is None or rjob.queue not in ssn.queues or rjob.uid not in self.job_attrs:
                continue
            rq = _hq(ssn.queues[rjob.queue])
            total_alloc = total_alloc - p.resreq
            rattr = DrfAttr(self.job_attrs[rjob.uid].allocated - p.resreq)
            self.update_share(rattr)
            self.update_hierarchical_share(root, total_alloc, rjob, rattr, rq.hierarchy, rq.weights)
            ret = self.compare_queues(root, lq, rq)
            total_alloc = total_alloc + p.resreq
            rattr.allocated = rattr.allocated + p.resreq
            self.update_share(rattr)
            self.update_hierarchical_share(root, total_alloc, rjob, rattr, rq.hierarchy, rq.weights)
            if ret < 0:
                victims.append(p)
        return victims, Vote.PERMIT

    def _register_job_order_fn(self, ssn: Session) -> None:
        """JobOrder: lower dominant share first."""

        def job_order(l: JobInfo, r: JobInfo) -> int:  # noqa: E741
            ls = self.job_attrs[l.uid].share if l.uid in self.job_attrs else 0.0
            rs = self.job_attrs[r.uid].share if r.uid in self.job_attrs else 0.0
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        ssn.add_job_order_fn(PLUGIN_NAME, job_order)

    def _apply(self, ssn: Session, task: TaskInfo, sign: int, hierarchy: bool) -> None:
        job = ssn.jobs.get(task.job)
        attr = self.job_attrs.get(task.job)
        if job is None or attr is None:
            return
        attr.allocated = attr.allocated + task.resreq if sign > 0 else attr.allocated - task.resreq
        self.update_share(attr)
        if hierarchy:
            q = ssn.queues.get(job.queue)
            if q is not None:
                hq = _hq(q)
                self.total_allocated = (
                    self.total_allocated + task.resreq if sign > 0 else self.total_allocated - task.resreq
                )
                self.update_hierarchical_share(self.root, self.total_allocated, job, attr, hq.hierarchy, hq.weights)

    def on_session_close(self, ssn: Session) -> None:
        self.total = Resource()
        self.total_allocated = Resource()
        self.job_attrs = {}


def _attr_key(a: DrfAttr) -> tuple[Resource, float, str]:
    return (a.allocated, a.share, a.dominant_resource)


def _allocated(job: JobInfo) -> Resource:
    """The job's allocated-status tasks' requests, added in index order."""
    alloc = Resource()
    for s, b in job.task_status_index.items():
        if s in ALLOCATED_STATUSES:
            for t in b.values():
                alloc = alloc + t.resreq
    return alloc


def _hq(q: QueueInfo) -> QueueInfo:
    return q


def _resource_saturated(allocated: Resource, request: Resource, demanding: set[str]) -> bool:
    for rn in allocated.resource_names():
        if allocated.get(rn) != 0 and request.get(rn) != 0 and allocated.get(rn) >= request.get(rn):
            return True
        if rn not in demanding and request.get(rn) != 0:
            return True
    return False


parse_arguments = parser(NoArguments)


new = DrfPlugin
