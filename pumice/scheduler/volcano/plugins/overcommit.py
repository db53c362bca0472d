"""overcommit: a cluster-wide enqueue gate (total × factor − used must hold the inqueue sum).

Mirrors: volcano pkg/scheduler/plugins/overcommit/overcommit.go.
"""

from __future__ import annotations

from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.resource import Resource, sum_resources
from pumice.scheduler.volcano.api.types import Vote
from pumice.scheduler.volcano.framework.arguments import Arguments, arg, parser
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins._queue_util import (
    allocated_task_num,
    deduct_sch_gated,
    inqueue_resource,
    min_resources_list,
)

PLUGIN_NAME = "overcommit"
DEFAULT_FACTOR = 1.2


class OvercommitArgs(Arguments, frozen=True):
    lenient_types = True  # upstream reads these with GetInt/GetBool/...: a wrong type keeps the default
    factor: float = arg("overcommit-factor", DEFAULT_FACTOR)


class OvercommitPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: OvercommitArgs) -> None:
        self.factor = args.factor if args.factor >= 1.0 else DEFAULT_FACTOR
        self.idle = Resource()
        self.inqueue = Resource()

    def on_session_open(self, ssn: Session) -> None:
        used = ssn.node_sums("overcommit.used", _used)
        if used is None:
            used = sum_resources(n.used for n in ssn.node_list)
        self.idle = ssn.total_resource.multi(self.factor) - used
        memo = ssn.job_memo

        def entry(job: JobInfo) -> tuple[None, tuple[Resource | None], bool]:
            return None, (memo.job("overcommit.inqueue", job, None, _inqueue_part),), True

        running = ssn.job_sums("overcommit.inqueue", 1, entry)
        got = None if running is None else running.sums(None)
        if got is not None:
            # the fold below from Resource() equals sum_resources of the parts float for float
            self.inqueue = got[0]
        else:
            self.inqueue = Resource()
            for job in ssn.jobs.values():
                add = memo.job("overcommit.inqueue", job, None, _inqueue_part)
                if add is not None:
                    self.inqueue = self.inqueue + add

        def enqueueable(job: JobInfo) -> int:
            if min_resources_list(job) is None:
                return Vote.PERMIT
            min_req = job.min_resources or Resource()
            ok, names = (self.inqueue + min_req).less_equal_in_request_dims(self.idle, min_req)
            if ok:
                return Vote.PERMIT
            ssn.record_pod_group_event(
                job, "Normal", "Unschedulable", "resource in cluster is overused: " + ", ".join(f"overused {n}" for n in names)
            )
            return Vote.REJECT

        ssn.add_job_enqueueable_fn(PLUGIN_NAME, enqueueable)

        def enqueued(job: JobInfo) -> None:
            if min_resources_list(job) is None:
                return
            self.inqueue = self.inqueue + deduct_sch_gated(job, job.min_resources or Resource())

        ssn.add_job_enqueued_fn(PLUGIN_NAME, enqueued)

    def on_session_close(self, ssn: Session) -> None:
        self.idle = Resource()
        self.inqueue = Resource()


def _used(node: NodeInfo) -> Resource:
    return node.used


def _inqueue_part(job: JobInfo) -> Resource | None:
    """What ``job`` adds to the inqueue sum (an Inqueue job's, or a Running job's with its gang
    allocated: minResources less what is allocated), None when nothing. An exactly-zero part is
    None too: the sum starts at +0.0 and only adds parts >= 0 (see ``inqueue_resource``), so
    adding 0.0 leaves every float and the scalar names as they were."""
    if min_resources_list(job) is None:
        return None
    part: Resource | None = None
    if job.phase == PodGroupPhase.INQUEUE:
        part = deduct_sch_gated(job, inqueue_resource(job, job.allocated))
    else:
        min_member = int(((job.pod_group or {}).get("spec") or {}).get("minMember") or 0)
        if job.phase == PodGroupPhase.RUNNING and allocated_task_num(job) >= min_member:
            part = deduct_sch_gated(job, inqueue_resource(job, job.allocated))
    if part is None or (part.milli_cpu == 0.0 and part.memory == 0.0 and not part.scalars):
        return None
    return part


parse_arguments = parser(OvercommitArgs)


new = OvercommitPlugin
