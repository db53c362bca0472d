"""The Job controller (batch/v1): run Pods until ``completions`` succeed or the Job fails.

One pass: observe the owned Pods; decide whether the Job has met its success criteria or a
failure (podFailurePolicy FailJob, backoffLimit, activeDeadlineSeconds); otherwise keep
``min(parallelism, completions - succeeded)`` Pods active (after the failure backoff), deleting
the rest when suspended; then write status once if it changed.

Terminal conditions as in v1.32: first the interim ``SuccessCriteriaMet`` / ``FailureTarget``
condition (active Pods are deleted), then, once no Pod is running any more, ``Complete`` (reason
``CompletionsReached``, with completionTime) or ``Failed`` (reasons ``BackoffLimitExceeded``,
``DeadlineExceeded``, ``PodFailurePolicy``). Finished Jobs with ``ttlSecondsAfterFinished`` are
deleted (propagation Foreground) that many seconds after finishing.

Indexed completion mode (``completionMode: Indexed``): one Pod per index ``0..completions-1``,
named ``<job>-<index>-<suffix>``, with the ``batch.kubernetes.io/job-completion-index``
annotation and label, hostname ``<job>-<index>`` and env ``JOB_COMPLETION_INDEX`` (downward API
from the label) in every container; ``status.completedIndexes`` in compressed form ("0-2,5") and
``succeeded`` its count; Pods without a valid index or repeating one are deleted. With
``backoffLimitPerIndex`` each index retries on its own (the ``job-index-failure-count``
annotation, per-index backoff), exhausted indexes go to ``status.failedIndexes`` and the Job
fails with ``MaxFailedIndexesExceeded`` (more than ``maxFailedIndexes``) or ``FailedIndexes``
(every index finished, some failed). A met ``successPolicy`` rule sets ``SuccessCriteriaMet``
(reason ``SuccessPolicy``, "Matched rules at index N"), terminates the remaining Pods, then
``Complete`` with the same reason and message. See indexedjob.py.

Replacements: with podReplacementPolicy ``Failed`` (the default under a podFailurePolicy) a Pod
being deleted holds its place until it has finished, so no replacement starts beside it;
``status.terminating`` counts such Pods (those this pass deleted included). A Job whose
``spec.managedBy`` is set to anything but ``kubernetes.io/job-controller`` is left to that
controller: no Pods, no status (only ``ttlSecondsAfterFinished`` still applies once it finishes,
the ttl-after-finished controller not looking at managedBy).

Counting: ``failed`` counts Failed Pods except those a podFailurePolicy ``Ignore`` rule matches;
with restartPolicy OnFailure the container restarts of running Pods count towards backoffLimit
(``>= backoffLimit``, or ``> 0`` when it is 0) as upstream's pastBackoffLimitOnFailure. Replacement
Pods after failures wait ``pod_failure_backoff * 2**(failures since last success - 1)`` seconds
(10 s base, at most 10 min).

Mirrors: kubernetes pkg/controller/job/job_controller.go (syncJob, manageJob,
pastBackoffLimitOnFailure, getFailJobMessage, onlyReplaceFailedPods, managedByExternalController),
pod_failure_policy.go, backoff_utils.go, and
pkg/controller/ttlafterfinished, indexed_job_utils.go and success_policy.go. Deviates: no
job-tracking finalizers and no uncountedTerminatedPods bookkeeping: succeeded/failed are counted
from the terminated Pods still present and never decrease (deleting a finished Pod by hand is not
re-counted); an Indexed Job's Pods that finish while being terminated after SuccessCriteriaMet are
not counted (upstream removes their finalizers first), other Pods deleted on a failure are not
counted as failed unless they end Failed (upstream, under TerminatingOrFailed, counts a deleted
Pod failed at once).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pumice._util.clock import Clock, parse_rfc3339, rfc3339
from pumice.api import Obj, meta
from pumice.api.scheme import JOB, POD
from pumice.client.base import ApiError, KubeClient, is_conflict, is_not_found
from pumice.client.informer import OWNER_UID_INDEX, Informer
from pumice.controllers.kube import indexedjob as ixj
from pumice.controllers.kube.podutil import deletion_order, is_active
from pumice.controllers.kube.replicaset import PodControl, create_pods
from pumice.runtime import Request, Result
from pumice.runtime.events import EventRecorder
from pumice.runtime.expectations import Expectations
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"

REASON_BACKOFF_LIMIT = "BackoffLimitExceeded"
REASON_DEADLINE = "DeadlineExceeded"
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
REASON_COMPLETIONS_REACHED = "CompletionsReached"
MSG_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
MSG_DEADLINE = "Job was active longer than specified deadline"
MSG_COMPLETIONS = "Reached expected number of succeeded pods"

DEFAULT_BACKOFF_LIMIT = 6
#: spec.managedBy of the Jobs this controller syncs (JobControllerName); others are left alone
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"
DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0


def _cond_true(status: Obj, ctype: str) -> Obj | None:
    c = meta.find_condition(status.get("conditions"), ctype)
    return c if c is not None and c.get("status") == "True" else None


def finished(job: Obj) -> Obj | None:
    """The Complete or Failed condition when True (IsJobFinished)."""
    st = job.get("status") or {}
    return _cond_true(st, "Complete") or _cond_true(st, "Failed")


_EXIT_CODE_OPERATORS = {"In": True, "NotIn": False}


def _match_on_exit_codes(st: Obj, codes: Obj) -> tuple[str, int] | None:
    """``(container name, exit code)`` of the first terminated container (regular containers
    first, then init containers) with a non-zero exit code the requirement matches
    (matchOnExitCodes, isOnExitCodesOperatorMatching)."""
    values = {int(v) for v in codes.get("values") or []}
    # In matches a listed code, NotIn an unlisted one; an unknown operator matches nothing
    wants_listed, name = _EXIT_CODE_OPERATORS.get(str(codes.get("operator"))), codes.get("containerName")
    for cs in [*(st.get("containerStatuses") or []), *(st.get("initContainerStatuses") or [])]:
        term = (cs.get("state") or {}).get("terminated")
        if not term or (name is not None and name != cs.get("name")):
            continue
        code = int(term.get("exitCode") or 0)
        if code != 0 and wants_listed is not None and (code in values) == wants_listed:
            return str(cs.get("name")), code
    return None


def _match_on_pod_conditions(st: Obj, patterns: list[Obj]) -> str | None:
    """The type of the first Pod condition (in the Pod's order) some pattern matches
    (matchOnPodConditions)."""
    for c in st.get("conditions") or []:
        for pattern in patterns:
            if c.get("type") == pattern.get("type") and c.get("status") == pattern.get("status", "True"):
                return str(c.get("type"))
    return None


def match_pod_failure_policy(policy: Obj | None, pod: Obj) -> tuple[str, str] | None:
    """``(action, message)`` of the first podFailurePolicy rule matching a failed Pod, or None
    (matchPodFailurePolicy). A rule is judged by its onExitCodes when it has them, else by its
    onPodConditions; a rule whose action is not one of the four known is skipped.

    Actions: ``FailJob`` (the message is the Job's failure message: "Container C for pod NS/P
    failed with exit code N matching FailJob rule at index I" or "Pod NS/P has condition T
    matching FailJob rule at index I"), ``Ignore`` (not counted towards the backoff limits),
    ``Count``, ``FailIndex`` (counted; with backoffLimitPerIndex it also fails the Pod's index).
    """
    if not policy:
        return None
    md, st = pod.get("metadata") or {}, pod.get("status") or {}
    who = f"{md.get('namespace')}/{md.get('name')}"
    for i, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        if action not in ("FailJob", "Ignore", "Count", "FailIndex"):
            continue
        if rule.get("onExitCodes") is not None:
            hit = _match_on_exit_codes(st, rule["onExitCodes"])
            if hit is not None:
                return action, (f"Container {hit[0]} for pod {who} failed with exit code {hit[1]} "
                                f"matching {action} rule at index {i}")
        elif rule.get("onPodConditions") is not None:
            ctype = _match_on_pod_conditions(st, rule["onPodConditions"])
            if ctype is not None:
                return action, f"Pod {who} has condition {ctype} matching {action} rule at index {i}"
    return None


def managed_by_external_controller(job: Obj) -> str | None:
    """``spec.managedBy`` when another controller manages the Job, else None
    (managedByExternalController)."""
    managed_by = (job.get("spec") or {}).get("managedBy")
    return managed_by if managed_by is not None and managed_by != JOB_CONTROLLER_NAME else None


def only_replace_failed_pods(spec: Obj) -> bool:
    """Whether replacements wait for terminating Pods to finish: podReplacementPolicy ``Failed``,
    or any podFailurePolicy (onlyReplaceFailedPods)."""
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def finish_time(pod: Obj) -> float:
    """When a terminated Pod finished: its latest container finishedAt (else creation time)."""
    st = pod.get("status") or {}
    times = []
    for cs in [*(st.get("initContainerStatuses") or []), *(st.get("containerStatuses") or [])]:
        t = (((cs.get("state") or {}).get("terminated")) or {}).get("finishedAt")
        if t:
            times.append(parse_rfc3339(str(t)))
    if times:
        return max(times)
    created = (pod.get("metadata") or {}).get("creationTimestamp")
    return parse_rfc3339(str(created)) if created else 0.0


@dataclass
class _JobPods:
    """A Job's Pods as one pass sees them."""

    all: list[Obj]
    active: list[Obj]
    terminating: list[Obj]
    succeeded: list[Obj]
    counted_failed: list[Obj]  # Failed Pods a podFailurePolicy does not Ignore
    fail_job: tuple[str, str] | None  # (reason, message) of the first FailJob rule matched


def _observe_pods(pods: list[Obj], policy: Obj | None) -> _JobPods:
    fail_job: tuple[str, str] | None = None
    counted_failed: list[Obj] = []
    for p in pods:
        if (p.get("status") or {}).get("phase") != "Failed":
            continue
        match = match_pod_failure_policy(policy, p)
        if match and match[0] == "Ignore":
            continue
        if match and match[0] == "FailJob" and fail_job is None:
            fail_job = (REASON_POD_FAILURE_POLICY, match[1])
        counted_failed.append(p)
    return _JobPods(
        all=pods,
        active=[p for p in pods if is_active(p)],
        terminating=[p for p in pods if p["metadata"].get("deletionTimestamp")
                     and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")],
        succeeded=[p for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"],
        counted_failed=counted_failed,
        fail_job=fail_job,
    )


@dataclass
class _Indexes:
    """An Indexed Job's indexes as one pass sees them."""

    completions: int
    succeeded: ixj.Intervals
    failed: ixj.Intervals | None  # None without backoffLimitPerIndex
    active: set[int]
    last_failed: dict[int, Obj]  # per pending index, the failed Pod its replacement follows


def _observe_indexes(job: Obj, prev: Obj, pods: _JobPods) -> _Indexes:
    """Succeeded indexes: ``status.completedIndexes`` plus the indexes of Succeeded Pods (frozen
    once SuccessCriteriaMet is set: Pods finishing while being terminated do not count, as
    upstream removes their tracking finalizers first). With backoffLimitPerIndex, failed
    indexes: ``status.failedIndexes`` plus the indexes whose Failed Pod matched a FailIndex rule
    or, counted, had used up the per-index limit (calculateFailedIndexes, isIndexFailed), and for
    each index still to run its latest counted-or-ignored failure
    (getPodsWithDelayedDeletionPerIndex)."""
    spec = job.get("spec") or {}
    completions = int(spec.get("completions") or 0)
    policy = spec.get("podFailurePolicy")
    succeeded = ixj.parse_indexes(prev.get("completedIndexes"), completions)
    if not _cond_true(prev, "SuccessCriteriaMet"):
        succeeded = ixj.with_indexes(succeeded, (ix for p in pods.succeeded if (ix := ixj.completion_index(p)) is not None
                                                 and ix < completions))
    active = {ix for p in pods.active if (ix := ixj.completion_index(p)) is not None}
    failed: ixj.Intervals | None = None
    last_failed: dict[int, Obj] = {}
    if ixj.has_backoff_limit_per_index(job):
        limit = int(spec["backoffLimitPerIndex"])
        failed = ixj.parse_indexes(prev.get("failedIndexes"), completions)
        new_failed: set[int] = set()
        failed_pods = [p for p in pods.all if (p.get("status") or {}).get("phase") == "Failed"]
        for p in failed_pods:
            ix = ixj.completion_index(p)
            if ix is None or ix >= completions:
                continue
            match = match_pod_failure_policy(policy, p)
            action = match[0] if match else None
            if action == "FailIndex" or (action != "Ignore" and ixj.index_failure_count(p) >= limit):
                new_failed.add(ix)
        failed = ixj.with_indexes(failed, new_failed)
        for p in failed_pods:
            ix = ixj.completion_index(p)
            if (ix is None or ix >= completions or ixj.has(succeeded, ix) or ixj.has(failed, ix)
                    or ix in active):
                continue
            last = last_failed.get(ix)
            if last is None or (ixj.index_absolute_failure_count(last) <= ixj.index_absolute_failure_count(p)
                                and finish_time(p) >= finish_time(last)):
                last_failed[ix] = p
    return _Indexes(completions=completions, succeeded=succeeded, failed=failed, active=active,
                    last_failed=last_failed)


@dataclass
class _JobPass:
    """The state one reconcile pass builds up: the status being computed, its conditions and
    the requeue waits."""

    job: Obj
    key: str
    spec: Obj
    prev: Obj
    status: Obj
    now_ts: float
    now: str
    conds: list[Obj] = field(default_factory=list)
    wait: list[float] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)  # uids of the active Pods this pass deleted

    @property
    def suspended(self) -> bool:
        return bool(self.spec.get("suspend"))


class JobReconciler:
    """Reconciler for batch/v1 Jobs (see module docstring).

    Args:
        pod_failure_backoff: base seconds of the replacement backoff (upstream 10 s).
    """

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> JobReconciler:
        """Build the controller and register it (Jobs, owned Pods)."""
        inf = mgr.informers
        job = cls(mgr.client, jobs=inf.informer(JOB), pods=inf.informer(POD), clock=mgr.clock,
                  recorder=mgr.event_recorder("job-controller"), pod_failure_backoff=opts.pod_failure_backoff)
        mgr.controller("job").for_(JOB).owns(POD).with_options(max_concurrent_reconciles=opts.workers).complete(job)
        return job

    def __init__(self, client: KubeClient, *, jobs: Informer, pods: Informer, clock: Clock,
                 recorder: EventRecorder, pod_failure_backoff: float = DEFAULT_POD_FAILURE_BACKOFF) -> None:
        self.client = client
        self.jobs = jobs
        self.pods = pods
        self.clock = clock
        self.recorder = recorder
        self.pod_failure_backoff = pod_failure_backoff
        self.expectations = Expectations(clock)
        self.pod_control = PodControl(pods, "Job", self.expectations)

    async def _delete_pods(self, jp: _JobPass, pods: list[Obj]) -> None:
        """Delete ``pods`` (uid preconditions), noting in ``jp.deleted`` the uids whose deletion
        was accepted or found done: they are reported terminating, not active, this pass (as
        upstream's deleteJobPods counts them). Raises the first error other than NotFound or a
        uid conflict."""
        if not pods:
            return
        key = jp.key
        self.expectations.expect_deletions(key, [p["metadata"]["uid"] for p in pods])
        first_error: ApiError | None = None
        for p in pods:
            md = p["metadata"]
            try:
                await self.client.delete(POD, md["name"], md.get("namespace"), preconditions={"uid": md["uid"]})
                jp.deleted.add(md["uid"])
            except ApiError as e:
                self.expectations.deletion_observed(key, md["uid"])
                if is_not_found(e):
                    jp.deleted.add(md["uid"])
                elif e.code != 409 and first_error is None:
                    first_error = e
        if first_error is not None:
            raise first_error

    async def _create_pods(self, job: Obj, key: str, n: int,
                           templates: list[tuple[Obj, str]] | None = None) -> None:
        md = job["metadata"]
        labels = {JOB_NAME_LABEL: md["name"], LEGACY_JOB_NAME_LABEL: md["name"],
                  CONTROLLER_UID_LABEL: md["uid"], LEGACY_CONTROLLER_UID_LABEL: md["uid"]}
        await create_pods(self.client, self.recorder, self.expectations, job, key, n,
                          template=(job.get("spec") or {}).get("template") or {}, extra_labels=labels,
                          templates=templates)

    async def _ttl(self, job: Obj, done: Obj) -> Result:
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None or job["metadata"].get("deletionTimestamp"):
            return Result()
        at = (job.get("status") or {}).get("completionTime") or done.get("lastTransitionTime")
        expire = (parse_rfc3339(str(at)) if at else self.clock.now()) + int(ttl)
        left = expire - self.clock.now()
        if left > 0:
            return Result(requeue_after=left)
        md = job["metadata"]
        try:
            await self.client.delete(JOB, md["name"], md.get("namespace"), propagation_policy="Foreground",
                                     preconditions={"uid": md["uid"]})
        except ApiError as e:
            if not is_not_found(e):
                raise
        return Result()

    async def reconcile(self, req: Request) -> Result:
        """One pass (Mirrors: kubernetes pkg/controller/job job_controller.go syncJob): observe the
        Job's Pods, decide whether it reached a failure or success target, converge the Pods, and
        write the status once if it changed."""
        job = self.jobs.store.get(req.namespace, req.name)
        key = f"{req.namespace}/{req.name}"
        if job is None:
            self.expectations.delete(key)
            return Result()
        done = finished(job)
        if done is not None:
            return await self._ttl(job, done)
        external = managed_by_external_controller(job)
        if external is not None:
            log.debug("job %s: skipped, managed by the external controller %s", key, external)
            return Result()
        if job["metadata"].get("deletionTimestamp"):
            return Result()
        spec, prev = job.get("spec") or {}, job.get("status") or {}
        now_ts = self.clock.now()
        jp = _JobPass(job=job, key=key, spec=spec, prev=prev, status=copy.deepcopy(prev), now_ts=now_ts,
                      now=rfc3339(now_ts))
        jp.conds = list(jp.status.get("conditions") or [])
        pods = _observe_pods(self.pods.store.by_index(OWNER_UID_INDEX, job["metadata"]["uid"]),
                             spec.get("podFailurePolicy"))
        succeeded = max(int(prev.get("succeeded") or 0), len(pods.succeeded))
        failed = max(int(prev.get("failed") or 0), len(pods.counted_failed))
        ix = _observe_indexes(job, prev, pods) if ixj.is_indexed(job) else None
        if ix is not None:
            succeeded = ixj.total(ix.succeeded)
            if _cond_true(prev, "SuccessCriteriaMet"):
                failed = int(prev.get("failed") or 0)
        if not jp.suspended and not jp.status.get("startTime"):
            jp.status["startTime"] = jp.now
        target = self._target(jp, pods, succeeded, failed, ix)
        await self._converge(jp, pods, target, succeeded, ix)
        still_active = [p for p in pods.active if p["metadata"]["uid"] not in jp.deleted]
        jp.status.update({
            "active": len(still_active),
            "ready": sum(1 for p in still_active if meta.pod_is_ready(p)),
            "succeeded": succeeded,
            "failed": failed,
            "terminating": len(pods.terminating) + len(jp.deleted),
            "uncountedTerminatedPods": jp.status.get("uncountedTerminatedPods") or {},
        })
        for k in ("succeeded", "failed", "active"):
            if not jp.status[k] and k not in prev:
                jp.status.pop(k)
        if ix is not None:
            # completedIndexes is omitted when empty; failedIndexes (a pointer upstream) is written
            # whenever backoffLimitPerIndex is set, "" included
            completed = ixj.format_indexes(ix.succeeded)
            if completed:
                jp.status["completedIndexes"] = completed
            else:
                jp.status.pop("completedIndexes", None)
            if ix.failed is not None:
                jp.status["failedIndexes"] = ixj.format_indexes(ix.failed)
        if jp.conds:
            jp.status["conditions"] = jp.conds
        if jp.status != prev:
            fresh = self.jobs.store.get(req.namespace, req.name) or job
            try:
                await self.client.update_status({**copy.deepcopy(fresh), "status": jp.status})
            except ApiError as e:
                if is_conflict(e):
                    return Result()  # a newer version is on its way through the informer
                raise
        return Result(requeue_after=min(jp.wait)) if jp.wait else Result()

    def _target(self, jp: _JobPass, pods: _JobPods, succeeded: int, failed: int,
                ix: _Indexes | None) -> tuple[str, str, str] | None:
        """``(condition type, reason, message)`` the Job is finishing with, or None: a FailureTarget
        or SuccessCriteriaMet already set, else a podFailurePolicy FailJob, the backoff limit, the
        active deadline (adding its wait otherwise), for an Indexed Job with backoffLimitPerIndex
        more failed indexes than maxFailedIndexes or every index finished with some failed, for an
        Indexed Job a successPolicy rule met, or the completions reached (setting the interim
        condition and, for a failure, a Warning event)."""
        failure = _cond_true(jp.prev, "FailureTarget")
        success = _cond_true(jp.prev, "SuccessCriteriaMet")
        if failure:
            return ("Failed", failure.get("reason", ""), failure.get("message", ""))
        if success:
            return ("Complete", success.get("reason", ""), success.get("message", ""))
        spec, now = jp.spec, jp.now
        backoff_limit = spec.get("backoffLimit")
        backoff_limit = DEFAULT_BACKOFF_LIMIT if backoff_limit is None else int(backoff_limit)
        completions = spec.get("completions")
        deadline = spec.get("activeDeadlineSeconds")
        started = parse_rfc3339(jp.status["startTime"]) if jp.status.get("startTime") else None
        reason: tuple[str, str] | None = None
        if pods.fail_job:
            reason = pods.fail_job
        elif failed > backoff_limit or self._past_backoff_limit_on_failure(spec, pods.active, backoff_limit):
            reason = (REASON_BACKOFF_LIMIT, MSG_BACKOFF_LIMIT)
        elif deadline is not None and started is not None and not jp.suspended:
            left = started + int(deadline) - jp.now_ts
            if left <= 0:
                reason = (REASON_DEADLINE, MSG_DEADLINE)
            else:
                jp.wait.append(left)
        if reason is None and ix is not None and ix.failed is not None:
            max_failed = spec.get("maxFailedIndexes")
            n_failed = ixj.total(ix.failed)
            if max_failed is not None and n_failed > int(max_failed):
                reason = (ixj.REASON_MAX_FAILED_INDEXES, ixj.MSG_MAX_FAILED_INDEXES)
            elif n_failed > 0 and n_failed + ixj.total(ix.succeeded) >= ix.completions:
                reason = (ixj.REASON_FAILED_INDEXES, ixj.MSG_FAILED_INDEXES)
        if reason is not None:
            jp.conds = meta.with_condition(jp.conds, {"type": "FailureTarget", "status": "True", "reason": reason[0],
                                                      "message": reason[1], "lastProbeTime": now}, now)
            self.recorder.event(jp.job, "Warning", reason[0], reason[1])
            return ("Failed", *reason)
        if ix is not None:
            matched = ixj.match_success_policy(spec.get("successPolicy"), ix.completions, ix.succeeded)
            if matched is not None:
                jp.conds = meta.with_condition(jp.conds, {"type": "SuccessCriteriaMet", "status": "True",
                                                          "reason": ixj.REASON_SUCCESS_POLICY, "message": matched,
                                                          "lastProbeTime": now}, now)
                return ("Complete", ixj.REASON_SUCCESS_POLICY, matched)
        if (completions is not None and succeeded >= int(completions)) or (
                completions is None and succeeded > 0 and not pods.active):
            jp.conds = meta.with_condition(jp.conds, {"type": "SuccessCriteriaMet", "status": "True",
                                                      "reason": REASON_COMPLETIONS_REACHED, "message": MSG_COMPLETIONS,
                                                      "lastProbeTime": now}, now)
            return ("Complete", REASON_COMPLETIONS_REACHED, MSG_COMPLETIONS)
        return None

    async def _converge(self, jp: _JobPass, pods: _JobPods, target: tuple[str, str, str] | None,
                        succeeded: int, ix: _Indexes | None) -> None:
        """Act on the pass: finishing (delete the active Pods, then the final condition), suspended
        (delete them, ``Suspended``), or running (resume, create or delete Pods toward the wanted
        parallelism after the failure backoff; with podReplacementPolicy Failed terminating Pods
        count as still there)."""
        key, now, active = jp.key, jp.now, pods.active
        if target is not None:
            await self._delete_pods(jp, active)
            if active or pods.terminating:
                return
            ctype, reason, message = target
            jp.conds = meta.with_condition(jp.conds, {"type": ctype, "status": "True", "reason": reason,
                                                      "message": message, "lastProbeTime": now}, now)
            if ctype == "Complete":
                jp.status["completionTime"] = now
                self.recorder.event(jp.job, "Normal", "Completed", "Job completed")
            return
        if jp.suspended:
            if self.expectations.satisfied(key):
                await self._delete_pods(jp, active)
            jp.conds = meta.with_condition(jp.conds, {"type": "Suspended", "status": "True", "reason": "JobSuspended",
                                                      "message": "Job suspended", "lastProbeTime": now}, now)
            jp.status.pop("startTime", None)
            return
        if _cond_true(jp.prev, "Suspended"):
            jp.conds = meta.with_condition(jp.conds, {"type": "Suspended", "status": "False", "reason": "JobResumed",
                                                      "message": "Job resumed", "lastProbeTime": now}, now)
            jp.status["startTime"] = now
        if self.expectations.satisfied(key) and ix is not None:
            await self._manage_indexed(jp, pods, succeeded, ix)
        elif self.expectations.satisfied(key):
            want = self._want_active(jp.spec, succeeded)
            missing = want - self._waited_terminating(jp.spec, pods) - len(active)
            if missing > 0:
                left = self._backoff_left(pods.all, jp.now_ts)
                if left > 0:
                    jp.wait.append(left)
                else:
                    await self._create_pods(jp.job, key, missing)
            elif want < len(active):
                await self._delete_pods(jp, deletion_order(active)[: len(active) - want])

    async def _manage_indexed(self, jp: _JobPass, pods: _JobPods, succeeded: int, ix: _Indexes) -> None:
        """Converge an Indexed Job's Pods (manageJob, activePodsForRemoval): first delete the
        Pods without a valid index, the extra Pods of a repeated index and, beyond that, the
        surplus over the wanted count in deletion order; only when nothing is deleted, create
        Pods for the lowest pending indexes after the backoff (the Job-wide one, or with
        backoffLimitPerIndex each index's own, from its latest failure)."""
        key, active = jp.key, pods.active
        want = self._want_active(jp.spec, succeeded)
        remove, keep = ixj.duplicated_index_pods(active, ix.completions, deletion_order(active))
        surplus = len(active) - want - len(remove)
        if surplus > 0:
            remove += deletion_order(keep)[:surplus]
        if remove:
            await self._delete_pods(jp, remove)
            return
        missing = want - self._waited_terminating(jp.spec, pods) - len(active)
        if missing <= 0:
            return
        if ix.failed is None:
            left = self._backoff_left(pods.all, jp.now_ts)
            if left > 0:
                jp.wait.append(left)
                return
        non_pending = ixj.merge(ixj.with_indexes(ix.succeeded, ix.active), ix.failed or [])
        indexes = ixj.first_pending_indexes(missing, ix.completions, non_pending)
        counts: dict[int, tuple[int, int]] = {}
        if ix.failed is not None:
            policy = jp.spec.get("podFailurePolicy")
            ready, waits = [], []
            for i in indexes:
                last = ix.last_failed.get(i)
                left = 0.0
                if last is not None:
                    left = ixj.remaining_backoff(self.pod_failure_backoff, MAX_POD_FAILURE_BACKOFF,
                                                 ixj.index_absolute_failure_count(last) + 1, finish_time(last),
                                                 jp.now_ts)
                if left > 0:
                    waits.append(left)
                    continue
                ready.append(i)
                match = match_pod_failure_policy(policy, last) if last is not None else None
                counts[i] = ixj.new_index_failure_counts(last, match is None or match[0] != "Ignore")
            if not ready:
                if waits:
                    jp.wait.append(min(waits))
                return
            indexes = ready
        if not indexes:
            return
        name = jp.job["metadata"]["name"]
        templates = [(ixj.index_template(jp.job, i, counts.get(i)), ixj.generate_name_with_index(name, i))
                     for i in indexes]
        await self._create_pods(jp.job, key, len(templates), templates=templates)

    @staticmethod
    def _waited_terminating(spec: Obj, pods: _JobPods) -> int:
        """Terminating Pods that still hold their place (manageJob: only when replacements wait
        for them, podReplacementPolicy Failed)."""
        return len(pods.terminating) if only_replace_failed_pods(spec) else 0

    @staticmethod
    def _want_active(spec: Obj, succeeded: int) -> int:
        parallelism = spec.get("parallelism")
        parallelism = 1 if parallelism is None else int(parallelism)
        completions = spec.get("completions")
        if completions is None:
            return 0 if succeeded > 0 else parallelism
        return max(0, min(parallelism, int(completions) - succeeded))

    @staticmethod
    def _past_backoff_limit_on_failure(spec: Obj, active: list[Obj], limit: int) -> bool:
        template_spec = (spec.get("template") or {}).get("spec") or {}
        if template_spec.get("restartPolicy") != "OnFailure":
            return False
        restarts = 0
        for p in active:
            st = p.get("status") or {}
            if st.get("phase") not in ("Running", "Pending"):
                continue
            for cs in [*(st.get("initContainerStatuses") or []), *(st.get("containerStatuses") or [])]:
                restarts += int(cs.get("restartCount") or 0)
        return restarts > 0 if limit == 0 else restarts >= limit

    def _backoff_left(self, pods: list[Obj], now: float) -> float:
        last_success = max((finish_time(p) for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"),
                           default=0.0)
        failures = [finish_time(p) for p in pods if (p.get("status") or {}).get("phase") == "Failed"
                    and finish_time(p) >= last_success]
        if not failures:
            return 0.0
        return ixj.remaining_backoff(self.pod_failure_backoff, MAX_POD_FAILURE_BACKOFF, len(failures), max(failures),
                                     now)
