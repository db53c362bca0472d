"""The RayJob controller: a state machine over ``status.jobDeploymentStatus``, one step function
per state in :data:`RAYJOB_STEPS`.

Each pass: get the RayJob; handle deletion (stop the Ray job, drop the finalizer); validate
(invalid → ``ValidationFailed`` written at once, no requeue); run the step of the current state on
a working copy; then backoff accounting and one status write, only when jobStatus,
jobDeploymentStatus, rayClusterStatus or jobStatusCheckFailureStartTime changed (``endTime`` is
stamped when the new state is terminal). A step returns ``None`` to fall through to that write
(then requeue 3 s), or a :class:`Result` to return at once without a status write.

Idempotence: ``New`` persists ``jobId`` and ``rayClusterName`` in the status write that enters
``Initializing``, before any cluster or submission exists; later passes find children by those
names, so a restart never creates a second cluster or submission id.

Mirrors: kuberay ray-operator/controllers/ray/rayjob_controller.go.

Deviates:
- SidecarMode inspects the submitter container during Initializing too (upstream issue #4945: a
  job that ends before every Pod is ready leaves the head Pod un-Ready, so the cluster never
  becomes ``ready`` and upstream stays in Initializing forever).
- upstream has no branch for ``ValidationFailed`` and requeues it every 3 s; here it is not
requeued (a spec change wakes it; a RayJob whose spec became valid stays ValidationFailed, as
upstream, and should be recreated).
"""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pumice._util.clock import Clock, default_clock, parse_rfc3339, rfc3339
from pumice.api import Obj, scheme
from pumice.client.base import KubeClient, get_or_none, is_not_found
from pumice.controllers.ray import association as assoc
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.batchscheduler import BatchScheduler, DefaultBatchScheduler
from pumice.controllers.ray.cluster_service import reconcile_cluster_service
from pumice.controllers.ray.common import job as jobb
from pumice.controllers.ray.common import pod as podb
from pumice.controllers.ray.common import service as svcb
from pumice.controllers.ray.dashboard import (
    DashboardClientFactory,
    DashboardError,
    NoDashboardAddress,
    dashboard_client_for,
    http_dashboard_client_factory,
)
from pumice.controllers.ray.raycluster import EventRecorder, NullRecorder, inconsistent_status
from pumice.controllers.ray.validation import ValidationError, validate_rayjob
from pumice.controllers.ray.wiring import event_recorder
from pumice.runtime.reconcile import Request, Result

if TYPE_CHECKING:
    from pumice.controllers.ray.options import RayOperatorOptions

log = logging.getLogger(__name__)

JDS = c.JobDeploymentStatus
REASON = c.JobFailedReason
MODE = c.JobSubmissionMode


@dataclass(frozen=True)
class RayJobOptions:
    """Operator-wide switches (upstream env vars), in seconds.

    Attributes:
        requeue_seconds: default requeue (3).
        submitter_finished_timeout: 30.
        transition_grace_period: ``RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS`` (300).
        status_check_timeout: ``RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS`` (300).
        delete_rayjob_after_job_finishes: ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES``.
        deletion_policy_gate: feature gate ``RayJobDeletionPolicy`` (on).
    """

    requeue_seconds: float = c.RAYJOB_DEFAULT_REQUEUE_SECONDS
    submitter_finished_timeout: float = c.RAYJOB_SUBMITTER_FINISHED_TIMEOUT_SECONDS
    transition_grace_period: float = c.RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS
    status_check_timeout: float = c.RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS
    delete_rayjob_after_job_finishes: bool = False
    deletion_policy_gate: bool = True
    pod: podb.PodOptions = podb.DEFAULT_POD_OPTIONS
    service: svcb.ServiceOptions = svcb.DEFAULT_SERVICE_OPTIONS


StepFn = Callable[["RayJobReconciler", Obj], Awaitable[Result | None]]


def _status(job: Obj) -> Obj:
    st: Obj = job.setdefault("status", {})
    return st


def _mode(job: Obj) -> str:
    return jobb.submission_mode(job)


def _has_submitter(job: Obj) -> bool:
    return _mode(job) in (MODE.K8S_JOB_MODE, MODE.SIDECAR_MODE)


def _uses_selector(job: Obj) -> bool:
    return bool(job.get("spec", {}).get("clusterSelector"))


def _ts(value: Any) -> float | None:
    return parse_rfc3339(value) if value else None


