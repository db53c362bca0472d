"""The live cache's incremental snapshot: scheduler state kept across sessions and rebuilt only
where an informer event (or the cache's own bind/evict bookkeeping) changed it.

:func:`pumice.scheduler.volcano.cache.snapshot.build_snapshot` turns every wire object into
scheduler state at every session, O(Nodes + Pods + PodGroups). Here the same state is kept:

- a *base* :class:`NodeInfo` per Ready Node and a base :class:`JobInfo` per PodGroup, each built
  exactly as ``build_snapshot`` builds it (the same constructor, its tasks added in the same
  order), and rebuilt only when the Node, the PodGroup, or one of its Pods changed;
- the :class:`TaskInfo` of each Pod, built once per change of the Pod (or of the cache's
  assumed-bind / releasing overlay of it);
- the ordered Node and job lists, the HyperNode tree, the Nodes' summed allocatable and the
  session's :class:`NodeArrays`, recomputed when what they depend on changed.

A session mutates its snapshot. Jobs are handed out as clones of the base jobs (a session
touches most of them: statuses, fit errors, PodGroup status). A Node is handed out as the same
object session after session until a session changes it (:attr:`NodeInfo.touched`, set by every
``add_task``/``remove_task``/``mark_evicted``); then it is replaced by a fresh clone of its base.
So a session costs O(jobs + Nodes changed), and idle Nodes cost nothing.

The result equals ``build_snapshot`` over :meth:`SchedulerCache.objects` in every field a
decision reads (node, job, task and queue order included); :func:`snapshot_digest` is the
comparison the tests (and the ``verify`` mode) use. Where the incremental path cannot promise
that (an object without ``creationTimestamp``, whose position in the object list would be its
creation time), the cache falls back to the full build.

Mirrors: volcano pkg/scheduler/cache (event_handlers.go keeps NodeInfo/JobInfo current from
informer events; cache.go Snapshot clones them for the session).
"""

from __future__ import annotations

import bisect
import itertools
import logging
from collections.abc import Callable, Iterable
from typing import Any

from pumice._util.errors import FATAL_TYPES
from pumice.api import Obj
from pumice.client.informer import Informer
from pumice.scheduler.volcano.api.hyper_node_info import HyperNodesInfo, build_hypernodes
from pumice.scheduler.volcano.api.job_info import (
    FitFailedRoles,
    JobInfo,
    JobMemo,
    NetworkTopology,
    WriteLoggedJob,
    fit_errors_log,
    may_act,
    untouched,
)
from pumice.scheduler.volcano.api.node_info import NodeInfo, node_is_ready
from pumice.scheduler.volcano.api.queue_info import ClusterInfo, QueueInfo
from pumice.scheduler.volcano.api.resource import Resource, sum_resources
from pumice.scheduler.volcano.api.running_sum import Changes, JobTable, RunningSums, RunningTally
from pumice.scheduler.volcano.api.task_info import TaskInfo, has_pod_affinity
from pumice.scheduler.volcano.api.types import COMPLETED_STATUSES, TaskStatus
from pumice.scheduler.volcano.cache.snapshot import SnapshotError, _creation, _ident, job_from_pod_group
from pumice.scheduler.volcano.framework.node_arrays import NodeArrays

OrderKey = tuple[str, str]

_REORDER_MAX = 16
"""Jobs joining or leaving the job order at one snapshot up to which the order is updated by
bisection instead of sorted afresh."""

log = logging.getLogger(__name__)


def order_key(o: Obj) -> OrderKey:
    """The snapshot order of an object: (creationTimestamp, ``<ns>/<name>``), as the full build
    sorts each kind."""
    md = o.get("metadata") or {}
    ns = md.get("namespace")
    name = md.get("name")
    return (str(md.get("creationTimestamp") or ""), f"{ns}/{name}" if ns else str(name))


def clone_node(base: NodeInfo, touch_log: set[str] | None = None) -> NodeInfo:
    """A NodeInfo a session may change without changing ``base``: own task copies, own evicted
    set; ``node`` and the (immutable) Resources shared. ``index``/``on_change`` are reset (the
    session's NodeArrays sets them); a change adds the Node's name to ``touch_log``."""
    c = object.__new__(NodeInfo)
    d = dict(base.__dict__)
    d["tasks"] = {k: t.clone() for k, t in base.tasks.items()}
    d["evicted"] = set(base.evicted)
    d["index"] = -1
    d["on_change"] = None
    d["touched"] = False
    d["touch_log"] = touch_log
    c.__dict__.update(d)
    return c


