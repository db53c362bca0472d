"""CronJob controller: create a Volcano Job from ``spec.jobTemplate`` at each ``spec.schedule`` time.

A reconcile of one CronJob, on the project clock:

1. finished Jobs (``Completed``/``Failed``/``Terminated``) leave ``status.active`` (event
   ``SawCompletedJob``); a Completed one advances ``status.lastSuccessfulTime``; the oldest
   finished Jobs beyond ``successfulJobsHistoryLimit``/``failedJobsHistoryLimit`` are deleted
   (``SuccessfulDelete``/``FailedDelete``);
2. owned running Jobs missing from ``active`` are reported (``OrphanedJob``), unless the live
   CronJob (a GET, as upstream: the cache may not hold this controller's own last status write
   yet) lists them, in which case the reconcile goes on from the live CronJob; ``active``
   entries whose Job is gone or was replaced are dropped (``StaleReference``);
3. ``suspend`` stops here; a bad ``timeZone`` is an ``InvalidTimeZone`` event;
4. the most recent unmet schedule time since ``lastScheduleTime`` (or creation), bounded by
   ``startingDeadlineSeconds``; more than 100 missed gives ``TooManyMissedTimes``; none: requeue
   at the next time + 100 ms; a schedule that never fires (``0 0 30 2 *``) or does not parse is
   a Warning ``InvalidSchedule`` (``Error getting schedule time: ...``);
5. a Job already active for that time, or that time already scheduled: requeue;
6. ``Forbid`` with active Jobs skips the run (``ForbidConcurrent``); ``Replace`` deletes them
   first (``ReplaceConcurrent``);
7. the Job ``<cronjob>-<scheduled unix time / 60>`` is created with the template's labels and
   annotations, ``volcano.sh/cronjob-scheduled-timestamp`` (RFC 3339 in the CronJob's zone) and a
   controller ownerReference (``SuccessfulCreate``; a same-named Job not ours: ``ForeignJob``);
   it joins ``active`` and ``lastScheduleTime`` is set; requeue at the next time.

Cron expressions are parsed by :mod:`pumice.api.cron` as upstream's robfig/cron ParseStandard (5
fields, descriptors such as ``@hourly``, ``@every <duration>``); ``TZ=``/``CRON_TZ=`` prefixes are
honoured with an ``UnsupportedSchedule`` warning.

Mirrors: volcano pkg/controllers/cronjob (cronjob_controller.go, _handler.go, _util.go).
Deviates: after ``InvalidSchedule``/``InvalidTimeZone`` the reconcile ends without an error, so
the CronJob waits for a change instead of upstream's rate-limited retries (which can only repeat
the event: the schedule is in the spec).
"""

from __future__ import annotations

import copy
import datetime as dt
import enum
import logging
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pumice.api import Obj, scheme
from pumice.api.cron import NEVER_FIRES, CronSchedule, NoActivation
from pumice.api.cron import parse_schedule as parse_cron
from pumice.api.meta import owner_reference
from pumice.api.volcano.constants import CRON_JOB_SCHEDULED_TIMESTAMP_ANNOTATION, ConcurrencyPolicy
from pumice.client.base import KubeClient, get_or_none, is_already_exists, is_not_found
from pumice.runtime.reconcile import Request, Result

log = logging.getLogger(__name__)

NEXT_SCHEDULE_DELTA = 0.1
FINISHED_PHASES = frozenset({"Completed", "Failed", "Terminated"})
UTC = dt.UTC


class ScheduleError(ValueError):
    """A schedule robfig/cron's ParseStandard would refuse, or a time zone that does not exist."""