class RayJobReconciler:
    """Reconciles ``ray.io/v1`` RayJob (see module docstring).

    Args:
        client: the API client.
        dashboard_client_factory: ``(ray_cluster, dashboard_url) -> RayDashboardClient``.
        rng: seeded generator for generated cluster names and submission ids.
    """

    def __init__(self, client: KubeClient, *, recorder: EventRecorder | None = None, clock: Clock | None = None,
                 batch_scheduler: BatchScheduler | None = None,
                 dashboard_client_factory: DashboardClientFactory | None = None,
                 options: RayJobOptions = RayJobOptions(), rng: random.Random | None = None) -> None:
        self.client = client
        self.recorder: EventRecorder = recorder or NullRecorder()
        self.clock = clock or default_clock()
        self.batch_scheduler: BatchScheduler = batch_scheduler or DefaultBatchScheduler()
        self.dashboard_client_factory = dashboard_client_factory or http_dashboard_client_factory
        self.options = options
        self.rng = rng or random.Random()

    @classmethod
    def setup_with_manager(cls, mgr: Any, opts: RayOperatorOptions) -> RayJobReconciler:
        """Build the reconciler and register controller ``rayjob``: RayJobs, owned RayClusters,
        Services and submitter Jobs.

        Mirrors: rayjob_controller.go SetupWithManager."""
        rj = cls(mgr.client, recorder=event_recorder(mgr, "rayjob-controller"), clock=getattr(mgr, "clock", None),
                 batch_scheduler=opts.batch_scheduler, dashboard_client_factory=opts.dashboard_client_factory,
                 options=opts.rayjob, rng=opts.child_rng())
        (opts.controller(mgr, "rayjob").for_(scheme.RAY_JOB).owns(scheme.RAY_CLUSTER).owns(scheme.SERVICE).owns(scheme.JOB)
            .with_options(max_concurrent_reconciles=opts.reconcile_concurrency).complete(rj))
        return rj

    def _requeue(self) -> Result:
        return Result(requeue_after=self.options.requeue_seconds)

    # --- entry -----------------------------------------------------------------------------

    async def reconcile(self, req: Request) -> Result:
        try:
            job = await self.client.get(scheme.RAY_JOB, req.name, req.namespace)
        except Exception as e:
            if is_not_found(e):
                return Result()
            raise
        managed_by = job.get("spec", {}).get("managedBy")
        if managed_by and managed_by != c.ManagedBy.KUBERAY_OPERATOR:
            return Result()
        if job["metadata"].get("deletionTimestamp"):
            return await self._on_deletion(job)

        original = copy.deepcopy(job.get("status") or {})
        try:
            validate_rayjob(job)
        except ValidationError as e:
            self.recorder.event(job, "Warning", e.reason, f"{req.namespace}/{req.name}: {e}")
            st = _status(job)
            st["jobDeploymentStatus"] = JDS.VALIDATION_FAILED.value
            st["reason"] = REASON.VALIDATION_FAILED.value
            st["message"] = str(e)
            await self._update_status(original, job)
            return Result()

        state = str(_status(job).get("jobDeploymentStatus") or "")
        step = RAYJOB_STEPS.get(state)
        if step is None:
            return self._requeue()
        result = await step(self, job)
        if result is not None:
            return result
        self._check_backoff_limit(job)
        await self._update_status(original, job)
        return self._requeue()

    async def _update_status(self, original: Obj, job: Obj) -> None:
        new = _status(job)
        changed = (
            (original.get("jobStatus") or "") != (new.get("jobStatus") or "")
            or (original.get("jobDeploymentStatus") or "") != (new.get("jobDeploymentStatus") or "")
            or inconsistent_status(original.get("rayClusterStatus") or {}, new.get("rayClusterStatus") or {})
            or original.get("jobStatusCheckFailureStartTime") != new.get("jobStatusCheckFailureStartTime")
        )
        if not changed:
            return
        if c.is_job_deployment_terminal(new.get("jobDeploymentStatus", "")):
            new["endTime"] = rfc3339(self.clock.now())
        updated = await self.client.update_status(job)
        job["metadata"] = updated.get("metadata", job["metadata"])

    async def _on_deletion(self, job: Obj) -> Result:
        st = job.get("status") or {}
        if not c.is_job_terminal(st.get("jobStatus", "")) and st.get("jobId"):
            cluster: Obj = {}
            try:
                cluster = await self.client.get(scheme.RAY_CLUSTER, st.get("rayClusterName", ""),
                                                job["metadata"].get("namespace"))
            except Exception as e:
                log.info("RayJob %s/%s: cannot get RayCluster while stopping the job: %s",
                         job["metadata"].get("namespace"), job["metadata"]["name"], e)
            try:
                dash = await dashboard_client_for(self.client, self.dashboard_client_factory, cluster,
                                                  st.get("dashboardURL", ""))
                await dash.stop_job(st["jobId"])
            except NoDashboardAddress:
                log.info("RayJob %s/%s: Ray job %s not stopped: no dashboard address yet (the head Pod has no "
                         "IP), so it was never submitted", job["metadata"].get("namespace"),
                         job["metadata"]["name"], st.get("jobId"))
            except Exception as e:
                log.info("RayJob %s/%s: failed to stop Ray job %s: %s", job["metadata"].get("namespace"),
                         job["metadata"]["name"], st.get("jobId"), e)
        finalizers = job["metadata"].get("finalizers") or []
        if c.RAYJOB_STOP_JOB_FINALIZER in finalizers:
            job["metadata"]["finalizers"] = [f for f in finalizers if f != c.RAYJOB_STOP_JOB_FINALIZER]
            await self.client.update(job)
        return self._requeue()

    # --- checks (each returns True when it changed the state) --------------------------------

    def _now(self) -> float:
        return self.clock.now()

    def _suspend_if_needed(self, job: Obj) -> bool:
        st = _status(job)
        if job.get("spec", {}).get("suspend") and st.get("jobDeploymentStatus") in (JDS.RUNNING, JDS.INITIALIZING):
            st["jobDeploymentStatus"] = JDS.SUSPENDING.value
            return True
        return False

    def _active_deadline(self, job: Obj) -> bool:
        return self._deadline_passed(job, "activeDeadlineSeconds", REASON.DEADLINE_EXCEEDED)

    def _pre_running_deadline(self, job: Obj) -> bool:
        return self._deadline_passed(job, "preRunningDeadlineSeconds", REASON.PRE_RUNNING_DEADLINE_EXCEEDED)

    def _deadline_passed(self, job: Obj, field: str, reason: c.JobFailedReason) -> bool:
        """Fail the job with ``reason`` once ``spec.<field>`` seconds have passed since startTime."""
        dl = job.get("spec", {}).get(field)
        st = _status(job)
        start = _ts(st.get("startTime"))
        if dl is None or start is None or self._now() < start + int(dl):
            return False
        st["jobDeploymentStatus"] = JDS.FAILED.value
        st["reason"] = reason.value
        st["message"] = (f"The RayJob has passed the {field}. StartTime: {st.get('startTime')}. "
                         f"{field[0].upper()}{field[1:]}: {dl}")
        return True

    def _transition_grace_period(self, job: Obj) -> bool:
        st = _status(job)
        if not (c.is_job_terminal(st.get("jobStatus", "")) and st.get("jobDeploymentStatus") == JDS.RUNNING):
            return False
        end = _ts((st.get("rayJobInfo") or {}).get("endTime"))
        if end is None or self._now() < end + self.options.transition_grace_period:
            return False
        st["jobDeploymentStatus"] = (JDS.FAILED if st.get("jobStatus") == c.JobStatus.FAILED else JDS.COMPLETE).value
        st["reason"] = REASON.JOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_EXCEEDED.value
        st["message"] = ("JobDeploymentStatus does not transition to Complete or Failed within the grace period "
                         "after JobStatus reaches a terminal state.")
        return True

    def _status_check_timeout(self, job: Obj) -> bool:
        st = _status(job)
        start = _ts(st.get("jobStatusCheckFailureStartTime"))
        if start is None or self._now() < start + self.options.status_check_timeout:
            return False
        st["jobDeploymentStatus"] = JDS.FAILED.value
        st["reason"] = REASON.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED.value
        st["message"] = (f"Job status checks have been failing since {st['jobStatusCheckFailureStartTime']}; "
                         f"exceeded timeout of {int(self.options.status_check_timeout)}s")
        return True

    def _record_status_check_failure(self, job: Obj, err: Exception) -> bool:
        st = _status(job)
        if st.get("jobStatusCheckFailureStartTime"):
            return False
        log.info("RayJob %s: job status check failed: %s", job["metadata"]["name"], err)
        st["jobStatusCheckFailureStartTime"] = rfc3339(self._now())
        return True

    def _submitter_finished_timeout(self, job: Obj, finished_at: float | None) -> bool:
        if finished_at is None or self._now() < finished_at + self.options.submitter_finished_timeout:
            return False
        st = _status(job)
        st["jobStatus"] = c.JobStatus.FAILED.value
        st["jobDeploymentStatus"] = JDS.FAILED.value
        st["reason"] = REASON.JOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_EXCEEDED.value
        st["message"] = (f"The RayJob submitter finished at {rfc3339(finished_at)} but the ray job did not reach "
                         f"terminal state within {int(self.options.submitter_finished_timeout)}s")
        return True

    def _check_backoff_limit(self, job: Obj) -> None:
        st = _status(job)
        failed = int(st.get("failed") or 0)
        succeeded = int(st.get("succeeded") or 0)
        if st.get("jobDeploymentStatus") == JDS.FAILED:
            failed += 1
        if st.get("jobStatus") == c.JobStatus.SUCCEEDED and st.get("jobDeploymentStatus") == JDS.COMPLETE:
            succeeded += 1
        st["failed"] = failed
        st["succeeded"] = succeeded
        limit = job.get("spec", {}).get("backoffLimit")
        if st.get("jobDeploymentStatus") == JDS.FAILED and limit is not None and failed < int(limit) + 1:
            if st.get("reason") in (REASON.DEADLINE_EXCEEDED, REASON.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED):
                return
            st["jobDeploymentStatus"] = JDS.RETRYING.value

    # --- children --------------------------------------------------------------------------

    def _ns(self, job: Obj) -> str:
        return str(job["metadata"].get("namespace") or "default")

    async def _get_cluster(self, job: Obj) -> Obj | None:
        return await get_or_none(self.client, scheme.RAY_CLUSTER, _status(job).get("rayClusterName", ""), self._ns(job))

    async def _get_or_create_cluster(self, job: Obj) -> Obj:
        name = _status(job).get("rayClusterName", "")
        cluster = await self._get_cluster(job)
        if cluster is not None:
            return cluster
        if _uses_selector(job):
            self.recorder.event(job, "Warning", "RayClusterNotFound",
                                f"clusterSelector mode is enabled, but RayCluster {self._ns(job)}/{name} is not found")
            raise LookupError(f"clusterSelector mode is enabled, but RayCluster {self._ns(job)}/{name} is not found")
        cluster = jobb.build_cluster_for_rayjob(job, name, self.options.pod)
        if _mode(job) == MODE.K8S_JOB_MODE:
            self.batch_scheduler.add_metadata_to_child_resource(job, cluster, "")
        try:
            created = await self.client.create(cluster)
        except Exception as e:
            self.recorder.event(job, "Warning", "FailedToCreateRayCluster",
                                f"Failed to create RayCluster {self._ns(job)}/{name}: {e}")
            raise
        self.recorder.event(job, "Normal", "CreatedRayCluster", f"Created RayCluster {self._ns(job)}/{name}")
        return created

    async def _dashboard_url(self, cluster: Obj) -> str:
        ns = cluster["metadata"].get("namespace", "default")
        svc_name = assoc.head_service_name(cluster)
        svc = await self.client.get(scheme.SERVICE, svc_name, ns)
        for p in svc.get("spec", {}).get("ports") or []:
            if p.get("name") == c.DASHBOARD_PORT_NAME:
                return f"{svc_name}.{ns}.svc.{self.options.pod.cluster_domain}:{p['port']}"
        raise LookupError(f"head Service {ns}/{svc_name} has no port named {c.DASHBOARD_PORT_NAME}")

    async def _create_submitter_job_if_needed(self, job: Obj, cluster: Obj) -> None:
        ns = self._ns(job)
        try:
            await self.client.get(scheme.JOB, assoc.submitter_job_name(job), ns)
            return
        except Exception as e:
            if not is_not_found(e):
                raise
        tmpl = jobb.build_submitter_pod_template(job, cluster.get("spec", {}), self.options.pod,
                                                 cluster_name=cluster["metadata"]["name"])
        self.batch_scheduler.add_metadata_to_child_resource(job, tmpl, c.SUBMITTER_GROUP_NAME)
        try:
            await self.client.create(jobb.build_submitter_job(job, tmpl))
        except Exception as e:
            self.recorder.event(job, "Warning", "FailedToCreateRayJobSubmitter",
                                f"Failed to create new Kubernetes Job {ns}/{job['metadata']['name']}: {e}")
            raise
        self.recorder.event(job, "Normal", "CreatedRayJobSubmitter",
                            f"Created Kubernetes Job {ns}/{job['metadata']['name']}")

    async def _reconcile_services(self, job: Obj, cluster: Obj) -> None:
        """``<rayjob>-head-svc`` pointing at the job's cluster; events ``CreatedService`` /
        ``UpdatedService`` and their ``FailedTo…`` Warnings as upstream."""
        if _uses_selector(job):
            return
        want = svcb.build_owner_head_service(job, c.CRDType.RAY_JOB, cluster, self.options.service)
        await reconcile_cluster_service(self.client, self.recorder, job, want)

    async def _check_submitter(self, job: Obj) -> tuple[bool, float | None]:
        """(state changed?, submitter finished time) for K8sJobMode / SidecarMode."""
        st = _status(job)
        ns = self._ns(job)
        if _mode(job) == MODE.SIDECAR_MODE:
            cluster = await self._get_or_create_cluster(job)
            heads = (await self.client.list(scheme.POD, ns, label_selector=assoc.selector_string(
                assoc.head_pods_selector(cluster["metadata"]["name"])))).items
            if not heads:
                st["jobDeploymentStatus"] = JDS.FAILED.value
                st["reason"] = REASON.APP_FAILED.value
                st["message"] = "Ray head pod not found."
                return True, None
            finished = None
            for cs in (heads[0].get("status") or {}).get("containerStatuses") or []:
                if cs.get("name") != c.SUBMITTER_CONTAINER_NAME:
                    continue
                term = (cs.get("state") or {}).get("terminated")
                if term:
                    finished = _ts(term.get("finishedAt"))
                    if int(term.get("exitCode") or 0) != 0:
                        st["jobDeploymentStatus"] = JDS.FAILED.value
                        if st.get("jobStatus") == c.JobStatus.FAILED:
                            st["reason"] = REASON.APP_FAILED.value
                        else:
                            st["reason"] = REASON.SUBMISSION_FAILED.value
                            st["message"] = (f"Ray head pod container {cs['name']} terminated with exit code "
                                             f"{term.get('exitCode')}: {term.get('reason', '')}")
                        return True, finished
                break
            return False, finished
        k8s_job = await self.client.get(scheme.JOB, assoc.submitter_job_name(job), ns)
        changed = False
        finished = None
        for cond in (k8s_job.get("status") or {}).get("conditions") or []:
            if cond.get("status") != "True":
                continue
            if cond.get("type") == "Failed":
                changed = True
                st["jobDeploymentStatus"] = JDS.FAILED.value
                if st.get("jobStatus") == c.JobStatus.FAILED:
                    st["reason"] = REASON.APP_FAILED.value
                else:
                    st["reason"] = REASON.SUBMISSION_FAILED.value
                    st["message"] = (f"Job submission has failed. Reason: {cond.get('reason', '')}. "
                                     f"Message: {cond.get('message', '')}")
            if cond.get("type") in ("Complete", "Failed") and finished is None:
                finished = _ts(cond.get("lastTransitionTime"))
        return changed, finished

    async def _sidecar_finished_early(self, job: Obj, cluster: Obj) -> bool:
        """SidecarMode in Initializing: when the submitter container already terminated (a short
        job can end before every Pod is ready, and a terminated container keeps the head Pod
        un-Ready, so the cluster would never be ``ready``), move on: exit 0 → Running (the Running
        step reads the result), non-zero → Failed/SubmissionFailed. Returns True when it moved."""
        heads = (await self.client.list(scheme.POD, self._ns(job), label_selector=assoc.selector_string(
            assoc.head_pods_selector(cluster["metadata"]["name"])))).items
        for cs in ((heads[0].get("status") or {}).get("containerStatuses") or []) if heads else []:
            if cs.get("name") != c.SUBMITTER_CONTAINER_NAME:
                continue
            term = (cs.get("state") or {}).get("terminated")
            if not term:
                return False
            st = _status(job)
            if int(term.get("exitCode") or 0) != 0:
                st["jobDeploymentStatus"] = JDS.FAILED.value
                st["reason"] = REASON.SUBMISSION_FAILED.value
                st["message"] = (f"Ray head pod container {cs['name']} terminated with exit code "
                                 f"{term.get('exitCode')}: {term.get('reason', '')}")
                return True
            st["dashboardURL"] = await self._dashboard_url(cluster)
            st["rayClusterStatus"] = copy.deepcopy(cluster.get("status") or {})
            st["jobDeploymentStatus"] = JDS.RUNNING.value
            return True
        return False

    async def _delete_cluster(self, job: Obj) -> bool:
        """Delete the RayCluster (not in clusterSelector mode); True once it is gone."""
        if _uses_selector(job):
            return True
        cluster = await self._get_cluster(job)
        if cluster is None:
            return True
        if not cluster["metadata"].get("deletionTimestamp"):
            try:
                await self.client.delete(scheme.RAY_CLUSTER, cluster["metadata"]["name"], self._ns(job))
            except Exception as e:
                if is_not_found(e):
                    return True
                self.recorder.event(job, "Warning", "FailedToDeleteRayCluster",
                                    f"Failed to delete cluster {self._ns(job)}/{cluster['metadata']['name']}: {e}")
                raise
            self.recorder.event(job, "Normal", "DeletedRayCluster",
                                f"Deleted cluster {self._ns(job)}/{cluster['metadata']['name']}")
        return False

    async def _delete_submitter_job(self, job: Obj) -> bool:
        if _mode(job) != MODE.K8S_JOB_MODE:
            return True
        ns = self._ns(job)
        try:
            k8s_job = await self.client.get(scheme.JOB, assoc.submitter_job_name(job), ns)
        except Exception as e:
            if is_not_found(e):
                return True
            raise
        if not k8s_job["metadata"].get("deletionTimestamp"):
            jname = k8s_job["metadata"]["name"]
            try:
                await self.client.delete(scheme.JOB, jname, ns, propagation_policy="Background")
            except Exception as e:
                if is_not_found(e):
                    return True
                self.recorder.event(job, "Warning", "FailedToDeleteRayJobSubmitter",
                                    f"Failed to delete submitter K8s Job {ns}/{jname}: {e}")
                raise
            self.recorder.event(job, "Normal", "DeletedRayJobSubmitter", f"Deleted submitter K8s Job {ns}/{jname}")
        return False

    async def _cleanup_batch_scheduler(self, job: Obj) -> None:
        try:
            if await self.batch_scheduler.cleanup_on_completion(job):
                self.recorder.event(job, "Normal", "UpdatedPodGroup",
                                    f"Cleaned up batch scheduler resources for RayJob {self._ns(job)}/"
                                    f"{job['metadata']['name']}")
        except Exception as e:
            self.recorder.event(job, "Warning", "FailedToUpdatePodGroup",
                                f"Failed to cleanup batch scheduler resources: {e}")
            raise

    # --- terminal-state deletion --------------------------------------------------------------

    async def _suspend_worker_groups(self, job: Obj) -> None:
        cluster = await self._get_cluster(job)
        if cluster is None:
            return
        for g in cluster.get("spec", {}).get("workerGroupSpecs") or []:
            g["suspend"] = True
        await self.client.update(cluster)

    async def _execute_policy(self, job: Obj, policy: str) -> None:
        if policy == c.DeletionPolicyType.DELETE_CLUSTER:
            await self._delete_cluster(job)
        elif policy == c.DeletionPolicyType.DELETE_WORKERS:
            await self._suspend_worker_groups(job)
        elif policy == c.DeletionPolicyType.DELETE_SELF:
            await self.client.delete(scheme.RAY_JOB, job["metadata"]["name"], self._ns(job))

    async def _is_policy_done(self, job: Obj, policy: str) -> bool:
        if policy == c.DeletionPolicyType.DELETE_NONE:
            return True
        if policy == c.DeletionPolicyType.DELETE_SELF:
            return False
        cluster = await self._get_cluster(job)
        if cluster is None or cluster["metadata"].get("deletionTimestamp"):
            return True
        if policy == c.DeletionPolicyType.DELETE_WORKERS:
            return all(g.get("suspend") for g in cluster.get("spec", {}).get("workerGroupSpecs") or [])
        return False

    def _requeue_at(self, when: float) -> Result:
        return Result(requeue_after=max(0.0, when - self._now()) + c.DELETION_RULE_REQUEUE_SLACK_SECONDS)

    async def _handle_deletion_rules(self, job: Obj) -> Result:
        st = _status(job)
        end = _ts(st.get("endTime")) or self._now()
        impact = {c.DeletionPolicyType.DELETE_SELF: 4, c.DeletionPolicyType.DELETE_CLUSTER: 3,
                  c.DeletionPolicyType.DELETE_WORKERS: 2, c.DeletionPolicyType.DELETE_NONE: 1}
        overdue: list[Obj] = []
        next_at: float | None = None
        for rule in job["spec"]["deletionStrategy"]["deletionRules"]:
            cond = rule.get("condition") or {}
            if cond.get("jobStatus") is not None:
                matched = cond["jobStatus"] == st.get("jobStatus", "")
            else:
                matched = cond.get("jobDeploymentStatus") == st.get("jobDeploymentStatus")
            if not matched:
                continue
            at = end + int(cond.get("ttlSeconds") or 0)
            if self._now() < at:
                next_at = at if next_at is None else min(next_at, at)
                continue
            if await self._is_policy_done(job, rule["policy"]):
                continue
            overdue.append(rule)
        if overdue:
            best = overdue[0]
            for r in overdue[1:]:
                if impact.get(r["policy"], 0) > impact.get(best["policy"], 0):
                    best = r
            await self._execute_policy(job, best["policy"])
        if next_at is not None:
            return self._requeue_at(next_at)
        return Result()

    async def _handle_legacy_policy(self, job: Obj) -> Result:
        st = _status(job)
        strategy = job["spec"]["deletionStrategy"]
        if st.get("jobStatus") == c.JobStatus.SUCCEEDED:
            policy = (strategy.get("onSuccess") or {}).get("policy")
        elif st.get("jobStatus") == c.JobStatus.FAILED:
            policy = (strategy.get("onFailure") or {}).get("policy")
        else:
            return Result()
        if policy == c.DeletionPolicyType.DELETE_NONE or not policy:
            return Result()
        at = (_ts(st.get("endTime")) or self._now()) + int(job["spec"].get("ttlSecondsAfterFinished") or 0)
        if at > self._now():
            return self._requeue_at(at)
        await self._execute_policy(job, policy)
        return Result()

    async def _handle_shutdown_after_finish(self, job: Obj) -> Result:
        st = _status(job)
        at = (_ts(st.get("endTime")) or self._now()) + int(job["spec"].get("ttlSecondsAfterFinished") or 0)
        if at > self._now():
            return self._requeue_at(at)
        if self.options.delete_rayjob_after_job_finishes:
            await self.client.delete(scheme.RAY_JOB, job["metadata"]["name"], self._ns(job))
        else:
            await self._delete_cluster(job)
        return Result()


