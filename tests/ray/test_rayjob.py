"""RayJob state machine with the fake dashboard and the in-memory FakeClient: every transition,
reason and timer of reference/kuberay.md §3."""

from __future__ import annotations

from typing import Any

import pytest

from pumice._util.clock import FakeClock, rfc3339
from pumice.api import Obj, scheme
from pumice.client.base import is_not_found
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.batchscheduler.volcano import VolcanoBatchScheduler
from pumice.controllers.ray.raycluster import RayClusterReconciler
from pumice.controllers.ray.rayjob import RAYJOB_STEPS, RayJobOptions, RayJobReconciler
from pumice.controllers.ray.status import format_rayjob_status
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient
from pumice.testing.ray_dashboard import FakeRayDashboard

from .conftest import load_sample, ray_scheme

REQ = Request("default", "rayjob-sample")


class Harness:
    def __init__(self, options: RayJobOptions = RayJobOptions(), batch_scheduler: Any = None) -> None:
        import random

        self.clock = FakeClock()
        self.client = FakeClient(ray_scheme(), clock=self.clock)
        self.dash = FakeRayDashboard()
        self.events: list[tuple[str, str, str]] = []
        self.rc = RayClusterReconciler(self.client, clock=self.clock, batch_scheduler=batch_scheduler)
        self.rj = RayJobReconciler(self.client, clock=self.clock, dashboard_client_factory=self.dash.factory,
                                   options=options, rng=random.Random(7), recorder=self,
                                   batch_scheduler=batch_scheduler)

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))

    async def create(self, **spec: Any) -> Obj:
        job = load_sample("ray-job.sample.yaml", "RayJob")
        job["spec"].update(spec)
        for k, v in list(job["spec"].items()):
            if v is None:
                del job["spec"][k]
        return await self.client.create(job)

    async def job(self) -> Obj:
        return await self.client.get(scheme.RAY_JOB, "rayjob-sample", "default")

    async def status(self) -> Obj:
        return (await self.job()).get("status") or {}

    async def step(self) -> Any:
        return await self.rj.reconcile(REQ)

    async def cluster_ready(self) -> None:
        name = (await self.status())["rayClusterName"]
        req = Request("default", name)
        await self.rc.reconcile(req)
        for p in (await self.client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={name}")).items:
            p["apiVersion"], p["kind"] = "v1", "Pod"
            p["status"] = {"phase": "Running", "podIP": "10.244.0.9",
                           "conditions": [{"type": "Ready", "status": "True"}]}
            await self.client.update_status(p)
        await self.rc.reconcile(req)

    async def to_running(self) -> Obj:
        await self.step()  # New -> Initializing
        await self.step()  # creates the cluster
        await self.cluster_ready()
        await self.step()  # -> Running
        st = await self.status()
        assert st["jobDeploymentStatus"] == "Running", st
        return st

    async def submitter_finished(self, ctype: str = "Complete", reason: str = "") -> None:
        j = await self.client.get(scheme.JOB, "rayjob-sample", "default")
        j["status"] = {"conditions": [{"type": ctype, "status": "True", "reason": reason,
                                       "message": "boom" if ctype == "Failed" else "",
                                       "lastTransitionTime": rfc3339(self.clock.now())}]}
        await self.client.update_status(j)

    async def delete(self, kind: Any, name: str) -> None:
        """Delete through the client; then make sure a finalizer-held object shows its
        deletionTimestamp (FakeClient at the time of writing drops it in ``_replace``)."""
        await self.client.delete(kind, name, "default")
        stored = self.client._bucket(kind).get(self.client._key(kind, "default", name))
        if stored is not None and stored["metadata"].get("finalizers"):
            stored["metadata"].setdefault("deletionTimestamp", rfc3339(self.clock.now()))

    async def exists(self, kind: Any, name: str) -> bool:
        try:
            await self.client.get(kind, name, "default")
        except Exception as e:
            if is_not_found(e):
                return False
            raise
        return True


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_every_job_deployment_status_has_a_step() -> None:
    assert set(RAYJOB_STEPS) == {s.value for s in c.JobDeploymentStatus}


async def test_new_persists_job_id_and_cluster_name_before_creating_anything(h: Harness) -> None:
    await h.create()
    await h.step()
    job = await h.job()
    st = job["status"]
    assert st["jobDeploymentStatus"] == "Initializing"
    assert st["jobStatus"] == ""
    assert st["jobId"].startswith("rayjob-sample-") and len(st["jobId"]) == len("rayjob-sample-") + 5
    assert st["rayClusterName"].startswith("rayjob-sample-")
    assert st["startTime"] == rfc3339(h.clock.now())
    assert c.RAYJOB_STOP_JOB_FINALIZER in job["metadata"]["finalizers"]
    assert (await h.client.list(scheme.RAY_CLUSTER, "default")).items == []


async def test_initializing_creates_the_cluster_and_waits_for_it_to_be_ready(h: Harness) -> None:
    await h.create()
    await h.step()
    await h.step()
    st = await h.status()
    cluster = await h.client.get(scheme.RAY_CLUSTER, st["rayClusterName"], "default")
    assert cluster["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayJob"
    assert st["jobDeploymentStatus"] == "Initializing"
    assert not await h.exists(scheme.JOB, "rayjob-sample")
    await h.cluster_ready()
    await h.step()
    st = await h.status()
    assert st["jobDeploymentStatus"] == "Running"
    assert st["dashboardURL"] == f"{st['rayClusterName']}-head-svc.default.svc.cluster.local:8265"
    job = await h.client.get(scheme.JOB, "rayjob-sample", "default")
    assert job["spec"]["template"]["spec"]["containers"][0]["env"][2] == {
        "name": "RAY_JOB_SUBMISSION_ID", "value": st["jobId"]}


async def test_running_mirrors_ray_and_completes_when_the_submitter_finished(h: Harness) -> None:
    await h.create()
    st = await h.to_running()
    h.dash.set_job_status(st["jobId"], "RUNNING", start_time=1_700_000_000_000)
    await h.step()
    st = await h.status()
    assert st["jobStatus"] == "RUNNING" and st["jobDeploymentStatus"] == "Running"
    assert await h.exists(scheme.SERVICE, "rayjob-sample-head-svc")
    h.dash.set_job_status(st["jobId"], "SUCCEEDED", end_time=1_700_000_010_000)
    await h.step()  # submitter not finished yet: stays Running
    assert (await h.status())["jobDeploymentStatus"] == "Running"
    await h.submitter_finished()
    await h.step()
    st = await h.status()
    assert (st["jobStatus"], st["jobDeploymentStatus"], st["succeeded"], st["failed"]) == (
        "SUCCEEDED", "Complete", 1, 0)
    assert st["endTime"] == rfc3339(h.clock.now())
    assert st["rayJobInfo"] == {"startTime": "2023-11-14T22:13:20Z", "endTime": "2023-11-14T22:13:30Z"}
    assert "SUCCEEDED" in format_rayjob_status(await h.job())


async def test_a_failed_ray_job_is_app_failed(h: Harness) -> None:
    await h.create()
    st = await h.to_running()
    h.dash.set_job_status(st["jobId"], "FAILED", message="exit 1")
    await h.submitter_finished()
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"], st["failed"]) == ("Failed", "AppFailed", 1)


async def test_backoff_limit_retries_on_a_new_cluster_with_a_new_id(h: Harness) -> None:
    await h.create(backoffLimit=1)
    first = await h.to_running()
    h.dash.set_job_status(first["jobId"], "FAILED")
    await h.submitter_finished()
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["failed"]) == ("Retrying", 1)
    await h.step()  # deletes the cluster and the submitter Job
    await h.step()  # both gone -> New
    st = await h.status()
    assert st["jobDeploymentStatus"] == "" and "jobId" not in st and "rayClusterName" not in st
    assert not await h.exists(scheme.RAY_CLUSTER, first["rayClusterName"])
    second = await h.to_running()
    assert second["jobId"] != first["jobId"] and second["rayClusterName"] != first["rayClusterName"]
    h.dash.set_job_status(second["jobId"], "FAILED")
    await h.submitter_finished()
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"], st["failed"]) == ("Failed", "AppFailed", 2)


async def test_a_failed_submitter_job_is_submission_failed(h: Harness) -> None:
    await h.create()
    await h.to_running()
    await h.submitter_finished("Failed", reason="BackoffLimitExceeded")
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Failed", "SubmissionFailed")
    assert st["message"] == "Job submission has failed. Reason: BackoffLimitExceeded. Message: boom"


async def test_submitter_finished_but_job_unknown_is_app_failed(h: Harness) -> None:
    await h.create()
    await h.to_running()
    await h.submitter_finished()
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Failed", "AppFailed")
    assert st["message"] == "Submitter completed but Ray job not found in RayCluster."


async def test_submitter_finished_30s_ago_and_job_not_terminal_fails(h: Harness) -> None:
    await h.create()
    st = await h.to_running()
    h.dash.set_job_status(st["jobId"], "RUNNING")
    await h.submitter_finished()
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Running"
    h.clock.advance(31)
    await h.step()
    st = await h.status()
    assert (st["jobStatus"], st["jobDeploymentStatus"], st["reason"]) == (
        "FAILED", "Failed", "JobDeploymentStatusTransitionGracePeriodExceeded")


async def test_terminal_job_status_stuck_in_running_for_300s_is_forced(h: Harness) -> None:
    await h.create(submissionMode="HTTPMode")
    st = await h.to_running()
    job = await h.job()
    job["status"]["jobStatus"] = "STOPPED"
    job["status"]["rayJobInfo"] = {"endTime": rfc3339(h.clock.now())}
    await h.client.update_status(job)
    h.clock.advance(301)
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Complete", "JobDeploymentStatusTransitionGracePeriodExceeded")


async def test_unreachable_dashboard_for_300s_is_a_status_check_timeout_without_retry(h: Harness) -> None:
    await h.create(backoffLimit=2)
    await h.to_running()
    h.dash.unreachable = True
    await h.step()
    st = await h.status()
    assert st["jobStatusCheckFailureStartTime"] == rfc3339(h.clock.now())
    h.clock.advance(301)
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"], st["failed"]) == ("Failed", "JobStatusCheckTimeoutExceeded", 1)


async def test_active_deadline_fails_a_running_job_without_retry(h: Harness) -> None:
    await h.create(activeDeadlineSeconds=60, backoffLimit=2)
    await h.to_running()
    h.clock.advance(61)
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Failed", "DeadlineExceeded")


async def test_pre_running_deadline_fails_an_initializing_job(h: Harness) -> None:
    await h.create(preRunningDeadlineSeconds=10)
    await h.step()
    await h.step()
    h.clock.advance(11)
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Failed", "PreRunningDeadlineExceeded")


async def test_http_mode_submits_once_with_the_persisted_id(h: Harness) -> None:
    await h.create(submissionMode="HTTPMode")
    st = await h.to_running()
    assert not await h.exists(scheme.JOB, "rayjob-sample")
    await h.step()
    await h.step()
    assert [s["submission_id"] for s in h.dash.submissions] == [st["jobId"]]
    assert h.dash.submissions[0]["runtime_env"]["env_vars"] == {"counter_name": "test_counter"}
    h.dash.set_job_status(st["jobId"], "SUCCEEDED")
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Complete"


async def test_http_mode_submit_failure_starts_the_status_check_timer(h: Harness) -> None:
    await h.create(submissionMode="HTTPMode")
    await h.to_running()
    h.dash.fail_submit = True
    await h.step()
    assert (await h.status())["jobStatusCheckFailureStartTime"] == rfc3339(h.clock.now())
    h.dash.fail_submit = False
    await h.step()
    assert "jobStatusCheckFailureStartTime" not in await h.status()


async def test_interactive_mode_waits_for_spec_job_id(h: Harness) -> None:
    await h.create(submissionMode="InteractiveMode")
    await h.step()
    assert "jobId" not in await h.status()
    await h.step()
    await h.cluster_ready()
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Waiting"
    result = await h.step()
    assert result.requeue_after == 3.0 and (await h.status())["jobDeploymentStatus"] == "Waiting"
    job = await h.job()
    job["spec"]["jobId"] = "my-own-id"
    await h.client.update(job)
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["jobId"]) == ("Running", "my-own-id")


