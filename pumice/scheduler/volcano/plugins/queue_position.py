"""queue-position: write each waiting job's place in its queue to its PodGroup status.

Pumice's extension (upstream Volcano has none). Kueue reports a pending workload's place as
``positionInClusterQueue`` / ``positionInLocalQueue`` in its visibility API
(../shared/reference/peers.md, "pending positions"); pumice writes the same idea into the
PodGroup's status as ``status.positionInQueue`` (1 = next), so ``kubectl get podgroup -o yaml``,
the UI and any client see it without a second API.

A job is *waiting* when it has a PodGroup, is not ready (fewer than ``minAvailable`` tasks placed)
and, after the session's actions, still has Pending tasks or a PodGroup still Pending (refused
at enqueue: a Volcano Job creates its Pods only once enqueued, so such a job may have none); its position is its 1-based index among
the waiting jobs of its queue in the session's job order (the configured JobOrderFns: priority,
gang, drf... then creation time and UID). A job that is not waiting has no ``positionInQueue``.
``pumice explain`` prints the same number (one implementation: :func:`queue_positions`).

Cost: one sort of the waiting jobs per queue per session, and one PodGroup status write for each
waiting job whose position changed (every job behind an admitted one moves up), which is why it
is opt-in: list ``queue-position`` in any tier. No arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cmp_to_key

from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.framework.arguments import NoArguments, parser
from pumice.scheduler.volcano.framework.session import Session

PLUGIN_NAME = "queue-position"

POSITION_FIELD = "positionInQueue"
"""PodGroup ``status`` field (pumice's extension), an int >= 1."""


def waiting(job: JobInfo) -> bool:
    """Has a PodGroup, is not ready, and still has Pending tasks or waits for enqueue (PodGroup
    phase Pending: a Volcano Job creates its Pods only once its PodGroup is enqueued, so a job
    its queue's capability holds back has none yet)."""
    return job.pod_group is not None and not job.is_ready() and (job.is_pending() or any(
        t.status is TaskStatus.Pending for t in job.tasks.values()))


def queue_positions(ssn: Session, jobs: Iterable[JobInfo] | None = None) -> dict[str, tuple[int, int]]:
    """Job uid -> (1-based position, number of waiting jobs) in its queue, for the waiting jobs
    among ``jobs`` (default: all the session's), in the session's job order."""

    def order(a: JobInfo, b: JobInfo) -> int:
        return -1 if ssn.job_order_fn(a, b) else (1 if ssn.job_order_fn(b, a) else 0)

    by_queue: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values() if jobs is None else jobs:
        if waiting(job):
            by_queue.setdefault(job.queue, []).append(job)
    out: dict[str, tuple[int, int]] = {}
    for q in sorted(by_queue):
        ordered = sorted(by_queue[q], key=cmp_to_key(order))
        for i, job in enumerate(ordered):
            out[job.uid] = (i + 1, len(ordered))
    return out


class QueuePositionPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: NoArguments) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        # declared now, set on close: a session whose close sets status fields computes every
        # job's status (Session.close)
        ssn.pod_group_status_fields[POSITION_FIELD] = {}

    def on_session_close(self, ssn: Session) -> None:
        ssn.pod_group_status_fields[POSITION_FIELD] = {uid: pos for uid, (pos, _n) in queue_positions(ssn).items()}


parse_arguments = parser(NoArguments)


def new(args: NoArguments) -> QueuePositionPlugin:
    return QueuePositionPlugin(args)
