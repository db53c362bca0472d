"""wait-for-pods-ready: evict and requeue a gang whose Pods are not all Ready in time.

Pumice's extension (upstream Volcano has no cluster-wide ready timeout); it follows Kueue's
``waitForPodsReady`` with ``requeuingStrategy`` (kueue pkg/controller/core/workload_controller.go,
see ../shared/reference/peers.md section 1.1). Per PodGroup, at every session open:

* Once a task is bound (Binding, Bound or Running), the PodGroup gets condition ``PodsReady``
  ``False`` reason ``WaitForStart`` ("Not all pods are ready or succeeded"); the timeout runs from
  its ``lastTransitionTime``. When ``minMember`` Pods are Ready (condition ``Ready`` True) or
  Succeeded it turns ``True`` reason ``Started``.
* When ``waitForPodsReady.timeout`` seconds pass first, every bound task of the job is evicted,
  the PodGroup gets ``Evicted`` ``True`` reason ``PodsReadyTimeout`` ("Exceeded the PodsReady
  timeout <ns>/<name>") and a Warning Event ``EvictedDueToPodsReadyTimeout``; the requeue count
  (annotation ``scheduling.pumice.io/requeue-count``) goes up by one and the job may not be
  scheduled again before ``scheduling.pumice.io/requeue-at`` (RFC 3339) = now +
  ``backoffBaseSeconds * 2^(count-1)`` capped at ``backoffMaxSeconds``. While it waits, enqueue
  votes Reject and the job is not valid for allocate/backfill/preempt/reclaim. When the wait is
  over the PodGroup gets ``Requeued`` ``True`` reason ``BackoffFinished``.
* A timeout that would make the count exceed ``backoffLimitCount`` deactivates the job instead:
  its tasks are evicted, ``Evicted`` ``True`` reason ``DeactivatedDueToRequeuingLimitExceeded``,
  a Warning Event of the same reason, annotation ``scheduling.pumice.io/deactivated: "true"``; a
  deactivated job is never scheduled again until the annotation is removed.

Deviates: no jitter on the backoff (deterministic); no ``recoveryTimeout`` (a Pod that stops
being Ready after ``Started`` is not watched) and no ``blockAdmission``; the owning vcjob is not
failed by this plugin (its PodGroup is deactivated and says why).

Arguments (all optional): ``waitForPodsReady.timeout`` (seconds, default 300),
``waitForPodsReady.backoffBaseSeconds`` (default 60), ``waitForPodsReady.backoffMaxSeconds``
(default 3600), ``waitForPodsReady.backoffLimitCount`` (default -1: requeue forever).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pumice._util.clock import parse_rfc3339, rfc3339
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus, ValidateResult, Vote
from pumice.scheduler.volcano.framework.arguments import ArgumentError, Arguments, arg, decode
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "wait-for-pods-ready"

REQUEUE_COUNT_ANNOTATION = "scheduling.pumice.io/requeue-count"
REQUEUE_AT_ANNOTATION = "scheduling.pumice.io/requeue-at"
DEACTIVATED_ANNOTATION = "scheduling.pumice.io/deactivated"

PODS_READY = "PodsReady"
EVICTED = "Evicted"
REQUEUED = "Requeued"
WAIT_FOR_START = "WaitForStart"
STARTED = "Started"
PODS_READY_TIMEOUT = "PodsReadyTimeout"
DEACTIVATED_REQUEUING_LIMIT = "DeactivatedDueToRequeuingLimitExceeded"
BACKOFF_FINISHED = "BackoffFinished"
NOT_ALL_READY_MSG = "Not all pods are ready or succeeded"
ALL_READY_MSG = "All pods reached readiness and the workload is running"
REQUEUING_LIMIT_MSG = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"

_BOUND = (TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Running)


class WaitForPodsReadyArguments(Arguments, frozen=True):
    timeout: float = arg("waitForPodsReady.timeout", 300.0)
    backoff_base_seconds: float = arg("waitForPodsReady.backoffBaseSeconds", 60.0)
    backoff_max_seconds: float = arg("waitForPodsReady.backoffMaxSeconds", 3600.0)
    backoff_limit_count: int = arg("waitForPodsReady.backoffLimitCount", -1)


def backoff_seconds(count: int, base: float, cap: float) -> float:
    """Seconds to wait before the ``count``-th requeue (count >= 1): ``base * 2^(count-1)``,
    at most ``cap``. Mirrors: kueue pkg/workload UpdateRequeueState (without its jitter)."""
    return float(min(base * 2.0 ** (count - 1), cap))


def pod_ready(task: TaskInfo) -> bool:
    """True when the task's Pod has condition ``Ready`` True or has Succeeded."""
    if task.status == TaskStatus.Succeeded:
        return True
    conds = (task.pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _condition(ssn: Session, job: JobInfo, ctype: str) -> dict[str, Any] | None:
    for c in ssn.pod_group_conditions(job):
        if c.get("type") == ctype:
            return dict(c)
    return None


class WaitForPodsReadyPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: WaitForPodsReadyArguments) -> None:
        self.args = args

    def _cond(self, ssn: Session, job: JobInfo, ctype: str, status: str, reason: str, message: str) -> None:
        old = _condition(ssn, job, ctype)
        if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (status, reason, message):
            return
        ssn.update_pod_group_condition(job, {"type": ctype, "status": status, "reason": reason, "message": message,
                                             "lastTransitionTime": ssn.now_rfc3339(), "transitionID": ssn.uid})

    def _evict_job(self, ssn: Session, job: JobInfo, reason: str) -> None:
        for st in _BOUND:
            for t in sorted(job.tasks_in(st), key=lambda t: t.name):
                ssn.evict(t, reason)
        ssn.remove_pod_group_condition(job, PODS_READY)

    def _check(self, ssn: Session, job: JobInfo) -> ValidateResult | None:
        """Advance one job's state; the ValidateResult that keeps it unscheduled, or None."""
        a = self.args
        ann = ((job.pod_group or {}).get("metadata") or {}).get("annotations") or {}
        if ann.get(DEACTIVATED_ANNOTATION) == "true":
            return ValidateResult(False, DEACTIVATED_REQUEUING_LIMIT, REQUEUING_LIMIT_MSG)
        requeue_at = ann.get(REQUEUE_AT_ANNOTATION)
        if requeue_at:
            try:
                at = parse_rfc3339(requeue_at)
            except ValueError as e:
                ssn.record_pod_group_event(job, "Warning", "InvalidAnnotation", f"{REQUEUE_AT_ANNOTATION}: {e}")
                at = ssn.now
            if ssn.now < at:
                return ValidateResult(False, PODS_READY_TIMEOUT, f"requeued after the PodsReady timeout; backoff until {requeue_at}")
            self._cond(ssn, job, REQUEUED, "True", BACKOFF_FINISHED, "The workload backoff was finished")
        if not any(job.tasks_in(st) for st in _BOUND):
            return None
        ready = sum(1 for t in job.tasks.values() if pod_ready(t))
        if ready >= max(job.min_available, 1):
            self._cond(ssn, job, PODS_READY, "True", STARTED, ALL_READY_MSG)
            return None
        cond = _condition(ssn, job, PODS_READY)
        if cond is None or cond.get("status") != "False":
            self._cond(ssn, job, PODS_READY, "False", WAIT_FOR_START, NOT_ALL_READY_MSG)
            return None
        since = parse_rfc3339(str(cond.get("lastTransitionTime") or ssn.now_rfc3339()))
        if ssn.now - since < a.timeout:
            return None
        count = int(ann.get(REQUEUE_COUNT_ANNOTATION) or 0) + 1
        if 0 <= a.backoff_limit_count < count:
            self._evict_job(ssn, job, DEACTIVATED_REQUEUING_LIMIT)
            self._cond(ssn, job, EVICTED, "True", DEACTIVATED_REQUEUING_LIMIT, REQUEUING_LIMIT_MSG)
            ssn.record_pod_group_event(job, "Warning", DEACTIVATED_REQUEUING_LIMIT, REQUEUING_LIMIT_MSG)
            ssn.set_pod_group_annotation(job, DEACTIVATED_ANNOTATION, "true")
            return ValidateResult(False, DEACTIVATED_REQUEUING_LIMIT, REQUEUING_LIMIT_MSG)
        msg = f"Exceeded the PodsReady timeout {job.uid}"
        self._evict_job(ssn, job, PODS_READY_TIMEOUT)
        self._cond(ssn, job, EVICTED, "True", PODS_READY_TIMEOUT, msg)
        ssn.record_pod_group_event(job, "Warning", "EvictedDueTo" + PODS_READY_TIMEOUT, msg)
        until = rfc3339(ssn.now + backoff_seconds(count, a.backoff_base_seconds, a.backoff_max_seconds))
        ssn.set_pod_group_annotation(job, REQUEUE_COUNT_ANNOTATION, str(count))
        ssn.set_pod_group_annotation(job, REQUEUE_AT_ANNOTATION, until)
        return ValidateResult(False, PODS_READY_TIMEOUT, f"requeued after the PodsReady timeout; backoff until {until}")

    def on_session_open(self, ssn: Session) -> None:
        held: dict[str, ValidateResult] = {}
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            if job.pod_group is None:
                continue
            res = self._check(ssn, job)
            if res is not None:
                held[uid] = res
        ssn.held_jobs.update(held)  # their Unschedulable condition and Warning give this reason

        def valid(job: JobInfo) -> ValidateResult | None:
            return held.get(job.uid)

        def enqueueable(job: JobInfo) -> int:
            return Vote.REJECT if job.uid in held else Vote.ABSTAIN

        ssn.add_job_valid_fn(PLUGIN_NAME, valid)
        ssn.add_job_enqueueable_fn(PLUGIN_NAME, enqueueable)

    def on_session_close(self, ssn: Session) -> None:
        pass


def parse_arguments(arguments: Mapping[str, Any]) -> WaitForPodsReadyArguments:
    """Decode the arguments; raises ArgumentError for a wrong type (unknown keys are ignored with a warning) or a
    negative timeout/backoff."""
    a = decode(WaitForPodsReadyArguments, arguments)
    for key, v in (("waitForPodsReady.timeout", a.timeout), ("waitForPodsReady.backoffBaseSeconds", a.backoff_base_seconds),
                   ("waitForPodsReady.backoffMaxSeconds", a.backoff_max_seconds)):
        if v < 0:
            raise ArgumentError(f"{key}: must not be negative, got {v!r}")
    return a


new = WaitForPodsReadyPlugin
