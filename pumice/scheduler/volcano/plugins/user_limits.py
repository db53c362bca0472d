"""user-limits: per-user caps on applications and resources in a queue.

Pumice's extension after YuniKorn's queue ``limits`` (yunikorn user_guide/queue_config.md:
``users``, ``maxapplications``, ``maxresources``; see ../shared/reference/peers.md section 1.2).
Argument ``userLimits.limits`` is a list of limits; each names ``users`` (a user name or ``*``
for every user, each user counted on their own), an optional ``queue`` (empty: every queue, each
on its own) and ``maxApplications`` (0: no cap) and/or ``maxResources`` (a ResourceList; only the
resources named are capped). For a job of user U in queue Q, every matching limit applies:

* enqueue: U's admitted jobs in Q (PodGroups Inqueue or Running, and the ones admitted this
  session) must be fewer than ``maxApplications``, else the job stays Pending with a Normal Event
  ``Unschedulable`` "user <U> has <n> of at most <m> applications in queue <Q>";
* allocate: what U's tasks in Q hold plus the task must stay within ``maxResources``.

A job's user is YuniKorn's ``yunikorn.apache.org/user.info`` annotation (see the placement
plugin); a job without one is not limited. No group limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from pumice.api.quantity import QuantityError
from pumice.api.volcano.constants import PodGroupPhase
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import PODS, Resource, exceeded_part
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import ALLOCATED_STATUSES, Vote
from pumice.scheduler.volcano.framework.arguments import ArgumentError, Arguments, decode
from pumice.scheduler.volcano.framework.interface import Event, EventHandler
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.plugins.placement import job_user

PLUGIN_NAME = "user-limits"


class Limit(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    users: tuple[str, ...]
    queue: str = ""
    max_applications: int = msgspec.field(default=0, name="maxApplications")
    max_resources: dict[str, str] = msgspec.field(default_factory=dict, name="maxResources")


class UserLimitsArguments(Arguments, frozen=True):
    limits: tuple[Limit, ...] = msgspec.field(default=(), name="userLimits.limits")


def matching(limits: tuple[Limit, ...], user: str, queue: str) -> list[Limit]:
    """The limits that apply to ``user`` in ``queue`` (none for an unknown user)."""
    if not user:
        return []
    return [lim for lim in limits if (user in lim.users or "*" in lim.users) and lim.queue in ("", queue)]


class UserLimitsPlugin:
    name = PLUGIN_NAME

    def __init__(self, args: UserLimitsArguments) -> None:
        self.args = args
        self.max_res = [Resource.from_list(lim.max_resources) for lim in args.limits]

    def on_session_open(self, ssn: Session) -> None:
        users: dict[str, str] = {}
        apps: dict[tuple[str, str], int] = {}
        held: dict[tuple[str, str], Resource] = {}
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            try:
                users[uid] = job_user(job)
            except ValueError as e:
                ssn.record_pod_group_event(job, "Warning", "InvalidUserInfo", str(e))
                users[uid] = ""
            key = (users[uid], job.queue)
            if job.phase in (PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING):
                apps[key] = apps.get(key, 0) + 1
            for s in ALLOCATED_STATUSES:
                for t in job.task_status_index.get(s, {}).values():
                    held[key] = held.get(key, Resource()) + t.resreq

        def enqueueable(job: JobInfo) -> int:
            user = users.get(job.uid, "")
            n = apps.get((user, job.queue), 0)
            for lim in matching(self.args.limits, user, job.queue):
                if lim.max_applications and n >= lim.max_applications:
                    ssn.record_pod_group_event(
                        job, "Normal", "Unschedulable",
                        f"user {user} has {n} of at most {lim.max_applications} applications in queue {job.queue}")
                    return Vote.REJECT
            return Vote.ABSTAIN

        def enqueued(job: JobInfo) -> None:
            key = (users.get(job.uid, ""), job.queue)
            apps[key] = apps.get(key, 0) + 1

        def allocatable(q: QueueInfo, task: TaskInfo) -> bool:
            job = ssn.jobs.get(task.job)
            if job is None:
                return True
            user = users.get(job.uid, "")
            after = held.get((user, q.name), Resource()) + task.resreq
            for lim in matching(self.args.limits, user, q.name):
                cap = self.max_res[self.args.limits.index(lim)]
                for n in lim.max_resources:
                    if n != PODS and task.resreq.get(n) > 0 and after.get(n) > cap.get(n) + 1e-9:
                        return False
            return True

        def account(ev: Event, sign: int) -> None:
            job = ssn.jobs.get(ev.task.job)
            if job is None:
                return
            key = (users.get(job.uid, ""), job.queue)
            cur = held.get(key, Resource())
            held[key] = cur + ev.task.resreq if sign > 0 else exceeded_part(cur, ev.task.resreq)

        ssn.add_job_enqueueable_fn(PLUGIN_NAME, enqueueable)
        ssn.add_job_enqueued_fn(PLUGIN_NAME, enqueued)
        ssn.add_allocatable_fn(PLUGIN_NAME, allocatable)
        ssn.add_event_handler(EventHandler(allocate_func=lambda ev: account(ev, 1), deallocate_func=lambda ev: account(ev, -1)))

    def on_session_close(self, ssn: Session) -> None:
        pass


def parse_arguments(arguments: Mapping[str, Any]) -> UserLimitsArguments:
    """Decode the arguments; raises ArgumentError for a wrong type (unknown keys are ignored with a warning), a limit
    without users, a negative maxApplications or a maxResources value that is no quantity."""
    a = decode(UserLimitsArguments, arguments)
    for i, lim in enumerate(a.limits):
        where = f"userLimits.limits[{i}]"
        if not lim.users:
            raise ArgumentError(f"{where}.users: must name at least one user or *")
        if lim.max_applications < 0:
            raise ArgumentError(f"{where}.maxApplications: must not be negative, got {lim.max_applications}")
        try:
            Resource.from_list(lim.max_resources)
        except QuantityError as e:
            raise ArgumentError(f"{where}.maxResources: {e}") from e
    return a


new = UserLimitsPlugin
