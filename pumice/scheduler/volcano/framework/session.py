"""Session: one scheduling cycle's blackboard.

A session owns a snapshot (:class:`ClusterInfo`), the plugins built from the configuration
(tier by tier, in order) and the callbacks they registered, keyed by extension point and plugin
name. Actions read and change scheduling state only through the session and
:class:`~pumice.scheduler.volcano.framework.statement.Statement`; writes leave through the
:class:`SessionCache` seam (bind, evict) and, on close, as PodGroup/Queue status in
:class:`CloseResult`.

Mirrors: volcano pkg/scheduler/framework/session.go, session_plugins.go, framework.go.
Deviates: plugins are closed in configured order (upstream: map order); ties between equal
best nodes go to the first in node order (upstream: random).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from pumice._util.clock import rfc3339
from pumice.api import Obj
from pumice.api.volcano.constants import (
    JOB_ALLOCATED_HYPERNODE_ANNOTATION,
    PodGroupConditionType,
    PodGroupPhase,
)
from pumice.scheduler.volcano import metrics
from pumice.scheduler.volcano.api.hyper_node_info import HyperNodesInfo, build_hypernodes
from pumice.scheduler.volcano.api.job_info import JobInfo, JobMemo, exact_data, may_act, untouched
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.queue_info import ClusterInfo, QueueInfo
from pumice.scheduler.volcano.api.resource import Resource, sum_resources, whole
from pumice.scheduler.volcano.api.running_sum import JobTable, Parts, RunningSums, RunningTally, fold, tally
from pumice.scheduler.volcano.api.sub_job_info import SubJobInfo, adjust_sub_job_topology
from pumice.scheduler.volcano.api.task_info import TaskInfo, has_pod_affinity
from pumice.scheduler.volcano.api.types import (
    ALL_NODE_UNAVAILABLE_MSG,
    ALLOCATED_STATUSES,
    COMPLETED_STATUSES,
    POD_GROUP_READY,
    EvictionContext,
    FitError,
    Status,
    StatusCode,
    TaskStatus,
    ValidateResult,
    Vote,
)
from pumice.scheduler.volcano.conf import PluginOption, SchedulerConfiguration
from pumice.scheduler.volcano.framework.callbacks import (
    AllocatableFn,
    BatchNodeOrderFn,
    BestNodeFn,
    Callbacks,
    CallbackTable,
    HyperNodeGradientFn,
    HyperNodeOrderFn,
    JobBoolFn,
    JobCompareFn,
    JobNotifyFn,
    JobValidFn,
    JobVoteFn,
    NodeOrderFn,
    PredicateFn,
    PreemptiveFn,
    PrePredicateFn,
    QueueCompareFn,
    QueueFn,
    SubJobBoolFn,
    SubJobCompareFn,
    SubJobGradientFn,
    SubJobVoteFn,
    TaskCompareFn,
    UnifiedEvictableFn,
    VictimQueueCompareFn,
    VictimsFn,
    VictimTasksFn,
)
from pumice.scheduler.volcano.framework.interface import Event, EventHandler, Plugin, SessionCache
from pumice.scheduler.volcano.framework.node_arrays import NodeArrays
from pumice.scheduler.volcano.framework.util import PriorityQueue, copy_status

log = logging.getLogger("pumice.scheduler.volcano")

_V = TypeVar("_V")



@dataclass
class CloseResult:
    """What closing a session produces for the status writers.

    ``pod_groups``: ``<ns>/<name>`` -> new status dict, for every job with a PodGroup (but
    the jobs whose close the live cache knows to change nothing, see :meth:`Session.close`);
    ``changed``: keys whose status materially changed; ``events``: (pg key, type, reason,
    message); ``pod_conditions``: task key -> (reason, message, nominatedNodeName) for
    Pending/Allocated/Pipelined tasks; ``queue_allocated``: queue -> ResourceList;
    ``pod_group_annotations``: ``<ns>/<name>`` -> annotations to merge into the PodGroup (the
    ``volcano.sh/job-allocated-hypernode`` of a topology job whose value changed).
    """

    pod_groups: dict[str, Obj] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    pod_conditions: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    queue_allocated: dict[str, dict[str, str]] = field(default_factory=dict)
    pod_group_annotations: dict[str, dict[str, str]] = field(default_factory=dict)


def _cond_key(c: Obj) -> tuple[Any, ...]:
    return (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))


EXTENSION_STATUS_FIELDS = ("positionInQueue",)
"""PodGroup status fields that are pumice's extensions (see plugins/queue_position.py)."""


def status_changed(old: Obj, new: Obj) -> bool:
    """PodGroup status comparison ignoring condition timestamps and transitionIDs."""
    for k in ("phase", "running", "succeeded", "failed", *EXTENSION_STATUS_FIELDS):
        if (old.get(k) or 0) != (new.get(k) or 0):
            return True
    oc = sorted(_cond_key(c) for c in old.get("conditions") or [])
    nc = sorted(_cond_key(c) for c in new.get("conditions") or [])
    return oc != nc


