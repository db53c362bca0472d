"""batch.volcano.sh CronJob: schedule maths, the webhook's rules, and the controller on the
project clock against the in-process API server (one reconcile per clock step)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pumice._util.clock import FakeClock
from pumice.api import scheme
from pumice.client.base import ApiError
from pumice.controllers.volcano import admission_plugins
from pumice.controllers.volcano.admission.cronjobs import validate_cronjob
from pumice.controllers.volcano.cronjob import (
    CronJobReconciler,
    Missed,
    ScheduleError,
    build_job,
    job_name,
    most_recent_schedule_time,
    parse_schedule,
)
from pumice.runtime.reconcile import Request
from pumice.testing.cluster import local_cluster

UTC = dt.UTC
T0 = dt.datetime(2026, 12, 1, 9, 58, 30, tzinfo=UTC)


def cron(name: str = "nightly", schedule: str = "*/5 * * * *", **spec: Any) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-12-01T09:58:30Z", "uid": "cj-uid"},
            "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"team": "a"}},
                                                           "spec": {"minAvailable": 1, "tasks": [
                                                               {"name": "w", "replicas": 1, "template": {"spec": {"containers": [
                                                                   {"name": "c", "image": "busybox"}]}}}]}}, **spec}}


async def _open_default_queue(client: Any) -> None:
    """The ``default`` Queue, Open (the CronJob's Jobs go to it)."""
    q = await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                             "spec": {"weight": 1}})
    q["status"] = {"state": "Open"}
    await client.update_status(q)


def test_the_most_recent_unmet_time_and_the_job_name_in_minutes() -> None:
    s = parse_schedule("*/5 * * * *", None)
    cj = cron()
    assert most_recent_schedule_time(cj, T0, s, True)[1:] == (None, Missed.NONE)
    now = T0 + dt.timedelta(minutes=2)
    _e, t, missed = most_recent_schedule_time(cj, now, s, True)
    assert t == dt.datetime(2026, 12, 1, 10, 0, tzinfo=UTC) and missed is Missed.NONE
    assert job_name(cj, t) == f"nightly-{int(t.timestamp()) // 60}"
    late = T0 + dt.timedelta(days=1)
    assert most_recent_schedule_time(cj, late, s, True)[2] is Missed.MANY
    cj["spec"]["startingDeadlineSeconds"] = 200
    assert most_recent_schedule_time(cj, late, s, True)[2] is Missed.NONE


def test_the_scheduled_timestamp_annotation_is_in_the_cronjobs_zone() -> None:
    s = parse_schedule("0 9 * * *", "Asia/Shanghai")
    t = s.next(T0)
    assert t == dt.datetime(2026, 12, 2, 1, 0, tzinfo=UTC)
    job = build_job(cron(timeZone="Asia/Shanghai"), t, s.zone)
    assert job["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"] == "2026-12-02T09:00:00+08:00"
    assert job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["ownerReferences"][0]["controller"] is True


@pytest.mark.parametrize(("spec", "name", "message"), [
    ({"schedule": ""}, "ok", "schedule is required, but got empty"),
    ({"schedule": "TZ=UTC 0 * * * *"}, "ok", "schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field"),
    ({"schedule": "every day"}, "ok", "schedule is not a valid cron expression"),
    ({"schedule": "0 * * * *", "timeZone": "Local"}, "ok", "timeZone can't be Local, and must be defined in https://www.iana.org/time-zones"),
    ({"schedule": "0 * * * *", "timeZone": "Mars/Olympus"}, "ok", "invalid timeZone"),
    ({"schedule": "0 * * * *"}, "x" * 53, "cronJob name must be no more than 52 characters to accommodate job name suffix (max 63 total)"),
])
def test_the_webhook_refuses_what_upstream_refuses(spec: dict, name: str, message: str) -> None:
    cj = cron(name)
    cj["spec"].update(spec)
    assert validate_cronjob(cj) == message


