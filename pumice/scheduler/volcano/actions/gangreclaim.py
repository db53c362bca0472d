"""gangreclaim: a starving job takes resources back from other, reclaimable queues so that it fits
inside one allowed HyperNode.

Mirrors: volcano pkg/scheduler/actions/gangreclaim/gangreclaim.go (the shared part is
:mod:`._gang_eviction`).
"""

from __future__ import annotations

from pumice.scheduler.volcano.actions._gang_eviction import GangEvictionArgs, run, select_reclaim
from pumice.scheduler.volcano.api.types import EvictionKind
from pumice.scheduler.volcano.framework.arguments import Configured
from pumice.scheduler.volcano.framework.session import Session

ACTION_NAME = "gangreclaim"


class GangReclaimAction(Configured[GangEvictionArgs]):
    name = ACTION_NAME
    arguments = GangEvictionArgs

    def execute(self, ssn: Session) -> None:
        run(ssn, EvictionKind.GANG_RECLAIM, self.args, select_reclaim)
