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

Counting: ``failed`` counts Failed Pods except those a podFailurePolicy ``Ignore`` rule matches;
with restartPolicy OnFailure the container restarts of running Pods count towards backoffLimit
(``>= backoffLimit``, or ``> 0`` when it is 0) as upstream's pastBackoffLimitOnFailure. Replacement
Pods after failures wait ``pod_failure_backoff * 2**(failures since last success - 1)`` seconds
(10 s base, at most 10 min).

Mirrors: kubernetes pkg/controller/job/job_controller.go (syncJob, manageJob,
pastBackoffLimitOnFailure, getPodFailurePolicy), pod_failure_policy.go, backoff_utils.go, and
pkg/controller/ttlafterfinished. Deviates: no job-tracking finalizers and no
uncountedTerminatedPods bookkeeping: succeeded/failed are counted from the terminated Pods still
present and never decrease (deleting a finished Pod by hand is not re-counted); Indexed
completion mode and successPolicy are not implemented.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from pumice._util.clock import Clock, parse_rfc3339, rfc3339
from pumice.api import Obj, meta
from pumice.api.scheme import JOB, POD
from pumice.client.base import ApiError, KubeClient, is_conflict, is_not_found
from pumice.client.informer import OWNER_UID_INDEX, Informer
from pumice.controllers.kube.podutil import controller_ref, deletion_order, is_active, pod_from_template
from pumice.controllers.kube.replicaset import PodControl, slow_start_batch
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
DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0


def _cond_true(status: Obj, ctype: str) -> Obj | None:
    c = meta.find_condition(status.get("conditions"), ctype)
    return c if c is not None and c.get("status") == "True" else None


def finished(job: Obj) -> Obj | None:
    """The Complete or Failed condition when True (IsJobFinished)."""
    st = job.get("status") or {}
    return _cond_true(st, "Complete") or _cond_true(st, "Failed")


