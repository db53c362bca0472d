"""The Agent Scheduler's per-Pod scheduling queue: activeQ, backoffQ and the unschedulable pool.

- :meth:`SchedulingQueue.add` puts a new Pod in activeQ;
- :meth:`pop` takes the head of activeQ: urgent requeues first, then higher priority, then
  older creation time, then arrival order;
- :meth:`requeue_urgent` (a bind conflict) puts the Pod back at the head of activeQ, skipping
  backoff;
- :meth:`mark_unschedulable` parks the Pod in the pool with its attempt count;
  :meth:`on_cluster_event` moves the whole pool to backoffQ (a Node or Pod changed, the Pod may
  fit now); :meth:`flush_backoff` moves Pods whose backoff ended (1 s doubled per attempt up to
  10 s, kube-scheduler's defaults) to activeQ.

Times are seconds of the caller's clock (the project clock in the live scheduler).

Mirrors: volcano pkg/agentscheduler (scheduling queue, after kube-scheduler's
pkg/scheduler/backend/queue/scheduling_queue.go).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from pumice.scheduler.volcano.api.task_info import TaskInfo

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0


@dataclass
class QueuedPod:
    """A Pod in the queue: its task, attempts so far, and when its backoff ends (seconds)."""

    task: TaskInfo
    attempts: int = 0
    backoff_until: float = 0.0
    urgent: bool = False


@dataclass
class SchedulingQueue:
    """activeQ (a heap), backoffQ and the unschedulable pool, keyed by ``<ns>/<name>``."""

    _active: list[tuple[int, int, float, int, str]] = field(default_factory=list)
    _pods: dict[str, QueuedPod] = field(default_factory=dict)
    _in_active: set[str] = field(default_factory=set)
    backoff: dict[str, QueuedPod] = field(default_factory=dict)
    unschedulable: dict[str, QueuedPod] = field(default_factory=dict)
    _popped: dict[str, QueuedPod] = field(default_factory=dict)
    _seq: int = 0

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def active_len(self) -> int:
        return len(self._in_active)

    def _push(self, qp: QueuedPod) -> None:
        self._seq += 1
        key = qp.task.key
        heapq.heappush(self._active, (0 if qp.urgent else 1, -qp.task.priority, qp.task.creation, self._seq, key))
        self._in_active.add(key)

    def add(self, task: TaskInfo) -> bool:
        """Queue a new Pod in activeQ; False when it is already queued."""
        if task.key in self._pods:
            return False
        qp = QueuedPod(task)
        self._pods[task.key] = qp
        self._push(qp)
        return True

    def pop(self) -> TaskInfo | None:
        """The head of activeQ (removed from the queue until requeued), or None when empty."""
        while self._active:
            key = heapq.heappop(self._active)[-1]
            if key not in self._in_active:
                continue
            self._in_active.discard(key)
            qp = self._pods.pop(key)
            qp.urgent = False
            self._popped[key] = qp
            return qp.task
        return None

    def _take(self, task: TaskInfo) -> QueuedPod:
        return self._popped.pop(task.key, None) or QueuedPod(task)

    def done(self, task: TaskInfo) -> None:
        """The Pod was bound (or deleted): forget it."""
        self._popped.pop(task.key, None)
        self.forget(task.key)

    def forget(self, key: str) -> None:
        """Drop a Pod wherever it is (deleted, or bound by someone else)."""
        self._pods.pop(key, None)
        self._in_active.discard(key)
        self.backoff.pop(key, None)
        self.unschedulable.pop(key, None)

    def requeue_urgent(self, task: TaskInfo) -> None:
        """A bind conflict: back to the head of activeQ without backoff."""
        qp = self._take(task)
        qp.urgent = True
        self._pods[task.key] = qp
        self._push(qp)

    def mark_unschedulable(self, task: TaskInfo, now: float) -> None:
        """No Node fits: park the Pod in the pool; its backoff grows with each attempt."""
        qp = self._take(task)
        qp.attempts += 1
        qp.backoff_until = now + min(MAX_BACKOFF, INITIAL_BACKOFF * 2 ** (qp.attempts - 1))
        self._pods[task.key] = qp
        self.unschedulable[task.key] = qp

    def on_cluster_event(self) -> int:
        """A Node or Pod changed: move the pool to backoffQ; returns how many moved."""
        moved = len(self.unschedulable)
        self.backoff.update(self.unschedulable)
        self.unschedulable.clear()
        return moved

    def flush_backoff(self, now: float) -> int:
        """Move Pods whose backoff ended to activeQ (in key order); returns how many moved."""
        ready = sorted(k for k, qp in self.backoff.items() if qp.backoff_until <= now)
        for k in ready:
            self._push(self.backoff.pop(k))
        return len(ready)
