"""JobFlow controller: Volcano Jobs from JobTemplates, in dependency order.

For each ``spec.flows[]`` entry the Job ``<jobflow>-<flow.name>`` is created from the JobTemplate
named ``flow.name`` (same namespace) once every ``dependsOn.targets`` Job
``<jobflow>-<target>`` exists and is ``Completed`` (no targets: at once). The Job carries the
label and annotation ``volcano.sh/createdByJobTemplate=<ns>.<template>`` and
``volcano.sh/createdByJobFlow=<ns>.<jobflow>`` and is controlled by the JobFlow (event
``Created``: "create a job named <job>!").

Status: the Jobs' names by phase (``pendingJobs``, ``runningJobs``, ``failedJobs``,
``completedJobs``, ``terminatedJobs``, ``unKnowJobs``), ``jobStatusList`` and ``conditions`` per
Job, and ``state.phase``: Pending -> Running once a Job runs or completed and none failed;
Running -> Succeed when every flow's Job is Completed; -> Failed when a Job Failed or was
Terminated. With ``jobRetainPolicy: delete`` a Succeeded flow's Jobs are deleted.

A flow whose JobTemplate does not exist stops the pass there (no later flow's Job, no status
write) and fails it: the JobFlow is retried with the controller's backoff, and once it has failed
again after ``MAX_REQUEUE_NUM`` retries (vc-controller-manager's ``--max-requeue-num``, 15) the
JobFlow gets a Warning Event, reason ``SyncJobFlow``, message ``SyncJobFlow JobFlow failed for sync
jobflow <name> failed for jobtemplate.flow.volcano.sh "<template>" not found, event is OutOfSync,
action is SyncJobFlow``, and the count starts over. A flow graph that is not a DAG (a cycle, a
target that names no flow) is no error to the controller: such a JobFlow waits, Pending, with no
Event, as upstream's (only the ``validatejobflow.volcano.sh`` webhook refuses it).

Mirrors: volcano pkg/controllers/jobflow (jobflow_controller_action.go, state/*.go;
jobflow_controller.go handleJobFlow and handleJobFlowErr for the failure path).
Deviates: like upstream at the studied commit, ``dependsOn.probe`` and ``patch`` are accepted and
not used; ``runningHistories`` are not kept.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from pumice.api import Obj, scheme
from pumice.api.meta import owner_reference
from pumice.api.volcano.constants import BATCH_API_VERSION, CREATED_BY_JOB_FLOW, CREATED_BY_JOB_TEMPLATE
from pumice.client.base import KubeClient, is_already_exists, is_not_found
from pumice.runtime.reconcile import Request, Result

#: vc-controller-manager's default ``--max-requeue-num``: retries of a failing JobFlow before its Event.
MAX_REQUEUE_NUM = 15

#: upstream's FlowRequest of every JobFlow sync (SyncJobFlowAction, OutOfSyncEvent).
SYNC_ACTION, SYNC_EVENT = "SyncJobFlow", "OutOfSync"

_BUCKETS = {"Pending": "pendingJobs", "Running": "runningJobs", "Completing": None, "Completed": "completedJobs",
            "Terminating": None, "Terminated": "terminatedJobs", "Failed": "failedJobs"}


def job_name(flow_name: str, template: str) -> str:
    return f"{flow_name}-{template}"


def build_job(jobflow: Obj, template: Obj) -> Obj:
    """The Job of one flow entry (pure)."""
    ns = jobflow["metadata"].get("namespace", "default")
    marks = {CREATED_BY_JOB_TEMPLATE: f"{ns}.{template['metadata']['name']}",
             CREATED_BY_JOB_FLOW: f"{ns}.{jobflow['metadata']['name']}"}
    return {"apiVersion": BATCH_API_VERSION, "kind": "Job",
            "metadata": {"name": job_name(jobflow["metadata"]["name"], template["metadata"]["name"]), "namespace": ns,
                         "labels": dict(marks), "annotations": dict(marks), "ownerReferences": [owner_reference(jobflow)]},
            "spec": copy.deepcopy(template.get("spec") or {})}


def _phase(job: Obj) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def flow_status(jobflow: Obj, jobs: list[Obj]) -> Obj:
    """The status the Jobs give (pure); ``state.phase`` by upstream's state machine."""
    old = jobflow.get("status") or {}
    st: Obj = {b: [] for b in _BUCKETS.values() if b}
    st["unKnowJobs"] = []
    st["conditions"] = {}
    st["jobStatusList"] = []
    for j in sorted(jobs, key=lambda o: o["metadata"]["name"]):
        ph, name = _phase(j), j["metadata"]["name"]
        bucket = _BUCKETS.get(ph, "unKnowJobs") if ph in _BUCKETS else "unKnowJobs"
        if bucket:
            st[bucket].append(name)
        st["conditions"][name] = {"phase": ph, "createTime": j["metadata"].get("creationTimestamp")}
        st["jobStatusList"].append({"name": name, "state": ph, "startTimestamp": j["metadata"].get("creationTimestamp"),
                                    "restartCount": int((j.get("status") or {}).get("retryCount") or 0)})
    phase = ((old.get("state") or {}).get("phase")) or "Pending"
    total = len((jobflow.get("spec") or {}).get("flows") or [])
    if phase == "Pending":
        if (st["runningJobs"] or st["completedJobs"]) and not st["failedJobs"]:
            phase = "Running"
        elif st["failedJobs"] or st["terminatedJobs"]:
            phase = "Failed"
    if phase == "Running":
        if len(st["completedJobs"]) == total:
            phase = "Succeed"
        elif st["failedJobs"] or st["terminatedJobs"]:
            phase = "Failed"
    st["state"] = {"phase": phase}
    return st


