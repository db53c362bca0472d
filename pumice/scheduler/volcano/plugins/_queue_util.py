"""Helpers shared by the queue-quota plugins (proportion, capacity, overcommit).

Mirrors: volcano pkg/scheduler/plugins/util/util.go GetInqueueResource and job_info.go
GetElasticResources, DeductSchGatedResources.
"""

from __future__ import annotations

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.resource import CPU, MEMORY, Resource, exceeded_part
from pumice.scheduler.volcano.api.types import ALLOCATED_STATUSES


def min_resources_list(job: JobInfo) -> dict[str, object] | None:
    return ((job.pod_group or {}).get("spec") or {}).get("minResources")


def inqueue_resource(job: JobInfo, allocated: Resource) -> Resource:
    """``max(0, minResources - allocated)`` on the dimensions minResources names."""
    names = min_resources_list(job) or {}
    mr = job.min_resources or Resource()
    cpu = mem = 0.0
    sc: dict[str, float] = {}
    for n in names:
        if n == CPU:
            cpu = max(0.0, mr.milli_cpu - allocated.milli_cpu)
        elif n == MEMORY:
            mem = max(0.0, mr.memory - allocated.memory)
        elif str(n).startswith("count/"):
            continue
        else:
            d = mr.get(str(n)) - allocated.get(str(n))
            if d > 0:
                sc[str(n)] = d
    return Resource(cpu, mem, sc)


def sch_gated_resources(job: JobInfo) -> Resource:
    out = Resource()
    for t in job.tasks.values():
        if t.sch_gated:
            out = out + t.resreq
    return out


def deduct_sch_gated(job: JobInfo, res: Resource) -> Resource:
    gated = sch_gated_resources(job)
    if gated.is_empty():
        return res
    return exceeded_part(res, gated)


def elastic_resources(job: JobInfo) -> Resource:
    return exceeded_part(job.allocated, job.min_resources or Resource())


def allocated_task_num(job: JobInfo) -> int:
    return sum(len(b) for s, b in job.task_status_index.items() if s in ALLOCATED_STATUSES)


def exact_equal(a: Resource, b: Resource) -> bool:
    return a.milli_cpu == b.milli_cpu and a.memory == b.memory and dict(a.scalars) == dict(b.scalars)


def res_max(a: Resource, b: Resource) -> Resource:
    """Per-dimension max over the union of dimensions (volcano helpers.Max)."""
    return a.max_with(b)