class Missed(enum.Enum):
    NONE = "none"
    FEW = "few"
    MANY = "many"


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule; :meth:`next` is the first activation strictly after a time (UTC)."""

    expr: str
    cron: CronSchedule
    zone: dt.tzinfo

    def next(self, t: dt.datetime) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.cron.next_after(t.timestamp()), UTC)


def load_zone(name: str) -> dt.tzinfo:
    """The IANA zone ``name``, as Go's LoadLocation: "" and ``UTC`` are UTC, and exactly
    ``Local`` is the controller's own zone, which for pumice is UTC (its schedules without a
    zone run in UTC too, see pumice.api.cron.parse_schedule). The webhook refuses ``Local``;
    a CronJob stored without it still runs, as upstream's controller runs it.

    Raises:
        ScheduleError: ``unknown time zone <name>`` (``local`` in another case included).
    """
    if name in ("", "UTC", "Local"):
        return UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
        raise ScheduleError(f"unknown time zone {name}") from e


def parse_schedule(schedule: str, time_zone: str | None) -> Schedule:
    """``schedule`` in ``time_zone`` (a ``TZ=``/``CRON_TZ=`` prefix wins over it).

    Raises:
        ScheduleError: not a cron expression ParseStandard takes, or an unknown zone.
    """
    expr, zone = schedule.strip(), time_zone or ""
    load_zone(zone)
    if expr.startswith(("TZ=", "CRON_TZ=")):
        head, _, expr = expr.partition(" ")
        zone = head.split("=", 1)[1]
        load_zone(zone)
    try:
        return Schedule(expr.strip(), parse_cron(expr, None if zone in ("", "UTC", "Local") else zone),
                        load_zone(zone))
    except ValueError as e:
        raise ScheduleError(f"failed to parse schedule {schedule!r}: {e}") from e


def _ts(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def _rfc3339(t: dt.datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def most_recent_schedule_time(cj: Obj, now: dt.datetime, sched: Schedule, with_deadline: bool) -> tuple[dt.datetime, dt.datetime | None, Missed]:
    """(earliest time considered, most recent schedule time <= now or None, how many missed).

    Raises:
        ScheduleError: two schedule times less than a second apart, or a schedule with no time
            in the five years after the earliest time (``0 0 30 2 *``), as upstream words both.
    """
    st, spec = cj.get("status") or {}, cj.get("spec") or {}
    earliest = _ts(st.get("lastScheduleTime")) or _ts(cj["metadata"].get("creationTimestamp")) or now
    deadline = spec.get("startingDeadlineSeconds")
    if with_deadline and deadline is not None:
        earliest = max(earliest, now - dt.timedelta(seconds=int(deadline)))
    try:
        t1 = sched.next(earliest)
        if now < t1:
            return earliest, None, Missed.NONE
        t2 = sched.next(t1)
    except NoActivation as e:  # robfig's zero time: the two "next" times are 0 s apart
        raise ScheduleError(NEVER_FIRES) from e
    if now < t2:
        return earliest, t1, Missed.NONE
    between = round((t2 - t1).total_seconds())
    if between < 1:
        raise ScheduleError(NEVER_FIRES)
    missed_count = int((now - t1).total_seconds()) // between + 1
    recent: dt.datetime | None = None
    t: dt.datetime | None = sched.next(t1 + dt.timedelta(seconds=(missed_count - 2) * between))
    while t is not None and t <= now:
        recent = t
        try:
            t = sched.next(t)
        except NoActivation:
            t = None
    return earliest, recent, Missed.MANY if missed_count > 100 else Missed.FEW


def next_requeue(cj: Obj, now: dt.datetime, sched: Schedule) -> float | None:
    """Seconds until the next schedule time (+100 ms); None when the schedule has no time in
    the five years after (nothing to wake for: a change of the spec requeues the CronJob)."""
    try:
        earliest, recent, missed = most_recent_schedule_time(cj, now, sched, False)
        base = recent or (earliest if missed is Missed.NONE else now)
    except ScheduleError:
        base = now
    try:
        return (sched.next(base) - now).total_seconds() + NEXT_SCHEDULE_DELTA
    except NoActivation:
        return None


def job_name(cj: Obj, scheduled: dt.datetime) -> str:
    """``<cronjob>-<scheduled unix seconds // 60>``."""
    return f"{cj['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


def build_job(cj: Obj, scheduled: dt.datetime, zone: dt.tzinfo) -> Obj:
    """The Job of one run (pure): template labels/annotations, the scheduled-timestamp
    annotation in the CronJob's zone, a controller ownerReference, the template spec."""
    tmpl = (cj.get("spec") or {}).get("jobTemplate") or {}
    tmd = tmpl.get("metadata") or {}
    ann = dict(tmd.get("annotations") or {})
    ann[CRON_JOB_SCHEDULED_TIMESTAMP_ANNOTATION] = scheduled.astimezone(zone).isoformat().replace("+00:00", "Z")
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": job_name(cj, scheduled), "namespace": cj["metadata"].get("namespace", "default"),
                     "labels": dict(tmd.get("labels") or {}), "annotations": ann, "ownerReferences": [owner_reference(cj)]},
        "spec": copy.deepcopy(tmpl.get("spec") or {}),
    }