async def test_suspend_deletes_children_then_suspends_and_resume_starts_over(h: Harness) -> None:
    await h.create(shutdownAfterJobFinishes=True)
    first = await h.to_running()
    job = await h.job()
    job["spec"]["suspend"] = True
    await h.client.update(job)
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Suspending"
    await h.step()
    await h.step()
    st = await h.status()
    assert st["jobDeploymentStatus"] == "Suspended"
    assert not await h.exists(scheme.RAY_CLUSTER, first["rayClusterName"])
    assert not await h.exists(scheme.JOB, "rayjob-sample")
    result = await h.step()
    assert result.requeue_after is None  # upstream #4416: a Suspended RayJob is not requeued
    job = await h.job()
    job["spec"]["suspend"] = False
    await h.client.update(job)
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == ""
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Initializing"


async def test_suspended_at_creation_never_creates_a_cluster(h: Harness) -> None:
    await h.create(shutdownAfterJobFinishes=True, suspend=True)
    for _ in range(4):
        await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Suspended"
    assert (await h.client.list(scheme.RAY_CLUSTER, "default")).items == []


async def complete(h: Harness, ray_status: str = "SUCCEEDED") -> Obj:
    st = await h.to_running()
    h.dash.set_job_status(st["jobId"], ray_status)
    await h.submitter_finished()
    await h.step()
    return await h.status()