def test_exactly_local_is_the_controllers_zone_utc_as_for_no_zone() -> None:
    """Go's time.LoadLocation("Local") is the controller's zone (UTC for pumice); "local" is no zone."""
    local, unset = parse_schedule("0 9 * * *", "Local"), parse_schedule("0 9 * * *", None)
    assert local.next(T0) == unset.next(T0) == dt.datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    job = build_job(cron(timeZone="Local"), local.next(T0), local.zone)
    assert job["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"] == "2026-12-02T09:00:00Z"
    with pytest.raises(ScheduleError, match=r"^unknown time zone local$"):
        parse_schedule("0 9 * * *", "local")


@pytest.mark.parametrize(("zone", "events"), [
    ("Local", []),
    ("Mars/Olympus", [("InvalidTimeZone", 'Invalid time zone "Mars/Olympus": unknown time zone Mars/Olympus')]),
])
async def test_a_stored_cronjob_with_a_zone_the_webhook_refuses(zone: str, events: list[tuple[str, str]]) -> None:
    """Stored without the webhook (it refuses both): upstream's controller runs ``Local`` in its
    own zone and reports an unknown zone as a Warning InvalidTimeZone."""
    clock = FakeClock((T0 + dt.timedelta(minutes=2)).timestamp())
    async with local_cluster() as c:
        body = cron(timeZone=zone)
        body["metadata"].pop("uid")
        body["metadata"].pop("creationTimestamp")
        await c.client.create(body)
        seen: list[tuple[str, str]] = []
        cjs = (await c.client.list(scheme.CRON_JOB, "default")).items
        for o in cjs:
            o["metadata"]["creationTimestamp"] = "2026-12-01T09:58:30Z"
        r = CronJobReconciler(c.client, _Lister(cjs), _Lister([]), clock, lambda o, t, reason, m: seen.append((reason, m)))
        await r.reconcile(Request("default", "nightly"))
        assert [e for e in seen if e[0] != "SuccessfulCreate"] == events
        jobs = [j["metadata"]["name"] for j in (await c.client.list(scheme.VCJOB, "default")).items]
        ran = f"nightly-{int(dt.datetime(2026, 12, 1, 10, 0, tzinfo=UTC).timestamp()) // 60}"
        assert jobs == ([] if events else [ran])


class _Lister:
    def __init__(self, items: list[dict]) -> None:
        self.items = items

    def get(self, ns: str, name: str) -> dict | None:
        return next((o for o in self.items if o["metadata"]["name"] == name and o["metadata"].get("namespace") == ns), None)

    def list(self, ns: str | None = None) -> list[dict]:
        return [o for o in self.items if ns is None or o["metadata"].get("namespace") == ns]


