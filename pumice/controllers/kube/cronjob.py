"""The CronJob controller: a Job from ``spec.jobTemplate`` at every activation of the schedule.

At each reconcile: the activations since the last scheduled time (or the creation) are worked
out; the latest missed one starts a Job ``<cronjob>-<minutes since the epoch>`` (annotated with
``batch.kubernetes.io/cronjob-scheduled-timestamp``) unless the CronJob is suspended, the
activation is older than ``startingDeadlineSeconds``, or ``concurrencyPolicy`` says otherwise
(Forbid: skip while a Job runs; Replace: delete the running Jobs first). Finished Jobs beyond
``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit`` are deleted, oldest first. The
reconcile asks to be called again at the next activation.

Status: active (references to the running Jobs), lastScheduleTime, lastSuccessfulTime.

Mirrors: kubernetes pkg/controller/cronjob/cronjob_controllerv2.go (syncCronJob,
cleanupFinishedJobs), utils.go (getJobName, mostRecentScheduleTime, nextScheduleTime); event
reasons SuccessfulCreate, SawCompletedJob, SuccessfulDelete, JobAlreadyActive, MissSchedule,
TooManyMissedTimes, InvalidSchedule (a schedule that never fires), UnparseableSchedule, UnknownTimeZone
(each an event and no requeue: the CronJob waits for a change of its spec).
"""

from __future__ import annotations

import copy
import logging

from pumice._util.clock import Clock, parse_rfc3339, rfc3339
from pumice._util.gostrings import quote
from pumice.api import Obj
from pumice.api.cron import NEVER_FIRES, CronSchedule, NoActivation, parse_schedule, time_zone_errors
from pumice.api.meta import owner_reference
from pumice.api.scheme import BATCH_CRON_JOB, JOB
from pumice.client.base import ApiError, KubeClient, is_already_exists, is_not_found
from pumice.client.informer import OWNER_UID_INDEX, Informer
from pumice.controllers.kube.options import KubeOptions
from pumice.runtime import Request, Result
from pumice.runtime.events import EventRecorder
from pumice.runtime.manager import Manager

log = logging.getLogger(__name__)

SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
CRONJOB_NAME_LABEL = "batch.kubernetes.io/cronjob-name"