async def test_shutdown_after_job_finishes_waits_for_the_ttl(h: Harness) -> None:
    await h.create(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10)
    st = await complete(h)
    result = await h.step()
    assert result.requeue_after == pytest.approx(12.0)
    assert await h.exists(scheme.RAY_CLUSTER, st["rayClusterName"])
    h.clock.advance(10)
    await h.step()
    assert not await h.exists(scheme.RAY_CLUSTER, st["rayClusterName"])
    assert await h.exists(scheme.JOB, "rayjob-sample")  # the finished submitter is kept for its logs


async def test_legacy_on_success_delete_workers_suspends_every_group(h: Harness) -> None:
    await h.create(deletionStrategy={"onSuccess": {"policy": "DeleteWorkers"}, "onFailure": {"policy": "DeleteNone"}})
    st = await complete(h)
    await h.step()
    cluster = await h.client.get(scheme.RAY_CLUSTER, st["rayClusterName"], "default")
    assert [g.get("suspend") for g in cluster["spec"]["workerGroupSpecs"]] == [True]


async def test_deletion_rules_run_the_most_impactful_overdue_rule(h: Harness) -> None:
    rules = [{"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
             {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
             {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 60}}]
    await h.create(deletionStrategy={"deletionRules": rules})
    st = await complete(h)
    result = await h.step()
    assert not await h.exists(scheme.RAY_CLUSTER, st["rayClusterName"])
    assert result.requeue_after == pytest.approx(62.0)
    h.clock.advance(60)
    deletes = len([w for w in h.client.writes() if w[:2] == ("delete", "rayjobs")])
    await h.step()
    assert [w for w in h.client.writes() if w[:2] == ("delete", "rayjobs")][deletes:] == [
        ("delete", "rayjobs", "default", "rayjob-sample")]


async def test_deleting_a_running_rayjob_stops_the_ray_job_first(h: Harness) -> None:
    await h.create()
    st = await h.to_running()
    h.dash.set_job_status(st["jobId"], "RUNNING")
    await h.delete(scheme.RAY_JOB, "rayjob-sample")
    await h.step()
    assert h.dash.stopped == [st["jobId"]]
    assert not await h.exists(scheme.RAY_JOB, "rayjob-sample")


async def test_deleting_an_initializing_rayjob_sends_no_stop_without_a_dashboard_address(
        caplog: pytest.LogCaptureFixture) -> None:
    """trial-6 F-5: the cluster is not up (no head Pod IP, no status.dashboardURL); upstream's
    request to ``http://`` fails, pumice sends none, says why, and drops the finalizer."""
    import logging

    from pumice.controllers.ray.dashboard import http_dashboard_client_factory

    h = Harness()
    h.rj.dashboard_client_factory = http_dashboard_client_factory
    await h.create()
    await h.step()  # New -> Initializing
    await h.step()  # creates the cluster, which is not ready
    st = await h.status()
    assert st["jobDeploymentStatus"] == "Initializing" and not st.get("dashboardURL")
    await h.delete(scheme.RAY_JOB, "rayjob-sample")
    with caplog.at_level(logging.INFO, logger="pumice.controllers.ray.rayjob"):
        await h.step()
    text = caplog.text
    assert f"Ray job {st['jobId']} not stopped: no dashboard address yet" in text
    assert "failed to stop" not in text and "http:/api" not in text
    assert not await h.exists(scheme.RAY_JOB, "rayjob-sample")


async def test_invalid_spec_is_validation_failed_without_requeue(h: Harness) -> None:
    await h.create(suspend=True)  # suspend needs shutdownAfterJobFinishes
    result = await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"]) == ("ValidationFailed", "ValidationFailed")
    assert "shutdownAfterJobFinishes" in st["message"]
    assert result.requeue_after is None
    assert h.events[0][:2] == ("Warning", "InvalidRayJobSpec")


async def test_cluster_selector_uses_the_existing_cluster_and_never_deletes_it(h: Harness) -> None:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    await h.client.create(cl)
    await h.rc.reconcile(Request("default", "raycluster-kuberay"))
    await h.create(rayClusterSpec=None, clusterSelector={"ray.io/cluster": "raycluster-kuberay"})
    await h.step()
    assert (await h.status())["rayClusterName"] == "raycluster-kuberay"
    await h.cluster_ready()
    await h.step()
    st = await h.status()
    assert st["jobDeploymentStatus"] == "Running"
    h.dash.set_job_status(st["jobId"], "SUCCEEDED")
    await h.submitter_finished()
    await h.step()
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Complete"
    assert await h.exists(scheme.RAY_CLUSTER, "raycluster-kuberay")
    assert not await h.exists(scheme.SERVICE, "rayjob-sample-head-svc")


async def test_cluster_selector_naming_a_missing_cluster_warns(h: Harness) -> None:
    await h.create(rayClusterSpec=None, clusterSelector={"ray.io/cluster": "nope"})
    await h.step()
    with pytest.raises(LookupError):
        await h.step()
    assert ("Warning", "RayClusterNotFound") in [e[:2] for e in h.events]


async def test_volcano_gang_for_a_rayjob_and_shrink_on_completion() -> None:
    h = Harness()
    sched = VolcanoBatchScheduler(h.client)
    h.rj.batch_scheduler = sched
    h.rc.batch_scheduler = sched
    await h.create(shutdownAfterJobFinishes=True)
    st = await h.to_running()
    pg = await h.client.get(scheme.POD_GROUP, "ray-rayjob-sample-pg", "default")
    assert pg["spec"]["minMember"] == 2
    assert pg["spec"]["minResources"] == {"cpu": "1700m", "memory": "2248Mi"}
    pods = (await h.client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={st['rayClusterName']}")).items
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods} == {"ray-rayjob-sample-pg"}
    submitter = await h.client.get(scheme.JOB, "rayjob-sample", "default")
    assert submitter["spec"]["template"]["metadata"]["annotations"]["volcano.sh/task-spec"] == "submittergroup"
    h.dash.set_job_status(st["jobId"], "SUCCEEDED")
    await h.submitter_finished()
    await h.step()
    await h.step()  # Complete: deletes the cluster, then shrinks the PodGroup
    await h.step()
    pg = await h.client.get(scheme.POD_GROUP, "ray-rayjob-sample-pg", "default")
    assert pg["spec"]["minMember"] == 0 and pg["spec"]["minResources"] == {}


async def test_volcano_does_not_hang_a_cluster_selector_rayjob_in_initializing() -> None:
    h = Harness()
    sched = VolcanoBatchScheduler(h.client)
    h.rj.batch_scheduler = sched
    await h.client.create(load_sample("ray-cluster.sample.yaml", "RayCluster"))
    await h.rc.reconcile(Request("default", "raycluster-kuberay"))
    await h.create(rayClusterSpec=None, clusterSelector={"ray.io/cluster": "raycluster-kuberay"})
    await h.step()
    await h.cluster_ready()
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Running"
    submitter = await h.client.get(scheme.JOB, "rayjob-sample", "default")
    assert "schedulerName" not in submitter["spec"]["template"]["spec"]


async def set_sidecar_state(h: Harness, exit_code: int) -> None:
    name = (await h.status())["rayClusterName"]
    head = (await h.client.list(scheme.POD, "default",
                                label_selector=f"ray.io/cluster={name},ray.io/node-type=head")).items[0]
    head["apiVersion"], head["kind"] = "v1", "Pod"
    head["status"]["containerStatuses"] = [
        {"name": "ray-head", "state": {"running": {}}},
        {"name": "ray-job-submitter", "state": {"terminated": {
            "exitCode": exit_code, "reason": "Error" if exit_code else "Completed",
            "finishedAt": rfc3339(h.clock.now())}}}]
    await h.client.update_status(head)


async def test_sidecar_mode_completes_when_the_submitter_container_exits_0(h: Harness) -> None:
    await h.create(submissionMode="SidecarMode")
    st = await h.to_running()
    assert not await h.exists(scheme.JOB, "rayjob-sample")
    h.dash.set_job_status(st["jobId"], "SUCCEEDED")
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Running"  # submitter still running
    await set_sidecar_state(h, 0)
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Complete"


async def test_sidecar_mode_submitter_exit_1_is_submission_failed(h: Harness) -> None:
    await h.create(submissionMode="SidecarMode")
    await h.to_running()
    await set_sidecar_state(h, 1)
    await h.step()
    st = await h.status()
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Failed", "SubmissionFailed")
    assert st["message"] == "Ray head pod container ray-job-submitter terminated with exit code 1: Error"


async def test_sidecar_submitter_that_ends_before_the_cluster_is_ready_does_not_wedge_initializing(
        h: Harness) -> None:
    await h.create(submissionMode="SidecarMode")
    await h.step()
    await h.step()  # cluster created; Pods not ready yet
    name = (await h.status())["rayClusterName"]
    await h.rc.reconcile(Request("default", name))
    head = (await h.client.list(scheme.POD, "default",
                                label_selector=f"ray.io/cluster={name},ray.io/node-type=head")).items[0]
    head["apiVersion"], head["kind"] = "v1", "Pod"
    head["status"] = {"phase": "Running", "podIP": "10.244.0.9", "conditions": [{"type": "Ready", "status": "False"}],
                      "containerStatuses": [{"name": "ray-job-submitter", "state": {"terminated": {
                          "exitCode": 0, "finishedAt": rfc3339(h.clock.now())}}}]}
    await h.client.update_status(head)
    await h.step()
    st = await h.status()
    assert st["jobDeploymentStatus"] == "Running"
    h.dash.set_job_status(st["jobId"], "SUCCEEDED")
    await h.step()
    assert (await h.status())["jobDeploymentStatus"] == "Complete"
