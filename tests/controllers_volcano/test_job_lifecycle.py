"""More of the vcjob lifecycle over the FakeClient: retries up to maxRetry, RestartTask,
TaskCompleted -> CompleteJob, minSuccess, dependsOn ordering, PodPending with a timeout, the
PodGroup going Unknown, spec updates reaching the PodGroup, scaling down."""

from __future__ import annotations

from typing import Any

from pumice._util.duration import parse_go_duration
from pumice.api import scheme
from pumice.controllers.volcano.admission.jobs import mutate_job
from pumice.controllers.volcano.job.controller import JobEvent, apply_policies
from pumice.controllers.volcano.keys import Action, Event, JobPhase
from pumice.testing.fake_client import FakeClient
from pumice.testing.volcano_controllers import eventually, running_controllers


def vcjob(name: str = "j1", tasks: list | None = None, **spec: Any) -> dict:
    c = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
           "spec": {"tasks": tasks or [{"name": "t", "replicas": 2, "template": {"spec": c}}], **spec}}
    mutate_job(job)
    return job


def task(name: str, replicas: int, **kw: Any) -> dict:
    c = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}
    return {"name": name, "replicas": replicas, "template": {"spec": c}, **kw}


class World:
    def __init__(self, client: FakeClient) -> None:
        self.c = client

    async def get(self, kind: Any, name: str, ns: str | None = "default") -> dict | None:
        try:
            return await self.c.get(kind, name, ns)
        except Exception:
            return None

    async def start(self, job: dict) -> dict:
        await eventually(lambda: self._open())
        created = await self.c.create(job)
        pg = f"{created['metadata']['name']}-{created['metadata']['uid']}"
        await eventually(lambda: self.get(scheme.POD_GROUP, pg))
        await self.c.patch(scheme.POD_GROUP, pg, {"status": {"phase": "Inqueue"}}, "default")
        return created

    async def _open(self) -> bool:
        q = await self.get(scheme.QUEUE, "default", None)
        return bool(q and (q.get("status") or {}).get("state") == "Open")

    async def pods(self, live_only: bool = True) -> list[dict]:
        items = sorted((await self.c.list(scheme.POD, "default")).items, key=lambda p: p["metadata"]["name"])
        return [p for p in items if not (live_only and p["metadata"].get("deletionTimestamp"))]

    async def n_pods(self, n: int) -> list[dict] | None:
        p = await self.pods()
        return p if len(p) == n else None

    async def set_pod(self, name: str, phase: str, **status: Any) -> None:
        await self.c.patch(scheme.POD, name, {"status": {"phase": phase, **status}}, "default", subresource="status")

    async def all_pods(self, phase: str) -> None:
        for p in await self.pods():
            await self.set_pod(p["metadata"]["name"], phase)

    async def phase(self, name: str = "j1") -> str:
        j = await self.get(scheme.VCJOB, name)
        return str((((j or {}).get("status") or {}).get("state") or {}).get("phase") or "")

    async def phase_is(self, want: str, name: str = "j1") -> bool:
        return await self.phase(name) == want

    async def status(self, name: str = "j1") -> dict:
        j = await self.get(scheme.VCJOB, name)
        return (j or {}).get("status") or {}


async def test_pod_failures_restart_the_job_until_max_retry_then_fail() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        job = await w.start(vcjob(maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}]))
        pg = f"j1-{job['metadata']['uid']}"
        for attempt in range(2):
            await eventually(lambda: w.n_pods(2))
            await w.all_pods("Running")
            await eventually(lambda: w.phase_is(JobPhase.RUNNING))
            await w.set_pod("j1-t-0", "Failed")
            if attempt == 0:
                await eventually(lambda: _retry(w, 1))
                await eventually(lambda: w.get(scheme.POD_GROUP, pg))
                await client.patch(scheme.POD_GROUP, pg, {"status": {"phase": "Inqueue"}}, "default")
                await eventually(lambda: w.phase_is(JobPhase.PENDING))
        await eventually(lambda: w.phase_is(JobPhase.FAILED))
        assert (await w.status())["retryCount"] == 2


async def _retry(w: World, n: int) -> bool:
    return (await w.status()).get("retryCount") == n


