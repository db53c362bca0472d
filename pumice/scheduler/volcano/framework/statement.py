"""Statement: the scheduling transaction.

Operations change the session at once; only :meth:`Statement.commit` reaches the cache (bind,
evict); :meth:`Statement.discard` undoes them in reverse order.

Mirrors: volcano pkg/scheduler/framework/statement.go.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pumice.scheduler.volcano import metrics
from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus

if TYPE_CHECKING:
    from pumice.scheduler.volcano.framework.session import Session


class Op(enum.Enum):
    Evict = "Evict"
    Pipeline = "Pipeline"
    Allocate = "Allocate"


@dataclass
class Operation:
    name: Op
    task: TaskInfo
    reason: str = ""


class Statement:
    """A list of operations on one session."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    # ----- operations ---------------------------------------------------------------------
    def evict(self, reclaimee: TaskInfo, reason: str) -> None:
        """Mark ``reclaimee`` Releasing in the session (its node moves it into ``releasing``)."""
        self.ssn.mark_evicted(reclaimee, True)
        self.operations.append(Operation(Op.Evict, reclaimee, reason))

    def _unevict(self, reclaimee: TaskInfo) -> None:
        self.ssn.mark_evicted(reclaimee, False)

    def undo_evict(self, reclaimee: TaskInfo) -> None:
        """Take back this statement's eviction of ``reclaimee`` (a dry-run reprieve)."""
        for i in range(len(self.operations) - 1, -1, -1):
            op = self.operations[i]
            if op.name is Op.Evict and op.task is reclaimee:
                del self.operations[i]
                self._unevict(reclaimee)
                return
        raise ValueError(f"task <{reclaimee.key}> was not evicted by this statement")

    def pipeline(self, task: TaskInfo, hostname: str, eviction_occurred: bool = False) -> None:
        """Place ``task`` on ``hostname`` against resources still being released."""
        task.eviction_occurred = eviction_occurred
        self._place(task, self.ssn.nodes[hostname], TaskStatus.Pipelined, Op.Pipeline)

    def _unpipeline(self, task: TaskInfo) -> None:
        ssn = self.ssn
        job = ssn.jobs[task.job]
        job.update_task_status(task, TaskStatus.Pending)
        node = ssn.nodes.get(task.node_name)
        if node is not None and task.key in node.tasks:
            node.remove_task(task)
        ssn.fire_deallocate(task)
        task.node_name = ""
        task.eviction_occurred = False

    def try_pipeline(self, task: TaskInfo, hostname: str, eviction_occurred: bool = False) -> bool:
        """:meth:`pipeline`; when the node refuses the task, the failure is recorded on the session
        (:meth:`Session.record_error`, op ``pipeline``), this whole statement is discarded, and the
        answer is False."""
        try:
            self.pipeline(task, hostname, eviction_occurred)
        except Exception as e:
            self.ssn.record_error("pipeline", task, hostname, e)
            self.discard()
            return False
        return True

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Tentatively place ``task`` on ``node`` (Allocated; charges ``idle``)."""
        self._place(task, node, TaskStatus.Allocated, Op.Allocate)

    def _place(self, task: TaskInfo, node: NodeInfo, status: TaskStatus, op: Op) -> None:
        """Put ``task`` in ``status`` on ``node`` and record ``op``; a node that refuses the task
        (``add_task`` raises) leaves it Pending and unplaced, and the error propagates."""
        ssn = self.ssn
        job = ssn.jobs[task.job]
        job.update_task_status(task, status)
        task.node_name = node.name
        try:
            node.add_task(task)
        except Exception:
            job.update_task_status(task, TaskStatus.Pending)
            task.node_name = ""
            raise
        ssn.fire_allocate(task)
        self.operations.append(Operation(op, task))

    def _unallocate(self, task: TaskInfo) -> None:
        self._unpipeline(task)

    # ----- outcome ------------------------------------------------------------------------
    def discard(self) -> None:
        for op in reversed(self.operations):
            op.task.last_transaction = op.task.transaction_context()
            if op.name is Op.Evict:
                self._unevict(op.task)
            else:
                self._unpipeline(op.task)
        self.operations = []

    def commit(self) -> None:
        """Send every eviction and allocation to the cache, in order.

        A failed eviction or bind is logged with the Pod and the reason, counted (see
        :meth:`Session.record_error`) and undone in the session; the rest still commit.
        """
        ssn = self.ssn
        evicted = 0
        for op in self.operations:
            op.task.last_transaction = None
            if op.name is Op.Evict:
                try:
                    ssn.cache_evict(op.task, op.reason)
                    evicted += 1
                except Exception as e:
                    ssn.record_error("evict", op.task, op.reason, e)
                    self._unevict(op.task)
            elif op.name is Op.Allocate:
                try:
                    ssn.dispatch(op.task)
                except Exception as e:
                    ssn.record_error("bind", op.task, op.task.node_name, e)
                    self._unallocate(op.task)
        if evicted:
            metrics.eviction_transactions.labels(action=ssn.current_action or "session").inc()
        self.operations = []

    def merge(self, *others: Statement) -> None:
        for o in others:
            self.operations.extend(o.operations)
            o.operations = []