class Session:
    """One cycle. Build with :func:`open_session`; finish with :meth:`close`."""

    def __init__(
        self,
        cluster: ClusterInfo,
        conf: SchedulerConfiguration,
        cache: SessionCache,
        *,
        uid: str | None = None,
        vectorize: bool = True,
        seed: int = 0,
    ) -> None:
        self.uid = uid or session_uid(seed)
        self.cluster = cluster
        self.jobs: dict[str, JobInfo] = cluster.jobs
        self.nodes: dict[str, NodeInfo] = cluster.nodes
        self.node_list: list[NodeInfo] = (cluster.node_list if cluster.node_list is not None
                                          else list(cluster.nodes.values()))
        self.queues: dict[str, QueueInfo] = cluster.queues
        self.priority_classes = cluster.priority_classes
        self.namespaces = cluster.namespaces
        self.volumes = cluster.volumes
        self.now = cluster.now
        self._now_rfc3339: str | None = None
        self.conf = conf
        self.tiers = conf.tiers
        self.configurations = conf.configurations
        self.cache = cache
        self.vectorize = vectorize
        self.total_resource: Resource = (cluster.total_allocatable if cluster.total_allocatable is not None
                                         else sum_resources(n.allocatable for n in self.node_list))
        self.plugins: dict[str, Plugin] = {}
        self.event_handlers: list[EventHandler] = []
        self.callbacks = Callbacks.for_tiers(conf.tiers)
        base_status = cluster.pod_group_status
        # the live cache's (cluster.changes set) holds exactly the session's jobs
        self.pod_group_status: dict[str, Obj] = base_status if base_status is not None and (
            cluster.changes is not None or all(uid in base_status for uid in self.jobs)) else {
            j.uid: base_status[j.uid] if base_status is not None and j.uid in base_status
            else copy_status((j.pod_group or {}).get("status") or {})
            for j in self.jobs.values()
        }
        """Each job's PodGroup status as the snapshot handed it out (read-only; close compares)."""
        self.enabled_actions: set[str] = set(conf.actions)
        self.handed_out = cluster.handed_out
        self.close_quiet = cluster.close_quiet
        self._closing_uids: set[str] | None = None
        """The jobs :meth:`close` computes, when it leaves the others out (None: every job)."""
        self._closing: Iterable[JobInfo] = self.jobs.values()
        self.job_memo: JobMemo = cluster.job_memo if cluster.job_memo is not None else JobMemo()
        """Results computed from the jobs as the snapshot handed them out, kept across sessions
        by the live cache while the jobs do not change (:class:`JobMemo`); use it before the
        actions run (``on_session_open``), or later only for a result of the job's tasks and
        phase alone (every change of those resets the job's version, so it is computed afresh)."""
        memo = self.job_memo

        def names_entry(job: JobInfo) -> Mapping[Hashable, int]:
            return memo.job("session.scalar_counts", job, None, _scalar_counts)

        # the names the jobs' tasks request: those that a running count of the jobs requesting
        # each name has above 0
        counts = self.job_tally("session.scalars", names_entry)
        extra: set[str] = set()
        if counts is not None:
            extra.update(counts)  # type: ignore[arg-type]
        else:
            for j in self.jobs.values():
                extra.update(memo.job("session.scalars", j, None, _task_scalars))
        self._any_job_pod_affinity: bool | None = None
        self.node_memo: dict[Any, Any] = cluster.node_memo if cluster.node_memo is not None else {}
        """Memo for results that depend only on the session's Nodes (names, order, wire objects) and
        the keys a plugin puts in (a Pod spec part, its own arguments): kept across sessions by
        the live cache until a Node changes, per session otherwise."""
        ch = cluster.changes
        prev = cluster.node_arrays
        rows: list[int] | None = None
        if ch is not None and ch.nodes is not None and prev is not None and prev.generation == ch.generation - 1:
            # the live cache named every Node that is not the object the last session had
            pos = ch.node_order
            rows = [pos[n] for n in ch.nodes if n in pos]
            check = self.job_memo.on_mismatch
            if check is not None and len(prev.nodes) == len(self.node_list):
                missed = [i for i, (a, b) in enumerate(zip(prev.nodes, self.node_list, strict=True))
                          if a is not b and i not in rows]
                if missed:
                    check(f"node arrays: rows {missed} replaced but not named as changed")
        self.arrays = NodeArrays.reuse(prev, self.node_list, sorted(extra), rows)
        if ch is not None:
            self.arrays.generation = ch.generation
        if cluster.on_node_arrays is not None:
            cluster.on_node_arrays(self.arrays)
        self.last_processed_node_index = 0
        self.nodes_in_shard: set[str] | None = cluster.nodes_in_shard
        self._shard_mask: np.ndarray | None = None
        self.evicted: list[tuple[TaskInfo, str]] = []
        self.events: list[tuple[str, str, str, str]] = []
        self.pod_group_annotations: dict[str, dict[str, str]] = {}
        self._pg_conditions: dict[str, list[Obj]] = {}
        """Job uid -> its PodGroup conditions as this session set them (see
        :meth:`update_pod_group_condition`)."""
        self.schedule_start_timestamp: float | None = None
        """When enqueue ran in this session (epoch seconds), None before. Upstream stamps the
        session's copy of every job whose ``ScheduleStartTimestamp`` is zero with that time; the
        cache's job never carries one, so it is the same for every job and kept here once."""
        self.pod_group_status_fields: dict[str, dict[str, Any]] = {}
        """Extension status field -> (job uid -> value), set by plugins before close; a job
        missing from a field's map loses that field (e.g. ``positionInQueue``). A plugin that
        sets a field in its ``on_session_close`` puts the (empty) entry in at open already."""
        self.batch_predicates: dict[str, Callable[[TaskInfo], tuple[np.ndarray, Any]]] = {}
        self.batch_scores: dict[str, Callable[[TaskInfo, np.ndarray], np.ndarray]] = {}
        self.queue_metrics: dict[str, dict[str, Any]] = {}
        self.held_jobs: dict[str, ValidateResult] = {}
        """Jobs a plugin keeps out of scheduling on purpose, not for want of room (job uid -> its
        verdict; pumice's ``wait-for-pods-ready``): their ``Unschedulable`` condition (gang) and
        Warning carry that reason instead of blaming resources."""
        self.plugin_open_seconds: dict[str, float] = {}
        self.current_action = ""
        self.errors: list[tuple[str, str, str, str]] = []
        self.hypernodes: HyperNodesInfo = cluster.hypernodes or build_hypernodes((), list(self.nodes), {})
        self._hn_nodes: dict[str, list[NodeInfo]] = {}
        self.old_allocated_hypernode: dict[str, str] = {
            j.uid: j.allocated_hypernode for j in self._topology_candidates() if j.network_topology is not None}
        """The allocated HyperNode of each job with a network topology as handed out (close
        writes the annotation when it changed)."""
        self._adjust_network_topology()

    # ----- registration -------------------------------------------------------------------
    def add_fn(self, point: str, plugin: str, fn: Callable[..., Any]) -> None:
        """Register ``fn`` for the extension point named ``point`` (upstream camelCase).

        The typed ``add_*_fn`` methods below are the plugins' way in; this one serves callers
        that pick the point at run time (tests' fake plugins).

        Raises:
            KeyError: an unknown extension point.
        """
        self.callbacks.by_point(point).add(plugin, fn)

    def add_job_order_fn(self, plugin: str, fn: JobCompareFn) -> None:
        self.callbacks.job_order.add(plugin, fn)

    def add_queue_order_fn(self, plugin: str, fn: QueueCompareFn) -> None:
        self.callbacks.queue_order.add(plugin, fn)

    def add_victim_queue_order_fn(self, plugin: str, fn: VictimQueueCompareFn) -> None:
        self.callbacks.victim_queue_order.add(plugin, fn)

    def add_task_order_fn(self, plugin: str, fn: TaskCompareFn) -> None:
        self.callbacks.task_order.add(plugin, fn)

    def add_predicate_fn(self, plugin: str, fn: PredicateFn) -> None:
        self.callbacks.predicate.add(plugin, fn)

    def add_pre_predicate_fn(self, plugin: str, fn: PrePredicateFn) -> None:
        self.callbacks.pre_predicate.add(plugin, fn)

    def add_node_order_fn(self, plugin: str, fn: NodeOrderFn) -> None:
        self.callbacks.node_order.add(plugin, fn)

    def add_batch_node_order_fn(self, plugin: str, fn: BatchNodeOrderFn) -> None:
        """``fn(task, nodes)`` returns scores aligned with ``nodes`` (a sequence or ndarray)."""
        self.callbacks.batch_node_order.add(plugin, fn)

    def add_best_node_fn(self, plugin: str, fn: BestNodeFn) -> None:
        self.callbacks.best_node.add(plugin, fn)

    def add_preemptable_fn(self, plugin: str, fn: VictimsFn) -> None:
        self.callbacks.preemptable.add(plugin, fn)

    def add_reclaimable_fn(self, plugin: str, fn: VictimsFn) -> None:
        self.callbacks.reclaimable.add(plugin, fn)

    def add_overused_fn(self, plugin: str, fn: QueueFn) -> None:
        self.callbacks.overused.add(plugin, fn)

    def add_allocatable_fn(self, plugin: str, fn: AllocatableFn) -> None:
        self.callbacks.allocatable.add(plugin, fn)

    def add_reclaim_fits_fn(self, plugin: str, fn: AllocatableFn) -> None:
        """pumice's own extension point (see :class:`Callbacks.reclaim_fits`)."""
        self.callbacks.reclaim_fits.add(plugin, fn)

    def add_preemptive_fn(self, plugin: str, fn: PreemptiveFn) -> None:
        self.callbacks.preemptive.add(plugin, fn)

    def add_job_ready_fn(self, plugin: str, fn: JobBoolFn) -> None:
        self.callbacks.job_ready.add(plugin, fn)

    def add_job_pipelined_fn(self, plugin: str, fn: JobVoteFn) -> None:
        self.callbacks.job_pipelined.add(plugin, fn)

    def add_job_enqueueable_fn(self, plugin: str, fn: JobVoteFn) -> None:
        self.callbacks.job_enqueueable.add(plugin, fn)

    def add_job_enqueued_fn(self, plugin: str, fn: JobNotifyFn) -> None:
        self.callbacks.job_enqueued.add(plugin, fn)

    def add_job_valid_fn(self, plugin: str, fn: JobValidFn) -> None:
        self.callbacks.job_valid.add(plugin, fn)

    def add_job_starving_fns(self, plugin: str, fn: JobBoolFn) -> None:
        self.callbacks.job_starving.add(plugin, fn)

    def add_victim_tasks_fns(self, plugin: str, fn: VictimTasksFn) -> None:
        self.callbacks.victim_tasks.add(plugin, fn)

    def add_hyper_node_order_fn(self, plugin: str, fn: HyperNodeOrderFn) -> None:
        self.callbacks.hyper_node_order.add(plugin, fn)

    def add_hyper_node_gradient_for_job_fn(self, plugin: str, fn: HyperNodeGradientFn) -> None:
        self.callbacks.hyper_node_gradient_for_job.add(plugin, fn)

    def add_hyper_node_gradient_for_sub_job_fn(self, plugin: str, fn: SubJobGradientFn) -> None:
        self.callbacks.hyper_node_gradient_for_sub_job.add(plugin, fn)

    def add_unified_evictable_fn(self, plugin: str, fn: UnifiedEvictableFn) -> None:
        self.callbacks.unified_evictable.add(plugin, fn)

    def add_sub_job_ready_fn(self, plugin: str, fn: SubJobBoolFn) -> None:
        self.callbacks.sub_job_ready.add(plugin, fn)

    def add_sub_job_pipelined_fn(self, plugin: str, fn: SubJobVoteFn) -> None:
        self.callbacks.sub_job_pipelined.add(plugin, fn)

    def add_sub_job_order_fn(self, plugin: str, fn: SubJobCompareFn) -> None:
        self.callbacks.sub_job_order.add(plugin, fn)

    def add_event_handler(self, eh: EventHandler) -> None:
        self.event_handlers.append(eh)

    # ----- what the whole snapshot holds (read at session open) ----------------------------
    def nodes_with_pod_affinity(self) -> Sequence[NodeInfo]:
        """The Nodes that may hold a Pod with podAffinity or podAntiAffinity: the live cache's
        list of them (:attr:`ClusterInfo.pod_affinity_nodes`), every Node without it. Exact only
        before the actions place Pods (``on_session_open``)."""
        hint = self.cluster.pod_affinity_nodes
        if hint is None:
            return self.node_list
        return [self.nodes[n] for n in hint if n in self.nodes]

    def active_jobs(self) -> Iterable[JobInfo]:
        """The jobs an action may have something to do with, in job order: with the live cache's
        index, those that were Pending, had Pending or Pipelined tasks or sub-group policies as
        handed out (:attr:`ClusterInfo.active_jobs`) and those whose tasks or phase this session
        changed since (:attr:`ClusterInfo.job_log`); every job without it. A job left out is past
        Pending, has no Pending or Pipelined task and no sub-group policy. In the ``verify``
        snapshot mode a job left out that is not so is reported as a mismatch."""
        ci = self.cluster
        active, logged, ch = ci.active_jobs, ci.job_log, ci.changes
        jobs = self.jobs
        if active is None or logged is None or ch is None:
            return jobs.values()
        uids = active.union(logged)
        # (jobs.keys() & uids walks the smaller side; set.intersection_update(dict) walks the dict)
        uids = jobs.keys() & uids
        out = [jobs[u] for u in sorted(uids, key=ch.job_order.__getitem__)]
        check = self.job_memo.on_mismatch
        if check is not None:
            missed = [uid for uid, j in jobs.items() if uid not in uids and may_act(j)]
            if missed:
                check(f"active jobs: {missed} may act but were left out")
        return out

    def job_queues(self) -> list[str]:
        """The queue names of the session's jobs as they are now, each once, in the order of its
        first job (job order). With the live cache's hints the groups of running sums keyed by
        each job's queue (:meth:`job_sums`), brought up to date from the jobs named changed and
        those written this session (:attr:`ClusterInfo.job_writes`: a plugin may set
        ``job.queue``, e.g. placement); else a walk over every job. In the ``verify`` snapshot
        mode the groups are compared with a walk (see :meth:`job_sums`)."""
        ci = self.cluster
        writes = ci.job_writes
        running = None if writes is None else self.job_sums("session.job_queues", 1, _queue_entry, also=writes)
        if running is None:
            return list(dict.fromkeys([job.queue for job in self.jobs.values()]))
        return [str(g) for g in running.groups()]

    # ----- running sums -------------------------------------------------------------------
    def job_sums(self, purpose: str, width: int, entry: Callable[[JobInfo], tuple[Hashable, Parts, bool]],
                 also: Iterable[str] = ()) -> RunningSums | None:
        """Per-group sums of ``entry(job)`` = (group, ``width`` parts, exact) over this session's
        jobs, kept by the live cache across sessions (:class:`RunningSums`, one per
        ``purpose``): only the jobs named in :attr:`ClusterInfo.changes` (and ``also``) are
        passed to ``entry`` again, the others keep the parts they had. ``entry`` must be a
        function of what a job's version stands for (use :attr:`job_memo`); ``exact`` False
        says a fold of the parts would not equal the caller's own sum (the group's
        :meth:`RunningSums.sums` is then None). ``also`` names jobs changed since the snapshot
        (e.g. at close: the jobs the session touched).

        Returns None without the live cache's hints (fold afresh). In the ``verify`` snapshot
        mode the sums are compared with a fresh fold (group order, floats and scalar order),
        and a difference is reported as a mismatch (:attr:`JobMemo.on_mismatch`)."""
        ch, store = self.cluster.changes, self.cluster.running_sums
        if ch is None or store is None:
            return None
        rs = store.get(purpose)
        if not isinstance(rs, RunningSums) or rs.width != width:
            rs = store[purpose] = RunningSums(width)
        jobs, order = self.jobs, ch.job_order
        if rs.seen in (ch.generation - 1, ch.generation):
            todo = set(also) if rs.seen == ch.generation else ch.jobs.union(also)
            for uid in sorted(todo):
                job = jobs.get(uid)
                if job is None:
                    rs.remove(uid)
                else:
                    group, parts, exact = entry(job)
                    rs.set(uid, group, parts, order[uid], exact)
        else:
            rs.clear()
            for uid, job in jobs.items():
                group, parts, exact = entry(job)
                rs.set(uid, group, parts, order[uid], exact)
        rs.seen = ch.generation
        check = self.job_memo.on_mismatch
        if check is not None:
            fresh: dict[Hashable, list[Parts]] = {}
            for job in jobs.values():
                group, parts, _exact_parts = entry(job)
                fresh.setdefault(group, []).append(parts)
            _check_sums(check, purpose, rs, {g: fold(ps, width) for g, ps in fresh.items()})
        return rs

    def job_tally(self, purpose: str, entry: Callable[[JobInfo], Mapping[Hashable, int]],
                  also: Iterable[str] = ()) -> dict[Hashable, int] | None:
        """The totals of ``entry(job)`` = ``{key: count}`` over this session's jobs (keys whose
        total is 0 left out; read-only), kept by the live cache across sessions
        (:class:`RunningTally`, one per ``purpose``) and brought up to date from the jobs named
        in :attr:`ClusterInfo.changes` and ``also``, as :meth:`job_sums` (the same contract for
        ``entry`` and ``also``; a returned mapping must not be changed afterwards).

        Returns None without the live cache's hints (count afresh). In the ``verify`` snapshot
        mode the totals are compared with a fresh count, and a difference is reported as a
        mismatch (:attr:`JobMemo.on_mismatch`)."""
        ch, store = self.cluster.changes, self.cluster.running_sums
        if ch is None or store is None:
            return None
        rt = store.get(purpose)
        if not isinstance(rt, RunningTally):
            rt = store[purpose] = RunningTally()
        jobs = self.jobs
        if rt.seen in (ch.generation - 1, ch.generation):
            todo = set(also) if rt.seen == ch.generation else ch.jobs.union(also)
            for uid in sorted(todo):
                job = jobs.get(uid)
                if job is None:
                    rt.remove(uid)
                else:
                    rt.set(uid, entry(job))
        else:
            rt.clear()
            for uid, job in jobs.items():
                rt.set(uid, entry(job))
        rt.seen = ch.generation
        check = self.job_memo.on_mismatch
        if check is not None:
            fresh = tally(entry(job) for job in jobs.values())
            if len(rt) != len(jobs) or rt.totals != fresh:
                check(f"running tally {purpose}: {rt.totals!r} over {len(rt)} jobs != {fresh!r} over {len(jobs)} "
                      f"counted afresh")
        return rt.totals

    def job_table(self, purpose: str, inputs: Hashable, make: Callable[[JobInfo], _V],
                  key: Callable[[_V], Any]) -> dict[str, _V]:
        """``{uid: make(job)}`` over this session's jobs. With the live cache the dict is kept
        across sessions (one per ``purpose``, remade when ``inputs`` change) and only the jobs
        named in :attr:`ClusterInfo.changes` are passed to ``make`` again; so ``make`` must be a
        function of what a job's version stands for and ``inputs`` (use :attr:`job_memo`).
        The session may change a value in place only for a job whose tasks it changes (that job
        is then named as changed in the next snapshot, and its value made afresh).

        In the ``verify`` snapshot mode every value is compared (through ``key``, as plain
        data) with a fresh ``make(job)``, and a difference is reported as a mismatch."""
        ch, store = self.cluster.changes, self.cluster.running_sums
        if ch is None or store is None:
            return {uid: make(job) for uid, job in self.jobs.items()}
        table = store.get(purpose)
        jobs = self.jobs
        if (not isinstance(table, JobTable) or table.inputs != inputs
                or table.seen not in (ch.generation - 1, ch.generation)):
            table = store[purpose] = JobTable(inputs)
            table.values = {uid: make(job) for uid, job in jobs.items()}
        elif table.seen != ch.generation:
            values = table.values
            for uid in sorted(ch.jobs):
                job = jobs.get(uid)
                if job is None:
                    values.pop(uid, None)
                else:
                    values[uid] = make(job)
        table.seen = ch.generation
        check = self.job_memo.on_mismatch
        if check is not None:
            if table.values.keys() != jobs.keys():
                check(f"job table {purpose}: jobs {sorted(table.values)} != {sorted(jobs)}")
            for uid, job in jobs.items():
                got, want = key(table.values[uid]), key(make(job))
                if exact_data(got) != exact_data(want):
                    check(f"job table {purpose} of {uid}: {got!r} != {want!r} made afresh")
        return table.values  # type: ignore[no-any-return]

    def node_sums(self, purpose: str, part: Callable[[NodeInfo], Resource]) -> Resource | None:
        """The sum of ``part(node)`` over the session's Nodes in node order, kept by the live cache
        across sessions like :meth:`job_sums` (only the Nodes replaced since the last snapshot
        are passed to ``part`` again; a change of the Node list or order starts afresh). None
        without the live cache's hints, or when the running total is not known to be exact
        (:class:`RunningSums`): fold afresh then. ``verify`` mode compares it with a fresh fold."""
        ch, store = self.cluster.changes, self.cluster.running_sums
        if ch is None or store is None:
            return None
        rs = store.get(purpose)
        if not isinstance(rs, RunningSums) or rs.width != 1:
            rs = store[purpose] = RunningSums(1)
        nodes, pos = self.nodes, ch.node_order
        if ch.nodes is not None and rs.seen == ch.generation - 1:
            for name in sorted(ch.nodes):
                n = nodes.get(name)
                if n is None:
                    rs.remove(name)
                else:
                    rs.set(name, None, (part(n),), pos[name])
        elif rs.seen != ch.generation:
            rs.clear()
            for name, n in nodes.items():
                rs.set(name, None, (part(n),), pos[name])
        rs.seen = ch.generation
        check = self.job_memo.on_mismatch
        if check is not None:
            _check_sums(check, purpose, rs, {None: fold(((part(n),) for n in self.node_list), 1)} if nodes else {})
        got = rs.sums(None)
        return None if got is None else got[0]

    def job_has_pod_affinity(self, job: JobInfo) -> bool:
        """Some task of ``job`` has podAffinity or podAntiAffinity (memoized per job version)."""
        return self.job_memo.job("pod_affinity", job, None, _job_has_pod_affinity)

    def any_job_has_pod_affinity(self) -> bool:
        """Some job of the session as handed out has a task with podAffinity or podAntiAffinity
        (:meth:`job_has_pod_affinity`); with the live cache a running count of such jobs
        (:meth:`job_tally`), else a scan. Computed once per
        session: call it before the actions run."""
        if self._any_job_pod_affinity is None:
            def entry(job: JobInfo) -> Mapping[Hashable, int]:
                return _AFFINITY_ONE if self.job_has_pod_affinity(job) else _NONE

            counts = self.job_tally("session.pod_affinity_jobs", entry)
            self._any_job_pod_affinity = (counts.get("pod_affinity", 0) > 0 if counts is not None
                                          else any(self.job_has_pod_affinity(j) for j in self.jobs.values()))
        return self._any_job_pod_affinity

    # ----- ordering -----------------------------------------------------------------------
    def job_order_compare(self, l: JobInfo, r: JobInfo) -> int:  # noqa: E741
        """The first non-zero plugin job-order verdict (0: plugins tie; no built-in tie-break).

        Mirrors: session_plugins.go JobOrderCompareFn.
        """
        for fn in self.callbacks.job_order.flat():
            c = fn(l, r)
            if c != 0:
                return c
        return 0

    def job_order_fn(self, l: JobInfo, r: JobInfo) -> bool:  # noqa: E741
        """True when job ``l`` goes before ``r``."""
        c = self.job_order_compare(l, r)
        if c != 0:
            return bool(c < 0)
        if l.creation == r.creation:
            return l.uid < r.uid
        return l.creation < r.creation

    def queue_order_fn(self, l: QueueInfo, r: QueueInfo) -> bool:  # noqa: E741
        for fn in self.callbacks.queue_order.flat():
            c = fn(l, r)
            if c != 0:
                return bool(c < 0)
        if l.creation == r.creation:
            return l.uid < r.uid
        return l.creation < r.creation

    def sub_job_order_fn(self, l: SubJobInfo, r: SubJobInfo) -> bool:  # noqa: E741
        """True when sub-job ``l`` goes before ``r``: plugins first, then match index, then uid.

        Mirrors: session_plugins.go SubJobOrderFn.
        """
        for fn in self.callbacks.sub_job_order.flat():
            c = fn(l, r)
            if c != 0:
                return bool(c < 0)
        if l.match_index != r.match_index:
            return l.match_index < r.match_index
        return l.uid < r.uid

    def victim_queue_order_fn(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> bool:  # noqa: E741
        for fn in self.callbacks.victim_queue_order.flat():
            c = fn(l, r, preemptor)
            if c != 0:
                return bool(c < 0)
        return self.queue_order_fn(r, l)

    def task_order_fn(self, l: TaskInfo, r: TaskInfo) -> bool:  # noqa: E741
        for fn in self.callbacks.task_order.flat():
            c = fn(l, r)
            if c != 0:
                return bool(c < 0)
        li, ri = _pod_index(l.name), _pod_index(r.name)
        if li is not None and ri is not None and li != ri:
            return li < ri
        if l.creation == r.creation:
            return l.uid < r.uid
        return l.creation < r.creation

    def build_victims_priority_queue(self, victims: Iterable[TaskInfo], preemptor: TaskInfo) -> PriorityQueue[TaskInfo]:
        """Victims in eviction order: within a job the task that goes last first (lowest
        priority, newest); across queues by the victim-queue order; within a queue the job
        that goes last first, then (plugins tied) the task order across the two jobs; a task
        whose job left the session goes first.

        Mirrors: session_plugins.go BuildVictimsPriorityQueue.
        """

        def job_then_task(lj: JobInfo, rj: JobInfo, l: TaskInfo, r: TaskInfo) -> bool:  # noqa: E741
            c = self.job_order_compare(lj, rj)
            if c != 0:
                return c > 0
            return not self.task_order_fn(l, r)

        def less(l: TaskInfo, r: TaskInfo) -> bool:  # noqa: E741
            if l.job == r.job:
                return not self.task_order_fn(l, r)
            lj, rj = self.jobs.get(l.job), self.jobs.get(r.job)
            if lj is None or rj is None:
                if lj is None and rj is None:
                    return not self.task_order_fn(l, r)
                return lj is None
            pj = self.jobs.get(preemptor.job)
            if pj is None:
                return job_then_task(lj, rj, l, r)
            if lj.queue != rj.queue:
                lq, rq, pq = self.queues.get(lj.queue), self.queues.get(rj.queue), self.queues.get(pj.queue)
                if lq is None or rq is None or pq is None:
                    return job_then_task(lj, rj, l, r)
                return self.victim_queue_order_fn(lq, rq, pq)
            return job_then_task(lj, rj, l, r)

        return PriorityQueue(less, victims)

    # ----- predicates and scores ----------------------------------------------------------
    def pre_predicate_fn(self, task: TaskInfo) -> str | None:
        for fn in self.callbacks.pre_predicate.flat():
            err = fn(task)
            if err:
                return str(err)
        return None

    def predicate_fn(self, task: TaskInfo, node: NodeInfo) -> list[Status]:
        for fn in self.callbacks.predicate.flat():
            st = fn(task, node)
            if st:
                return list(st)
        return []

    def predicate_for_allocate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        st = self.predicate_fn(task, node)
        if any(s.code is not StatusCode.Success for s in st):
            return FitError(task.namespace, task.name, node.name, st)
        return None

    def predicate_for_preempt(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        st = self.predicate_fn(task, node)
        bad = [s for s in st if s.code not in (StatusCode.Success, StatusCode.Unschedulable)]
        if bad:
            return FitError(task.namespace, task.name, node.name, st)
        return None

    def prioritize(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> np.ndarray:
        """Scores aligned with ``nodes``: sum of node-order and batch node-order functions."""
        scores = np.zeros(len(nodes))
        for fn in self.callbacks.node_order.flat():
            scores += np.array([fn(task, n) for n in nodes], dtype=float)
        for batch_fn in self.callbacks.batch_node_order.flat():
            scores += np.asarray(batch_fn(task, nodes), dtype=float)
        return scores

    def _row_scorable(self) -> bool:
        names = self.callbacks.node_order.names() + self.callbacks.batch_node_order.names()
        return all(n in self.batch_scores for n in names) and not self.callbacks.best_node.flat()

    def prioritize_rows(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """:meth:`prioritize` over node indices; plugins' vectorized scorers when all have one."""
        if not self._row_scorable():
            return self.prioritize(task, [self.node_list[int(i)] for i in rows])
        scores = np.zeros(len(rows))
        seen: set[str] = set()
        for name in self.callbacks.node_order.names() + self.callbacks.batch_node_order.names():
            if name not in seen:
                seen.add(name)
                scores += self.batch_scores[name](task, rows)
        return scores

    def best_node_rows(self, task: TaskInfo, rows: np.ndarray) -> NodeInfo:
        if not self._row_scorable():
            return self.best_node(task, [self.node_list[int(i)] for i in rows])
        scores = self.prioritize_rows(task, rows)
        return self.node_list[int(rows[int(np.argmax(scores))])]

    def best_node(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> NodeInfo:
        scores = self.prioritize(task, nodes)
        for fn in self.callbacks.best_node.flat():
            by_score: dict[float, list[NodeInfo]] = {}
            for n, s in zip(nodes, scores, strict=True):
                by_score.setdefault(float(s), []).append(n)
            got = fn(task, by_score)
            if got is not None:
                return got  # type: ignore[no-any-return]
        return nodes[int(np.argmax(scores))]

    # ----- verdicts -----------------------------------------------------------------------
    @staticmethod
    def _victims(table: CallbackTable[Any], asker: Any, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        """Walk ``table`` (functions ``(asker, candidates) -> (victims, Vote)``): within a tier
        the verdicts intersect, an empty one voids the tier; the first tier with victims decides."""
        victims: list[TaskInfo] | None = None
        for tier in table.tiered():
            for _, fn in tier:
                cands, verdict = fn(asker, preemptees)
                if verdict == Vote.ABSTAIN:
                    continue
                if not cands:
                    victims = None
                    break
                if victims is None:
                    victims = list(cands)
                else:
                    keep = {c.uid for c in cands}
                    victims = [v for v in victims if v.uid in keep]
            if victims is not None:
                return victims
        return victims or []

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(self.callbacks.preemptable, preemptor, preemptees)

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """The candidates every UnifiedEvictable plugin allows, walked as :meth:`preemptable`
        (for gangpreempt/gangreclaim). Mirrors: session_plugins.go UnifiedEvictable."""
        return self._victims(self.callbacks.unified_evictable, ctx, candidates)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims(self.callbacks.reclaimable, reclaimer, reclaimees)

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self.callbacks.overused.flat())

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self.callbacks.allocatable.flat())

    def shard_mask(self) -> np.ndarray | None:
        """Soft sharding: bool per ``node_list`` row, True for this scheduler's shard's Nodes
        (None when there is no shard preference)."""
        if self.nodes_in_shard is None:
            return None
        if self._shard_mask is None:
            shard = self.nodes_in_shard
            self._shard_mask = np.array([n.name in shard for n in self.node_list], dtype=bool)
        return self._shard_mask

    def by_shard(self, nodes: Sequence[NodeInfo]) -> list[list[NodeInfo]]:
        """Soft sharding: ``[nodes in this scheduler's shard, the others]`` (order kept);
        without a shard preference ``[nodes]``. Mirrors: volcano util.GetPredicatedNodeByShard."""
        if self.nodes_in_shard is None:
            return [list(nodes)]
        shard = self.nodes_in_shard
        return [[n for n in nodes if n.name in shard], [n for n in nodes if n.name not in shard]]

    def reclaim_fits(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Does ``queue`` have quota room for ``task`` now (all registered functions agree; none:
        True)? Used by the reclaim action only."""
        return all(fn(queue, task) for fn in self.callbacks.reclaim_fits.flat())

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        return all(fn(queue, tasks) for fn in self.callbacks.preemptive.flat())

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self.callbacks.job_ready.flat())

    @staticmethod
    def _vote(table: CallbackTable[JobVoteFn], job: JobInfo) -> bool:
        for tier in table.tiered():
            has_permit = False
            for _, fn in tier:
                v = fn(job)
                if v < 0:
                    return False
                if v > 0:
                    has_permit = True
            if has_permit:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote(self.callbacks.job_pipelined, job)

    def sub_job_ready(self, job: JobInfo, sub: SubJobInfo) -> bool:
        """Without sub-group policies: :meth:`job_ready`; else every enabled plugin agrees.

        Mirrors: session_plugins.go SubJobReady."""
        if not job.contains_sub_job_policy():
            return self.job_ready(job)
        return all(fn(sub) for fn in self.callbacks.sub_job_ready.flat())

    def sub_job_pipelined(self, job: JobInfo, sub: SubJobInfo) -> bool:
        """Without sub-group policies: :meth:`job_pipelined`; else the plugins' vote (none: True).

        Mirrors: session_plugins.go SubJobPipelined."""
        if not job.contains_sub_job_policy():
            return self.job_pipelined(job)
        return self._vote(self.callbacks.sub_job_pipelined, sub)  # type: ignore[arg-type]

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote(self.callbacks.job_enqueueable, job)

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self.callbacks.job_enqueued.flat():
            fn(job)

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        for fn in self.callbacks.job_valid.flat():
            vr = fn(job)
            if vr is not None and not vr.passed:
                return vr  # type: ignore[no-any-return]
        return None

    def job_starving(self, job: JobInfo) -> bool:
        for tier in self.callbacks.job_starving.tiered():
            if not tier:
                continue
            return all(fn(job) for _, fn in tier)
        return False

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        for tier in self.callbacks.victim_tasks.tiered():
            out: list[TaskInfo] = []
            seen: set[str] = set()
            for _, fn in tier:
                for v in fn(tasks) or []:
                    if v.uid not in seen:
                        seen.add(v.uid)
                        out.append(v)
            if out:
                return out
        return []

    # ----- event handlers -----------------------------------------------------------------
    def fire_allocate(self, task: TaskInfo) -> None:
        ev = Event(task)
        for eh in self.event_handlers:
            if eh.allocate_func is not None:
                eh.allocate_func(ev)

    def fire_deallocate(self, task: TaskInfo) -> None:
        ev = Event(task)
        for eh in self.event_handlers:
            if eh.deallocate_func is not None:
                eh.deallocate_func(ev)

    # ----- session-level operations (backfill, shuffle) -----------------------------------
    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Allocate without a statement; dispatch every Allocated task once the job is ready."""
        job = self.jobs[task.job]
        task.node_name = node.name
        job.update_task_status(task, TaskStatus.Allocated)
        node.add_task(task)
        self.fire_allocate(task)
        if self.job_ready(job):
            for t in job.tasks_in(TaskStatus.Allocated):
                self.dispatch(t)

    def pipeline(self, task: TaskInfo, hostname: str) -> None:
        job = self.jobs[task.job]
        job.update_task_status(task, TaskStatus.Pipelined)
        task.node_name = hostname
        self.nodes[hostname].add_task(task)
        self.fire_allocate(task)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.cache_evict(task, reason)
        self.mark_evicted(task, True)

    def mark_evicted(self, task: TaskInfo, evicted: bool) -> None:
        """Move ``task`` to Releasing (``evicted``) or back to Running on its job and node, and
        fire the deallocate (or allocate) handlers. The cache is not told; see :meth:`evict`."""
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, TaskStatus.Releasing if evicted else TaskStatus.Running)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)
            node.mark_evicted(task.key, evicted)
        if evicted:
            self.fire_deallocate(task)
        else:
            self.fire_allocate(task)

    def dispatch(self, task: TaskInfo) -> None:
        """Hand an Allocated task to the binder; it becomes Binding. Raises on bind failure."""
        self.cache.bind(task, task.node_name)
        job = self.jobs[task.job]
        job.update_task_status(task, TaskStatus.Binding)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)

    def cache_evict(self, task: TaskInfo, reason: str) -> None:
        self.cache.evict(task, reason)
        self.evicted.append((task, reason))

    def unpipeline(self, task: TaskInfo) -> None:
        job = self.jobs[task.job]
        node = self.nodes.get(task.node_name)
        job.update_task_status(task, TaskStatus.Pending)
        if node is not None and task.key in node.tasks:
            node.remove_task(task)
        self.fire_deallocate(task)
        task.node_name = ""

    # ----- network topology ---------------------------------------------------------------
    def hypernode_nodes(self, name: str) -> list[NodeInfo]:
        """The session's NodeInfos under HyperNode ``name`` (node order; [] when unknown)."""
        got = self._hn_nodes.get(name)
        if got is None:
            hn = self.hypernodes.infos.get(name)
            got = [self.nodes[n] for n in hn.nodes if n in self.nodes] if hn is not None else []
            self._hn_nodes[name] = got
        return got

    def hyper_node_gradient_for_job(self, job: JobInfo, root: str, purpose: str = "allocate") -> list[list[str]]:
        """Candidate HyperNodes for ``job`` under ``root``, by gradient; the first plugin with an
        answer decides; none: ``[[root]]``. Mirrors: session_plugins.go HyperNodeGradientForJobFn."""
        for fn in self.callbacks.hyper_node_gradient_for_job.flat():
            got = fn(job, root, purpose)
            if got is not None:
                return got
        return [[root]]

    def hyper_node_gradient_for_sub_job(self, sub: SubJobInfo, root: str, purpose: str = "allocate") -> list[list[str]]:
        """Candidate HyperNodes for sub-job ``sub`` under ``root`` (the HyperNode tried for its
        job), by gradient; none: ``[[root]]``. Mirrors: session_plugins.go HyperNodeGradientForSubJobFn."""
        for fn in self.callbacks.hyper_node_gradient_for_sub_job.flat():
            got = fn(sub, root, purpose)
            if got is not None:
                return got
        return [[root]]

    def hyper_node_order(self, job: JobInfo | SubJobInfo, candidates: Sequence[str]) -> dict[str, float]:
        """Summed HyperNode scores of every plugin (0 for all when none is registered)."""
        out = dict.fromkeys(candidates, 0.0)
        for fn in self.callbacks.hyper_node_order.flat():
            for k, v in fn(job, candidates).items():
                if k in out:
                    out[k] += v
        return out

    def _topology_candidates(self) -> Iterable[JobInfo]:
        """The jobs that may have a network topology or sub-group policies, in job order: every
        job, or with the live cache only those it named as changed (it hands such jobs out as
        fresh clones every session, never again as they were)."""
        ch = self.cluster.changes
        if ch is None:
            return self.jobs.values()
        jobs = self.jobs
        # (a walk over the few changed uids: set.intersection(dict) would walk the whole dict)
        return [jobs[u] for u in sorted([u for u in ch.jobs if u in jobs], key=ch.job_order.__getitem__)]

    def _adjust_network_topology(self) -> None:
        """Translate ``highestTierName`` to a tier, turn soft mode into hard mode at the root's
        tier (so soft jobs take the gradient path unfiltered), and recover a running job's
        allocated HyperNode from its placed tasks when the annotation is missing.

        Mirrors: session.go adjustNetworkTopologySpec / convertSoftToHardTopology and the
        allocated-HyperNode recovery in openSession.
        """
        hns = self.hypernodes
        top = hns.root.tier
        for job in self._topology_candidates():
            nt = job.network_topology
            if nt is not None:
                if nt.highest_tier_name and nt.highest_tier_allowed is None:
                    tier = hns.tier_names.get(nt.highest_tier_name)
                    if tier is None:
                        log.warning("job %s: highestTierName %r names no HyperNode tier", job.uid, nt.highest_tier_name)
                    else:
                        nt.highest_tier_allowed = tier
                if nt.mode == "soft":
                    nt.mode = "hard"
                    nt.highest_tier_allowed = top
                    nt.highest_tier_name = ""
                if job.allocated_hypernode and job.allocated_hypernode not in hns:
                    job.allocated_hypernode = ""
                if not job.allocated_hypernode:
                    placed = [t.node_name for s in ALLOCATED_STATUSES for t in job.task_status_index.get(s, {}).values() if t.node_name]
                    job.allocated_hypernode = hns.lowest_containing(placed)
            if job.contains_sub_job_policy():
                adjust_sub_job_topology(job, hns)

    # ----- failures -----------------------------------------------------------------------
    def record_error(self, op: str, task: TaskInfo, target: str, err: BaseException) -> None:
        """Log and count an operation that failed and was undone; never silent.

        Args:
            op: ``bind``, ``evict``, ``allocate`` or ``pipeline``.
            task: the Pod's task.
            target: the node (bind/allocate/pipeline) or the eviction reason.
            err: what failed.

        Counts ``volcano_eviction_errors_total{action}`` for evictions and
        ``volcano_schedule_attempts_total{result="error"}`` for the rest (upstream's label for
        an internal scheduler problem). The tuple ``(action, op, task key, message)`` is kept in
        :attr:`errors` for the caller of the session.
        """
        action = self.current_action or "session"
        log.error("%s: %s of %s (%s) failed: %s", action, op, task.key, target, err)
        self.errors.append((action, op, task.key, f"{target}: {err}"))
        if op == "evict":
            metrics.eviction_errors.labels(action=action).inc()
        else:
            metrics.schedule_attempts.labels(result="error").inc()

    # ----- misc ---------------------------------------------------------------------------
    def now_rfc3339(self) -> str:
        """:attr:`now` as metav1.Time (formatted once a session: ``now`` does not change)."""
        got = self._now_rfc3339
        if got is None:
            got = self._now_rfc3339 = rfc3339(self.now)
        return got

    def plugin_option(self, name: str) -> PluginOption | None:
        for tier in self.tiers:
            for opt in tier.plugins:
                if opt.name == name:
                    return opt
        return None

    def record_pod_group_event(self, job: JobInfo, etype: str, reason: str, message: str) -> None:
        """Queue an Event on the job's PodGroup (written by the cache on close)."""
        self.events.append((job.uid, etype, reason, message))

    def set_pod_group_annotation(self, job: JobInfo, key: str, value: str) -> None:
        """Queue an annotation to merge into the job's PodGroup (written by the cache on close)."""
        self.pod_group_annotations.setdefault(job.uid, {})[key] = value

    def pod_group_conditions(self, job: JobInfo) -> list[Obj]:
        """The job's PodGroup conditions as this session left them: the snapshot's, with the
        session's :meth:`update_pod_group_condition` / :meth:`remove_pod_group_condition` applied
        (read-only; [] without a PodGroup)."""
        got = self._pg_conditions.get(job.uid)
        if got is not None:
            return got
        return list(((job.pod_group or {}).get("status") or {}).get("conditions") or [])

    def _own_conditions(self, job: JobInfo) -> list[Obj]:
        got = self._pg_conditions.get(job.uid)
        if got is None:
            got = self._pg_conditions[job.uid] = list(
                ((job.pod_group or {}).get("status") or {}).get("conditions") or [])
        return got

    def update_pod_group_condition(self, job: JobInfo, cond: Obj) -> None:
        """Set ``cond`` on the job's PodGroup status as written on close (replacing the condition
        of the same type in place, else appended). Kept on the session, not in the job: the
        snapshot's job (and its PodGroup) is left as handed out, so the live cache can hand it to
        the next session unchanged (:mod:`pumice.scheduler.volcano.cache.incremental`)."""
        if job.pod_group is None:
            return
        conds = self._own_conditions(job)
        for i, c in enumerate(conds):
            if c.get("type") == cond.get("type"):
                conds[i] = cond
                return
        conds.append(cond)

    def remove_pod_group_condition(self, job: JobInfo, ctype: str) -> None:
        """Drop the condition of type ``ctype`` from the job's PodGroup status as written on close."""
        if job.pod_group is None:
            return
        conds = self._own_conditions(job)
        conds[:] = [c for c in conds if c.get("type") != ctype]

    def release(self) -> None:
        """Drop the plugins and every function they registered, once the session is closed and
        nothing runs on it any more (its jobs, queues, events and results stay readable).

        Each plugin keeps the session, and the functions it registers (callbacks, event
        handlers, batch predicates and scores) are closures over the session or the plugin,
        so a session is a reference cycle: without this, it and everything only it holds (its
        snapshot's ClusterInfo, job clones, queue infos; ~300 objects, ~45 KB at Philly's
        size) wait for the garbage collector's next full pass instead of being freed when the
        last reference goes."""
        self.plugins.clear()
        self.event_handlers.clear()
        self.callbacks.clear()
        self.batch_predicates.clear()
        self.batch_scores.clear()

    @property
    def close_skips(self) -> frozenset[str]:
        """Jobs whose close is known to emit nothing (known once :meth:`close` starts; empty
        before, and in the ``verify`` snapshot mode): a plugin that writes a per-job PodGroup
        condition on close may leave them out (:meth:`jobs_to_close` lists the others). Made
        from the jobs' uids when asked (close itself keeps only the others)."""
        closing = self._closing_uids
        if closing is None:
            return frozenset()
        return frozenset(self.jobs.keys() - closing)

    def jobs_to_close(self) -> Iterable[JobInfo]:
        """The session's jobs but :attr:`close_skips`, in job order (during :meth:`close`; every
        job before it)."""
        return self._closing

    def _dirty_at_close(self) -> set[str] | None:
        """The jobs this session did not leave as the live cache handed them out: those not
        handed out as they were (:attr:`ClusterInfo.handed_out`), those that logged a write (a
        task, phase, fit error or field changed) and those given a PodGroup condition or
        annotation before close; None (every job) without the live cache's hints or when a
        plugin sets an extension status field. The others are the clean jobs close may skip.

        The handed-out jobs touched (those that logged a write) are also handed to the live
        cache (:attr:`ClusterInfo.on_touched`): it hands the others to its next snapshot without
        looking at them again (nothing from here to the next snapshot changes a job: close, the
        plugins' ``on_session_close`` and the status writers only read the jobs).

        With the write log this is a walk over the written jobs, not over every job: the
        handed-out jobs are a subset of the session's jobs (checked in the ``verify`` snapshot
        mode), so the jobs not handed out are none when the two have the same size."""
        ho = self.handed_out
        if ho is None:
            return None
        jobs = self.jobs
        writes = self.cluster.job_writes
        touched: set[str]
        check = self.job_memo.on_mismatch
        if writes is not None:
            # the jobs that logged no write since handed out (WriteLoggedJob) are untouched: no
            # field rebound, no task or phase changed, no fit error; a session never puts another
            # object in the jobs dict ((keys & set) walks the smaller side)
            touched = ho.keys() & writes
            if check is not None:
                bad = sorted(uid for uid in ho.keys() - touched
                             if not (jobs.get(uid) is ho[uid][1] and untouched(ho[uid][1], ho[uid][2])))
                if bad:
                    check(f"jobs {bad} logged no write but are not as handed out")
        else:
            touched = {uid for uid, (_base, job, fields) in ho.items()
                       if not (jobs.get(uid) is job and untouched(job, fields))}
        if check is not None and not ho.keys() <= jobs.keys():
            check(f"jobs {sorted(ho.keys() - jobs.keys())} handed out but not in the session")
        if self.cluster.on_touched is not None:
            self.cluster.on_touched(touched)
        if self.close_quiet is None or self.pod_group_status_fields:
            return None
        dirty = set(touched)  # (touched is the live cache's now)
        dirty.update(self._pg_conditions, self.pod_group_annotations)
        if len(dirty) > len(touched):
            dirty.intersection_update(jobs.keys())
        if len(ho) != len(jobs):
            dirty.update(jobs.keys() - ho.keys())
        return dirty

    def _loud_jobs(self, quiet: dict[str, int]) -> set[str]:
        """The session's jobs without an entry in ``quiet`` (:attr:`ClusterInfo.close_quiet`).

        With the live cache's hints a walk over the jobs the last close left without one and
        those named changed since (:attr:`ClusterInfo.changes`): an entry goes only at a close
        (that close records the jobs it left without one, in the running-sums store under
        ``close.loud``) or when the live cache rebuilds the job, and a job new to the session
        or rebuilt is named changed. Else (or when the last close was not of the previous
        snapshot) a walk over every job. Compared with that walk in the ``verify`` snapshot mode."""
        jobs = self.jobs
        ch, store = self.cluster.changes, self.cluster.running_sums
        last = None if store is None else store.get("close.loud")
        if ch is not None and isinstance(last, dict) and last.get("generation") == ch.generation - 1:
            loud = {uid for uid in ch.jobs.union(last["uids"]) if uid in jobs and uid not in quiet}
            check = self.job_memo.on_mismatch
            if check is not None:
                want = jobs.keys() - quiet.keys()
                if loud != want:
                    check(f"close: jobs without a quiet entry {sorted(loud)} != {sorted(want)} of a walk")
            return loud
        return jobs.keys() - quiet.keys()

    def _keep_loud(self, closed: Iterable[str], quiet: dict[str, int]) -> None:
        """Record for the next close (:meth:`_loud_jobs`) the jobs ``closed`` left without a
        quiet entry (the jobs not closed kept theirs)."""
        ch, store = self.cluster.changes, self.cluster.running_sums
        if ch is None or store is None:
            return
        store["close.loud"] = {"generation": ch.generation, "uids": {uid for uid in closed if uid not in quiet}}

    def close(self, rfc3339: Callable[[float], str] | None = None) -> CloseResult:
        """Close plugins, then compute every job's PodGroup status and every queue's allocated.

        With the live cache's hints (:attr:`ClusterInfo.handed_out`, :attr:`ClusterInfo.close_quiet`),
        a job this session left untouched whose close emitted nothing the last time for the same
        version is skipped: its status, Events and Pod conditions are a function of the job as
        handed out (its tasks, phase, PodGroup and last written status), so they would again
        equal what was written, and it is left out of :attr:`CloseResult.pod_groups`. A plugin
        that sets a status field on close declares it at open (an entry in
        :attr:`pod_group_status_fields`), which turns this off. In the ``verify`` snapshot mode
        (:attr:`JobMemo.on_mismatch` set) every job is computed and a skipped one that would emit
        something is reported as a mismatch.

        The jobs computed are found from the changes (:meth:`_dirty_at_close`,
        :meth:`_loud_jobs`), not by a walk over every job.
        """
        dirty = self._dirty_at_close()
        quiet = self.close_quiet
        check = self.job_memo.on_mismatch
        jobs = self.jobs
        # the jobs computed: the dirty ones and those without a quiet entry (for a clean job,
        # the live cache drops its entry whenever it rebuilds the job, and a clean job is a
        # clone of the same build as at its last close: an entry is its version)
        closing_uids: set[str] | None = None
        if dirty is not None and quiet and len(dirty) < len(jobs):
            if self.cluster.job_writes is not None:
                closing_uids = dirty.union(self._loud_jobs(quiet))
            else:
                closing_uids = dirty.union(uid for uid, job in jobs.items() if quiet.get(uid) != job.version)
            if len(closing_uids) == len(jobs):
                closing_uids = None
        skip: set[str] = set()
        if closing_uids is not None and check is not None:
            skip = jobs.keys() - closing_uids
            bad = sorted(uid for uid in skip if quiet is None or quiet[uid] != jobs[uid].version)
            if bad:
                check(f"close: quiet entries of {bad} are for another version")
            closing_uids = None  # verify: every job is computed, the skipped ones checked
        self._closing_uids = closing_uids
        ch = self.cluster.changes
        closing: Iterable[JobInfo] = jobs.values()
        if closing_uids is not None and ch is not None:
            # in job order (the jobs dict is in the order of their keys)
            order = ch.job_order
            closing = [jobs[uid] for uid in sorted(closing_uids, key=order.__getitem__)]
        elif closing_uids is not None:
            closing = [job for uid, job in jobs.items() if uid in closing_uids]
        self._closing = closing
        for p in self.plugins.values():
            p.on_session_close(self)
        res = CloseResult()
        res.events.extend(self.events)
        for job in closing:
            if job.pod_group is None:
                continue
            uid = job.uid
            if uid in skip and check is None:
                continue
            n_events, n_conds = len(res.events), len(res.pod_conditions)
            changed = False
            if job.network_topology is not None and job.allocated_hypernode != self.old_allocated_hypernode.get(job.uid, ""):
                res.pod_group_annotations.setdefault(job.uid, {})[JOB_ALLOCATED_HYPERNODE_ANNOTATION] = job.allocated_hypernode
            if job.uid in self.pod_group_annotations:
                res.pod_group_annotations.setdefault(job.uid, {}).update(self.pod_group_annotations[job.uid])
            st = job_status(self, job)
            old = self.pod_group_status.get(job.uid, {})
            res.pod_groups[job.uid] = st
            if status_changed(old, st):
                changed = True
                res.changed.append(job.uid)
            phase = st.get("phase")
            fit: str | None = None
            if phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.UNKNOWN) and not (
                    phase == PodGroupPhase.INQUEUE and job.is_ready() and not job.count(TaskStatus.Pending)):
                # Deviates: upstream (cache.go RecordJobStatusEvent) also warns "0/N tasks in gang
                # unschedulable: pod group is ready, N Binding" for a gang whose binds are still in
                # flight; nothing is unschedulable then, so pumice leaves that Warning out
                pending = job.count(TaskStatus.Pending)
                held = self.held_jobs.get(job.uid)
                fit = held.message if held is not None else job.fit_error()
                res.events.append(
                    (job.uid, "Warning", "Unschedulable", f"{pending}/{len(job.tasks)} tasks in gang unschedulable: {fit}")
                )
            elif job.uid in res.changed:
                res.events.append((job.uid, "Normal", "Scheduled", POD_GROUP_READY))
            for status in (TaskStatus.Allocated, TaskStatus.Pending, TaskStatus.Pipelined):
                for t in job.task_status_index.get(status, {}).values():
                    if t.sch_gated:
                        continue
                    reason, msg, nominated = job.task_scheduling_reason(t.uid)
                    if not msg:
                        if fit is None:
                            fit = job.fit_error()
                        msg = fit or ALL_NODE_UNAVAILABLE_MSG
                    res.pod_conditions[t.key] = (reason, msg, nominated)
            if quiet is not None:
                silent = (not changed and n_events == len(res.events) and n_conds == len(res.pod_conditions)
                          and uid not in res.pod_group_annotations)
                if uid in skip and not silent and check is not None:
                    check(f"close of {uid}: skipped as emitting nothing for version {job.version}, but it emits")
                if silent and dirty is not None and uid not in dirty:
                    quiet[uid] = job.version
                else:
                    quiet.pop(uid, None)
        if quiet is not None:
            self._keep_loud(jobs.keys() if closing_uids is None else closing_uids, quiet)
        memo = self.job_memo

        def entry(job: JobInfo) -> tuple[str, tuple[Resource], bool]:
            part, whole_amounts = memo.job("close.allocated", job, None, _allocated_part)
            return job.queue, (part,), whole_amounts

        # the jobs changed since the last close: those the snapshot named, and those this
        # session touched
        running = self.job_sums("close.allocated", 1, entry, also=self.jobs.keys() if dirty is None else dirty)
        by_queue: dict[str, list[JobInfo]] | None = None
        # queue -> (a running total, its ResourceList): the list given again while the running
        # sums give the very same (immutable) Resource
        lists = None if running is None else self.cluster.running_sums
        listed: dict[str, Any] | None = None
        if lists is not None:
            got_lists = lists.get("close.allocated.lists")
            if not isinstance(got_lists, dict):
                got_lists = lists["close.allocated.lists"] = {}
            listed = got_lists
        for q in self.queues.values():
            got = None if running is None else running.sums(q.name)
            if got is None:
                if by_queue is None:
                    by_queue = {}
                    for j in self.jobs.values():
                        by_queue.setdefault(j.queue, []).append(j)
                res.queue_allocated[q.name] = queue_allocated(memo, by_queue.get(q.name, [])).to_list()
            elif listed is not None:
                total = got[0]
                was = listed.get(q.name)
                if was is None or was[0] is not total:
                    was = listed[q.name] = (total, total.to_list())
                res.queue_allocated[q.name] = was[1]
            else:
                res.queue_allocated[q.name] = got[0].to_list()
        return res


def queue_allocated(memo: JobMemo, jobs: Sequence[JobInfo]) -> Resource:
    """The summed requests of the jobs' allocated tasks, task by task in job order; from each
    job's memoized sum (a function of its tasks, and every change of a job's tasks resets its
    version) when every amount is whole, which gives the same floats (see :func:`whole`)."""
    parts = [memo.job("close.allocated", j, None, _allocated_part) for j in jobs]
    if all(w for _r, w in parts):
        alloc = sum_resources(r for r, _w in parts)
        if whole(alloc):
            return alloc
    return sum_resources(t.resreq for j in jobs for t in _allocated_tasks(j))


def job_status(ssn: Session, job: JobInfo) -> Obj:
    """The PodGroup status after this session (phase, running/failed/succeeded, conditions)."""
    pg = job.pod_group or {}
    st = dict(pg.get("status") or {})
    conds = ssn._pg_conditions.get(job.uid)
    if conds is not None:
        st["conditions"] = [dict(c) for c in conds]
    elif "conditions" in st:
        st["conditions"] = [dict(c) for c in st["conditions"] or []]
    unschedulable = any(
        c.get("type") == PodGroupConditionType.UNSCHEDULABLE.value and c.get("status") == "True" and c.get("transitionID") == ssn.uid
        for c in st.get("conditions") or []
    )
    st["phase"] = str(pod_group_phase(job, unschedulable, int((pg.get("spec") or {}).get("minMember") or 0)))
    st["running"] = job.count(TaskStatus.Running)
    st["failed"] = job.count(TaskStatus.Failed)
    st["succeeded"] = job.count(TaskStatus.Succeeded)
    for name, values in ssn.pod_group_status_fields.items():
        if job.uid in values:
            st[name] = values[job.uid]
        else:
            st.pop(name, None)
    return st


def pod_group_phase(job: JobInfo, unschedulable: bool, min_member: int) -> PodGroupPhase:
    """Mirrors: volcano framework/session.go getPodGroupPhase."""
    if job.count(TaskStatus.Running) and unschedulable:
        return PodGroupPhase.UNKNOWN
    scheduled = job.scheduled_task_num()
    completed = sum(len(b) for s, b in job.task_status_index.items() if s in COMPLETED_STATUSES)
    scheduled += job.releasing_scheduled_task_num()
    if scheduled >= min_member:
        return PodGroupPhase.COMPLETED if scheduled == completed else PodGroupPhase.RUNNING
    if job.phase != PodGroupPhase.INQUEUE:
        return PodGroupPhase.PENDING
    return PodGroupPhase.INQUEUE


def _allocated_tasks(job: JobInfo) -> Iterable[TaskInfo]:
    idx = job.task_status_index
    for s in ALLOCATED_STATUSES:
        yield from idx.get(s, {}).values()


def _allocated_part(job: JobInfo) -> tuple[Resource, bool]:
    """(the job's allocated tasks' summed requests, every amount whole)."""
    tasks = list(_allocated_tasks(job))
    return sum_resources(t.resreq for t in tasks), all(whole(t.resreq) for t in tasks)


def _queue_entry(job: JobInfo) -> tuple[str, tuple[Resource | None], bool]:
    """A job's entry in :meth:`Session.job_queues`' running sums: its queue, no amounts."""
    return job.queue, (None,), True


def _job_has_pod_affinity(job: JobInfo) -> bool:
    return any(has_pod_affinity(t) for t in job.tasks.values())


def _check_sums(check: Callable[[str], None], purpose: str, rs: RunningSums,
                fresh: dict[Hashable, tuple[Resource, ...]]) -> None:
    """Report (``check``) where running sums differ from a fresh fold ``fresh`` (group -> sums,
    groups in the order of their first items)."""
    if rs.groups() != list(fresh):
        check(f"running sums {purpose}: groups {rs.groups()!r} != {list(fresh)!r} of a fresh fold")
        return
    for g, want in fresh.items():
        got = rs.sums(g)
        if got is not None and exact_data(got) != exact_data(want):
            check(f"running sums {purpose} of {g!r}: {got!r} != {want!r} of a fresh fold")


def _task_scalars(job: JobInfo) -> frozenset[str]:
    """The scalar resource names the job's tasks request."""
    return frozenset(k for t in job.tasks.values() for k in t.resreq.scalars)


def _scalar_counts(job: JobInfo) -> dict[Hashable, int]:
    """One per scalar name the job's tasks request (a running tally of these counts, per name,
    the jobs that request it)."""
    return dict.fromkeys(_task_scalars(job), 1)


_AFFINITY_ONE: Mapping[Hashable, int] = {"pod_affinity": 1}
"""A job's count in :meth:`Session.any_job_has_pod_affinity` (read-only)."""
_NONE: Mapping[Hashable, int] = {}
"""No counts (read-only)."""


def session_uid(seed: int) -> str:
    """A session's uid drawn from ``seed``: ``str(uuid.UUID(int=random.Random(seed).getrandbits(128)))``,
    the hex digits grouped 8-4-4-4-12 without building the UUID."""
    h = f"{random.Random(seed).getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _pod_index(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) < 3:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


def open_session(
    cluster: ClusterInfo,
    conf: SchedulerConfiguration,
    cache: SessionCache,
    *,
    uid: str | None = None,
    vectorize: bool = True,
    seed: int = 0,
    timer: Callable[[], float] | None = None,
) -> Session:
    """Build the session and let every configured plugin register its callbacks.

    ``timer`` (seconds, monotonic) times each plugin's ``on_session_open`` into
    ``ssn.plugin_open_seconds``.

    Raises:
        KeyError: a plugin name that is not registered (load_conf rejects these earlier).
    """
    from pumice.scheduler.volcano.plugins import PLUGINS

    ssn = Session(cluster, conf, cache, uid=uid, vectorize=vectorize, seed=seed)
    for tier in conf.tiers:
        for opt in tier.plugins:
            plugin = PLUGINS[opt.name].build(opt.parsed)
            ssn.plugins[opt.name] = plugin
            t0 = timer() if timer is not None else 0.0
            plugin.on_session_open(ssn)
            if timer is not None:
                ssn.plugin_open_seconds[opt.name] = timer() - t0
    return ssn


def run_action(ssn: Session, name: str) -> None:
    """Run the configured action ``name`` with its arguments parsed at configuration load."""
    from pumice.scheduler.volcano.actions import ACTIONS

    cls = ACTIONS[name]
    args = ssn.conf.parsed_action_arguments.get(name)
    if args is None:
        args = cls.parse_arguments(ssn.conf.action_arguments(name))
    ssn.current_action = name
    try:
        cls(args).execute(ssn)
    finally:
        ssn.current_action = ""


def run_actions(ssn: Session, actions: Iterable[str]) -> None:
    for name in actions:
        run_action(ssn, name)