# --- the steps ------------------------------------------------------------------------------------

async def on_new(r: RayJobReconciler, job: Obj) -> Result | None:
    """New (``""``): add the finalizer; persist jobId, rayClusterName, jobStatus ``""`` and
    startTime. Exit: Initializing."""
    fin = job["metadata"].setdefault("finalizers", [])
    if c.RAYJOB_STOP_JOB_FINALIZER not in fin:
        fin.append(c.RAYJOB_STOP_JOB_FINALIZER)
        status = job.get("status")
        updated = await r.client.update(job)
        job["metadata"] = updated["metadata"]
        if status is not None:
            job["status"] = status
    st = _status(job)
    spec = job.get("spec", {})
    if not st.get("jobId") or not st.get("rayClusterName") or not st.get("jobStatus"):
        if _mode(job) != MODE.INTERACTIVE_MODE and not st.get("jobId"):
            st["jobId"] = spec.get("jobId") or assoc.rayjob_job_id(job["metadata"]["name"], r.rng)
        if not st.get("rayClusterName"):
            st["rayClusterName"] = (spec.get("clusterSelector") or {}).get(c.RAY_CLUSTER_LABEL_KEY) or \
                assoc.rayjob_cluster_name(job["metadata"]["name"], r.rng)
        st["jobStatus"] = st.get("jobStatus") or c.JobStatus.NEW.value
        st["jobDeploymentStatus"] = JDS.INITIALIZING.value
        st["startTime"] = rfc3339(r.clock.now())
    return None