def match_pod_failure_policy(policy: Obj | None, pod: Obj) -> tuple[str, str] | None:
    """``(action, message)`` of the first podFailurePolicy rule matching a Failed Pod, or None.

    Actions: ``FailJob``, ``Ignore``, ``Count`` (``FailIndex`` is treated as ``Count``).
    """
    if not policy:
        return None
    md, st = pod.get("metadata") or {}, pod.get("status") or {}
    statuses = [*(st.get("initContainerStatuses") or []), *(st.get("containerStatuses") or [])]
    for i, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action", "Count")
        codes = rule.get("onExitCodes")
        if codes:
            for cs in statuses:
                term = ((cs.get("state") or {}).get("terminated")) or {}
                if not term:
                    continue
                code = int(term.get("exitCode") or 0)
                if code == 0:
                    continue
                if codes.get("containerName") and codes["containerName"] != cs.get("name"):
                    continue
                values = [int(v) for v in codes.get("values") or []]
                hit = code in values if codes.get("operator") == "In" else code not in values
                if hit:
                    return action, (f"Container {cs.get('name')} for pod {md.get('namespace')}/{md.get('name')} "
                                    f"failed with exit code {code} matching {action} rule at index {i}")
        for pc in rule.get("onPodConditions") or []:
            c = meta.find_condition(st.get("conditions"), pc.get("type"))
            if c is not None and c.get("status") == pc.get("status", "True"):
                return action, (f"Pod {md.get('namespace')}/{md.get('name')} has condition {pc.get('type')} "
                                f"matching {action} rule at index {i}")
    return None


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

    async def _delete_pods(self, key: str, pods: list[Obj]) -> None:
        if not pods:
            return
        self.expectations.expect_deletions(key, [p["metadata"]["uid"] for p in pods])
        first_error: ApiError | None = None
        for p in pods:
            md = p["metadata"]
            try:
                await self.client.delete(POD, md["name"], md.get("namespace"), preconditions={"uid": md["uid"]})
            except ApiError as e:
                self.expectations.deletion_observed(key, md["uid"])
                if not is_not_found(e) and e.code != 409 and first_error is None:
                    first_error = e
        if first_error is not None:
            raise first_error

    async def _create_pods(self, job: Obj, key: str, n: int) -> None:
        md = job["metadata"]
        template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
        labels = {JOB_NAME_LABEL: md["name"], LEGACY_JOB_NAME_LABEL: md["name"],
                  CONTROLLER_UID_LABEL: md["uid"], LEGACY_CONTROLLER_UID_LABEL: md["uid"]}
        ref = controller_ref(job)
        self.expectations.expect_creations(key, n)
        attempted = 0

        async def create() -> None:
            nonlocal attempted
            attempted += 1
            pod = pod_from_template(template, namespace=md.get("namespace", ""), generate_name=f"{md['name']}-",
                                    owner_ref=ref, extra_labels=labels)
            try:
                await self.client.create(pod)
            except BaseException:
                self.expectations.creation_observed(key)
                raise

        try:
            await slow_start_batch(n, create)
        except ApiError as e:
            for _ in range(n - attempted):
                self.expectations.creation_observed(key)
            self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {e.message or e}")
            raise
        self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created {n} pod(s)")

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
        job = self.jobs.store.get(req.namespace, req.name)
        key = f"{req.namespace}/{req.name}"
        if job is None:
            self.expectations.delete(key)
            return Result()
        done = finished(job)
        if done is not None:
            return await self._ttl(job, done)
        if job["metadata"].get("deletionTimestamp"):
            return Result()
        spec, prev = job.get("spec") or {}, job.get("status") or {}
        now_ts = self.clock.now()
        now = rfc3339(now_ts)
        pods = self.pods.store.by_index(OWNER_UID_INDEX, job["metadata"]["uid"])
        active = [p for p in pods if is_active(p)]
        terminating = [p for p in pods if p["metadata"].get("deletionTimestamp")
                       and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        succeeded_pods = [p for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"]
        policy = spec.get("podFailurePolicy")
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
        succeeded = max(int(prev.get("succeeded") or 0), len(succeeded_pods))
        failed = max(int(prev.get("failed") or 0), len(counted_failed))
        suspended = bool(spec.get("suspend"))
        status: Obj = copy.deepcopy(prev)
        conds: list[Obj] = list(status.get("conditions") or [])
        wait: list[float] = []
        if not suspended and not status.get("startTime"):
            status["startTime"] = now

        failure = _cond_true(prev, "FailureTarget")
        success = _cond_true(prev, "SuccessCriteriaMet")
        target: tuple[str, str, str] | None = None
        if failure:
            target = ("Failed", failure.get("reason", ""), failure.get("message", ""))
        elif success:
            target = ("Complete", success.get("reason", ""), success.get("message", ""))
        else:
            backoff_limit = spec.get("backoffLimit")
            backoff_limit = DEFAULT_BACKOFF_LIMIT if backoff_limit is None else int(backoff_limit)
            completions = spec.get("completions")
            deadline = spec.get("activeDeadlineSeconds")
            started = parse_rfc3339(status["startTime"]) if status.get("startTime") else None
            reason: tuple[str, str] | None = None
            if fail_job:
                reason = fail_job
            elif failed > backoff_limit or self._past_backoff_limit_on_failure(spec, active, backoff_limit):
                reason = (REASON_BACKOFF_LIMIT, MSG_BACKOFF_LIMIT)
            elif deadline is not None and started is not None and not suspended:
                left = started + int(deadline) - now_ts
                if left <= 0:
                    reason = (REASON_DEADLINE, MSG_DEADLINE)
                else:
                    wait.append(left)
            if reason is not None:
                target = ("Failed", *reason)
                conds = meta.with_condition(conds, {"type": "FailureTarget", "status": "True", "reason": reason[0],
                                                     "message": reason[1], "lastProbeTime": now}, now)
                self.recorder.event(job, "Warning", reason[0], reason[1])
            elif (completions is not None and succeeded >= int(completions)) or (
                    completions is None and succeeded > 0 and not active):
                target = ("Complete", REASON_COMPLETIONS_REACHED, MSG_COMPLETIONS)
                conds = meta.with_condition(conds, {"type": "SuccessCriteriaMet", "status": "True",
                                                     "reason": REASON_COMPLETIONS_REACHED, "message": MSG_COMPLETIONS,
                                                     "lastProbeTime": now}, now)

        if target is not None:
            await self._delete_pods(key, active)
            if not active and not terminating:
                ctype, reason_, message = target
                conds = meta.with_condition(conds, {"type": ctype, "status": "True", "reason": reason_,
                                                     "message": message, "lastProbeTime": now}, now)
                if ctype == "Complete":
                    status["completionTime"] = now
                    self.recorder.event(job, "Normal", "Completed", "Job completed")
                active_count = 0
            else:
                active_count = len(active)
        elif suspended:
            if self.expectations.satisfied(key):
                await self._delete_pods(key, active)
            conds = meta.with_condition(conds, {"type": "Suspended", "status": "True", "reason": "JobSuspended",
                                                 "message": "Job suspended", "lastProbeTime": now}, now)
            status.pop("startTime", None)
            active_count = len(active)
        else:
            if _cond_true(prev, "Suspended"):
                conds = meta.with_condition(conds, {"type": "Suspended", "status": "False", "reason": "JobResumed",
                                                     "message": "Job resumed", "lastProbeTime": now}, now)
                status["startTime"] = now
            active_count = len(active)
            if self.expectations.satisfied(key):
                want = self._want_active(spec, succeeded)
                if want > len(active):
                    left = self._backoff_left(pods, now_ts)
                    if left > 0:
                        wait.append(left)
                    else:
                        await self._create_pods(job, key, want - len(active))
                elif want < len(active):
                    await self._delete_pods(key, deletion_order(active)[: len(active) - want])

        status.update({
            "active": active_count,
            "ready": sum(1 for p in active if meta.pod_is_ready(p)),
            "succeeded": succeeded,
            "failed": failed,
            "terminating": len(terminating),
            "uncountedTerminatedPods": status.get("uncountedTerminatedPods") or {},
        })
        for k in ("succeeded", "failed", "active", "terminating"):
            if not status[k] and k not in prev:
                status.pop(k)
        if conds:
            status["conditions"] = conds
        if status != prev:
            fresh = self.jobs.store.get(req.namespace, req.name) or job
            try:
                await self.client.update_status({**copy.deepcopy(fresh), "status": status})
            except ApiError as e:
                if is_conflict(e):
                    return Result()  # a newer version is on its way through the informer
                raise
        return Result(requeue_after=min(wait)) if wait else Result()

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
        delay = min(MAX_POD_FAILURE_BACKOFF, self.pod_failure_backoff * 2 ** (len(failures) - 1))
        return max(0.0, max(failures) + delay - now)
