"""Volcano controllers over the FakeClient: queue state and counts, podgroups for plain Pods,
the vcjob lifecycle (PodGroup first, Pods after Inqueue, phases, policies, plugins)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pumice.api import scheme
from pumice.controllers.volcano import admission_plugins
from pumice.controllers.volcano.admission.jobs import mutate_job
from pumice.controllers.volcano.job import builders
from pumice.controllers.volcano.job.state import JOB_STEPS, StateAction, Target
from pumice.controllers.volcano.keys import Action, JobPhase, QueueState
from pumice.controllers.volcano.podgroup import build_podgroup_for_pod
from pumice.controllers.volcano.queue import next_state
from pumice.runtime.metrics import RECONCILE_ERRORS
from pumice.testing.cluster import local_cluster
from pumice.testing.fake_client import FakeClient
from pumice.testing.volcano_controllers import eventually
from pumice.testing.volcano_controllers import running_controllers as running


def test_every_job_phase_has_a_step() -> None:
    assert set(JOB_STEPS) == set(JobPhase)


class _Ops:
    """A JobOps that records which primitive a step called and applies its update to ``status``."""

    def __init__(self, job: dict, status: dict) -> None:
        self.job, self.status, self.called = job, status, ""

    async def sync_job(self, update: Any) -> None:
        self.called = "sync_job"
        update(self.status)

    async def kill_job(self, retain: Any, update: Any) -> None:
        self.called = "kill_job"
        update(self.status)

    async def kill_target(self, target: Any, update: Any) -> None:
        self.called = "kill_target"
        update(self.status)


@pytest.mark.parametrize(("action", "target", "primitive"), [
    (Action.SYNC_JOB, None, "sync_job"),
    (Action.RESTART_POD, Target("pod", "t", "j1-t-0"), "kill_target"),
    (Action.RESTART_JOB, None, "kill_job"),
    (Action.ABORT_JOB, None, "kill_job"),
])
@pytest.mark.parametrize(("status", "phase"), [
    ({"retryCount": 1, "minAvailable": 6, "terminating": 4}, JobPhase.RESTARTING),
    ({"retryCount": 1, "minAvailable": 6, "terminating": 0}, JobPhase.PENDING),
    ({"retryCount": 3, "minAvailable": 6, "terminating": 0}, JobPhase.FAILED),
])
async def test_restarting_runs_upstreams_primitive_and_rule(action: Action, target: Target | None, primitive: str,
                                                           status: dict, phase: JobPhase) -> None:
    """Upstream master's restartingState.Execute (volcano pkg/controllers/job/state/restarting.go,
    since 68da9635a, v1.11): SyncJob syncs (and syncJob recounts nothing while the new PodGroup is
    Pending, so a count left by the kill stays until the scheduler enqueues it: trial-6 F-2, and
    upstream PR #5342), targeted restarts kill their target, anything else kills the job; one rule
    for all: Failed at maxRetry, else Pending once replicas - terminating >= minAvailable."""
    job = vcjob(replicas=6, min_available=6, maxRetry=3)
    ops = _Ops(job, {**status, "state": {"phase": str(JobPhase.RESTARTING)}})
    await JOB_STEPS[JobPhase.RESTARTING](ops, StateAction(action, target))  # type: ignore[arg-type]
    assert (ops.called, ops.status["state"]["phase"]) == (primitive, phase)


@pytest.mark.parametrize(("state", "action", "has_pgs", "want"), [
    ("", Action.SYNC_QUEUE, False, QueueState.OPEN),
    (QueueState.OPEN, Action.CLOSE_QUEUE, True, QueueState.CLOSING),
    (QueueState.OPEN, Action.CLOSE_QUEUE, False, QueueState.CLOSED),
    (QueueState.CLOSING, Action.SYNC_QUEUE, True, QueueState.CLOSING),
    (QueueState.CLOSING, Action.SYNC_QUEUE, False, QueueState.CLOSED),
    (QueueState.CLOSED, Action.OPEN_QUEUE, False, QueueState.OPEN),
    (QueueState.CLOSED, Action.SYNC_QUEUE, True, QueueState.CLOSED),
    (QueueState.UNKNOWN, Action.SYNC_QUEUE, True, QueueState.UNKNOWN),
])
def test_queue_state_table(state: str, action: Action, has_pgs: bool, want: str) -> None:
    assert next_state(state, action, has_pgs) == want


def vcjob(name: str = "j1", *, replicas: int = 3, min_available: int | None = None, queue: str = "default",
          policies: list | None = None, plugins: dict | None = None, cpu: str = "1", **spec: Any) -> dict:
    s: dict = {"queue": queue, "tasks": [{"name": "t", "replicas": replicas, "template": {"spec": {
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}], **spec}
    if min_available is not None:
        s["minAvailable"] = min_available
    if policies:
        s["policies"] = policies
    if plugins:
        s["plugins"] = plugins
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": name, "namespace": "default", "uid": "u1"}, "spec": s}
    mutate_job(job)
    return job


def test_podgroup_min_resources_cover_min_available_pods() -> None:
    job = vcjob(replicas=6, min_available=3)
    pg = builders.build_podgroup(job)
    assert pg["metadata"]["name"] == "j1-u1"
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minTaskMember"] == {"t": 6}
    assert pg["spec"]["minResources"] == {"cpu": "3"}


def test_task_pod_carries_upstream_labels_and_annotations() -> None:
    job = vcjob()
    job["status"] = {"version": 2, "retryCount": 1}
    pod = builders.build_pod(job, job["spec"]["tasks"][0], 1)
    assert pod["metadata"]["name"] == "j1-t-1"
    ann = pod["metadata"]["annotations"]
    assert ann["scheduling.k8s.io/group-name"] == "j1-u1"
    assert ann["volcano.sh/task-spec"] == "t"
    assert ann["volcano.sh/task-index"] == "1"
    assert ann["volcano.sh/job-version"] == "2"
    assert ann["volcano.sh/job-retry-count"] == "1"
    assert pod["metadata"]["labels"]["volcano.sh/job-name"] == "j1"
    assert pod["spec"]["schedulerName"] == "volcano"


async def create_job(client: FakeClient, job: dict) -> dict:
    job = copy.deepcopy(job)
    job["metadata"].pop("uid", None)
    return await client.create(job)


async def pods_of(client: FakeClient) -> list[dict]:
    return sorted((await client.list(scheme.POD, "default")).items, key=lambda p: p["metadata"]["name"])


async def set_phase(client: FakeClient, kind: Any, name: str, phase: str, ns: str | None = "default") -> None:
    sub = "status" if "status" in kind.subresources else None
    await client.patch(kind, name, {"status": {"phase": phase}}, ns, subresource=sub)


async def job_phase(client: FakeClient, name: str = "j1") -> str:
    j = await client.get(scheme.VCJOB, name, "default")
    return str(((j.get("status") or {}).get("state") or {}).get("phase") or "")


async def test_default_queue_is_created_open(client: FakeClient) -> None:
    async with running(client):
        q = await eventually(lambda: _get(client, scheme.QUEUE, "default", None))
        assert {k: v for k, v in q["spec"].items() if k != "parent"} == {"weight": 1, "reclaimable": True}
        await eventually(lambda: _state(client, "default", QueueState.OPEN))


async def _parent(client: FakeClient, name: str, parent: str) -> bool:
    q = await _get(client, scheme.QUEUE, name, None)
    return bool(q and (q.get("spec") or {}).get("parent") == parent)


async def test_a_queue_without_a_parent_gets_root_as_upstream_v1_11_does(client: FakeClient) -> None:
    """trial 19 F-7: volcano's queue controller (updateQueueParent, v1.11+) sets ``spec.parent: root``
    on every queue but ``root`` that names none; a parent given is kept."""
    async with running(client):
        for name, parent in (("eng", None), ("dev", "eng")):
            spec: dict = {"weight": 1} if parent is None else {"weight": 1, "parent": parent}
            await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                 "metadata": {"name": name}, "spec": spec})
        await eventually(lambda: _parent(client, "eng", "root"))
        await eventually(lambda: _parent(client, "default", "root"))
        await eventually(lambda: _state(client, "dev", QueueState.OPEN))
        assert (await client.get(scheme.QUEUE, "dev"))["spec"]["parent"] == "eng"
        await eventually(lambda: _state(client, "root", QueueState.OPEN))
        assert "parent" not in (await client.get(scheme.QUEUE, "root"))["spec"]


async def _get(client: FakeClient, kind: Any, name: str, ns: str | None = "default") -> dict | None:
    try:
        return await client.get(kind, name, ns)
    except Exception:
        return None


async def _state(client: FakeClient, queue: str, state: str) -> bool:
    q = await _get(client, scheme.QUEUE, queue, None)
    return bool(q and (q.get("status") or {}).get("state") == state)


async def test_job_pods_wait_for_the_podgroup_to_leave_pending(client: FakeClient) -> None:
    async with running(client):
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        job = await create_job(client, vcjob(replicas=3, min_available=3))
        pg_name = f"j1-{job['metadata']['uid']}"
        pg = await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
        assert pg["spec"]["minMember"] == 3
        await eventually(lambda: job_phase(client))
        assert await job_phase(client) == JobPhase.PENDING
        assert await pods_of(client) == []
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        await eventually(lambda: _counts(client, "default", "inqueue", 1))
        pods = await eventually(lambda: _n_pods(client, 3))
        assert [p["metadata"]["name"] for p in pods] == ["j1-t-0", "j1-t-1", "j1-t-2"]
        for p in pods:
            await set_phase(client, scheme.POD, p["metadata"]["name"], "Running")
        await eventually(lambda: _phase_is(client, JobPhase.RUNNING))
        for p in pods:
            await set_phase(client, scheme.POD, p["metadata"]["name"], "Succeeded")
        await eventually(lambda: _phase_is(client, JobPhase.COMPLETED))
        j = await client.get(scheme.VCJOB, "j1", "default")
        assert j["status"]["succeeded"] == 3
        # a finished job gives its PodGroup up (upstream finished state: KillJob deletes it)
        await eventually(lambda: _gone(client, scheme.POD_GROUP, pg_name))


async def _counts(client: FakeClient, queue: str, field: str, n: int) -> dict | None:
    """The queue once the controller's gauge counts ``n`` PodGroups in phase ``field``; its status
    never carries the counts (upstream writes only ``state`` since v1.11)."""
    from prometheus_client import REGISTRY

    q = await _get(client, scheme.QUEUE, queue, None)
    if q is None:
        return None
    assert not set(q.get("status") or {}) & {"pending", "running", "unknown", "inqueue", "completed"}, q["status"]
    got = REGISTRY.get_sample_value(f"volcano_queue_pod_group_{field}_count", {"queue_name": queue})
    return q if got == n else None


async def _n_pods(client: FakeClient, n: int) -> list[dict] | None:
    pods = [p for p in await pods_of(client) if not p["metadata"].get("deletionTimestamp")]
    return pods if len(pods) == n else None


async def _phase_is(client: FakeClient, phase: str, name: str = "j1") -> bool:
    return await job_phase(client, name) == phase


async def _running_job(client: FakeClient, manifest: dict) -> dict:
    """Create the vcjob ``manifest`` (two replicas), put its PodGroup Inqueue and its Pods Running,
    and wait for the Job to be Running; returns the created Job."""
    await eventually(lambda: _state(client, "default", QueueState.OPEN))
    job = await create_job(client, manifest)
    pg_name = f"j1-{job['metadata']['uid']}"
    await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
    await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
    for p in await eventually(lambda: _n_pods(client, 2)):
        await set_phase(client, scheme.POD, p["metadata"]["name"], "Running")
    await eventually(lambda: _phase_is(client, JobPhase.RUNNING))
    return job


async def test_pod_evicted_restarts_the_job_with_a_new_version(client: FakeClient) -> None:
    async with running(client):
        job = await _running_job(client, vcjob(replicas=2, policies=[{"event": "PodEvicted", "action": "RestartJob"}]))
        pg_name = f"j1-{job['metadata']['uid']}"
        await client.delete(scheme.POD, "j1-t-0", "default")
        await eventually(lambda: _phase_is(client, JobPhase.RESTARTING))
        j = await client.get(scheme.VCJOB, "j1", "default")
        assert j["status"]["retryCount"] == 1
        assert j["status"]["version"] == 1
        # the PodGroup was deleted with the old version and is created again
        pg = await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        pods = await eventually(lambda: _n_pods(client, 2))
        assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in pods} == {"1"}
        await eventually(lambda: _phase_is(client, JobPhase.PENDING))
        assert pg is not None
        # once the new PodGroup is Inqueue the counts are those of the Pods that exist (upstream syncJob)
        assert not (await client.get(scheme.VCJOB, "j1", "default"))["status"].get("terminating")


async def _delete_then_fail(client: FakeClient, name: str) -> None:
    """Delete a Running Pod as kubectl, an eviction or the scheduler's preemption would: a finalizer
    keeps it while it is marked deleted, the kubelet then reports it Failed (exit 137), and it goes."""
    await client.patch(scheme.POD, name, {"metadata": {"finalizers": ["test/hold"]}}, "default")
    await client.delete(scheme.POD, name, "default")
    assert (await client.get(scheme.POD, name, "default"))["metadata"].get("deletionTimestamp")
    await client.patch(scheme.POD, name, {"status": {"phase": "Failed", "containerStatuses": [
        {"name": "c", "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}]}}, "default", subresource="status")
    await client.patch(scheme.POD, name, {"metadata": {"finalizers": None}}, "default")


@pytest.mark.parametrize(("policies", "phase"), [
    ([{"event": "PodFailed", "action": "RestartJob"}], JobPhase.RESTARTING),
    ([{"event": "PodEvicted", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}],
     JobPhase.ABORTED),
])
async def test_a_pod_deleted_while_running_that_ends_failed_is_pod_failed(
        client: FakeClient, policies: list[dict], phase: JobPhase) -> None:
    """Upstream Volcano before v1.14 handed a Pod update carrying a deletionTimestamp to deletePod
    (PodEvicted); since c1c35de8a ("keep terminating pod in job", v1.14) a terminating Pod stays in
    the job and its turn to Failed is PodFailed, PodEvicted coming only from the removal. pumice
    follows the newest upstream (trial 15 F-1, withdrawn by the trial once it read that commit)."""
    async with running(client):
        await _running_job(client, vcjob(replicas=2, min_available=2, maxRetry=5, policies=policies))
        await _delete_then_fail(client, "j1-t-0")
        await eventually(lambda: _phase_is(client, phase))


async def test_pod_failed_with_abort_policy_aborts(client: FakeClient) -> None:
    async with running(client):
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        job = await create_job(client, vcjob(replicas=2, policies=[{"event": "PodFailed", "action": "AbortJob"}]))
        pg_name = f"j1-{job['metadata']['uid']}"
        await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        pods = await eventually(lambda: _n_pods(client, 2))
        for p in pods:
            await set_phase(client, scheme.POD, p["metadata"]["name"], "Running")
        await eventually(lambda: _phase_is(client, JobPhase.RUNNING))
        await set_phase(client, scheme.POD, "j1-t-1", "Failed")
        await eventually(lambda: _phase_is(client, JobPhase.ABORTED))
        remaining = await pods_of(client)
        assert [p["metadata"]["name"] for p in remaining] == ["j1-t-1"]  # the Failed Pod is kept


async def test_exit_code_policy_terminates(client: FakeClient) -> None:
    async with running(client):
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        job = await create_job(client, vcjob(replicas=1, policies=[{"exitCode": 3, "action": "TerminateJob"}]))
        pg_name = f"j1-{job['metadata']['uid']}"
        await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        await eventually(lambda: _n_pods(client, 1))
        await set_phase(client, scheme.POD, "j1-t-0", "Running")
        await eventually(lambda: _phase_is(client, JobPhase.RUNNING))
        await client.patch(scheme.POD, "j1-t-0", {"status": {"phase": "Failed", "containerStatuses": [
            {"name": "c", "state": {"terminated": {"exitCode": 3}}}]}}, "default", subresource="status")
        await eventually(lambda: _phase_is(client, JobPhase.TERMINATED))


async def test_abort_command_aborts_and_resume_restarts(client: FakeClient) -> None:
    async with running(client):
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        job = await create_job(client, vcjob(replicas=1))
        pg_name = f"j1-{job['metadata']['uid']}"
        await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        await eventually(lambda: _n_pods(client, 1))
        await client.create({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                             "metadata": {"name": "abort-1", "namespace": "default"},
                             "action": "AbortJob", "target": {"apiVersion": "batch.volcano.sh/v1alpha1",
                                                              "kind": "Job", "name": "j1", "uid": job["metadata"]["uid"]}})
        await eventually(lambda: _phase_is(client, JobPhase.ABORTED))
        assert (await client.list(scheme.COMMAND, "default")).items == []
        await client.create({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                             "metadata": {"name": "resume-1", "namespace": "default"},
                             "action": "ResumeJob", "target": {"kind": "Job", "name": "j1"}})
        # Restarting, then Pending at once (nothing is left terminating)
        await eventually(lambda: _phase_is(client, JobPhase.PENDING))
        j = await client.get(scheme.VCJOB, "j1", "default")
        assert j["status"]["retryCount"] == 1
        assert [c["status"] for c in j["status"]["conditions"]] == ["Aborting", "Aborted", "Restarting", "Pending"]


async def test_job_plugins_create_service_configmap_secret_and_env(client: FakeClient) -> None:
    async with running(client):
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        job = await create_job(client, vcjob(replicas=2, plugins={"env": [], "svc": [], "ssh": []}))
        pg_name = f"j1-{job['metadata']['uid']}"
        svc = await eventually(lambda: _get(client, scheme.SERVICE, "j1"))
        assert svc["spec"]["clusterIP"] == "None"
        cm = await eventually(lambda: _get(client, scheme.CONFIG_MAP, "j1-svc"))
        assert cm["data"] == {"t.host": "j1-t-0.j1\nj1-t-1.j1", "VC_T_HOSTS": "j1-t-0.j1,j1-t-1.j1", "VC_T_NUM": "2"}
        secret = await eventually(lambda: _get(client, scheme.SECRET, "j1-ssh"))
        assert set(secret["data"]) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
        np = await eventually(lambda: _get(client, scheme.NETWORK_POLICY, "j1"))
        assert np["spec"]["policyTypes"] == ["Ingress"]
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        pods = await eventually(lambda: _n_pods(client, 2))
        env = {e["name"]: e.get("value") for e in pods[1]["spec"]["containers"][0]["env"]}
        assert env["VC_TASK_INDEX"] == "1" and env["VK_TASK_INDEX"] == "1"
        assert "VC_T_HOSTS" in env
        assert pods[1]["spec"]["hostname"] == "j1-t-1" and pods[1]["spec"]["subdomain"] == "j1"
        mounts = {m["mountPath"] for m in pods[1]["spec"]["containers"][0]["volumeMounts"]}
        assert mounts == {"/etc/volcano", "/root/.ssh"}
        j = await client.get(scheme.VCJOB, "j1", "default")
        assert j["status"]["controlledResources"] == {"plugin-env": "env", "plugin-svc": "svc", "plugin-ssh": "ssh"}


async def test_a_second_reconcile_writes_nothing(client: FakeClient) -> None:
    async with running(client) as mgr:
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        job = await create_job(client, vcjob(replicas=2))
        pg_name = f"j1-{job['metadata']['uid']}"
        await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        await eventually(lambda: _n_pods(client, 2))
        await eventually(lambda: _status_pending(client, 2))
        ctrl = next(c for c in mgr.controllers if c.name == "volcano-job")
        before = len(client.writes())
        from pumice.runtime.reconcile import Request

        await ctrl.reconciler.reconcile(Request("default", "j1"))
        assert client.writes()[before:] == []


async def _status_pending(client: FakeClient, n: int) -> bool:
    j = await client.get(scheme.VCJOB, "j1", "default")
    return (j.get("status") or {}).get("pending") == n


async def test_closing_a_queue_waits_for_its_podgroups(client: FakeClient) -> None:
    async with running(client):
        await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                             "metadata": {"name": "q1"}, "spec": {"weight": 1}})
        await eventually(lambda: _state(client, "q1", QueueState.OPEN))
        await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                             "metadata": {"name": "pg1", "namespace": "default"},
                             "spec": {"minMember": 1, "queue": "q1"}, "status": {"phase": "Running"}})
        await eventually(lambda: _counts(client, "q1", "running", 1))
        await client.create({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                             "metadata": {"name": "close-q1", "namespace": "default"},
                             "action": "CloseQueue", "target": {"kind": "Queue", "name": "q1"}})
        await eventually(lambda: _state(client, "q1", QueueState.CLOSING))
        await client.delete(scheme.POD_GROUP, "pg1", "default")
        await eventually(lambda: _state(client, "q1", QueueState.CLOSED))
        await client.create({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                             "metadata": {"name": "open-q1", "namespace": "default"},
                             "action": "OpenQueue", "target": {"kind": "Queue", "name": "q1"}})
        await eventually(lambda: _state(client, "q1", QueueState.OPEN))


async def test_bare_volcano_pod_gets_a_podgroup(client: FakeClient) -> None:
    async with running(client):
        pod = await client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "p1", "namespace": "default", "annotations": {"scheduling.volcano.sh/queue-name": "q2"}},
            "spec": {"schedulerName": "volcano", "priorityClassName": "high", "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}})
        name = f"podgroup-{pod['metadata']['uid']}"
        pg = await eventually(lambda: _get(client, scheme.POD_GROUP, name))
        assert pg["spec"] == {"minMember": 1, "minResources": {"cpu": "500m", "memory": "1Gi"},
                              "priorityClassName": "high", "queue": "q2"}
        assert pg["metadata"]["ownerReferences"][0]["kind"] == "Pod"
        p = await eventually(lambda: _annotated(client, "p1"))
        assert p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == name


@pytest.mark.parametrize(("memory", "min_member", "expected"), [
    ("1G", 1, "1G"), ("1500M", 1, "1500M"), ("1000", 1, "1k"), ("2e9", 1, "2e9"), ("1E3", 1, "1e3"),
    ("100000000000000000000", 1, "100E"), ("1Gi", 3, "3Gi"), ("1G", 3, "3G")])
def test_a_bare_pods_podgroup_keeps_the_pods_quantity_format(memory: str, min_member: int, expected: str) -> None:
    # trial 11 F-12: CalTaskRequests adds the Pod's usage with quotav1.Add, which keeps its format
    pod = {"metadata": {"name": "p1", "namespace": "default", "uid": "u1"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "10m", "memory": memory}}}]}}
    pg = build_podgroup_for_pod(pod, {"scheduling.volcano.sh/group-min-member": str(min_member)})
    assert pg["spec"]["minResources"]["memory"] == expected


def test_a_zero_first_container_gives_the_sum_the_next_ones_format() -> None:
    pod = {"metadata": {"name": "p1", "namespace": "default", "uid": "u1"},
           "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "0", "memory": "1Gi"}}},
                                   {"name": "b", "resources": {"requests": {"cpu": "1500m", "memory": "1G"}}}],
                    "initContainers": [{"name": "i", "resources": {"requests": {"memory": "4G"}}}]}}
    assert build_podgroup_for_pod(pod)["spec"]["minResources"] == {"cpu": "1500m", "memory": "4G"}


def _vcjob(*tasks: tuple[str, int, int | None, dict[str, str]], min_available: int) -> dict[str, Any]:
    return {"spec": {"minAvailable": min_available, "tasks": [
        {"name": n, "replicas": reps, **({"minAvailable": m} if m is not None else {}),
         "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": req}}]}}}
        for n, reps, m, req in tasks]}}


@pytest.mark.parametrize(("memory", "expected"), [
    ("1G", "3G"), ("1500M", "4500M"), ("1000", "3k"), ("2e9", "6e9"), ("1Gi", "3Gi"), ("1E3", "3e3")])
def test_a_vcjobs_podgroup_keeps_the_pods_quantity_format(memory: str, expected: str) -> None:
    # trial 11 F-12 for the vcjob controller: calcPGMinResources sums CalTaskRequests with quotav1.Add
    job = _vcjob(("t", 3, 3, {"cpu": "10m", "memory": memory}), min_available=3)
    assert builders.pg_min_resources(job) == {"cpu": "30m", "memory": expected}


def test_a_vcjobs_podgroup_takes_the_first_tasks_format() -> None:
    # quotav1.Add keeps the receiver's format: the first task (in priority order) that asks for a name
    job = _vcjob(("a", 1, 1, {"memory": "512M"}), ("b", 1, 1, {"memory": "512Mi"}), min_available=2)
    assert builders.pg_min_resources(job) == {"memory": "1048870912"}
    job = _vcjob(("a", 1, 1, {"memory": "512Mi"}), ("b", 1, 1, {"memory": "512M"}), min_available=2)
    assert builders.pg_min_resources(job) == {"memory": "1024288Ki"}
    job = _vcjob(("a", 1, 1, {"memory": "1Gi"}), ("b", 1, 1, {"memory": "1Gi"}), min_available=2)
    assert builders.pg_min_resources(job) == {"memory": "2Gi"}


def test_a_task_counted_zero_times_adds_no_names() -> None:
    # CalTaskRequests with 0 replicas is an empty list: its names do not appear in minResources
    job = _vcjob(("a", 2, 0, {"nvidia.com/gpu": "1"}), ("b", 1, 1, {"cpu": "1"}), min_available=1)
    assert builders.pg_min_resources(job) == {"cpu": "1"}


def test_an_init_containers_use_includes_the_sidecars_before_it() -> None:
    # AggregateContainerRequests: init container i uses its own request plus the restartable init
    # containers declared before it; the Pod's request is the larger of that and the running sum
    pod = {"metadata": {"name": "p1", "namespace": "default", "uid": "u1"},
           "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
                    "initContainers": [
                        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                        {"name": "i", "resources": {"requests": {"cpu": "1500m"}}}]}}
    assert build_podgroup_for_pod(pod)["spec"]["minResources"] == {"cpu": "2500m"}
    pod["spec"]["initContainers"].reverse()  # a sidecar after the init container does not count for it
    assert build_podgroup_for_pod(pod)["spec"]["minResources"] == {"cpu": "2"}


async def _annotated(client: FakeClient, name: str) -> dict | None:
    p = await client.get(scheme.POD, name, "default")
    return p if (p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name") else None


async def test_pods_of_a_replicaset_share_the_owner_podgroup(client: FakeClient) -> None:
    async with running(client):
        rs = await client.create({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
            "name": "rs1", "namespace": "default", "annotations": {"scheduling.volcano.sh/group-min-member": "2"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}, "template": {}}})
        ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "uid": rs["metadata"]["uid"],
               "controller": True}
        for i in range(2):
            await client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"rs1-{i}", "namespace": "default", "ownerReferences": [ref]},
                "spec": {"schedulerName": "volcano", "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}})
        name = f"podgroup-{rs['metadata']['uid']}"
        pg = await eventually(lambda: _get(client, scheme.POD_GROUP, name))
        assert pg["spec"]["minMember"] == 2 and pg["spec"]["minResources"] == {"cpu": "2"}
        await eventually(lambda: _annotated(client, "rs1-1"))
        await client.patch(scheme.REPLICA_SET, "rs1", {"spec": {"replicas": 0}}, "default")
        await eventually(lambda: _gone(client, scheme.POD_GROUP, name))


async def _gone(client: FakeClient, kind: Any, name: str) -> bool:
    return await _get(client, kind, name) is None


async def test_ttl_deletes_a_finished_job(client: FakeClient) -> None:
    async with running(client):
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        job = await create_job(client, vcjob(replicas=1, ttlSecondsAfterFinished=0))
        pg_name = f"j1-{job['metadata']['uid']}"
        await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        await eventually(lambda: _n_pods(client, 1))
        await set_phase(client, scheme.POD, "j1-t-0", "Running")
        await eventually(lambda: _phase_is(client, JobPhase.RUNNING))
        await set_phase(client, scheme.POD, "j1-t-0", "Succeeded")
        await eventually(lambda: _gone(client, scheme.VCJOB, "j1"))


async def test_children_close_and_reopen_with_their_parent(client: FakeClient) -> None:
    async with running(client):
        for name, parent in (("eng", None), ("dev", "eng")):
            spec: dict = {"weight": 1}
            if parent:
                spec["parent"] = parent
            await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                 "metadata": {"name": name}, "spec": spec})
            await eventually(lambda name=name: _state(client, name, QueueState.OPEN))
        await client.create({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                             "metadata": {"name": "close-eng", "namespace": "default"},
                             "action": "CloseQueue", "target": {"kind": "Queue", "name": "eng"}})
        await eventually(lambda: _state(client, "dev", QueueState.CLOSED))
        dev = await client.get(scheme.QUEUE, "dev")
        assert dev["metadata"]["annotations"]["volcano.sh/closed-by-parent"] == "true"
        await client.create({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                             "metadata": {"name": "open-eng", "namespace": "default"},
                             "action": "OpenQueue", "target": {"kind": "Queue", "name": "eng"}})
        await eventually(lambda: _state(client, "dev", QueueState.OPEN))


def _sample_job(path: str) -> dict:
    import yaml

    from pumice.testing.paths import shared_dir

    job = yaml.safe_load((shared_dir() / "samples" / "volcano" / "example" / path).read_text())
    job["metadata"]["namespace"] = "default"
    mutate_job(job)
    return job


async def test_ray_plugin_sample_gets_ray_start_commands_and_the_head_service(client: FakeClient) -> None:
    async with running(client):
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        job = await client.create(_sample_job("integrations/ray/ray-example.yaml"))
        pg_name = f"ray-cluster-job-{job['metadata']['uid']}"
        await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
        svc = await eventually(lambda: _get(client, scheme.SERVICE, "ray-cluster-job-head-svc"))
        assert [p["port"] for p in svc["spec"]["ports"]] == [6379, 8265, 10001]
        assert svc["spec"]["selector"]["volcano.sh/task-spec"] == "head"
        assert await eventually(lambda: _get(client, scheme.SERVICE, "ray-cluster-job"))  # svc plugin, added by admission
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        pods = {p["metadata"]["name"]: p for p in await eventually(lambda: _n_pods(client, 3))}
        head = pods["ray-cluster-job-head-0"]["spec"]["containers"][0]
        assert head["command"][:2] == ["sh", "-c"] and head["command"][2].startswith("ray start --head --block")
        assert {p["containerPort"] for p in head["ports"]} == {6379, 8265, 10001}
        worker = pods["ray-cluster-job-worker-1"]["spec"]["containers"][0]
        assert worker["command"][2] == "ray start --block --address=ray-cluster-job-head-0.ray-cluster-job:6379"


async def test_job_plugin_sample_honours_plugin_arguments(client: FakeClient) -> None:
    async with running(client):
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        job = await client.create(_sample_job("job-plugin.yaml"))
        pg_name = f"test-job-plugin-{job['metadata']['uid']}"
        await eventually(lambda: _get(client, scheme.POD_GROUP, pg_name))
        await eventually(lambda: _get(client, scheme.NETWORK_POLICY, "test-job-plugin"))  # --disable-network-policy=false
        await set_phase(client, scheme.POD_GROUP, pg_name, "Inqueue")
        pods = await eventually(lambda: _n_pods(client, 3))
        spec = pods[0]["spec"]
        mounts = {m["mountPath"]: m for m in spec["containers"][0]["volumeMounts"]}
        assert "/home/user/.ssh" in mounts  # --ssh-key-file-path
        ssh_volume = next(v for v in spec["volumes"] if v["name"] == "test-job-plugin-ssh")
        assert ssh_volume["secret"]["defaultMode"] == 0o644  # not /root/.ssh
        env = {e["name"] for e in spec["containers"][0]["env"]}
        assert {"VC_TASK_INDEX", "VK_TASK_INDEX", "VC_DEFAULT_NGINX_HOSTS", "VC_DEFAULT_NGINX_NUM"} <= env


async def test_queue_and_podgroup_reconciles_are_idempotent(client: FakeClient) -> None:
    from pumice.runtime.reconcile import Request

    async with running(client) as mgr:
        await eventually(lambda: _state(client, "default", QueueState.OPEN))
        await client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
                             "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]}})
        await eventually(lambda: _annotated(client, "p1"))
        await eventually(lambda: _counts(client, "default", "pending", 1) or _counts(client, "default", "inqueue", 0))
        import asyncio

        await asyncio.sleep(0.1)
        before = len(client.writes())
        ctrls = {c.name: c for c in mgr.controllers}
        await ctrls["volcano-queue"].reconciler.reconcile(Request("", "default"))
        await ctrls["volcano-podgroup"].reconciler.reconcile(Request("default", "p1"))
        assert client.writes()[before:] == []


def test_queue_podgroup_gauges_are_set_again_for_a_queue_made_again_after_its_removal() -> None:
    from prometheus_client import REGISTRY

    from pumice.controllers.volcano.queue import _forget_counts, _set_counts

    def running() -> float | None:
        return REGISTRY.get_sample_value("volcano_queue_pod_group_running_count", {"queue_name": "gauge-q"})

    counts = {"inqueue": 0, "pending": 1, "running": 2, "unknown": 0, "completed": 0}
    _set_counts("gauge-q", counts)
    _set_counts("gauge-q", dict(counts))  # unchanged: nothing to set
    assert running() == 2
    _forget_counts("gauge-q")
    assert running() is None
    _set_counts("gauge-q", counts)
    assert running() == 2
    _set_counts("gauge-q", {**counts, "running": 3})
    assert running() == 3
    _forget_counts("gauge-q")


def _pg(name: str, queue: str | None, phase: str | None, *, deleting: bool = False, ns: str = "default") -> dict:
    pg: dict[str, Any] = {"metadata": {"name": name, "namespace": ns}, "spec": {}}
    if queue is not None:
        pg["spec"]["queue"] = queue
    if phase is not None:
        pg["status"] = {"phase": phase}
    if deleting:
        pg["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pg


def test_podgroup_counts_follow_phase_queue_and_deletion_changes() -> None:
    from pumice.controllers.volcano.queue import PodGroupCounts

    c = PodGroupCounts()
    a = _pg("a", "q1", "Pending")
    c.on_add(a)
    assert c.counts("q1")["pending"] == 1 and c.has_podgroups("q1")
    b = _pg("a", "q1", "Running")  # the phase moved: the old count must not stay
    c.on_update(a, b)
    assert c.counts("q1") == {"inqueue": 0, "pending": 0, "running": 1, "unknown": 0, "completed": 0}
    moved = _pg("a", "q2", "Running")  # moved to another queue: q1 loses it
    c.on_update(b, moved)
    assert not c.has_podgroups("q1") and c.counts("q1")["running"] == 0
    assert c.counts("q2")["running"] == 1
    going = _pg("a", "q2", "Running", deleting=True)  # being deleted: counted nowhere
    c.on_update(moved, going)
    assert not c.has_podgroups("q2") and c.counts("q2")["running"] == 0
    c.on_delete(going)
    assert not c.has_podgroups("q2")
    c.on_add(_pg("a", None, None))  # made again: the default queue, no phase, still "has PodGroups"
    assert c.has_podgroups("default") and c.counts("default") == dict.fromkeys(
        ("inqueue", "pending", "running", "unknown", "completed"), 0)
    got = c.counts("default")
    got["pending"] = 7  # a copy: the caller cannot change the kept counts
    assert c.counts("default")["pending"] == 0


def test_podgroup_counts_equal_a_fresh_count_of_the_cache_after_random_events() -> None:
    import random

    from pumice.controllers.volcano.queue import PodGroupCounts, count_podgroups

    rnd = random.Random(7)
    cache: dict[str, dict] = {}
    c = PodGroupCounts()
    for _ in range(3000):
        name = f"pg{rnd.randrange(12)}"
        ns = rnd.choice(["default", "other"])
        key = f"{ns}/{name}"
        if key in cache and rnd.random() < 0.25:
            c.on_delete(cache.pop(key))
        else:
            new = _pg(name, rnd.choice([None, "q1", "q2"]), rnd.choice([None, "", "Pending", "Inqueue", "Running",
                                                                         "Unknown", "Completed", "Weird"]),
                      deleting=rnd.random() < 0.2, ns=ns)
            if key in cache:
                c.on_update(cache[key], new)
            else:
                c.on_add(new)
            cache[key] = new
        for q in ("default", "q1", "q2"):
            live = [pg for pg in cache.values() if (pg["spec"].get("queue") or "default") == q
                    and not pg["metadata"].get("deletionTimestamp")]
            assert c.counts(q) == count_podgroups(live)
            assert c.has_podgroups(q) == bool(live)



async def test_a_pod_in_a_queue_that_does_not_exist_gets_one_podgroup_error_event_however_often_retried() -> None:
    mutating, validating = admission_plugins()
    errors = RECONCILE_ERRORS.labels("volcano-podgroup")
    async with local_cluster(admission=[*mutating, *validating]) as c, running(c.client):
        before = errors.get()
        await c.client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "podq", "namespace": "default", "annotations": {"scheduling.volcano.sh/queue-name": "q2"}},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]}})
        await eventually(lambda: errors.get() >= before + 4)  # the refused create, retried
        events = [e for e in (await c.client.list(scheme.EVENT, namespace="default")).items
                  if e["involvedObject"]["name"] == "podq"]
        assert [(e["type"], e["reason"], e["count"]) for e in events] == [("Warning", "PodGroupError", 1)]
        assert events[0]["message"] == (
            'Failed to create PodGroup, err: admission webhook "validatepodgroup.volcano.sh" denied the request: '
            'unable to find queue: queue.scheduling.volcano.sh "q2" not found')
