"""admission-fair-sharing: queues that used less recently go first.

Pumice's extension (upstream Volcano orders queues by current share only); it follows Kueue's
Admission Fair Sharing (kueue concepts/admission_fair_sharing.md, ``usageHalfLifeTime``,
``resourceWeights``; see ../shared/reference/peers.md section 1.2). A queue's score is its past
usage, decayed with a half-life, divided by its ``spec.weight``:

    score(q) = sum over q's Pods and resources of units(request) * weight(resource)
               * integral over the Pod's run of 2^(-(now - t) / usageHalfLifeTime) dt  / weight(q)

(cores, GiB and whole units; unit-seconds; :mod:`._usage`). The queue order callback puts the
lower score first; equal scores leave the order to the next plugin. Every task allocated in this
session adds ``units * weight * entryPenaltySeconds`` to its queue's score (Kueue's entry
penalty), so one session does not hand everything to the queue that was idle longest.

Usage is read from the Pods present (running ones and finished ones not yet deleted), not sampled
and stored as Kueue does; a deleted Pod's usage is forgotten.

Arguments: ``admissionFairSharing.usageHalfLifeTime`` (seconds, default 604800 = 168h, Kueue's
example; 0 = no decay), ``admissionFairSharing.entryPenaltySeconds`` (default 300, Kueue's default
sampling interval), ``admissionFairSharing.resourceWeights`` (resource name -> weight, default 1
for every resource).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.framework.arguments import ArgumentError, Arguments, arg, decode
from pumice.scheduler.volcano.framework.interface import Event, EventHandler
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins._usage import decayed_seconds, task_usage, units, weighted

PLUGIN_NAME = "admission-fair-sharing"


class AdmissionFairSharingArguments(Arguments, frozen=True):
    usage_half_life_time: float = arg("admissionFairSharing.usageHalfLifeTime", 604800.0)
    entry_penalty_seconds: float = arg("admissionFairSharing.entryPenaltySeconds", 300.0)
    resource_weights: dict[str, float] = msgspec.field(default_factory=dict, name="admissionFairSharing.resourceWeights")


class AdmissionFairSharingPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: AdmissionFairSharingArguments) -> None:
        self.args = args
        self.usage: dict[str, float] = {}

    def task_weight(self, task: TaskInfo) -> float:
        return weighted(units(task.resreq), self.args.resource_weights, 1.0)

    def on_session_open(self, ssn: Session) -> None:
        a = self.args
        now = ssn.now

        def seconds(start: float, end: float) -> float:
            return decayed_seconds(start, end, now, a.usage_half_life_time)

        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            try:
                used = task_usage(job.tasks.values(), now, seconds)
            except ValueError as e:
                ssn.record_pod_group_event(job, "Warning", "InvalidPodTimestamp", f"{PLUGIN_NAME}: usage not counted: {e}")
                continue
            self.usage[job.queue] = self.usage.get(job.queue, 0.0) + weighted(used, a.resource_weights, 1.0)

        def score(q: QueueInfo) -> float:
            return self.usage.get(q.name, 0.0) / max(q.weight, 1)

        def queue_order(l: QueueInfo, r: QueueInfo) -> int:  # noqa: E741
            ls, rs = score(l), score(r)
            if abs(ls - rs) <= 1e-9:
                return 0
            return -1 if ls < rs else 1

        def on_allocate(ev: Event) -> None:
            job = ssn.jobs.get(ev.task.job)
            if job is not None:
                self.usage[job.queue] = self.usage.get(job.queue, 0.0) + self.task_weight(ev.task) * a.entry_penalty_seconds

        def on_deallocate(ev: Event) -> None:
            job = ssn.jobs.get(ev.task.job)
            if job is not None:
                self.usage[job.queue] = self.usage.get(job.queue, 0.0) - self.task_weight(ev.task) * a.entry_penalty_seconds

        ssn.add_queue_order_fn(PLUGIN_NAME, queue_order)
        ssn.add_event_handler(EventHandler(allocate_func=on_allocate, deallocate_func=on_deallocate))

    def on_session_close(self, ssn: Session) -> None:
        self.usage.clear()


def parse_arguments(arguments: Mapping[str, Any]) -> AdmissionFairSharingArguments:
    """Decode the arguments; raises ArgumentError for a wrong type (unknown keys are ignored with a warning) or a negative
    number."""
    a = decode(AdmissionFairSharingArguments, arguments)
    for key, v in (("admissionFairSharing.usageHalfLifeTime", a.usage_half_life_time),
                   ("admissionFairSharing.entryPenaltySeconds", a.entry_penalty_seconds),
                   *((f"admissionFairSharing.resourceWeights.{n}", w) for n, w in sorted(a.resource_weights.items()))):
        if v < 0:
            raise ArgumentError(f"{key}: must not be negative, got {v!r}")
    return a


new = AdmissionFairSharingPlugin
