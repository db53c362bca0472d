"""gangpreempt: a starving job evicts lower-priority gangs of its own queue so that it fits inside one allowed HyperNode.

Mirrors: volcano pkg/scheduler/actions/gangpreempt/gangpreempt.go (the shared part is
:mod:`._gang_eviction`).
"""

from __future__ import annotations

from pumice.scheduler.volcano.actions._gang_eviction import GangEvictionArgs, run, select_preempt
from pumice.scheduler.volcano.api.types import EvictionKind
from pumice.scheduler.volcano.framework.arguments import Configured
from pumice.scheduler.volcano.framework.session import Session

ACTION_NAME = "gangpreempt"


class GangPreemptAction(Configured[GangEvictionArgs]):
    name = ACTION_NAME
    arguments = GangEvictionArgs

    def execute(self, ssn: Session) -> None:
        run(ssn, EvictionKind.GANG_PREEMPT, self.args, select_preempt)
