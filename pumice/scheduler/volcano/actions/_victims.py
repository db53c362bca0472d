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
    pjob = ssn.jobs.get(preemptor.job)

    def less(l: TaskInfo, r: TaskInfo) -> bool:  # noqa: E741
        if l.job == r.job:
            return not ssn.task_order_fn(l, r)
        lj, rj = ssn.jobs.get(l.job), ssn.jobs.get(r.job)
        if lj is None:
            return True
        if rj is None:
            return False
        if pjob is None or lj.queue == rj.queue:
            return not ssn.job_order_fn(lj, rj)
        lq, rq, pq = ssn.queues.get(lj.queue), ssn.queues.get(rj.queue), ssn.queues.get(pjob.queue)
        if lq is None or rq is None or pq is None:
            return False
        return ssn.victim_queue_order_fn(lq, rq, pq)

    return PriorityQueue(less, victims)


def validate_victims(preemptor: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """Would the node fit ``preemptor`` once every victim is gone?"""
    future = node.future_idle() + sum_resources(v.resreq for v in victims)
    if not victims:
        return preemptor.resreq.less_equal(node.future_idle(), Dimension.ZERO)
    return preemptor.resreq.less_equal(future, Dimension.ZERO)