def _phase(job: Obj) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def _controlled_by(job: Obj, cj: Obj) -> bool:
    return any(r.get("controller") and r.get("uid") == cj["metadata"].get("uid") for r in job["metadata"].get("ownerReferences") or [])


def _ref(job: Obj) -> Obj:
    md = job["metadata"]
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": md["name"], "namespace": md.get("namespace"),
            "uid": md.get("uid"), "resourceVersion": md.get("resourceVersion")}


def _creation_key(job: Obj) -> tuple[bool, str, str]:
    ts = job["metadata"].get("creationTimestamp") or ""
    return (not ts, ts, job["metadata"]["name"])


class CronJobReconciler:
    """Reconciles one CronJob (see the module docstring)."""

    def __init__(self, client: KubeClient, cronjobs: Any, jobs: Any, clock: Any,
                 event: Callable[[Obj, str, str, str], Any]) -> None:
        self.client = client
        self.cronjobs = cronjobs
        self.jobs = jobs
        self.clock = clock
        self.event = event

    async def _delete_job(self, cj: Obj, st: Obj, job: Obj) -> bool:
        try:
            await self.client.delete(scheme.VCJOB, job["metadata"]["name"], job["metadata"].get("namespace"))
        except Exception as e:
            if not is_not_found(e):
                self.event(cj, "Warning", "FailedDelete", f'Error deleting job "{job["metadata"]["name"]}": {e}')
                return False
        st["active"] = [a for a in st.get("active") or [] if a.get("uid") != job["metadata"].get("uid")]
        self.event(cj, "Normal", "SuccessfulDelete", f'Deleted job "{job["metadata"]["name"]}"')
        return True

    async def reconcile(self, req: Request) -> Result:
        cur = self.cronjobs.get(req.namespace, req.name)
        if cur is None or cur["metadata"].get("deletionTimestamp"):
            return Result()
        jobs = [j for j in self.jobs.list(req.namespace) if _controlled_by(j, cur)]
        listed = {a.get("uid") for a in (cur.get("status") or {}).get("active") or []}
        if any(j["metadata"].get("uid") not in listed and _phase(j) not in FINISHED_PHASES for j in jobs):
            # A running Job the cached CronJob does not list: most often the Job this controller
            # just created, its status write not yet in the cache. Ask the API, as upstream does
            # before it reports an orphan, and go on from the live CronJob.
            live = await get_or_none(self.client, scheme.CRON_JOB, req.name, req.namespace)
            if live is None or live["metadata"].get("deletionTimestamp"):
                return Result()
            cur = live
        cj = copy.deepcopy(cur)
        st = cj.setdefault("status", {})
        spec = cj.get("spec") or {}
        now = dt.datetime.fromtimestamp(self.clock.now(), UTC)
        active_uids = {a.get("uid") for a in st.get("active") or []}
        succeeded, failed = [], []
        for j in jobs:
            phase = _phase(j)
            if phase not in FINISHED_PHASES:
                continue
            if j["metadata"].get("uid") in active_uids:
                st["active"] = [a for a in st["active"] if a.get("uid") != j["metadata"].get("uid")]
                self.event(cj, "Normal", "SawCompletedJob", f"Saw completed job: {j['metadata']['name']} in active, remove")
            if phase == "Completed":
                fin = _ts(((j.get("status") or {}).get("state") or {}).get("lastTransitionTime"))
                last = _ts(st.get("lastSuccessfulTime"))
                if fin is not None and (last is None or fin > last):
                    st["lastSuccessfulTime"] = _rfc3339(fin)
                succeeded.append(j)
            elif phase == "Failed":
                failed.append(j)
        for finished, limit in ((succeeded, spec.get("successfulJobsHistoryLimit")), (failed, spec.get("failedJobsHistoryLimit"))):
            if limit is None:
                continue
            extra = len(finished) - int(limit)
            for j in sorted(finished, key=_creation_key)[:max(extra, 0)]:
                await self._delete_job(cj, st, j)
        active_uids = {a.get("uid") for a in st.get("active") or []}
        by_uid = {j["metadata"].get("uid"): j for j in jobs}
        for j in jobs:
            if j["metadata"].get("uid") not in active_uids and _phase(j) not in FINISHED_PHASES:
                self.event(cj, "Warning", "OrphanedJob", f"Detected orphaned job forgotten or not managed by controller: "
                           f"{j['metadata']['name']} (UID: {j['metadata'].get('uid')})")
        for a in list(st.get("active") or []):
            if a.get("uid") in by_uid:
                continue
            j = self.jobs.get(a.get("namespace") or req.namespace, a.get("name", ""))
            if j is None:
                self.event(cj, "Warning", "StaleReference", f'Active job "{a.get("name")}" no longer exists (UID: {a.get("uid")})')
            else:
                self.event(cj, "Warning", "StaleReference", f'Active job reference "{a.get("name")}" points to a different UID '
                           f"(expected: {a.get('uid')}, actual: {j['metadata'].get('uid')})")
            st["active"] = [x for x in st["active"] if x.get("uid") != a.get("uid")]
        requeue = await self._schedule(cj, st, spec, now)
        if st != (cur.get("status") or {}):
            if not st.get("active"):
                st.pop("active", None)
            await self.client.update_status(cj)
        return Result(requeue_after=requeue)

    async def _schedule(self, cj: Obj, st: Obj, spec: Obj, now: dt.datetime) -> float | None:
        if spec.get("suspend"):
            return None
        schedule = str(spec.get("schedule") or "")
        tz = spec.get("timeZone")
        if tz is not None:
            try:
                load_zone(tz)
            except ScheduleError as e:
                self.event(cj, "Warning", "InvalidTimeZone", f'Invalid time zone "{tz}": {e}')
                return None
        if "TZ" in schedule:
            self.event(cj, "Warning", "UnsupportedSchedule", f'CRON_TZ or TZ in the schedule "{schedule}" is not officially '
                       "supported. If set, the TimeZone field will be ignored during execution.")
        try:
            sched = parse_schedule(schedule, tz)
            _e, scheduled, missed = most_recent_schedule_time(cj, now, sched, True)
        except ScheduleError as e:
            self.event(cj, "Warning", "InvalidSchedule", f"Error getting schedule time: {e}")
            return None
        if scheduled is None:
            return next_requeue(cj, now, sched)
        if missed is Missed.MANY:
            self.event(cj, "Warning", "TooManyMissedTimes",
                       "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
        name = job_name(cj, scheduled)
        if any(a.get("name") == name for a in st.get("active") or []) or st.get("lastScheduleTime") == _rfc3339(scheduled):
            return next_requeue(cj, now, sched)
        policy = spec.get("concurrencyPolicy") or ConcurrencyPolicy.ALLOW
        if policy == ConcurrencyPolicy.FORBID and st.get("active"):
            self.event(cj, "Warning", "ForbidConcurrent", "Skipping job creation because another job is already running")
            return next_requeue(cj, now, sched)
        if policy == ConcurrencyPolicy.REPLACE and st.get("active"):
            self.event(cj, "Warning", "ReplaceConcurrent", "Replacing active job for CronJob")
            for a in list(st["active"]):
                j = self.jobs.get(a.get("namespace") or cj["metadata"].get("namespace"), a.get("name", ""))
                if j is not None and not await self._delete_job(cj, st, j):
                    return NEXT_SCHEDULE_DELTA
        body = build_job(cj, scheduled, sched.zone)
        ns = body["metadata"]["namespace"]
        try:
            job = await self.client.create(body)
        except Exception as e:
            if not is_already_exists(e):
                if "is being terminated" in str(e):
                    self.event(cj, "Warning", "NamespaceTerminating", f"Namespace {ns} is terminating, skipping job creation")
                else:
                    self.event(cj, "Warning", "FailedCreate", f"Failed to create job: {e}")
                raise
            job = await self.client.get(scheme.VCJOB, name, ns)
            if not _controlled_by(job, cj):
                owner = next((r.get("name") for r in job["metadata"].get("ownerReferences") or [] if r.get("controller")), "none")
                self.event(cj, "Warning", "ForeignJob", f"Job {name} exists but is not owned by this CronJob (current owner: {owner})")
                return next_requeue(cj, now, sched)
            if _phase(job) in FINISHED_PHASES:
                return next_requeue(cj, now, sched)
        else:
            self.event(cj, "Normal", "SuccessfulCreate", f"Created job {name} for CronJob {ns}/{cj['metadata']['name']}")
        if not any(a.get("uid") == job["metadata"].get("uid") for a in st.get("active") or []):
            st.setdefault("active", []).append(_ref(job))
            st["lastScheduleTime"] = _rfc3339(scheduled)
        return next_requeue(cj, now, sched)