async def on_initializing(r: RayJobReconciler, job: Obj) -> Result | None:
    """Initializing: suspend → Suspending; deadlines → Failed; gang; get-or-create the cluster;
    wait for it to be ready (SidecarMode: or for the submitter container to end); dashboard URL. Exits: Waiting (InteractiveMode), Running (after the
    submitter Job exists in K8sJobMode), Suspending, Failed."""
    if r._suspend_if_needed(job) or r._active_deadline(job) or r._pre_running_deadline(job):
        return None
    await r.batch_scheduler.do_batch_scheduling_on_submission(job)
    cluster = await r._get_or_create_cluster(job)
    st = _status(job)
    if not st.get("dashboardURL"):
        if (cluster.get("status") or {}).get("state") != c.ClusterState.READY:
            if _mode(job) == MODE.SIDECAR_MODE and await r._sidecar_finished_early(job, cluster):
                return None
            st["rayClusterStatus"] = copy.deepcopy(cluster.get("status") or {})
            return None
        st["dashboardURL"] = await r._dashboard_url(cluster)
    if _mode(job) == MODE.INTERACTIVE_MODE:
        st["jobDeploymentStatus"] = JDS.WAITING.value
        return None
    if _mode(job) == MODE.K8S_JOB_MODE:
        await r._create_submitter_job_if_needed(job, cluster)
    st["jobDeploymentStatus"] = JDS.RUNNING.value
    return None