async def test_restart_task_deletes_only_that_task() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        await w.start(vcjob(tasks=[task("a", 1, policies=[{"event": "PodFailed", "action": "RestartTask"}]),
                                   task("b", 1)]))
        await eventually(lambda: w.n_pods(2))
        await w.all_pods("Running")
        await eventually(lambda: w.phase_is(JobPhase.RUNNING))
        uid_b = (await w.get(scheme.POD, "j1-b-0"))["metadata"]["uid"]
        await w.set_pod("j1-a-0", "Failed")
        await eventually(lambda: _retry(w, 1))
        assert (await w.get(scheme.POD, "j1-b-0"))["metadata"]["uid"] == uid_b  # untouched
        # the task's Pod comes back (the PodGroup is kept by a task restart)
        await eventually(lambda: _recreated(w, "j1-a-0"))


async def _recreated(w: World, name: str) -> bool:
    p = await w.get(scheme.POD, name)
    return bool(p and (p.get("status") or {}).get("phase", "Pending") == "Pending")


async def test_task_completed_policy_completes_the_job() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        await w.start(vcjob(tasks=[task("master", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
                                   task("worker", 2)]))
        await eventually(lambda: w.n_pods(3))
        await w.all_pods("Running")
        await eventually(lambda: w.phase_is(JobPhase.RUNNING))
        await w.set_pod("j1-master-0", "Succeeded")
        await eventually(lambda: w.phase_is(JobPhase.COMPLETED))
        # workers were killed (Completing), the Succeeded master kept
        assert [p["metadata"]["name"] for p in await w.pods()] == ["j1-master-0"]


async def test_min_success_completes_early() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        await w.start(vcjob(tasks=[task("t", 3)], minAvailable=1, minSuccess=2))
        await eventually(lambda: w.n_pods(3))
        await w.all_pods("Running")
        await eventually(lambda: w.phase_is(JobPhase.RUNNING))
        await w.set_pod("j1-t-0", "Succeeded")
        await w.set_pod("j1-t-1", "Succeeded")
        await eventually(lambda: w.phase_is(JobPhase.COMPLETED))


async def test_depends_on_creates_pods_after_the_dependency_is_ready() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        await w.start(vcjob(tasks=[task("first", 1), task("second", 2, dependsOn={"name": ["first"]})],
                            minAvailable=1))
        await eventually(lambda: w.n_pods(1))
        assert [p["metadata"]["name"] for p in await w.pods()] == ["j1-first-0"]
        await w.set_pod("j1-first-0", "Running", containerStatuses=[{"name": "c", "ready": True}])
        await eventually(lambda: w.n_pods(3))


async def test_pending_timeout_policy_fires_after_the_delay() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        await w.start(vcjob(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "300ms"}]))
        await eventually(lambda: w.n_pods(2))
        assert await w.phase() == JobPhase.PENDING
        await eventually(lambda: w.phase_is(JobPhase.ABORTED), timeout=5)


async def test_running_pods_cancel_a_pending_timeout() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        await w.start(vcjob(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "400ms"}]))
        await eventually(lambda: w.n_pods(2))
        await w.all_pods("Running")
        await eventually(lambda: w.phase_is(JobPhase.RUNNING))
        import asyncio

        await asyncio.sleep(0.6)
        assert await w.phase() == JobPhase.RUNNING


async def test_podgroup_unknown_runs_the_unknown_policy() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        job = await w.start(vcjob(policies=[{"event": "Unknown", "action": "RestartJob"}]))
        await eventually(lambda: w.n_pods(2))
        await w.all_pods("Running")
        await eventually(lambda: w.phase_is(JobPhase.RUNNING))
        await client.patch(scheme.POD_GROUP, f"j1-{job['metadata']['uid']}", {"status": {"phase": "Unknown"}}, "default")
        await eventually(lambda: _retry(w, 1))