async def test_the_controller_runs_jobs_on_schedule_forbids_overlap_and_keeps_history(tmp_path: Any) -> None:
    mutating, validating = admission_plugins()
    clock = FakeClock(T0.timestamp())
    async with local_cluster(admission=[*mutating, *validating]) as c:
        await _open_default_queue(c.client)
        body = cron(concurrencyPolicy="Forbid", successfulJobsHistoryLimit=1)
        body["metadata"].pop("uid")
        body["metadata"].pop("creationTimestamp")
        await c.client.create(body)
        events: list[tuple[str, str]] = []

        async def step() -> Any:
            cjs = (await c.client.list(scheme.CRON_JOB, "default")).items
            for o in cjs:
                o["metadata"]["creationTimestamp"] = "2026-12-01T09:58:30Z"
            jobs = (await c.client.list(scheme.VCJOB, "default")).items
            r = CronJobReconciler(c.client, _Lister(cjs), _Lister(jobs), clock, lambda o, t, reason, m: events.append((reason, m)))
            return await r.reconcile(Request("default", "nightly"))

        res = await step()
        assert res.requeue_after == pytest.approx(90.1)
        assert (await c.client.list(scheme.VCJOB, "default")).items == []
        clock.advance(91)
        await step()
        jobs = (await c.client.list(scheme.VCJOB, "default")).items
        first = f"nightly-{int(dt.datetime(2026, 12, 1, 10, 0, tzinfo=UTC).timestamp()) // 60}"
        assert [j["metadata"]["name"] for j in jobs] == [first]
        assert events[-1] == ("SuccessfulCreate", f"Created job {first} for CronJob default/nightly")
        cj = await c.client.get(scheme.CRON_JOB, "nightly", "default")
        assert cj["status"]["lastScheduleTime"] == "2026-12-01T10:00:00Z"
        assert [a["name"] for a in cj["status"]["active"]] == [first]
        clock.advance(300)
        await step()
        assert events[-1] == ("ForbidConcurrent", "Skipping job creation because another job is already running")
        assert len((await c.client.list(scheme.VCJOB, "default")).items) == 1
        # the first run completes; the next tick runs, and history keeps one success
        j = jobs[0]
        j["status"] = {"state": {"phase": "Completed", "lastTransitionTime": "2026-12-01T10:06:00Z"}}
        await c.client.update_status(j)
        await step()
        cj = await c.client.get(scheme.CRON_JOB, "nightly", "default")
        assert ("SawCompletedJob", f"Saw completed job: {first} in active, remove") in events
        assert cj["status"]["lastSuccessfulTime"] == "2026-12-01T10:06:00Z"
        names = sorted(j["metadata"]["name"] for j in (await c.client.list(scheme.VCJOB, "default")).items)
        assert len(names) == 2 and first in names
        second = next(n for n in names if n != first)
        clock.advance(300)
        j2 = await c.client.get(scheme.VCJOB, second, "default")
        j2["status"] = {"state": {"phase": "Completed", "lastTransitionTime": "2026-12-01T10:11:00Z"}}
        await c.client.update_status(j2)
        await step()
        assert ("SuccessfulDelete", f'Deleted job "{first}"') in events
        with pytest.raises(ApiError):
            await c.client.get(scheme.VCJOB, first, "default")


async def test_the_api_refuses_a_cronjob_with_tz_in_its_schedule() -> None:
    mutating, validating = admission_plugins()
    async with local_cluster(admission=[*mutating, *validating]) as c:
        body = cron(schedule="CRON_TZ=UTC 0 * * * *")
        body["metadata"].pop("uid")
        with pytest.raises(ApiError) as e:
            await c.client.create(body)
        assert 'admission webhook "validatecronjob.volcano.sh" denied the request: schedule should not contain TZ' in str(e.value)


@pytest.mark.parametrize("schedule", ["@hourly", "@daily", "@every 5m", "@every 1h30m"])
def test_the_webhook_takes_robfig_descriptors_and_every(schedule: str) -> None:
    assert validate_cronjob(cron(schedule=schedule)) == ""


def test_the_webhook_refuses_an_unknown_descriptor() -> None:
    assert validate_cronjob(cron(schedule="@often")) == "schedule is not a valid cron expression"


def test_every_schedules_from_the_last_run_at_its_interval() -> None:
    """@every 5m: robfig's ConstantDelaySchedule counts from creation, then from lastScheduleTime."""
    s = parse_schedule("@every 5m", None)
    cj = cron(schedule="@every 5m")
    assert most_recent_schedule_time(cj, T0 + dt.timedelta(minutes=4), s, True)[1:] == (None, Missed.NONE)
    _e, t, missed = most_recent_schedule_time(cj, T0 + dt.timedelta(minutes=6), s, True)
    assert t == T0 + dt.timedelta(minutes=5) and missed is Missed.NONE
    cj["status"] = {"lastScheduleTime": "2026-12-01T10:03:30Z"}
    _e, t, missed = most_recent_schedule_time(cj, T0 + dt.timedelta(minutes=17), s, True)
    assert t == T0 + dt.timedelta(minutes=15) and missed is Missed.FEW
    assert s.next(T0) == T0 + dt.timedelta(minutes=5)