async def on_waiting(r: RayJobReconciler, job: Obj) -> Result | None:
    """Waiting (InteractiveMode): pre-running deadline → Failed; no ``spec.jobId`` → requeue;
    else copy it. Exit: Running."""
    if r._pre_running_deadline(job):
        return None
    job_id = job.get("spec", {}).get("jobId")
    if not job_id:
        return r._requeue()
    st = _status(job)
    st["jobId"] = job_id
    st["jobDeploymentStatus"] = JDS.RUNNING.value
    return None


async def on_running(r: RayJobReconciler, job: Obj) -> Result | None:
    """Running: suspend, deadline, transition grace, status-check timeout; cluster + head
    Service; submitter check (30 s grace); dashboard status, HTTPMode submission. Exits:
    Complete, Failed (AppFailed, SubmissionFailed, DeadlineExceeded,
    JobDeploymentStatusTransitionGracePeriodExceeded, JobStatusCheckTimeoutExceeded), Suspending;
    Retrying via backoff accounting."""
    if r._suspend_if_needed(job) or r._active_deadline(job) or r._transition_grace_period(job) or \
            r._status_check_timeout(job):
        return None
    cluster = await r._get_or_create_cluster(job)
    await r._reconcile_services(job, cluster)
    st = _status(job)
    finished_at: float | None = None
    if _has_submitter(job):
        changed, finished_at = await r._check_submitter(job)
        if r._submitter_finished_timeout(job, finished_at) or changed:
            return None
    dash = await dashboard_client_for(r.client, r.dashboard_client_factory, cluster, st.get("dashboardURL", ""))
    try:
        info = await dash.get_job_info(st.get("jobId", ""))
    except DashboardError as e:
        if r._record_status_check_failure(job, e):
            return None
        return r._requeue()
    if info is None:
        if _mode(job) == MODE.HTTP_MODE:
            try:
                await dash.submit_job(job)
            except DashboardError as e:
                if r._record_status_check_failure(job, e):
                    return None
                return r._requeue()
            if st.pop("jobStatusCheckFailureStartTime", None) is not None:
                return None
            return r._requeue()
        if finished_at is not None:
            st["jobDeploymentStatus"] = JDS.FAILED.value
            st["reason"] = REASON.APP_FAILED.value
            st["message"] = "Submitter completed but Ray job not found in RayCluster."
            return None
        return r._requeue()
    st.pop("jobStatusCheckFailureStartTime", None)
    terminal = c.is_job_terminal(info.job_status)
    if _has_submitter(job):
        terminal = terminal and finished_at is not None
    deployment = JDS.RUNNING.value
    reason = ""
    if terminal:
        deployment = JDS.COMPLETE.value
        if info.job_status == c.JobStatus.FAILED:
            deployment = JDS.FAILED.value
            reason = REASON.APP_FAILED.value
    st["rayClusterStatus"] = copy.deepcopy(cluster.get("status") or {})
    st["jobStatus"] = info.job_status
    st["jobDeploymentStatus"] = deployment
    st["reason"] = reason
    st["message"] = info.message
    info_st = st.setdefault("rayJobInfo", {})
    if info.start_time:
        info_st["startTime"] = rfc3339(info.start_time / 1000)
    if info.end_time:
        info_st["endTime"] = rfc3339(info.end_time / 1000)
    return None


