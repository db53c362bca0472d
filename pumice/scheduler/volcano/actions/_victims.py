"""Victim ordering and validation shared by preempt and reclaim.

Mirrors: volcano pkg/scheduler/framework/session_plugins.go BuildVictimsPriorityQueue and
actions/utils ValidateVictims.
"""

from __future__ import annotations

from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.resource import Dimension, sum_resources
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.framework.session import Session
from pumice.scheduler.volcano.framework.util import PriorityQueue


def victims_queue(ssn: Session, victims: list[TaskInfo], preemptor: TaskInfo) -> PriorityQueue[TaskInfo]:
    """See :meth:`Session.build_victims_priority_queue`."""
    return ssn.build_victims_priority_queue(victims, preemptor)


def validate_victims(preemptor: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """Would the node fit ``preemptor`` once every victim is gone?"""
    future = node.future_idle() + sum_resources(v.resreq for v in victims)
    if not victims:
        return preemptor.resreq.less_equal(node.future_idle(), Dimension.ZERO)
    return preemptor.resreq.less_equal(future, Dimension.ZERO)