async def test_a_job_just_created_is_not_reported_orphaned_by_a_reconcile_on_a_stale_cronjob() -> None:
    """trial-10 F-10: the reconcile that the new Job's informer event triggers read the CronJob
    before its own status write (``active`` with the Job) reached the cache, and warned
    OrphanedJob at every run. Upstream (processCtlJobAndActiveJob) asks the API for the CronJob
    before it warns; a Job the live CronJob does not list is still reported."""
    mutating, validating = admission_plugins()
    clock = FakeClock(T0.timestamp())
    async with local_cluster(admission=[*mutating, *validating]) as c:
        await _open_default_queue(c.client)
        body = cron()
        body["metadata"].pop("uid")
        await c.client.create(body)
        events: list[tuple[str, str]] = []

        def reconciler(cjs: list[dict], jobs: list[dict]) -> CronJobReconciler:
            return CronJobReconciler(c.client, _Lister(cjs), _Lister(jobs), clock,
                                     lambda o, t, reason, m: events.append((reason, m)))

        async def cronjobs() -> list[dict]:
            cjs = (await c.client.list(scheme.CRON_JOB, "default")).items
            for o in cjs:
                o["metadata"]["creationTimestamp"] = "2026-12-01T09:58:30Z"
            return cjs

        stale = await cronjobs()
        clock.advance(91)
        await reconciler(stale, []).reconcile(Request("default", "nightly"))
        [job] = (await c.client.list(scheme.VCJOB, "default")).items
        assert events == [("SuccessfulCreate", f"Created job {job['metadata']['name']} for CronJob default/nightly")]
        # the Job's add event: the CronJob cache still holds the copy from before the status write
        await reconciler(stale, [job]).reconcile(Request("default", "nightly"))
        assert [r for r, _m in events] == ["SuccessfulCreate"]
        cj = await c.client.get(scheme.CRON_JOB, "nightly", "default")
        assert [a["name"] for a in cj["status"]["active"]] == [job["metadata"]["name"]]
        # a Job this CronJob owns that its live status does not list is an orphan
        cj["status"]["active"] = []
        await c.client.update_status(cj)
        await reconciler(await cronjobs(), [job]).reconcile(Request("default", "nightly"))
        assert ("OrphanedJob", f"Detected orphaned job forgotten or not managed by controller: {job['metadata']['name']} "
                f"(UID: {job['metadata']['uid']})") in events


async def test_a_schedule_that_never_fires_is_an_invalid_schedule_event_not_a_reconcile_error() -> None:
    """trial-13 F-1: ``0 0 30 2 *`` parses (robfig's ParseStandard takes it) but has no time;
    upstream's syncCronJob records Warning InvalidSchedule ``Error getting schedule time: time
    difference between two schedules is less than 1 second``. The reconcile raised ValueError."""
    s = parse_schedule("0 0 30 2 *", None)
    with pytest.raises(ValueError, match=r"^time difference between two schedules is less than 1 second$"):
        most_recent_schedule_time(cron(schedule="0 0 30 2 *"), T0, s, True)
    clock = FakeClock(T0.timestamp())
    async with local_cluster() as c:
        body = cron(schedule="0 0 30 2 *")
        body["metadata"].pop("uid")
        await c.client.create(body)
        events: list[tuple[str, str, str]] = []
        cjs = (await c.client.list(scheme.CRON_JOB, "default")).items
        r = CronJobReconciler(c.client, _Lister(cjs), _Lister([]), clock, lambda o, t, reason, m: events.append((t, reason, m)))
        res = await r.reconcile(Request("default", "nightly"))
        assert res.requeue_after is None
        assert events == [("Warning", "InvalidSchedule",
                           "Error getting schedule time: time difference between two schedules is less than 1 second")]
        assert (await c.client.list(scheme.VCJOB, "default")).items == []