async def on_suspending_or_retrying(r: RayJobReconciler, job: Obj) -> Result | None:
    """Suspending / Retrying: delete the cluster and the submitter Job and wait until both are
    gone; shrink the PodGroup; reset the per-attempt status. Exits: Suspended, New."""
    cluster_gone = await r._delete_cluster(job)
    job_gone = await r._delete_submitter_job(job)
    if not cluster_gone or not job_gone:
        return r._requeue()
    await r._cleanup_batch_scheduler(job)
    st = _status(job)
    for k in ("rayClusterStatus", "rayClusterName", "dashboardURL", "jobId", "message", "reason", "rayJobInfo",
              "jobStatusCheckFailureStartTime"):
        st.pop(k, None)
    st["jobStatus"] = c.JobStatus.NEW.value
    st["jobDeploymentStatus"] = (JDS.SUSPENDED if st.get("jobDeploymentStatus") == JDS.SUSPENDING else JDS.NEW).value
    return None


async def on_suspended(r: RayJobReconciler, job: Obj) -> Result | None:
    """Suspended: ``spec.suspend`` false → New; else no requeue (wake on spec change)."""
    if not job.get("spec", {}).get("suspend"):
        st = _status(job)
        st["jobStatus"] = c.JobStatus.NEW.value
        st["jobDeploymentStatus"] = JDS.NEW.value
        return None
    return Result()


