"""shuffle: evict the Running tasks that victim-task plugins select.

Mirrors: volcano pkg/scheduler/actions/shuffle/shuffle.go.
"""

from __future__ import annotations

from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.framework.arguments import Configured, NoArguments
from pumice.scheduler.volcano.framework.session import Session

ACTION_NAME = "shuffle"


class ShuffleAction(Configured[NoArguments]):
    name = ACTION_NAME

    def execute(self, ssn: Session) -> None:
        tasks = [t for job in ssn.jobs.values() for t in job.tasks_in(TaskStatus.Running)]
        for v in ssn.victim_tasks(tasks):
            try:
                ssn.evict(v, "shuffle")
            except Exception as e:
                ssn.record_error("evict", v, "shuffle", e)
                continue