class _SyncError(Exception):
    """A pass that failed as upstream's syncJobFlow does (the message is upstream's error text)."""


class JobFlowReconciler:
    """Reconciles one JobFlow (see the module docstring)."""

    def __init__(self, client: KubeClient, jobflows: Any, templates: Any, jobs: Any,
                 event: Callable[[Obj, str, str, str], Any]) -> None:
        self.client = client
        self.jobflows = jobflows
        self.templates = templates
        self.jobs = jobs
        self.event = event
        self._failures: dict[tuple[str, str], int] = {}  # failed passes in a row (upstream: NumRequeues)

    def _owned(self, jf: Obj) -> list[Obj]:
        uid = jf["metadata"].get("uid")
        return [j for j in self.jobs.list(jf["metadata"].get("namespace"))
                if any(r.get("controller") and r.get("uid") == uid for r in j["metadata"].get("ownerReferences") or [])]

    async def reconcile(self, req: Request) -> Result:
        """One sync of the JobFlow.

        Raises:
            LookupError: a flow's JobTemplate does not exist (retried with backoff; the
                ``MAX_REQUEUE_NUM``-th retry that fails records the Event instead, see the module doc).
        """
        key = (req.namespace, req.name)
        try:
            result = await self._sync(req)
        except _SyncError as e:
            failed = self._failures.pop(key, 0)
            jf = self.jobflows.get(req.namespace, req.name)
            if jf is None:
                return Result()
            if failed < MAX_REQUEUE_NUM:
                self._failures[key] = failed + 1
                raise LookupError(f"JobFlow {req.namespace}/{req.name}: {e}") from None
            self.event(jf, "Warning", SYNC_ACTION,
                       f"{SYNC_ACTION} JobFlow failed for sync jobflow {req.name} failed for {e}, "
                       f"event is {SYNC_EVENT}, action is {SYNC_ACTION}")
            return Result()
        self._failures.pop(key, None)
        return result

    async def _sync(self, req: Request) -> Result:
        jf = self.jobflows.get(req.namespace, req.name)
        if jf is None or jf["metadata"].get("deletionTimestamp"):
            return Result()
        spec = jf.get("spec") or {}
        phase = ((jf.get("status") or {}).get("state") or {}).get("phase")
        if spec.get("jobRetainPolicy") == "delete" and phase == "Succeed":
            for j in self._owned(jf):
                try:
                    await self.client.delete(scheme.VCJOB, j["metadata"]["name"], req.namespace)
                except Exception as e:
                    if not is_not_found(e):
                        raise
            return Result()
        for flow in spec.get("flows") or []:
            name = job_name(req.name, flow["name"])
            if self.jobs.get(req.namespace, name) is not None:
                continue
            targets = ((flow.get("dependsOn") or {}).get("targets")) or []
            if any(_phase(self.jobs.get(req.namespace, job_name(req.name, t)) or {}) != "Completed" for t in targets):
                continue
            template = self.templates.get(req.namespace, flow["name"])
            if template is None:  # upstream's deployJob returns the lister's NotFound: no status write
                raise _SyncError(f'jobtemplate.flow.volcano.sh "{flow["name"]}" not found')
            try:
                await self.client.create(build_job(jf, template))
            except Exception as e:
                if not is_already_exists(e):
                    raise
            else:
                self.event(jf, "Normal", "Created", f"create a job named {name}!")
        status = flow_status(jf, self._owned(jf))
        if status != (jf.get("status") or {}):
            new = copy.deepcopy(jf)
            new["status"] = status
            await self.client.update_status(new)
        return Result()
