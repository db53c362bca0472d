"""JobInfo: a PodGroup and its tasks.

Mirrors: volcano pkg/scheduler/api/job_info.go JobInfo (gang counters, CheckTask*,
CheckSubJob*, sub-jobs, NeedContinueAllocating, FitError, TaskSchedulingReason).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pumice.api import Obj
from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.sub_job_info import (
    NetworkTopology,
    SubJobInfo,
    match_values,
    new_sub_job,
    sub_job_id,
)
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import (
    ALLOCATED_STATUSES,
    POD_GROUP_NOT_READY,
    POD_GROUP_READY,
    POD_REASON_SCHEDULABLE,
    POD_REASON_UNSCHEDULABLE,
    SCHEDULED_STATUSES,
    FitErrors,
    TaskStatus,
)


class FitFailedRoles:
    """What :meth:`JobInfo.fit_failed_roles` returned, kept while it cannot change: ``roles``
    (sub-job uid, or None for the whole job -> the roles of the tasks with a fit error) holds for
    the dict ``errors`` while it has ``size`` entries and the job's task membership is as it was
    (``errors`` None: nothing kept). :meth:`JobInfo.record_fit_error` brings it up to date;
    ``add_task`` / ``delete_task`` drop it; a rebound ``nodes_fit_errors``, or one added to
    directly, no longer matches ``errors`` / ``size``. Relies on fit errors being only added in
    place (the resets rebind the dict): a deletion in place followed by an addition would go
    unseen. Changed in place only, so a :class:`WriteLoggedJob` logs no write for it."""

    __slots__ = ("errors", "roles", "size")

    def __init__(self) -> None:
        self.errors: dict[str, FitErrors] | None = None
        self.size = 0
        self.roles: dict[str | None, set[str]] = {}


_READY = (TaskStatus.Bound, TaskStatus.Binding, TaskStatus.Running, TaskStatus.Allocated, TaskStatus.Succeeded)
_T = TypeVar("_T")
_VALID = ALLOCATED_STATUSES | {TaskStatus.Succeeded, TaskStatus.Pipelined, TaskStatus.Pending}


@dataclass(eq=False)
class JobInfo:
    """A job: uid ``<ns>/<podgroup>``. ``pod_group`` is the wire PodGroup, read-only (the
    snapshot's job holds the informer's object; :meth:`set_phase` puts a new dict in its place,
    and a session keeps PodGroup conditions apart). ``creation`` in epoch seconds; ``min_resources`` None when the
    PodGroup gives none."""

    uid: str
    name: str
    namespace: str
    queue: str = "default"
    priority: int = 0
    min_available: int = 0
    task_min_available: dict[str, int] = field(default_factory=dict)
    min_resources: Resource | None = None
    creation: float = 0.0
    pod_group: Obj | None = None
    preemptable: bool = False
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)
    allocated: Resource = field(default_factory=Resource)
    total_request: Resource = field(default_factory=Resource)
    nodes_fit_errors: dict[str, FitErrors] = field(default_factory=dict)
    job_fit_errors: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    pending_best_effort: int = 0
    network_topology: NetworkTopology | None = None
    allocated_hypernode: str = ""
    waiting_tier: int = 0
    """The tier of the last HyperNode gradient allocate tried for this job (0: none tried)."""
    version: int = 0
    """The live cache's build number of the base job this one was cloned from; 0 when not from
    the incremental snapshot, and reset to 0 by every change of the job's tasks or phase
    (:meth:`add_task`, :meth:`delete_task`, :meth:`update_task_status`, :meth:`set_phase`). Two
    jobs with the same non-zero version have the same tasks (statuses included), phase and
    PodGroup spec; :class:`JobMemo` keys on it."""
    _sub_jobs: dict[str, SubJobInfo] | None = field(default=None, repr=False)
    _task_to_sub_job: dict[str, str] = field(default_factory=dict, repr=False)
    _fit_failed: FitFailedRoles = field(default_factory=FitFailedRoles, repr=False)
    touch_log: set[str] | None = field(default=None, repr=False)
    """Where every change that resets :attr:`version` adds the job's uid (the live cache's log of
    the jobs a session changed, see :meth:`Session.active_jobs`); None: nowhere."""
    write_log: set[str] | None = field(default=None, repr=False)
    """Where a :class:`WriteLoggedJob` adds its uid whenever a field is set or a fit error is
    recorded (the live cache's log of the jobs a session wrote); unused
    by a plain JobInfo."""

    def _touched(self) -> None:
        self.version = 0
        log = self.touch_log
        if log is not None:
            log.add(self.uid)

    def is_hard_topology_mode(self) -> tuple[bool, int]:
        """(hard, highest allowed tier): hard only with mode ``hard`` and a tier limit.

        Mirrors: job_info.go IsHardTopologyMode.
        """
        nt = self.network_topology
        if nt is None or nt.highest_tier_allowed is None:
            return False, 0
        return nt.mode == "hard", nt.highest_tier_allowed

    # ----- membership ---------------------------------------------------------------------
    @property
    def task_min_available_total(self) -> int:
        return sum(self.task_min_available.values())

    @property
    def phase(self) -> str:
        return ((self.pod_group or {}).get("status") or {}).get("phase") or ""

    def set_phase(self, phase: PodGroupPhase) -> None:
        self._touched()
        pg = self.pod_group
        if pg is not None:  # a new PodGroup dict: the snapshot's may be shared with the live cache
            self.pod_group = {**pg, "status": {**(pg.get("status") or {}), "phase": str(phase)}}

    def add_task(self, t: TaskInfo) -> None:
        self._touched()
        self._fit_failed.errors = None
        self.tasks[t.uid] = t
        self.task_status_index.setdefault(t.status, {})[t.uid] = t
        if t.status is TaskStatus.Pending and t.best_effort:
            self.pending_best_effort += 1
        self.total_request = self.total_request + t.resreq
        if t.status in ALLOCATED_STATUSES:
            self.allocated = self.allocated + t.resreq
        if self._sub_jobs is not None:
            self._add_to_sub_job(t)

    def _delete_index(self, t: TaskInfo) -> None:
        bucket = self.task_status_index.get(t.status)
        if bucket is not None:
            if bucket.pop(t.uid, None) is not None and t.status is TaskStatus.Pending and t.best_effort:
                self.pending_best_effort -= 1
            if not bucket:
                del self.task_status_index[t.status]

    def delete_task(self, t: TaskInfo) -> None:
        cur = self.tasks.pop(t.uid, None)
        if cur is None:
            return
        self._touched()
        self._fit_failed.errors = None
        self.total_request = self.total_request - cur.resreq
        if cur.status in ALLOCATED_STATUSES:
            self.allocated = self.allocated - cur.resreq
        self._delete_index(cur)
        if self._sub_jobs is not None:
            sub = self._sub_jobs.get(self._task_to_sub_job.pop(cur.uid, ""))
            if sub is not None:
                sub.delete_task(cur)

    def update_task_status(self, t: TaskInfo, status: TaskStatus) -> None:
        """Move ``t`` to ``status`` keeping the index and ``allocated`` consistent."""
        self._touched()
        cur = self.tasks.get(t.uid, t)
        old = cur.status
        was_alloc = old in ALLOCATED_STATUSES
        self._delete_index(cur)
        cur.status = status
        if self._sub_jobs is not None:
            sub = self._sub_jobs.get(self._task_to_sub_job.get(cur.uid, ""))
            if sub is not None:
                sub.move_task(cur, old, status)
        if t is not cur:
            t.status = status
        self.task_status_index.setdefault(status, {})[cur.uid] = cur
        if status is TaskStatus.Pending and cur.best_effort:
            self.pending_best_effort += 1
        now_alloc = status in ALLOCATED_STATUSES
        if was_alloc and not now_alloc:
            self.allocated = self.allocated - cur.resreq
        elif now_alloc and not was_alloc:
            self.allocated = self.allocated + cur.resreq

    def tasks_in(self, status: TaskStatus) -> list[TaskInfo]:
        return list(self.task_status_index.get(status, {}).values())

    def count(self, status: TaskStatus) -> int:
        return len(self.task_status_index.get(status, ()))

    # ----- gang counters ------------------------------------------------------------------
    def ready_task_num(self) -> int:
        idx = self.task_status_index
        n = 0
        for s in _READY:
            b = idx.get(s)
            if b:
                n += len(b)
        return n

    def waiting_task_num(self) -> int:
        return self.count(TaskStatus.Pipelined)

    def pending_best_effort_task_num(self) -> int:
        return self.pending_best_effort

    def valid_task_num(self) -> int:
        return sum(len(b) for s, b in self.task_status_index.items() if s in _VALID)

    def scheduled_task_num(self) -> int:
        return sum(len(b) for s, b in self.task_status_index.items() if s in SCHEDULED_STATUSES)

    def releasing_scheduled_task_num(self) -> int:
        return sum(1 for t in self.task_status_index.get(TaskStatus.Releasing, {}).values() if t.node_name)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return (
            self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
            >= self.min_available
        )

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return self.pod_group is None or self.phase in ("", str(PodGroupPhase.PENDING))

    def has_pending_tasks(self) -> bool:
        return bool(self.task_status_index.get(TaskStatus.Pending))

    def _roles(self, statuses: frozenset[TaskStatus] | set[TaskStatus], pending_best_effort: bool) -> dict[str, int]:
        occ: dict[str, int] = {}
        for s, bucket in self.task_status_index.items():
            if s in statuses:
                for t in bucket.values():
                    occ[t.role] = occ.get(t.role, 0) + 1
            elif s is TaskStatus.Pending and pending_best_effort and self.pending_best_effort:
                for t in bucket.values():
                    if t.best_effort:
                        occ[t.role] = occ.get(t.role, 0) + 1
        return occ

    def allocated_roles(self) -> dict[str, int]:
        return self._roles(ALLOCATED_STATUSES | {TaskStatus.Succeeded}, True)

    def check_task_valid(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        actual = self._roles(_VALID, False)
        return all(m == 0 or actual.get(r, 0) >= m for r, m in self.task_min_available.items())

    def check_task_ready(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        occ = self.allocated_roles()
        return all(occ.get(r, 0) >= m for r, m in self.task_min_available.items())

    def check_task_pipelined(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        occ = self._roles(ALLOCATED_STATUSES | {TaskStatus.Succeeded, TaskStatus.Pipelined}, True)
        return all(occ.get(r, 0) >= m for r, m in self.task_min_available.items())

    # ----- sub-jobs -----------------------------------------------------------------------
    def sub_group_policies(self) -> list[Obj]:
        """The PodGroup's ``spec.subGroupPolicy`` entries ([] without a PodGroup)."""
        if self.pod_group is None:
            return []
        return list((self.pod_group.get("spec") or {}).get("subGroupPolicy") or [])

    def contains_sub_job_policy(self) -> bool:
        return bool(((self.pod_group or {}).get("spec") or {}).get("subGroupPolicy"))

    @property
    def min_sub_jobs(self) -> dict[str, int]:
        """Policy group id (``<job>/<policy>``) -> ``minSubGroups`` (0 when unset)."""
        return {f"{self.uid}/{p.get('name', '')}": int(p.get("minSubGroups") or 0) for p in self.sub_group_policies()}

    @property
    def sub_jobs(self) -> dict[str, SubJobInfo]:
        """Sub-job uid -> sub-job, built on first use and kept in step with the tasks after."""
        if self._sub_jobs is None:
            self._sub_jobs = {}
            self._task_to_sub_job = {}
            for t in self.tasks.values():
                self._add_to_sub_job(t)
        return self._sub_jobs

    def sub_job_of(self, task_uid: str) -> SubJobInfo | None:
        return self.sub_jobs.get(self._task_to_sub_job.get(task_uid, ""))

    def topology_group(self, task_uid: str) -> JobInfo | SubJobInfo:
        """What a task's network-topology placement is judged against: its sub-job when the job
        has sub-group policies, else the job itself (which is then its only sub-job)."""
        if not self.contains_sub_job_policy():
            return self
        return self.sub_job_of(task_uid) or self

    def _default_sub_job(self) -> SubJobInfo:
        assert self._sub_jobs is not None
        sub = self._sub_jobs.get(self.uid)
        if sub is None:
            policy: dict[str, object] = {}
            if not self.contains_sub_job_policy():
                policy["subGroupSize"] = self.min_available
            if self.network_topology is not None:
                policy["networkTopology"] = self.network_topology
            sub = self._sub_jobs[self.uid] = new_sub_job(self.uid, self.uid, self.uid, policy, None)
        return sub

    def _sub_job_for(self, t: TaskInfo) -> SubJobInfo:
        assert self._sub_jobs is not None
        labels = (t.pod.get("metadata") or {}).get("labels") or {}
        for policy in self.sub_group_policies():
            values = match_values(policy, labels)
            if values:
                name = str(policy.get("name", ""))
                uid = sub_job_id(self.uid, name, values)
                sub = self._sub_jobs.get(uid)
                if sub is None:
                    sub = self._sub_jobs[uid] = new_sub_job(f"{self.uid}/{name}", uid, self.uid, policy, values)
                return sub
        return self._default_sub_job()

    def _add_to_sub_job(self, t: TaskInfo) -> None:
        sub = self._sub_job_for(t)
        sub.add_task(t)
        self._task_to_sub_job[t.uid] = sub.uid

    def contains_hard_topology(self) -> bool:
        """The job or any of its sub-jobs has a hard network topology."""
        if self.is_hard_topology_mode()[0]:
            return True
        return self.contains_sub_job_policy() and any(s.is_hard_topology_mode()[0] for s in self.sub_jobs.values())

    def check_sub_job_valid(self) -> bool:
        """Every policy has at least ``minSubGroups`` sub-jobs."""
        if not self.contains_sub_job_policy():
            return True
        count: dict[str, int] = {}
        for s in self.sub_jobs.values():
            count[s.gid] = count.get(s.gid, 0) + 1
        return all(count.get(g, 0) >= m for g, m in self.min_sub_jobs.items())

    def _sub_jobs_satisfy(self, ready: bool) -> bool:
        if not self.contains_sub_job_policy():
            return True
        count: dict[str, int] = {}
        for s in self.sub_jobs.values():
            if s.is_ready() if ready else s.is_pipelined():
                count[s.gid] = count.get(s.gid, 0) + 1
        return all(m == 0 or count.get(g, 0) >= m for g, m in self.min_sub_jobs.items())

    def check_sub_job_ready(self) -> bool:
        """At least ``minSubGroups`` sub-jobs of each policy are ready."""
        return self._sub_jobs_satisfy(True)

    def check_sub_job_pipelined(self) -> bool:
        return self._sub_jobs_satisfy(False)

    def reset_sub_job_fit_err(self, sub_uid: str) -> None:
        """Forget the fit errors of ``sub_uid``'s tasks."""
        self.sub_jobs  # noqa: B018 -- builds the task -> sub-job index
        self.nodes_fit_errors = {k: v for k, v in self.nodes_fit_errors.items() if self._task_to_sub_job.get(k) != sub_uid}

    # ----- allocation bookkeeping ---------------------------------------------------------
    def record_fit_error(self, uid: str, fit_errors: FitErrors) -> None:
        """Record why task ``uid`` fits no node this session (``nodes_fit_errors[uid]``),
        keeping :meth:`fit_failed_roles` up to date in O(1)."""
        errs = self.nodes_fit_errors
        memo = self._fit_failed
        current = memo.errors is errs and memo.size == len(errs)
        new = uid not in errs
        errs[uid] = fit_errors
        if not current or not new:
            return
        memo.size += 1
        t = self.tasks.get(uid)
        if t is None:
            return
        for key in (None, self._task_to_sub_job.get(uid)):
            roles = memo.roles.get(key)
            if roles is not None:
                roles.add(t.role)

    def fit_failed_roles(self, sub_uid: str | None = None) -> set[str]:
        """Roles with a recorded fit error (only ``sub_uid``'s tasks when given); read-only,
        the set is kept for the next call (see :class:`FitFailedRoles`).

        Mirrors: job_info.go FitFailedRoles (a task missing from the job is skipped)."""
        if sub_uid is not None:
            self.sub_jobs  # noqa: B018 -- builds the task -> sub-job index
        errs = self.nodes_fit_errors
        memo = self._fit_failed
        if memo.errors is not errs or memo.size != len(errs):
            memo.errors, memo.size, memo.roles = errs, len(errs), {}
        roles = memo.roles.get(sub_uid)
        if roles is None:
            roles = memo.roles[sub_uid] = self._fit_failed_roles(sub_uid)
        return roles

    def _fit_failed_roles(self, sub_uid: str | None) -> set[str]:
        """:meth:`fit_failed_roles` computed from ``nodes_fit_errors``, one pass."""
        if sub_uid is None:
            return {self.tasks[uid].role for uid in self.nodes_fit_errors if uid in self.tasks}
        return {
            self.tasks[uid].role for uid in self.nodes_fit_errors
            if uid in self.tasks and self._task_to_sub_job.get(uid) == sub_uid
        }

    def task_has_fit_errors(self, t: TaskInfo, sub_uid: str | None = None) -> bool:
        return bool(t.role) and t.role in self.fit_failed_roles(sub_uid)

    def need_continue_allocating(self, sub_uid: str | None = None) -> bool:
        """After one task found no node, may allocate keep trying this job's (or sub-job
        ``sub_uid``'s) other tasks?"""
        if self.min_available == len(self.tasks):
            return False
        if sub_uid is not None:
            sub = self.sub_jobs.get(sub_uid)
            if sub is not None and sub.min_available >= len(sub.tasks):
                return False
            if self.contains_sub_job_policy():
                return True
        failed = self.fit_failed_roles(sub_uid)
        pending: dict[str, int] = {}
        for t in self.task_status_index.get(TaskStatus.Pending, {}).values():
            pending[t.role] = pending.get(t.role, 0) + 1
        if self.min_available < self.task_min_available_total:
            left = sum(c for r, c in pending.items() if r not in failed)
            return self.ready_task_num() + left >= self.min_available
        alloc = self.allocated_roles()
        for r in failed:
            m = self.task_min_available.get(r, 0)
            if m and alloc.get(r, 0) < m:
                return False
        return True

    def reset_fit_err(self) -> None:
        self.job_fit_errors = ""
        self.nodes_fit_errors = {}

    # ----- explanations -------------------------------------------------------------------
    def task_scheduling_reason(self, uid: str) -> tuple[str, str, str]:
        """(reason, message, nominatedNodeName) for a task from its last transaction."""
        t = self.tasks.get(uid)
        if t is None:
            return "", "", ""
        ctx = t.last_transaction or t.transaction_context()
        msg = self.job_fit_errors
        if ctx.status is TaskStatus.Allocated:
            return (
                POD_REASON_SCHEDULABLE,
                f"Pod {t.namespace}/{t.name} can possibly be assigned to {ctx.node_name}, once minAvailable is satisfied",
                "",
            )
        if ctx.status is TaskStatus.Pipelined:
            return (
                POD_REASON_UNSCHEDULABLE,
                f"Pod {t.namespace}/{t.name} can possibly be assigned to {ctx.node_name}, once resource is released "
                "and minAvailable is satisfied",
                ctx.node_name if ctx.eviction_occurred else "",
            )
        if ctx.status is TaskStatus.Pending:
            fe = self.nodes_fit_errors.get(uid)
            if fe is not None:
                return POD_REASON_UNSCHEDULABLE, str(fe), ""
            return POD_REASON_UNSCHEDULABLE, msg, ""
        return str(ctx.status), msg, ""

    def fit_error(self) -> str:
        """The job fit error, e.g. ``pod group is not ready, 2 Pending, 3 minAvailable; Pending:
        2 Unschedulable. Origin reason is p1: 0/2 nodes are unavailable: 2 Insufficient cpu.``"""
        hist = {str(s): len(b) for s, b in self.task_status_index.items()}
        hist["minAvailable"] = self.min_available
        status = POD_GROUP_READY if self.is_ready() else POD_GROUP_NOT_READY
        msg = f"{status}, " + ", ".join(sorted(f"{v} {k}" for k, v in hist.items()))
        reasons: dict[str, int] = {}
        for uid in self.task_status_index.get(TaskStatus.Pending, {}):
            r = self.task_scheduling_reason(uid)[0]
            reasons[r] = reasons.get(r, 0) + 1
        if reasons:
            msg += "; Pending: " + ", ".join(sorted(f"{v} {k}" for k, v in reasons.items()))
        if self.job_fit_errors:
            msg += ". Origin reason is: " + self.job_fit_errors
        else:
            for t in self.tasks.values():
                fe = self.nodes_fit_errors.get(t.uid)
                if fe is not None:
                    msg += f". Origin reason is {t.name}: {fe}"
                    break
        return msg


def may_act(job: JobInfo) -> bool:
    """Whether an action may have something to do with ``job`` as it is: its PodGroup is Pending
    (enqueue), it has Pending or Pipelined tasks (allocate, backfill) or sub-group policies
    (allocate's sub-job path). A function of what :attr:`JobInfo.version` stands for."""
    idx = job.task_status_index
    return bool(job.is_pending() or idx.get(TaskStatus.Pending) or idx.get(TaskStatus.Pipelined)
                or job.contains_sub_job_policy())


class _FitErrorsLog(dict[str, FitErrors]):
    """A :class:`WriteLoggedJob`'s ``nodes_fit_errors``: every way of adding an entry adds the
    job's uid to its write log (entries are only ever added to the empty dict a clone starts
    with, so a job without a logged write has none)."""

    __slots__ = ("_log", "_uid")

    def __init__(self, log: set[str] | None = None, uid: str = "") -> None:
        super().__init__()
        self._log = log
        self._uid = uid

    def _wrote(self) -> None:
        if self._log is not None:
            self._log.add(self._uid)

    def __setitem__(self, key: str, value: FitErrors) -> None:
        dict.__setitem__(self, key, value)
        self._wrote()

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._wrote()
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._wrote()
        dict.update(self, *args, **kwargs)

    def __ior__(self, other: Any) -> _FitErrorsLog:  # type: ignore[override,misc]
        self._wrote()
        dict.update(self, other)
        return self

    def __reduce__(self) -> Any:  # a copy is a plain dict (nothing to log to)
        return (dict, (dict(self),))


class WriteLoggedJob(JobInfo):
    """A session's JobInfo (a clone the live cache hands out) that adds its uid to
    :attr:`JobInfo.write_log` whenever one of its fields is set (``version`` reset by a change
    of its tasks or phase included) or a fit error is added to its ``nodes_fit_errors``; so a
    job whose uid is not in the log at close is :func:`untouched` without comparing its fields.
    Built by :func:`~pumice.scheduler.volcano.cache.incremental.clone_job` (``__dict__`` filled
    directly, nothing logged); the log is cleared at each snapshot.

    Why a job whose uid is not in the log is :func:`untouched`: that comparison of ``__dict__``
    with its copy sees only rebound fields, and every rebind goes through ``__setattr__``; a
    change of its tasks or phase resets ``version`` (a field); a fit error is added through
    its logging ``nodes_fit_errors``, which starts empty. The converse need not hold (a field
    set to an equal value is logged), which only makes the caller look at the job again."""

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        log = self.write_log
        if log is not None:
            log.add(self.uid)


def fit_errors_log(log: set[str] | None, uid: str) -> dict[str, FitErrors]:
    """An empty ``nodes_fit_errors`` for a :class:`WriteLoggedJob` of ``uid`` logging to ``log``."""
    return _FitErrorsLog(log, uid)


def untouched(job: JobInfo, fields: dict[str, Any]) -> bool:
    """``job``, handed to a session with ``fields`` (a copy of its ``__dict__`` then), is as it
    was handed out: the live cache may hand it to the next session instead of a fresh clone, and
    the session's close may take its status to be what it was for the same version.

    What a session changes in a job: its tasks and their statuses (every change goes through
    :meth:`JobInfo.add_task` / ``delete_task`` / ``update_task_status`` / ``set_phase``, which
    reset :attr:`JobInfo.version` to 0, and every write to a task's placement fields comes with
    one of them), fit errors (added to ``nodes_fit_errors`` in place), and fields it rebinds
    (``job_fit_errors``, ``waiting_tier``, ``allocated_hypernode``, ``queue``, the sub-job index
    built on first use...), caught by comparing the fields. PodGroup conditions are kept on the
    session, not in the job. The live cache's ``verify`` snapshot mode compares every snapshot
    with a full build, so a change this misses is reported as a snapshot mismatch."""
    return bool(job.version) and not job.nodes_fit_errors and job.__dict__ == fields


class JobMemo:
    """Results a plugin computes from jobs as the snapshot handed them out, kept across sessions
    by the live cache's incremental snapshot (:attr:`ClusterInfo.job_memo`) while the jobs'
    base versions (:attr:`JobInfo.version`) stay the same.

    A result is a function of what a version stands for (the job's tasks with their statuses,
    its phase, and what was fixed when it was built: PodGroup spec, minAvailable, queue...) and
    of ``inputs`` (everything else it reads, as a hashable value compared with ``==``); it must
    not read what a session sets otherwise (fit errors, conditions, HyperNode choices). It is
    handed back as it was computed, so it must be immutable or copied by the caller. A job
    whose tasks or phase the session changed has version 0, and a job with version 0 (also
    every job of the full build) is always computed afresh.

    The cache forgets a job's entries when it rebuilds or removes the job (:meth:`forget`).
    """

    def __init__(self, on_mismatch: Callable[[str], None] | None = None) -> None:
        self._jobs: dict[str, tuple[int, dict[str, tuple[Any, Any]]]] = {}
        self._groups: dict[tuple[str, Hashable], tuple[tuple[int, ...], Any, Any]] = {}
        self.hits = 0
        """Results handed back without computing them (for tests and profiles)."""
        self.on_mismatch = on_mismatch
        """Check mode (the live cache's ``verify``): every hit is computed again and compared
        float for float; a difference is reported here with what it was computed for."""

    def _check(self, what: str, kept: Any, fresh: Any) -> None:
        if exact_data(fresh) != exact_data(kept):
            assert self.on_mismatch is not None
            self.on_mismatch(f"{what}: memoized {kept!r} != computed {fresh!r}")

    def forget(self, uid: str) -> None:
        self._jobs.pop(uid, None)

    def job(self, purpose: str, job: JobInfo, inputs: Any, compute: Callable[[JobInfo], _T]) -> _T:
        """``compute(job)``, or the value it gave for the same job version and ``inputs``."""
        v = job.version
        if not v:
            return compute(job)
        ent = self._jobs.get(job.uid)
        if ent is None or ent[0] != v:
            ent = self._jobs[job.uid] = (v, {})
        got = ent[1].get(purpose)
        if got is not None and got[0] == inputs:
            self.hits += 1
            if self.on_mismatch is not None:
                self._check(f"{purpose} of {job.uid}", got[1], compute(job))
            return got[1]  # type: ignore[no-any-return]
        val = compute(job)
        ent[1][purpose] = (inputs, val)
        return val

    def group(self, purpose: str, key: Hashable, jobs: Sequence[JobInfo], inputs: Any,
              compute: Callable[[Sequence[JobInfo]], _T]) -> _T:
        """``compute(jobs)`` over an ordered group of jobs (e.g. one queue's, in snapshot order),
        or the value it gave for the same ``key``, the same job versions in the same order and
        the same ``inputs``."""
        versions = tuple(j.version for j in jobs)
        if not all(versions):
            return compute(jobs)
        got = self._groups.get((purpose, key))
        if got is not None and got[0] == versions and got[1] == inputs:
            self.hits += 1
            if self.on_mismatch is not None:
                self._check(f"{purpose} of {key!r}", got[2], compute(jobs))
            return got[2]  # type: ignore[no-any-return]
        val = compute(jobs)
        self._groups[(purpose, key)] = (versions, inputs, val)
        return val


def exact_data(v: Any) -> Any:
    """``v`` as plain data that compares float for float (a Resource by its fields and scalar
    order, containers item by item)."""
    if isinstance(v, Resource):
        return ("Resource", v.milli_cpu, v.memory, tuple(v.scalars.items()))
    if isinstance(v, tuple | list):
        return tuple(exact_data(x) for x in v)
    if isinstance(v, frozenset | set):
        return frozenset(exact_data(x) for x in v)
    return v