def clone_job(base: JobInfo, touch_log: set[str] | None = None, write_log: set[str] | None = None) -> JobInfo:
    """A JobInfo a session may change without changing ``base``: task copies (re-indexed in the
    same order), copies of every mutable field. The PodGroup dict is shared: a session never
    edits it in place (:meth:`JobInfo.set_phase` replaces it, conditions are kept on the session:
    :meth:`Session.update_pod_group_condition`). A change of its tasks or phase adds its uid to
    ``touch_log``. With ``write_log``, a :class:`WriteLoggedJob` that adds its uid there at every
    write of a field or fit error (and at once when ``base`` has fit errors)."""
    c = object.__new__(JobInfo if write_log is None else WriteLoggedJob)
    d = dict(base.__dict__)
    d["touch_log"] = touch_log
    d["write_log"] = write_log
    tasks = {uid: t.clone() for uid, t in base.tasks.items()}
    d["tasks"] = tasks
    d["task_status_index"] = {s: {uid: tasks[uid] for uid in bucket} for s, bucket in base.task_status_index.items()}
    d["_sub_jobs"] = None  # built on first use from the clone's own tasks
    d["_task_to_sub_job"] = {}
    d["_fit_failed"] = FitFailedRoles()  # its own: the base's holds the base's fit errors
    d["task_min_available"] = dict(base.task_min_available)
    if write_log is None:
        d["nodes_fit_errors"] = dict(base.nodes_fit_errors)
    else:
        d["nodes_fit_errors"] = fit_errors_log(write_log, base.uid)
        if base.nodes_fit_errors:
            d["nodes_fit_errors"].update(base.nodes_fit_errors)
    d["annotations"] = dict(base.annotations)
    nt = base.network_topology
    d["network_topology"] = (NetworkTopology(nt.mode, nt.highest_tier_allowed, nt.highest_tier_name)
                             if nt is not None else None)
    c.__dict__.update(d)
    return c


