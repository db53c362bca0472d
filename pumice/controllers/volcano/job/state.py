"""The vcjob phase machine as a table: one step function per phase.

A step gets the resolved :class:`Action` and a :class:`JobOps` (the controller's three
primitives), and calls exactly one primitive with a pure status-update function that decides the
next phase from the recounted status. Update functions return True when they changed the phase.

Primitives (see reference §1.4.4):

- ``sync_job(update)``: create the PodGroup, and once it left Pending the missing Pods; delete
  out-of-sync and surplus Pods; recount; apply ``update``; write status.
- ``kill_job(retain, update)``: delete every Pod whose phase is not in ``retain`` (on the last
  retry Succeeded/Failed are always kept), bump ``status.version``, recount, apply ``update``,
  write status, run the plugins' on_job_delete and delete the PodGroup.
- ``kill_target(target, update)``: delete only the target task's or Pod's Pods; keep the PodGroup.

Mirrors: volcano pkg/controllers/job/state/*.go.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from pumice.api import Obj
from pumice.controllers.volcano.job.builders import tasks, total_replicas, total_task_min_available
from pumice.controllers.volcano.keys import Action, JobPhase

UpdateFn = Callable[[Obj], bool]

RETAIN_NONE: frozenset[str] = frozenset()
RETAIN_SOFT: frozenset[str] = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class Target:
    """What a RestartTask / RestartPod / RestartPartition acts on."""

    type: str  # "task" | "pod" | "partition"
    task_name: str = ""
    pod_name: str = ""
    partition: str = ""


@dataclass(frozen=True)
class StateAction:
    action: Action
    target: Target | None = None


class JobOps(Protocol):
    job: Obj

    async def sync_job(self, update: UpdateFn | None) -> None: ...

    async def kill_job(self, retain: frozenset[str], update: UpdateFn | None) -> None: ...

    async def kill_target(self, target: Target, update: UpdateFn | None) -> None: ...


Step = Callable[[JobOps, StateAction], Awaitable[None]]

_RESTARTS = (Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION)


def _set(phase: JobPhase, retry: bool = False) -> UpdateFn:
    def fn(status: Obj) -> bool:
        status.setdefault("state", {})["phase"] = str(phase)
        if retry:
            status["retryCount"] = int(status.get("retryCount") or 0) + 1
        return True

    return fn


def _when_no_live_pods(phase: JobPhase) -> UpdateFn:
    def fn(status: Obj) -> bool:
        if status.get("terminating") or status.get("pending") or status.get("running"):
            return False
        status.setdefault("state", {})["phase"] = str(phase)
        return True

    return fn


async def _kill_actions(ops: JobOps, act: StateAction) -> bool:
    """The kill transitions shared by Pending and Running; False when ``act`` is not one."""
    a = act.action
    if a == Action.RESTART_JOB:
        await ops.kill_job(RETAIN_NONE, _set(JobPhase.RESTARTING, retry=True))
    elif a in _RESTARTS and act.target is not None:
        await ops.kill_target(act.target, _set(JobPhase.RESTARTING, retry=True))
    elif a == Action.ABORT_JOB:
        await ops.kill_job(RETAIN_SOFT, _set(JobPhase.ABORTING))
    elif a == Action.COMPLETE_JOB:
        await ops.kill_job(RETAIN_SOFT, _set(JobPhase.COMPLETING))
    elif a == Action.TERMINATE_JOB:
        await ops.kill_job(RETAIN_SOFT, _set(JobPhase.TERMINATING))
    else:
        return False
    return True


async def on_pending(ops: JobOps, act: StateAction) -> None:
    """Pending. Exits: Restarting (RestartJob/Task/Pod), Aborting, Completing, Terminating;
    Running once ``minAvailable <= running + succeeded + failed``."""
    if await _kill_actions(ops, act):
        return
    min_available = int((ops.job.get("spec") or {}).get("minAvailable") or 0)

    def update(status: Obj) -> bool:
        done = int(status.get("running") or 0) + int(status.get("succeeded") or 0) + int(status.get("failed") or 0)
        if min_available <= done:
            status.setdefault("state", {})["phase"] = str(JobPhase.RUNNING)
            return True
        return False

    await ops.sync_job(update)


def running_update(job: Obj) -> UpdateFn:
    """The Running sync rule: Completed / Failed when every Pod finished (by minAvailable,
    per-task minAvailable and minSuccess), Completed early on minSuccess, back to Pending when
    too many Pods are pending."""
    spec = job.get("spec") or {}

    def fn(status: Obj) -> bool:
        replicas = total_replicas(job)
        if replicas == 0:
            return False
        state = status.setdefault("state", {})
        succeeded, failed = int(status.get("succeeded") or 0), int(status.get("failed") or 0)
        min_success = spec.get("minSuccess")
        min_available = int(spec.get("minAvailable") or 0)
        if min_success is not None and succeeded >= int(min_success):
            state["phase"] = str(JobPhase.COMPLETED)
            return True
        if succeeded + failed == replicas:
            if min_available >= total_task_min_available(job):
                counts = status.get("taskStatusCount") or {}
                for t in tasks(job):
                    if t.get("minAvailable") is None or t.get("name") not in counts:
                        continue
                    if int((counts[t["name"]].get("phase") or {}).get("Succeeded", 0)) < int(t["minAvailable"]):
                        state["phase"] = str(JobPhase.FAILED)
                        return True
            if min_success is not None and succeeded < int(min_success):
                state["phase"] = str(JobPhase.FAILED)
            elif succeeded >= min_available:
                state["phase"] = str(JobPhase.COMPLETED)
            else:
                state["phase"] = str(JobPhase.FAILED)
            return True
        if int(status.get("pending") or 0) > replicas - min_available:
            state["phase"] = str(JobPhase.PENDING)
            return True
        return False

    return fn


async def on_running(ops: JobOps, act: StateAction) -> None:
    """Running. Exits: the kill transitions of Pending; on sync Completed, Failed or Pending
    (see :func:`running_update`)."""
    if await _kill_actions(ops, act):
        return
    await ops.sync_job(running_update(ops.job))


def restarting_update(job: Obj) -> UpdateFn:
    """Failed once ``retryCount >= maxRetry``; else Pending once ``Σreplicas - terminating >=
    minAvailable``."""
    max_retry = int((job.get("spec") or {}).get("maxRetry") or 0)

    def fn(status: Obj) -> bool:
        state = status.setdefault("state", {})
        if int(status.get("retryCount") or 0) >= max_retry:
            state["phase"] = str(JobPhase.FAILED)
            return True
        if total_replicas(job) - int(status.get("terminating") or 0) >= int(status.get("minAvailable") or 0):
            state["phase"] = str(JobPhase.PENDING)
            return True
        return False

    return fn


async def on_restarting(ops: JobOps, act: StateAction) -> None:
    """Restarting. Exits: Failed (retries used up) or Pending (enough Pods can come back)."""
    update = restarting_update(ops.job)
    if act.action == Action.SYNC_JOB:
        await ops.sync_job(update)
    elif act.action in _RESTARTS and act.target is not None:
        await ops.kill_target(act.target, update)
    else:
        await ops.kill_job(RETAIN_NONE, update)


async def on_aborting(ops: JobOps, act: StateAction) -> None:
    """Aborting. Exits: Restarting (ResumeJob, retryCount++); Aborted once no live Pods remain."""
    if act.action == Action.RESUME_JOB:
        await ops.kill_job(RETAIN_SOFT, _set(JobPhase.RESTARTING, retry=True))
    else:
        await ops.kill_job(RETAIN_SOFT, _when_no_live_pods(JobPhase.ABORTED))


async def on_aborted(ops: JobOps, act: StateAction) -> None:
    """Aborted. Exits: Restarting (ResumeJob, retryCount++); otherwise stays."""
    if act.action == Action.RESUME_JOB:
        await ops.kill_job(RETAIN_SOFT, _set(JobPhase.RESTARTING, retry=True))
    else:
        await ops.kill_job(RETAIN_SOFT, None)


async def on_completing(ops: JobOps, act: StateAction) -> None:
    """Completing. Exit: Completed once no live Pods remain."""
    await ops.kill_job(RETAIN_SOFT, _when_no_live_pods(JobPhase.COMPLETED))


async def on_terminating(ops: JobOps, act: StateAction) -> None:
    """Terminating. Exit: Terminated once no live Pods remain."""
    await ops.kill_job(RETAIN_SOFT, _when_no_live_pods(JobPhase.TERMINATED))


async def on_finished(ops: JobOps, act: StateAction) -> None:
    """Completed / Terminated / Failed: final; live Pods are cleaned up, the phase never changes."""
    await ops.kill_job(RETAIN_SOFT, None)


JOB_STEPS: dict[JobPhase, Step] = {
    JobPhase.PENDING: on_pending,
    JobPhase.RUNNING: on_running,
    JobPhase.RESTARTING: on_restarting,
    JobPhase.ABORTING: on_aborting,
    JobPhase.ABORTED: on_aborted,
    JobPhase.COMPLETING: on_completing,
    JobPhase.COMPLETED: on_finished,
    JobPhase.TERMINATING: on_terminating,
    JobPhase.TERMINATED: on_finished,
    JobPhase.FAILED: on_finished,
}


def step_for(phase: str) -> Step:
    """The step of ``phase``; an empty or unknown phase is treated as Pending (upstream NewState)."""
    return JOB_STEPS.get(phase, on_pending)  # type: ignore[call-overload]  # a StrEnum key hashes as its value


FINISHED: frozenset[str] = frozenset({JobPhase.COMPLETED, JobPhase.TERMINATED, JobPhase.FAILED})