def job_finished(job: Obj) -> str:
    """``"Complete"``, ``"Failed"`` or ``""``."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return ""


def job_for(cj: Obj, scheduled: float) -> Obj:
    """The Job of the activation at ``scheduled`` (pure)."""
    jt = (cj.get("spec") or {}).get("jobTemplate") or {}
    md = jt.get("metadata") or {}
    name = f"{cj['metadata']['name']}-{int(scheduled // 60)}"
    labels = {**(md.get("labels") or {}), CRONJOB_NAME_LABEL: cj["metadata"]["name"]}
    annotations = {**(md.get("annotations") or {}), SCHEDULED_TIMESTAMP: rfc3339(scheduled)}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": cj["metadata"].get("namespace"), "labels": labels,
                         "annotations": annotations, "ownerReferences": [owner_reference(cj)]},
            "spec": copy.deepcopy(jt.get("spec") or {})}


class CronJobReconciler:
    """Reconciler for batch/v1 CronJobs (see the module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> CronJobReconciler:
        """Build the controller and register it (CronJobs, owned Jobs)."""
        inf = mgr.informers
        cj = cls(mgr.client, cronjobs=inf.informer(BATCH_CRON_JOB), jobs=inf.informer(JOB), clock=mgr.clock,
                 recorder=mgr.event_recorder("cronjob-controller"))
        mgr.controller("cronjob").for_(BATCH_CRON_JOB).owns(JOB).complete(cj)
        return cj

    def __init__(self, client: KubeClient, *, cronjobs: Informer, jobs: Informer, clock: Clock,
                 recorder: EventRecorder) -> None:
        self.client = client
        self.cronjobs = cronjobs
        self.jobs = jobs
        self.clock = clock
        self.recorder = recorder

    async def reconcile(self, req: Request) -> Result:
        cj = self.cronjobs.store.get(req.namespace, req.name)
        if cj is None or cj["metadata"].get("deletionTimestamp"):
            return Result()
        spec = cj.get("spec") or {}
        schedule, zone = str(spec.get("schedule") or ""), spec.get("timeZone")
        if zone not in (None, "", "Local") and time_zone_errors(str(zone)):  # LoadLocation takes "" and Local (UTC here)
            # validation refuses such a zone now; a CronJob stored before can still have one
            self.recorder.event(cj, "Warning", "UnknownTimeZone",
                                f"invalid timeZone: {quote(str(zone))}: unknown time zone {zone}")
            return Result()
        try:
            sched = parse_schedule(schedule, zone)
        except ValueError as e:
            if not spec.get("suspend"):  # upstream parses only a CronJob that is not suspended
                self.recorder.event(cj, "Warning", "UnparseableSchedule", f"unparseable schedule: {quote(schedule)} : {e}")
            return Result()
        now = self.clock.now()
        jobs = self.jobs.store.by_index(OWNER_UID_INDEX, cj["metadata"]["uid"])
        status = copy.deepcopy(cj.get("status") or {})
        active = [j for j in jobs if not job_finished(j) and not j["metadata"].get("deletionTimestamp")]
        for j in jobs:
            if job_finished(j) == "Complete":
                done = (j.get("status") or {}).get("completionTime")
                if done and (not status.get("lastSuccessfulTime") or done > status["lastSuccessfulTime"]):
                    status["lastSuccessfulTime"] = done
        # the latest missed activation
        last = status.get("lastScheduleTime") or cj["metadata"].get("creationTimestamp")
        since = parse_rfc3339(last) if last else now
        requeue: float | None = None
        try:
            latest = self._latest_activation(cj, sched, since, now)
            requeue = max(0.5, sched.next_after(now) - now)
        except NoActivation:
            # robfig's Next gives the zero time for a schedule such as Feb 30th; upstream's
            # mostRecentScheduleTime then finds two activations 0 s apart. Nothing to requeue
            # for: a change of the spec brings the CronJob back. (Upstream looks at the
            # schedule only when the CronJob is not suspended.)
            if not spec.get("suspend"):
                self.recorder.event(cj, "Warning", "InvalidSchedule",
                                    f"invalid schedule: {spec.get('schedule')} : {NEVER_FIRES}")
            latest = None
        if latest is not None and not spec.get("suspend"):
            deadline = spec.get("startingDeadlineSeconds")
            if deadline is not None and latest + int(deadline) < now:
                self.recorder.event(cj, "Warning", "MissSchedule",
                                    f"Missed scheduled time to start a job: {rfc3339(latest)}")
            elif spec.get("concurrencyPolicy") == "Forbid" and active:
                self.recorder.event(cj, "Normal", "JobAlreadyActive",
                                    "Not starting job because prior execution is running and concurrency policy "
                                    "is Forbid")
                latest = None  # try again at the next reconcile
            else:
                if spec.get("concurrencyPolicy") == "Replace":
                    for j in active:
                        await self._delete(cj, j)
                    active = []
                job = job_for(cj, latest)
                try:
                    made = await self.client.create(job)
                    self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {made['metadata']['name']}")
                    active.append(made)
                except ApiError as e:
                    if not is_already_exists(e):
                        self.recorder.event(cj, "Warning", "FailedCreate", f"Error creating job: {e.message or e}")
                        raise
                status["lastScheduleTime"] = rfc3339(latest)
        status["active"] = [{"kind": "Job", "namespace": j["metadata"].get("namespace"), "name": j["metadata"]["name"],
                             "uid": j["metadata"].get("uid"), "apiVersion": "batch/v1",
                             "resourceVersion": j["metadata"].get("resourceVersion")}
                            for j in sorted(active, key=lambda j: j["metadata"]["name"])]
        if not status["active"]:
            del status["active"]
        await self._cleanup(cj, jobs)
        if status != (cj.get("status") or {}):
            await self.client.update_status({**cj, "status": status})
        return Result(requeue_after=requeue)

    def _latest_activation(self, cj: Obj, sched: CronSchedule, since: float, now: float) -> float | None:
        """The latest activation in (``since``, ``now``], or None; more than 100 missed ones give
        a TooManyMissedTimes event and the last one before ``now``.

        Raises:
            NoActivation: the schedule has no activation after ``since`` within five years.
        """
        latest = None
        t = sched.next_after(since)
        missed = 0
        while t <= now:
            latest, missed = t, missed + 1
            if missed > 100:
                self.recorder.event(cj, "Warning", "TooManyMissedTimes",
                                    "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or "
                                    "check clock skew")
                last = sched.next_after(now - 61)
                return last if last <= now else latest
            t = sched.next_after(t)
        return latest

    async def _cleanup(self, cj: Obj, jobs: list[Obj]) -> None:
        spec = cj.get("spec") or {}
        for outcome, key in (("Complete", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(key)
            if limit is None:
                continue
            done = sorted((j for j in jobs if job_finished(j) == outcome and not j["metadata"].get("deletionTimestamp")),
                          key=lambda j: (j.get("status") or {}).get("startTime") or j["metadata"]["name"])
            for j in done[: max(0, len(done) - int(limit))]:
                await self._delete(cj, j)

    async def _delete(self, cj: Obj, job: Obj) -> None:
        try:
            await self.client.delete(JOB, job["metadata"]["name"], job["metadata"].get("namespace"),
                                     propagation_policy="Background")
        except ApiError as e:
            if not is_not_found(e):
                raise
            return
        self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {job['metadata']['name']}")
