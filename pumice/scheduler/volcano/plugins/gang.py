"""gang: all-or-nothing admission of a job's minAvailable tasks.

Registers JobValid, Preemptable/Reclaimable (never below minAvailable), UnifiedEvictable
(permits all: gang eviction keeps minAvailable through its bundles), JobOrder (not-ready
first), JobReady, JobPipelined, JobStarving (the job-level ones also require ``minSubGroups``
ready/pipelined sub-jobs per sub-group policy), SubJobOrder (not-ready first), SubJobReady,
SubJobPipelined; writes PodGroup conditions on close.

Mirrors: volcano pkg/scheduler/plugins/gang/gang.go.
"""

from __future__ import annotations

from pumice.api.volcano.constants import PodGroupConditionReason, PodGroupConditionType
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.sub_job_info import SubJobInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import ALLOCATED_STATUSES, TaskStatus, ValidateResult, Vote
from pumice.scheduler.volcano.framework.arguments import NoArguments, parser
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "gang"


class GangPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NoArguments) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        def valid(job: JobInfo) -> ValidateResult | None:
            return ssn.job_memo.job("gang.valid", job, None, _valid)

        ssn.add_job_valid_fn(PLUGIN_NAME, valid)

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            occupied: dict[str, int] = {}
            out = []
            for p in preemptees:
                job = ssn.jobs.get(p.job)
                if job is None:
                    continue
                if p.job not in occupied:
                    occupied[p.job] = job.ready_task_num()
                if occupied[p.job] > job.min_available:
                    occupied[p.job] -= 1
                    out.append(p)
            return out, Vote.PERMIT

        ssn.add_reclaimable_fn(PLUGIN_NAME, victims)
        ssn.add_preemptable_fn(PLUGIN_NAME, victims)
        # gangpreempt/gangreclaim keep minAvailable through their safe/whole bundles
        ssn.add_unified_evictable_fn(PLUGIN_NAME, lambda _ctx, cands: (cands, Vote.PERMIT))

        def job_order(l: JobInfo, r: JobInfo) -> int:  # noqa: E741
            lr, rr = l.is_ready(), r.is_ready()
            if lr and rr:
                return 0
            if lr:
                return 1
            if rr:
                return -1
            return 0

        ssn.add_job_order_fn(PLUGIN_NAME, job_order)
        ssn.add_job_ready_fn(PLUGIN_NAME, lambda j: j.check_task_ready() and j.check_sub_job_ready() and j.is_ready())
        ssn.add_job_pipelined_fn(
            PLUGIN_NAME,
            lambda j: Vote.PERMIT if j.check_task_pipelined() and j.check_sub_job_pipelined() and j.is_pipelined() else Vote.REJECT,
        )

        def sub_job_order(l: SubJobInfo, r: SubJobInfo) -> int:  # noqa: E741
            lr, rr = l.is_ready(), r.is_ready()
            if lr == rr:
                return 0
            return 1 if lr else -1

        ssn.add_sub_job_order_fn(PLUGIN_NAME, sub_job_order)
        ssn.add_sub_job_ready_fn(PLUGIN_NAME, lambda s: s.is_ready())
        ssn.add_sub_job_pipelined_fn(PLUGIN_NAME, lambda s: Vote.PERMIT if s.is_pipelined() else Vote.REJECT)
        ssn.add_job_starving_fns(PLUGIN_NAME, lambda j: j.is_starving())

    def on_session_close(self, ssn: Session) -> None:
        for job in ssn.jobs_to_close():
            if not job.tasks:
                continue
            if not job.is_ready():
                if _skip_for_releasing(job):
                    continue
                schedulable = 0
                for t in job.tasks_in(TaskStatus.Pending):
                    ctx = t.last_transaction or t.transaction_context()
                    if ctx.status in ALLOCATED_STATUSES:
                        schedulable += 1
                unready = job.min_available - (schedulable + job.ready_task_num())
                held = ssn.held_jobs.get(job.uid)  # Deviates: a job a plugin holds on purpose says why
                reason = held.reason if held is not None else PodGroupConditionReason.NOT_ENOUGH_RESOURCES.value
                fit = held.message if held is not None else job.fit_error()
                ssn.update_pod_group_condition(
                    job,
                    {
                        "type": PodGroupConditionType.UNSCHEDULABLE.value,
                        "status": "True",
                        "lastTransitionTime": ssn.now_rfc3339(),
                        "transitionID": ssn.uid,
                        "reason": reason,
                        "message": f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {fit}",
                    },
                )
            else:
                ssn.update_pod_group_condition(
                    job,
                    {
                        "type": PodGroupConditionType.SCHEDULED.value,
                        "status": "True",
                        "lastTransitionTime": ssn.now_rfc3339(),
                        "transitionID": ssn.uid,
                        "reason": "tasks in gang are ready to be scheduled",
                        "message": "",
                    },
                )


def _valid(job: JobInfo) -> ValidateResult | None:
    """Gang's JobValid verdict: enough valid Pods of each task, sub-groups and tasks in all."""
    if not job.check_task_valid():
        return ValidateResult(False, PodGroupConditionReason.NOT_ENOUGH_PODS_OF_TASK.value, "Not enough valid pods of each task for gang-scheduling")
    if not job.check_sub_job_valid():
        return ValidateResult(False, PodGroupConditionReason.NOT_ENOUGH_PODS_OF_TASK.value, "Not enough valid subGroups of each task for gang-scheduling")
    vtn = job.valid_task_num()
    if vtn < job.min_available:
        return ValidateResult(
            False,
            PodGroupConditionReason.NOT_ENOUGH_PODS.value,
            f"Not enough valid tasks for gang-scheduling, valid: {vtn}, min: {job.min_available}",
        )
    return None


def _skip_for_releasing(job: JobInfo) -> bool:
    rel = job.releasing_scheduled_task_num()
    if rel == 0:
        return False
    if job.count(TaskStatus.Pending) or job.count(TaskStatus.Pipelined):
        return False
    return job.scheduled_task_num() + rel >= job.min_available


parse_arguments = parser(NoArguments)


new = GangPlugin