async def on_terminal(r: RayJobReconciler, job: Obj) -> Result | None:
    """Complete / Failed: batch-scheduler cleanup, then deletion rules, legacy policies or
    shutdownAfterJobFinishes (TTL timers requeue at the deadline + 2 s). No exits."""
    try:
        if _uses_selector(job):
            return Result()
        spec = job.get("spec", {})
        if r.options.deletion_policy_gate and spec.get("deletionStrategy"):
            if spec["deletionStrategy"].get("deletionRules") is not None:
                return await r._handle_deletion_rules(job)
            return await r._handle_legacy_policy(job)
        if spec.get("shutdownAfterJobFinishes"):
            return await r._handle_shutdown_after_finish(job)
        return Result()
    finally:
        try:
            await r._cleanup_batch_scheduler(job)
        except Exception as e:
            log.info("RayJob %s: batch scheduler cleanup failed: %s", job["metadata"]["name"], e)


async def on_validation_failed(r: RayJobReconciler, job: Obj) -> Result | None:
    """ValidationFailed: nothing happens until the spec changes (then validation runs again and a
    valid spec stays here, as upstream)."""
    return Result()


RAYJOB_STEPS: dict[str, StepFn] = {
    JDS.NEW: on_new,
    JDS.INITIALIZING: on_initializing,
    JDS.WAITING: on_waiting,
    JDS.RUNNING: on_running,
    JDS.SUSPENDING: on_suspending_or_retrying,
    JDS.RETRYING: on_suspending_or_retrying,
    JDS.SUSPENDED: on_suspended,
    JDS.COMPLETE: on_terminal,
    JDS.FAILED: on_terminal,
    JDS.VALIDATION_FAILED: on_validation_failed,
}
"""One step per ``JobDeploymentStatus`` (keys are the wire strings)."""