async def test_scaling_replicas_updates_the_podgroup_and_deletes_surplus_pods() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        job = await w.start(vcjob(tasks=[task("t", 3)], minAvailable=1))
        pods = await eventually(lambda: w.n_pods(3))
        await w.all_pods("Running")
        await eventually(lambda: w.phase_is(JobPhase.RUNNING))
        j = await client.get(scheme.VCJOB, "j1", "default")
        j["spec"]["tasks"][0]["replicas"] = 1
        j["spec"]["tasks"][0]["minAvailable"] = 1
        await client.update(j)
        await eventually(lambda: w.n_pods(1))
        pg = await client.get(scheme.POD_GROUP, f"j1-{job['metadata']['uid']}", "default")
        assert pg["spec"]["minTaskMember"] == {"t": 1}
        assert pods[0]["metadata"]["name"] == "j1-t-0"


def test_policy_resolution_prefers_task_policies_and_ignores_old_versions() -> None:
    job = vcjob(tasks=[task("t", 1, policies=[{"event": "PodFailed", "action": "RestartTask"}])],
                policies=[{"event": "*", "action": "AbortJob"}])
    job["status"] = {"version": 2}
    assert apply_policies(job, JobEvent(Event.POD_FAILED, "t", version=2)) == (Action.RESTART_TASK, 0.0)
    assert apply_policies(job, JobEvent(Event.POD_EVICTED, "t", version=2)) == (Action.ABORT_JOB, 0.0)
    assert apply_policies(job, JobEvent(Event.POD_FAILED, "t", version=1)) == (Action.SYNC_JOB, 0.0)
    assert apply_policies(job, JobEvent(Event.OUT_OF_SYNC, "t", version=2)) == (Action.SYNC_JOB, 0.0)
    # PodPending matches only a policy with a timeout
    pend = vcjob(policies=[{"event": "PodPending", "action": "AbortJob"}])
    assert apply_policies(pend, JobEvent(Event.POD_PENDING, "t"))[0] == Action.SYNC_JOB
    pend = vcjob(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "1m30s"}])
    assert apply_policies(pend, JobEvent(Event.POD_PENDING, "t")) == (Action.ABORT_JOB, 90.0)
    exit_code = vcjob(policies=[{"exitCode": 137, "action": "RestartJob"}])
    assert apply_policies(exit_code, JobEvent(Event.POD_FAILED, "t", exit_code=137))[0] == Action.RESTART_JOB
    assert parse_go_duration("500ms") == 0.5


def _scheme() -> Any:
    from pumice.testing.volcano_controllers import volcano_scheme

    return volcano_scheme()



async def test_restarting_containers_past_max_retry_raise_task_failed() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        t = task("t", 1, maxRetry=2, policies=[{"event": "TaskFailed", "action": "TerminateJob"}])
        await w.start(vcjob(tasks=[t]))
        await eventually(lambda: w.n_pods(1))
        await w.set_pod("j1-t-0", "Running", containerStatuses=[{"name": "c", "restartCount": 0}])
        await eventually(lambda: w.phase_is(JobPhase.RUNNING))
        await w.set_pod("j1-t-0", "Running", containerStatuses=[{"name": "c", "restartCount": 1}])
        await w.set_pod("j1-t-0", "Running", containerStatuses=[{"name": "c", "restartCount": 2}])
        await eventually(lambda: w.phase_is(JobPhase.TERMINATED))


async def test_restart_pod_replaces_only_the_failed_pod() -> None:
    client = FakeClient(_scheme())
    w = World(client)
    async with running_controllers(client):
        await w.start(vcjob(tasks=[task("t", 3, policies=[{"event": "PodFailed", "action": "RestartPod"}])],
                            minAvailable=1))
        await eventually(lambda: w.n_pods(3))
        await w.all_pods("Running")
        await eventually(lambda: w.phase_is(JobPhase.RUNNING))
        uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await w.pods()}
        await w.set_pod("j1-t-1", "Failed")
        await eventually(lambda: _retry(w, 1))
        p1 = await eventually(lambda: _new_uid(w, "j1-t-1", uids["j1-t-1"]))
        assert (p1.get("status") or {}).get("phase", "Pending") == "Pending"
        for name in ("j1-t-0", "j1-t-2"):
            assert (await w.get(scheme.POD, name))["metadata"]["uid"] == uids[name]


async def _new_uid(w: World, name: str, old_uid: str) -> dict | None:
    p = await w.get(scheme.POD, name)
    return p if p and p["metadata"]["uid"] != old_uid else None
