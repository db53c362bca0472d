"""usage-budget: quota over time, e.g. GPU-hours per period per queue.

Pumice's extension: neither upstream Volcano nor Kueue has it (Kueue issue #28, "budgets", see
../shared/reference/peers.md section 2.2). A Queue annotated

    scheduling.pumice.io/usage-budget: '{"nvidia.com/gpu": 100}'

may use at most 100 GPU-hours (cores for cpu, GiB for memory, whole units otherwise, times hours)
in any rolling window of ``usageBudget.periodSeconds`` ending now. Usage is read from the queue's
Pods (request x run time inside the window, :mod:`._usage`), running and finished ones still
present. A queue that has spent a resource's budget admits no new job asking for that resource
(JobEnqueueableFn votes Reject with a Normal Event ``Unschedulable`` "queue <q> used <u> of its
<b> <resource>-hours budget in the last <h>h") and allocates no task asking for it
(AllocatableFn). Jobs not asking for an exhausted resource are not affected; running Pods are not
evicted (the budget can be overrun by what is already running, as a monthly cloud budget is).

A Queue whose annotation does not parse admits nothing; its jobs get a Warning Event
``InvalidQueueAnnotation``.

Arguments: ``usageBudget.periodSeconds`` (default 2592000, 30 days).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus, Vote
from pumice.scheduler.volcano.framework.arguments import ArgumentError, Arguments, arg, decode
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins._usage import task_usage, units, window_seconds

PLUGIN_NAME = "usage-budget"
USAGE_BUDGET_ANNOTATION = "scheduling.pumice.io/usage-budget"

log = logging.getLogger(__name__)


class UsageBudgetArguments(Arguments, frozen=True):
    period_seconds: float = arg("usageBudget.periodSeconds", 2592000.0)


def budget_of(q: QueueInfo) -> dict[str, float] | None:
    """The queue's budget in unit-hours per resource name, or None without the annotation.

    Raises:
        ValueError: the annotation is not a JSON object of non-negative numbers.
    """
    raw = ((q.queue.get("metadata") or {}).get("annotations") or {}).get(USAGE_BUDGET_ANNOTATION)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{USAGE_BUDGET_ANNOTATION}: not JSON: {e}") from e
    if not isinstance(value, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in value.values()):
        raise ValueError(f"{USAGE_BUDGET_ANNOTATION}: want a JSON object of non-negative hours, got {raw!r}")
    return {str(k): float(v) for k, v in value.items()}


def exhausted(budget: Mapping[str, float], used_hours: Mapping[str, float], request: Resource) -> list[str]:
    """The resources ``request`` asks for whose budget ``used_hours`` has reached."""
    asked = units(request)
    return sorted(n for n, b in budget.items() if asked.get(n, 0.0) > 0 and used_hours.get(n, 0.0) >= b - 1e-9)


class UsageBudgetPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: UsageBudgetArguments) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        now = ssn.now
        since = now - self.args.period_seconds
        budgets: dict[str, dict[str, float]] = {}
        invalid: dict[str, str] = {}
        for name in sorted(ssn.queues):
            try:
                b = budget_of(ssn.queues[name])
            except ValueError as e:
                log.error("usage-budget: Queue %s: %s", name, e)
                invalid[name] = str(e)
                continue
            if b is not None:
                budgets[name] = b
        used: dict[str, dict[str, float]] = {q: {} for q in budgets}

        def seconds(start: float, end: float) -> float:
            return window_seconds(start, end, since, now)

        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            if job.queue not in budgets:
                continue
            try:
                u = task_usage(job.tasks.values(), now, seconds)
            except ValueError as e:
                ssn.record_pod_group_event(job, "Warning", "InvalidPodTimestamp", f"{PLUGIN_NAME}: usage not counted: {e}")
                continue
            acc = used[job.queue]
            for n, v in u.items():
                acc[n] = acc.get(n, 0.0) + v / 3600.0

        def job_request(job: JobInfo) -> Resource:
            out = Resource()
            for t in job.tasks_in(TaskStatus.Pending):
                out = out.max_with(t.resreq)
            return out

        def enqueueable(job: JobInfo) -> int:
            if job.queue in invalid:
                ssn.record_pod_group_event(job, "Warning", "InvalidQueueAnnotation", f"Queue {job.queue}: {invalid[job.queue]}")
                return Vote.REJECT
            b = budgets.get(job.queue)
            if b is None:
                return Vote.ABSTAIN
            names = exhausted(b, used[job.queue], job_request(job))
            if not names:
                return Vote.ABSTAIN
            hours = self.args.period_seconds / 3600.0
            ssn.record_pod_group_event(job, "Normal", "Unschedulable", "; ".join(
                f"queue {job.queue} used {used[job.queue].get(n, 0.0):g} of its {b[n]:g} {n}-hours budget in the last {hours:g}h"
                for n in names))
            return Vote.REJECT

        def allocatable(q: QueueInfo, task: TaskInfo) -> bool:
            if q.name in invalid:
                return False
            b = budgets.get(q.name)
            return b is None or not exhausted(b, used[q.name], task.resreq)

        ssn.add_job_enqueueable_fn(PLUGIN_NAME, enqueueable)
        ssn.add_allocatable_fn(PLUGIN_NAME, allocatable)

    def on_session_close(self, ssn: Session) -> None:
        pass


def parse_arguments(arguments: Mapping[str, Any]) -> UsageBudgetArguments:
    """Decode the arguments; raises ArgumentError for a wrong type (unknown keys are ignored with a warning) or a period
    that is not positive."""
    a = decode(UsageBudgetArguments, arguments)
    if a.period_seconds <= 0:
        raise ArgumentError(f"usageBudget.periodSeconds: must be positive, got {a.period_seconds!r}")
    return a


new = UsageBudgetPlugin