class IncrementalSnapshot:
    """Scheduler state kept current from informer events; :meth:`snapshot` hands a session its
    :class:`ClusterInfo`.

    Args:
        informers: the cache's informers by kind (``Pod``, ``Node``, ``PodGroup``, ``Queue``,
            ``PriorityClass``, ``Namespace``, ``HyperNode``); handlers are added here.
        scheduler_names: Pending Pods of other schedulers are left out of jobs (as the full build).
        overlay: ``(key, pod) -> pod``: the cache's assumed-bind / releasing view of a Pod.
        forget: ``key -> None``: drop the cache's bookkeeping of a Pod that is gone.
        memo_mismatch: when given (``verify`` mode), the sessions' :class:`JobMemo` recomputes
            every result it hands back and reports a difference here.

    Raises (from :meth:`snapshot`):
        SnapshotError: a Pod, Node, PodGroup, Queue or PriorityClass that cannot be turned into
            scheduler state, as the full build would (the message names object and field).
    """

    def __init__(self, informers: dict[str, Informer], scheduler_names: tuple[str, ...],
                 overlay: Callable[[str, Obj], Obj], forget: Callable[[str], None],
                 memo_mismatch: Callable[[str], None] | None = None) -> None:
        self.informers = informers
        self.scheduler_names = scheduler_names
        self._overlay = overlay
        self._forget = forget
        self.exotic = False
        """An object without ``creationTimestamp`` was seen: the full build must be used."""
        self._initialized = False
        self.dirty_pods: set[str] = set()
        self.dirty_nodes: set[str] = set()
        self.dirty_jobs: set[str] = set()
        self._meta_dirty: set[str] = set(_META_KINDS)
        """The kinds of :data:`_META_KINDS` whose objects changed since they were last read."""
        self._queues_dirty: set[str] = set()
        """Names of the Queues that changed since they were last read (every Queue is read the
        first time)."""
        self._hn_dirty = True
        self._node_set_dirty = True
        # applied state
        self._tasks: dict[str, TaskInfo] = {}
        self._pod_order: dict[str, OrderKey] = {}
        self._pod_node: dict[str, str] = {}
        self._pod_job: dict[str, str] = {}
        self._node_pods: dict[str, set[str]] = {}
        self._job_pods: dict[str, set[str]] = {}
        self._bad_pods: dict[str, str] = {}
        self._bad_nodes: dict[str, str] = {}
        self._bad_jobs: dict[str, str] = {}
        self._bad_meta = ""
        self._base_nodes: dict[str, NodeInfo] = {}
        self._node_objs: dict[str, Obj] = {}
        self._node_order: list[str] = []
        self._touched_nodes: set[str] = set()
        """Names of session Nodes changed since they were handed out (each adds its own)."""
        self._session_nodes: dict[str, NodeInfo] = {}
        """The NodeInfos handed to sessions, in node order once :attr:`_order_changed` is False."""
        self._order_changed = True
        self._base_jobs: dict[str, JobInfo] = {}
        self._job_keys: dict[str, OrderKey] = {}
        self._job_order: list[str] = []
        self._job_order_dirty = True
        self._job_order_sorted = False
        """:attr:`_job_order` is sorted by :attr:`_job_keys` (False: a job's key changed in place)."""
        self._priority_classes: dict[str, int] = {}
        self._default_priority = 0
        self._queue_infos: list[QueueInfo] = []
        """The Queues in snapshot order (frozen: handed to every session as they are)."""
        self._queue_built: dict[str, tuple[Obj, OrderKey, QueueInfo]] = {}
        """Queue name -> (the informer's object, its order key, its QueueInfo): informer objects
        are replaced when they change, never edited, so the same object gives the same QueueInfo."""
        self._queue_order: list[str] = []
        """The names of :attr:`_queue_built` in snapshot order."""
        self._namespaces: dict[str, Obj] = {}
        self._hypernodes: HyperNodesInfo | None = None
        self._total: Resource | None = None
        self._arrays: NodeArrays | None = None
        self._node_memo: dict[Any, Any] = {}
        self._job_memo = JobMemo(memo_mismatch)
        self._close_quiet: dict[str, int] = {}
        self._affinity_nodes: set[str] = set()
        """Base Nodes with a task whose Pod has podAffinity or podAntiAffinity."""
        self._job_builds = itertools.count(1)
        self._lent: dict[str, tuple[JobInfo, JobInfo, dict[str, Any]]] = {}
        """Job uid -> (base job, the job handed to the last session, its fields as handed out)."""
        self.jobs_kept = 0
        """Jobs handed to a session as the previous session left them (for tests and profiles)."""
        self._generation = 0
        self._handed: set[str] = set()
        """The uids of the jobs handed to the last session."""
        self._close_touched: tuple[int, set[str], int] | None = None
        """(generation, the uids of the handed-out jobs its session's close found touched, how
        many jobs were handed out): the others were left untouched."""
        self._rebuilt: set[str] = set()
        self._order_tail: tuple[list[str], dict[str, None]] | None = None
        """Set by the last :meth:`_reorder_jobs` when it only took jobs out of the order list and
        put the jobs that joined after all the others: (the list before, the jobs put at its end,
        in order); None otherwise."""
        """Uids of the jobs :meth:`_apply_jobs` rebuilt or dropped since the last snapshot."""
        self._out: dict[str, JobInfo] | None = None
        """The jobs dict handed to the last session (brought up to date in place when the job
        order and the queues stay the same)."""
        self._out_order: list[str] | None = None
        """The :attr:`_job_order` list (by identity: it is replaced, never edited, when it changes)
        the last session's jobs dict followed."""
        self._out_queues: frozenset[str] = frozenset()
        """The queue uids of the last snapshot."""
        self._unkept: set[str] = set()
        """Uids of the jobs handed to the last session that are never handed out again as they
        were (network topology, sub-group policies)."""
        self._job_log: set[str] = set()
        self._job_writes: set[str] = set()
        """Uids of the session jobs a session wrote (:attr:`JobInfo.write_log`), cleared at each
        snapshot: a handed-out job not in it at close is :func:`untouched`."""
        """Uids of the session jobs whose tasks or phase a session changed (:attr:`JobInfo.touch_log`)."""
        self._active: set[str] = set()
        """Uids of the jobs handed to the last session that were then :func:`may_act` (as handed out)."""
        self._pg_status: dict[str, Obj] = {}
        """Job uid -> its base job's PodGroup status, for the jobs handed to the last session."""
        self._jobs_changed: set[str] = set()
        self._nodes_changed: set[str] | None = None
        """Names of the session Nodes replaced since the last snapshot; None: all of them."""
        self._node_pos: dict[str, int] = {}
        self._session_list: list[NodeInfo] = []
        """:attr:`_session_nodes`' values in node order."""
        self._running: dict[str, RunningSums | RunningTally | JobTable | dict[str, Any]] = {}
        for kind, inf in informers.items():
            inf.add_event_handler(*self._handlers(kind))

    # ----- events -------------------------------------------------------------------------
    def _handlers(self, kind: str) -> tuple[Callable[[Obj], None], Callable[[Obj, Obj], None], Callable[[Obj], None]]:
        def mark(o: Obj) -> None:
            md = o.get("metadata") or {}
            if not md.get("creationTimestamp") and kind in ("Pod", "Node", "PodGroup", "Queue"):
                self.exotic = True
            if kind == "Pod":
                self.dirty_pods.add(_store_key(md))
            elif kind == "Node":
                self.dirty_nodes.add(str(md.get("name")))
                self._node_set_dirty = True
            elif kind == "PodGroup":
                self.dirty_jobs.add(_store_key(md))
            elif kind == "HyperNode":
                self._hn_dirty = True
            elif kind in _META_KINDS:
                self._meta_dirty.add(kind)
                if kind == "Queue":
                    self._queues_dirty.add(_store_key(md))

        return mark, lambda _old, new: mark(new), mark

    def pod_changed(self, key: str) -> None:
        """The cache's own view of Pod ``key`` changed (assumed bind, eviction, or their undoing)."""
        self.dirty_pods.add(key)

    # ----- snapshot -----------------------------------------------------------------------
    def snapshot(self, now: float) -> ClusterInfo:
        """The session's ClusterInfo (see the module docstring for what is shared)."""
        if not self._initialized:
            self._initialized = True
            self.dirty_pods.update(self.informers["Pod"].lister.keys())
            self.dirty_nodes.update(self.informers["Node"].lister.keys())
            self.dirty_jobs.update(self.informers["PodGroup"].lister.keys())
        if self._meta_dirty:
            self._apply_meta()
        self._apply_pods()
        self._apply_nodes()
        self._apply_jobs()
        if self._bad_meta:
            raise SnapshotError(self._bad_meta)
        for bad in (self._bad_nodes, self._bad_pods, self._bad_jobs):
            if bad:
                raise SnapshotError(bad[min(bad)])
        ci = ClusterInfo(now=now)
        ci.priority_classes = dict(self._priority_classes)
        ci.namespaces = dict(self._namespaces)
        for q in self._queue_infos:
            ci.queues[q.uid] = q
        ci.nodes = self._nodes_for_session()
        ci.node_list = self._session_list
        queues = ci.queues
        self._job_log.clear()
        self._job_writes.clear()
        ci.jobs = self._jobs_for_session(queues)
        ci.job_writes = self._job_writes
        ci.active_jobs = self._active
        ci.job_log = self._job_log
        self._generation += 1
        ci.changes = Changes(self._generation, self._jobs_changed, self._nodes_changed, self._job_keys, self._node_pos)
        ci.running_sums = self._running
        self._nodes_changed = set()
        # each job's PodGroup status as its base holds it: kept across sessions, brought up to
        # date for the jobs named changed (a kept job has the same base)
        pgs = self._pg_status
        for uid in self._jobs_changed:
            if uid in ci.jobs:
                pgs[uid] = (self._base_jobs[uid].pod_group or {}).get("status") or {}
            else:
                pgs.pop(uid, None)
        check = self._job_memo.on_mismatch
        if check is not None:
            fresh = {uid: (self._base_jobs[uid].pod_group or {}).get("status") or {} for uid in ci.jobs}
            if pgs.keys() != fresh.keys() or any(pgs[u] is not v and pgs[u] != v for u, v in fresh.items()):
                check(f"PodGroup statuses kept for {sorted(pgs)} differ from the base jobs' {sorted(fresh)}")
        ci.pod_group_status = pgs
        if self._hn_dirty or self._hypernodes is None:
            self._hn_dirty = False
            self._hypernodes = build_hypernodes(
                (_with_kind(o, "HyperNode") for o in sorted(self.informers["HyperNode"].lister.list(), key=order_key)),
                list(ci.nodes), {n: ni.labels for n, ni in ci.nodes.items()})
        ci.hypernodes = self._hypernodes
        if self._total is None:
            self._total = sum_resources(n.allocatable for n in ci.nodes.values())
        ci.total_allocatable = self._total
        ci.node_arrays = self._arrays
        ci.on_node_arrays = self._keep_arrays
        ci.node_memo = self._node_memo
        ci.job_memo = self._job_memo
        ci.handed_out = self._lent
        generation = self._generation
        lent = len(self._lent)
        ci.on_touched = lambda uids: self._touched_at_close(generation, uids, lent)
        ci.close_quiet = self._close_quiet
        ci.pod_affinity_nodes = frozenset(self._affinity_nodes)
        return ci

    def _jobs_for_session(self, queues: dict[str, QueueInfo]) -> dict[str, JobInfo]:
        """The session's jobs in job order: a clone of each base job, or the one handed to the
        last session when that session left it untouched (see :func:`untouched`) and its base was
        not rebuilt since. Jobs with a network topology or sub-group policies are always cloned
        afresh: a session adjusts their topology in place.

        When the queues are those of the last snapshot and the last session's close said which
        jobs it left untouched, only the other jobs (and those rebuilt, added or removed since)
        are looked at: with the same job order the dict handed to the last session is brought
        up to date in place, else a new dict is made from it in the new order
        (:meth:`_jobs_patched`)."""
        # what the last session's close found touched: it left the other jobs it was handed
        # untouched (nothing changes a job after that, and only a snapshot changes the jobs
        # handed out, :attr:`_lent`)
        last = self._close_touched
        touched = last[1] if last is not None and last[0] == self._generation else None
        self._close_touched = None
        check = self._job_memo.on_mismatch
        if touched is not None and check is not None and last is not None and (
                last[2] != len(self._lent) or not touched <= self._lent.keys()):
            check(f"jobs handed out: {len(self._lent)}, {last[2]} at the last close, touched {sorted(touched)}")
        rebuilt, self._rebuilt = self._rebuilt, set()
        queue_keys = frozenset(queues)
        prev = self._out
        base_jobs = self._base_jobs
        # the same jobs in the same order: the order list not re-sorted, the same queues, and no
        # rebuilt job that moved into or out of a known queue
        same = (touched is not None and prev is not None and self._out_order is self._job_order
                and self._out_queues == queue_keys
                and all(uid in base_jobs and (base_jobs[uid].queue in queues) == (uid in prev) for uid in rebuilt))
        if same and touched is not None:
            out = self._jobs_in_place(touched, rebuilt)
        elif touched is not None and prev is not None and self._out_queues == queue_keys:
            out = self._jobs_patched(queues, touched, rebuilt)
        else:
            out = self._jobs_afresh(queues, touched)
        self._out, self._out_order, self._out_queues = out, self._job_order, queue_keys
        self._order_tail = None
        active = self._active
        for uid in self._jobs_changed:
            now = out.get(uid)
            if now is not None and may_act(now):
                active.add(uid)
            else:
                active.discard(uid)
        return out

    def _keepable(self, uid: str, base: JobInfo, job: JobInfo, kept: dict[str, tuple[JobInfo, JobInfo, dict[str, Any]]]) -> None:
        if base.network_topology is None and not base.contains_sub_job_policy():
            kept[uid] = (base, job, dict(job.__dict__))
            self._unkept.discard(uid)
        else:
            kept.pop(uid, None)
            self._unkept.add(uid)

    def _jobs_afresh(self, queues: dict[str, QueueInfo], touched: set[str] | None) -> dict[str, JobInfo]:
        lent = self._lent
        kept: dict[str, tuple[JobInfo, JobInfo, dict[str, Any]]] = {}
        out: dict[str, JobInfo] = {}
        base_jobs = self._base_jobs
        changed: set[str] = set()
        check = self._job_memo.on_mismatch
        self._unkept = set()
        for uid in self._job_order:
            base = base_jobs[uid]
            if base.queue not in queues:
                continue
            got = lent.get(uid)
            # (a job the close did not trust although it is untouched is only cloned again)
            if got is not None and check is not None and touched is not None and uid not in touched and not untouched(
                    got[1], got[2]):
                check(f"job {uid}: untouched at the last close: True, at this snapshot: False")
            if got is not None and got[0] is base and (uid not in touched if touched is not None
                                                       else untouched(got[1], got[2])):
                out[uid] = got[1]
                kept[uid] = got
                self.jobs_kept += 1
                continue
            changed.add(uid)
            job = out[uid] = clone_job(base, self._job_log, self._job_writes)
            self._keepable(uid, base, job, kept)
        self._lent = kept
        changed.update(self._handed.difference(out))
        self._handed = set(out)
        self._jobs_changed = changed
        return out

    def _jobs_in_place(self, touched: set[str], rebuilt: set[str]) -> dict[str, JobInfo]:
        """:meth:`_jobs_afresh` when the job order and queues did not change: the jobs to clone
        are those rebuilt since, those the last close found touched, and those never handed out
        as they were (topology and sub-group jobs)."""
        out, kept, base_jobs = self._out, self._lent, self._base_jobs
        assert out is not None
        redo = out.keys() & rebuilt
        redo.update(touched)  # (all handed out: kept holds the jobs the last close saw)
        redo.update(self._unkept)
        check = self._job_memo.on_mismatch
        if check is not None:
            self._check_kept(out, kept, base_jobs, redo, check)
        self._clone_redo(out, kept, base_jobs, redo)
        self._jobs_changed = redo
        return out

    @staticmethod
    def _check_kept(out: dict[str, Any], kept: dict[str, Any], base_jobs: dict[str, JobInfo], redo: set[str],
                    check: Callable[[str], None]) -> None:
        """Verify mode: every job of ``out`` not in ``redo`` must be the untouched one handed out
        from the same base (``kept[uid]`` = (base, job, fields at hand-out))."""
        for uid, job in out.items():
            got = kept.get(uid)
            keep = (job is not None and got is not None and got[1] is job and got[0] is base_jobs[uid]
                    and untouched(job, got[2]))
            if not keep and uid not in redo:
                check(f"job {uid}: untouched at the last close: True, at this snapshot: False")

    def _clone_redo(self, out: dict[str, JobInfo], kept: dict[str, Any], base_jobs: dict[str, JobInfo],
                    redo: set[str]) -> None:
        """Clone the jobs of ``redo`` into ``out`` (in uid order) and count the others as kept."""
        for uid in sorted(redo):
            base = base_jobs[uid]
            job = out[uid] = clone_job(base, self._job_log, self._job_writes)
            self._keepable(uid, base, job, kept)
        self.jobs_kept += len(out) - len(redo)

    def _jobs_patched(self, queues: dict[str, QueueInfo], touched: set[str], rebuilt: set[str]) -> dict[str, JobInfo]:
        """:meth:`_jobs_afresh` when the queues did not change but the job order did (a PodGroup
        added or removed): a job not rebuilt since the last snapshot has the same base, so it is
        in the session iff it was in the last one; the jobs cloned are those
        :meth:`_jobs_in_place` clones plus the ones new to the session.

        When the new order only dropped jobs and added jobs after all the others
        (:attr:`_order_tail`: the usual case, a PodGroup created after every other one) and
        every job new to the session is one of those, the last dict is brought up to date in
        place (the jobs gone deleted, the new ones added at its end): a walk over the changes.
        Else the new dict is the last one's jobs in the new order (a C-level pass)."""
        prev, kept, base_jobs = self._out, self._lent, self._base_jobs
        assert prev is not None
        gone = [uid for uid in rebuilt if uid in prev and not (uid in base_jobs and base_jobs[uid].queue in queues)]
        joined = {uid for uid in rebuilt if uid not in prev and uid in base_jobs and base_jobs[uid].queue in queues}
        tail = self._order_tail
        members: set[str]
        if tail is not None and tail[0] is self._out_order and joined <= tail[1].keys():
            out = prev
            for uid in gone:
                del out[uid]
            for uid in tail[1]:
                if uid in joined:
                    out[uid] = base_jobs[uid]  # (a placeholder: cloned below, in place)
            members = self._handed
            members.difference_update(gone)
            members.update(joined)
        else:
            members = prev.keys() - rebuilt
            members.update(uid for uid in rebuilt if uid in base_jobs and base_jobs[uid].queue in queues)
            order = self._job_order
            if len(members) != len(order):
                order = [uid for uid in order if uid in members]
            out = dict(zip(order, map(prev.get, order), strict=True))  # type: ignore[arg-type]
        # (kept holds jobs of the last dict: those that left are among the gone ones)
        for uid in gone:
            kept.pop(uid, None)
        self._unkept.difference_update(gone)
        redo = {uid for uid in rebuilt if uid in members}
        redo.update(joined)
        redo.update(uid for uid in touched if uid in kept)
        redo.update(self._unkept)
        check = self._job_memo.on_mismatch
        if check is not None:
            want = [uid for uid in self._job_order if base_jobs[uid].queue in queues]
            if members != out.keys():
                check(f"jobs of the last session {sorted(members - out.keys())} not in its patched dict, "
                      f"{sorted(out.keys() - members)} in it but not of the session")
            if list(out) != want:
                check(f"patched job order {list(out)} != {want}")
            self._check_kept(out, kept, base_jobs, redo, check)
        self._clone_redo(out, kept, base_jobs, redo)
        redo.update(gone)
        self._jobs_changed = redo
        self._handed = members
        return out

    def _touched_at_close(self, generation: int, uids: set[str], lent: int) -> None:
        self._close_touched = (generation, uids, lent)

    def _keep_arrays(self, arrays: NodeArrays) -> None:
        self._arrays = arrays

    def _nodes_for_session(self) -> dict[str, NodeInfo]:
        sess = self._session_nodes
        log = self._touched_nodes
        if self._order_changed or len(sess) != len(self._node_order):
            log.clear()
            old = sess
            sess = self._session_nodes = {}
            for name in self._node_order:
                n = old.get(name)
                sess[name] = n if n is not None and not n.touched else clone_node(self._base_nodes[name], log)
            self._nodes_changed = None
            self._node_pos = {name: i for i, name in enumerate(self._node_order)}
            self._session_list = list(sess.values())
        else:
            # the Nodes a session touched named themselves in the log (NodeInfo.touch_log)
            names = sorted(log)
            log.clear()
            changed = self._nodes_changed
            for name in names:
                n = sess.get(name)
                if n is not None and n.touched:
                    sess[name] = clone_node(self._base_nodes[name], log)
                    if changed is not None:
                        changed.add(name)
            # the list follows the dict: the Nodes replaced here and by _apply_nodes
            lst, pos = self._session_list, self._node_pos
            if changed is None:
                lst[:] = sess.values()
            else:
                for name in changed:
                    i = pos.get(name)
                    if i is not None:
                        lst[i] = sess[name]
            check = self._job_memo.on_mismatch
            if check is not None and (len(lst) != len(sess) or any(a is not b for a, b in zip(lst, sess.values(), strict=False))):
                check("the session's Node list differs from its Nodes dict")
        self._order_changed = False
        # handed out as they are (no copy): a session never adds or removes a Node, and the next
        # snapshot is taken after the session closed
        return sess

    def _apply_meta(self) -> None:
        """Read again the PriorityClasses, Queues and Namespaces of the kinds that changed (of
        Queues only those that changed): each part is a function of its own kind's objects
        alone. A bad object (SnapshotError, kept in :attr:`_bad_meta`) or a failure leaves every
        kind to be read again at the next snapshot, and nothing applied."""
        kinds, self._meta_dirty = self._meta_dirty, set()
        self._bad_meta = ""
        pcs: dict[str, int] = {}
        default = 0
        try:
            if "PriorityClass" in kinds:
                for o in sorted(self.informers["PriorityClass"].lister.list(), key=order_key):
                    name = (o.get("metadata") or {}).get("name", "")
                    try:
                        pcs[name] = int(o.get("value") or 0)
                    except (TypeError, ValueError) as e:
                        raise SnapshotError(f"{_ident(_with_kind(o, 'PriorityClass'))}: value: {e}") from e
                    if o.get("globalDefault"):
                        default = pcs[name]
            fresh = self._read_queues() if "Queue" in kinds else None
        except SnapshotError as e:
            self._bad_meta = str(e)
            self._meta_dirty = set(_META_KINDS)
            return
        except Exception:
            self._meta_dirty = set(_META_KINDS)  # e.g. a creationTimestamp _creation cannot read: again next time
            raise
        if "PriorityClass" in kinds and (pcs != self._priority_classes or default != self._default_priority):
            self._priority_classes, self._default_priority = pcs, default
            self.dirty_jobs.update(self._base_jobs)
            self.dirty_jobs.update(self._bad_jobs)
        if fresh is not None:
            self._keep_queues(*fresh)
        if "Namespace" in kinds:
            self._namespaces = {
                (o.get("metadata") or {}).get("name", ""): _with_kind(o, "Namespace")
                for o in sorted(self.informers["Namespace"].lister.list(), key=order_key)
            }

    def _read_queues(self) -> tuple[set[str], dict[str, tuple[Obj, OrderKey, QueueInfo]]]:
        """(the names of the Queues gone, a fresh entry for every Queue whose informer object is
        not the one read last) for the Queues named changed; every Queue the first time.

        Raises:
            SnapshotError: a Queue spec the scheduler cannot read (every creation time is read
                before any spec, the Queues in snapshot order: the order the errors are raised in).
        """
        lister = self.informers["Queue"].lister
        built = self._queue_built
        names = self._queues_dirty
        if not self._queue_order and not built:
            names = names.union(lister.keys())
        gone: set[str] = set()
        todo: list[Obj] = []
        for name in names:
            raw = lister.get_by_key(name)
            if raw is None:
                if name in built:
                    gone.add(name)
                continue
            got = built.get(name)
            if got is None or got[0] is not raw:
                todo.append(raw)
        todo.sort(key=order_key)
        objs = [_with_kind(raw, "Queue") for raw in todo]
        creations = [_creation(o, 0.0) for o in objs]
        fresh: dict[str, tuple[Obj, OrderKey, QueueInfo]] = {}
        for raw, o, creation in zip(todo, objs, creations, strict=True):
            try:
                info = QueueInfo.from_queue(o, creation)
            except (TypeError, ValueError) as e:
                raise SnapshotError(f"{_ident(o)}: spec: {e}") from e
            fresh[_store_key(raw.get("metadata") or {})] = (raw, order_key(raw), info)
        return gone, fresh

    def _keep_queues(self, gone: set[str], fresh: dict[str, tuple[Obj, OrderKey, QueueInfo]]) -> None:
        """Apply :meth:`_read_queues`' result: the Queues in snapshot order (re-sorted when one
        came, went or got another order key)."""
        built = self._queue_built
        self._queues_dirty = set()
        reorder = bool(gone)
        for name in gone:
            del built[name]
        for name, ent in fresh.items():
            old = built.get(name)
            if old is None or old[1] != ent[1]:
                reorder = True
            built[name] = ent
        if reorder:
            self._queue_order = sorted(built, key=lambda n: built[n][1])
        if reorder or fresh:
            self._queue_infos = [built[n][2] for n in self._queue_order]

    def _apply_pods(self) -> None:
        if not self.dirty_pods:
            return
        lister = self.informers["Pod"].lister
        keys, self.dirty_pods = sorted(self.dirty_pods), set()
        for key in keys:
            old_node = self._pod_node.pop(key, "")
            if old_node:
                self._node_pods[old_node].discard(key)
                self.dirty_nodes.add(old_node)
            old_job = self._pod_job.pop(key, "")
            if old_job:
                self._job_pods[old_job].discard(key)
                self.dirty_jobs.add(old_job)
            self._bad_pods.pop(key, None)
            obj = lister.get_by_key(key)
            if obj is None:
                self._tasks.pop(key, None)
                self._pod_order.pop(key, None)
                self._forget(key)
                continue
            o = self._overlay(key, _with_kind(obj, "Pod"))
            try:
                t = TaskInfo.from_pod(o)
            except ValueError as e:
                self._bad_pods[key] = f"{_ident(o)}: spec.containers[].resources: {e}"
                self._tasks.pop(key, None)
                continue
            self._tasks[key] = t
            self._pod_order[key] = order_key(o)
            if t.node_name and t.status not in COMPLETED_STATUSES:
                self._pod_node[key] = t.node_name
                self._node_pods.setdefault(t.node_name, set()).add(key)
                self.dirty_nodes.add(t.node_name)
            sched = (o.get("spec") or {}).get("schedulerName") or "default-scheduler"
            if t.job and (sched in self.scheduler_names or t.status is not TaskStatus.Pending):
                self._pod_job[key] = t.job
                self._job_pods.setdefault(t.job, set()).add(key)
                self.dirty_jobs.add(t.job)

    def _sorted_tasks(self, keys: Iterable[str]) -> list[TaskInfo]:
        order = self._pod_order
        return [self._tasks[k] for k in sorted(keys, key=lambda k: order[k])]

    def _apply_nodes(self) -> None:
        if not self.dirty_nodes:
            return
        lister = self.informers["Node"].lister
        names, self.dirty_nodes = sorted(self.dirty_nodes), set()
        membership = False
        for name in names:
            self._bad_nodes.pop(name, None)
            self._affinity_nodes.discard(name)
            obj = lister.get_by_key(name)
            was = name in self._base_nodes
            if obj is None or not node_is_ready(obj):
                self._base_nodes.pop(name, None)
                self._node_objs.pop(name, None)
                membership |= was
                continue
            o = _with_kind(obj, "Node")
            try:
                n = NodeInfo.from_node(o)
            except ValueError as e:
                self._bad_nodes[name] = f"{_ident(o)}: status.allocatable: {e}"
                self._base_nodes.pop(name, None)
                membership |= was
                continue
            for t in self._sorted_tasks(self._node_pods.get(name, ())):
                n.add_task(t)
            n.touched = False
            if any(has_pod_affinity(t) for t in n.tasks.values()):
                self._affinity_nodes.add(name)
            else:
                self._affinity_nodes.discard(name)
            self._base_nodes[name] = n
            if name in self._session_nodes:
                self._session_nodes[name] = clone_node(n, self._touched_nodes)
                if self._nodes_changed is not None:
                    self._nodes_changed.add(name)
            if not was or self._node_objs.get(name) is not obj:
                membership = True
            self._node_objs[name] = obj
        if membership or self._node_set_dirty:
            self._node_set_dirty = False
            objs = self._node_objs
            self._node_order = sorted(self._base_nodes, key=lambda n: order_key(objs[n]))
            self._order_changed = True
            self._hn_dirty = True
            self._total = None
            self._arrays = None
            self._node_memo = {}

    def _apply_jobs(self) -> None:
        if not self.dirty_jobs:
            return
        lister = self.informers["PodGroup"].lister
        uids, self.dirty_jobs = sorted(self.dirty_jobs), set()
        # the jobs that left and joined the job order, for :meth:`_reorder_jobs`
        left: dict[str, OrderKey] = {}
        joined: list[str] = []
        for uid in uids:
            self._bad_jobs.pop(uid, None)
            obj = lister.get_by_key(uid)
            self._job_memo.forget(uid)
            self._rebuilt.add(uid)
            self._close_quiet.pop(uid, None)
            if obj is None:
                if self._base_jobs.pop(uid, None) is not None:
                    self._forget_job_key(uid, left)
                continue
            o = _with_kind(obj, "PodGroup")
            try:
                job = job_from_pod_group(o, _creation(o, 0.0), self._priority_classes, self._default_priority)
            except FATAL_TYPES:
                raise  # not logged and carried on: the snapshot, so the scheduler's cycle, ends with it
            except Exception as e:  # one bad PodGroup must not cut the batch short
                # SnapshotError (a field the API lets through and the scheduler cannot read) is kept:
                # the snapshot refuses like the full build. Anything else is a bug building this one
                # job: logged with its traceback, and the job left out of sessions until it changes,
                # so the other PodGroups are still scheduled
                if isinstance(e, SnapshotError):
                    self._bad_jobs[uid] = str(e)
                else:
                    log.exception("%s: left out of scheduling until it changes: %s: %s", _ident(o),
                                  type(e).__name__, e)
                if self._base_jobs.pop(uid, None) is not None:
                    self._forget_job_key(uid, left)
                continue
            if job.uid != uid:  # a PodGroup without a namespace: the full build's key differs
                self.exotic = True
            for t in self._sorted_tasks(self._job_pods.get(uid, ())):
                job.add_task(t)
            job.version = next(self._job_builds)
            key = order_key(o)
            if uid not in self._base_jobs:
                self._job_order_dirty = True
                joined.append(uid)
            elif self._job_keys.get(uid) != key:
                # (the same uid, another creation time: kept where it was until the next
                # re-sort, which then sorts the whole list)
                self._job_order_sorted = False
            self._base_jobs[uid] = job
            self._job_keys[uid] = key
        if self._job_order_dirty:
            self._job_order_dirty = False
            self._reorder_jobs(left, joined)

    def _forget_job_key(self, uid: str, left: dict[str, OrderKey]) -> None:
        """A job left :attr:`_base_jobs`: drop its order key (kept in ``left`` for :meth:`_reorder_jobs`)."""
        key = self._job_keys.pop(uid, None)
        if key is not None:
            left[uid] = key
        self._job_order_dirty = True

    def _reorder_jobs(self, left: dict[str, OrderKey], joined: list[str]) -> None:
        """A new :attr:`_job_order` (a new list: the old one is compared by identity): the base jobs
        sorted by their order keys. When the old list was sorted by the keys and a few jobs left
        or joined, they are taken out and put in by bisection (the keys are unique, so the result
        is the one sorted list); else the whole list is sorted."""
        keys = self._job_keys
        before = self._job_order
        self._order_tail = None
        if not self._job_order_sorted or len(left) + len(joined) > _REORDER_MAX:
            self._job_order = sorted(self._base_jobs, key=keys.__getitem__)
            self._job_order_sorted = True
            return
        order = list(before)
        if left:
            def old_key(u: str) -> OrderKey:
                got = keys.get(u)
                return left[u] if got is None else got

            for uid, key in left.items():
                i = bisect.bisect_left(order, key, key=old_key)
                assert order[i] == uid, (uid, i)
                del order[i]
        tail: dict[str, None] | None = {}
        for uid in joined:
            # (bisect.insort, with the place kept)
            i = bisect.bisect_right(order, keys[uid], key=keys.__getitem__)
            if tail is not None:
                if i == len(order):
                    tail[uid] = None
                else:
                    tail = None
            order.insert(i, uid)
        self._job_order = order
        if tail is not None:
            self._order_tail = (before, tail)


_META_KINDS = ("PriorityClass", "Queue", "Namespace")
"""The kinds :meth:`IncrementalSnapshot._apply_meta` reads."""


def _store_key(md: Obj) -> str:
    ns = md.get("namespace")
    return f"{ns}/{md.get('name')}" if ns else str(md.get("name"))


def _with_kind(o: Obj, kind: str) -> Obj:
    """The object as :meth:`SchedulerCache.objects` hands it to the full build: a shallow copy
    with ``kind`` filled in."""
    c = dict(o)
    c.setdefault("kind", kind)
    return c


def snapshot_digest(ci: ClusterInfo) -> list[Any]:
    """Everything in a snapshot a session reads, as comparable plain data (Node, job, task and
    queue order included; a Releasing overlay's deletionTimestamp, which only marks the Pod as
    going, left out). Used to check the incremental snapshot against the full build."""

    def res(r: Resource | None) -> Any:
        return None if r is None else (r.milli_cpu, r.memory, sorted(r.scalars.items()))

    def task(t: TaskInfo) -> Any:
        pod = dict(t.pod)
        md = dict(pod.get("metadata") or {})
        md.pop("deletionTimestamp", None)
        pod["metadata"] = md
        return (t.uid, t.name, t.namespace, t.job, t.role, res(t.resreq), str(t.status), t.priority, t.preemptable,
                t.node_name, t.creation, repr(pod), t.sch_gated, t.preemption_policy, t.nominated_node_name,
                t.eviction_occurred, t.last_transaction, t.job_allocated_hypernode)

    out: list[Any] = [sorted(ci.priority_classes.items()), [(k, repr(v)) for k, v in ci.namespaces.items()]]
    for q in ci.queues.values():
        out.append(("queue", q.uid, q.name, q.weight, q.priority, q.reclaimable, q.state, q.parent, res(q.capability),
                    res(q.deserved), res(q.guarantee), q.hierarchy, q.weights, q.creation, repr(q.queue)))
    for n in ci.nodes.values():
        out.append(("node", n.name, repr(n.node), res(n.allocatable), res(n.capacity), res(n.idle), res(n.used),
                    res(n.releasing), res(n.pipelined), [(k, task(t)) for k, t in n.tasks.items()], sorted(n.evicted),
                    n.kube_requested, n.kube_nonzero))
    for j in ci.jobs.values():
        nt = j.network_topology
        out.append(("job", j.uid, j.name, j.namespace, j.queue, j.priority, j.min_available,
                    sorted(j.task_min_available.items()), res(j.min_resources), j.creation, repr(j.pod_group),
                    j.preemptable, [task(t) for t in j.tasks.values()],
                    [(str(s), list(b)) for s, b in j.task_status_index.items()], res(j.allocated), res(j.total_request),
                    repr(j.nodes_fit_errors), j.job_fit_errors, sorted(j.annotations.items()),
                    j.pending_best_effort, None if nt is None else (nt.mode, nt.highest_tier_allowed, nt.highest_tier_name),
                    j.allocated_hypernode, j.waiting_tier))
    hn = ci.hypernodes
    if hn is not None:
        out.append(("hypernodes", hn.node_order, sorted((k, repr(v)) for k, v in hn.infos.items())))
    return out
