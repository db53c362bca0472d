"""The scheduling queue: activeQ, backoffQ and unschedulablePods, keyed by Pod uid.

- ``activeQ`` pops the highest ``spec.priority`` first, then the earliest enqueued;
- a Pod that failed goes to ``unschedulablePods`` and waits for a cluster change (Node added or
  updated, assigned Pod deleted) or 5 minutes; when the change arrived while it was being tried,
  it goes to ``backoffQ`` directly;
- :meth:`SchedulingQueue.requeue_urgent` (Volcano's agent scheduler, a bind conflict) puts a Pod
  back at the head of ``activeQ``, ahead of every priority, skipping backoff;
- leaving ``unschedulablePods`` goes through ``backoffQ`` while the Pod's backoff (1 s doubling
  per attempt, at most 10 s) has not expired.

Time comes from the injected clock's ``monotonic()`` (seconds).

Mirrors: kubernetes pkg/scheduler/backend/queue/scheduling_queue.go (PriorityQueue,
podInitialBackoffDuration 1 s, podMaxBackoffDuration 10 s, podMaxInUnschedulablePodsDuration 5 min,
moveRequestCycle). Deviates: every cluster change moves every unschedulable Pod (no per-plugin
queueing hints).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from dataclasses import dataclass, field

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_IN_UNSCHEDULABLE = 300.0


@dataclass
class QueuedPod:
    uid: str
    namespace: str
    name: str
    priority: int = 0
    attempts: int = 0
    last_failure: float = 0.0
    enqueued: float = 0.0
    cycle: int = 0


@dataclass
class SchedulingQueue:
    """Pending Pods waiting for a scheduling attempt (see module docstring)."""

    _active: list[tuple[float, float, int, str]] = field(default_factory=list)
    _in_active: set[str] = field(default_factory=set)
    _backoff: dict[str, float] = field(default_factory=dict)
    _unschedulable: dict[str, float] = field(default_factory=dict)
    _pods: dict[str, QueuedPod] = field(default_factory=dict)
    _in_flight: set[str] = field(default_factory=set)
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    _cycle: int = 0
    _move_request_cycle: int = -1
    _wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    _parked: asyncio.Event = field(default_factory=asyncio.Event)

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    @property
    def active_count(self) -> int:
        return len(self._in_active)

    @property
    def unschedulable_count(self) -> int:
        return len(self._unschedulable)

    @property
    def backoff_count(self) -> int:
        return len(self._backoff)

    def _push_active(self, qp: QueuedPod, now: float) -> None:
        if qp.uid in self._in_active:
            return
        self._backoff.pop(qp.uid, None)
        self._unschedulable.pop(qp.uid, None)
        qp.enqueued = now
        heapq.heappush(self._active, (-qp.priority, now, next(self._seq), qp.uid))
        self._in_active.add(qp.uid)
        self._wakeup.set()

    def backoff_duration(self, attempts: int) -> float:
        return min(MAX_BACKOFF, INITIAL_BACKOFF * (2 ** max(0, attempts - 1)))

    def _backoff_expiry(self, qp: QueuedPod) -> float:
        return qp.last_failure + self.backoff_duration(qp.attempts)

    # -- events -------------------------------------------------------------------------------
    def add(self, uid: str, namespace: str, name: str, priority: int, now: float) -> None:
        """A new pending Pod (or one whose spec changed): straight to activeQ unless backing off."""
        qp = self._pods.get(uid)
        if qp is None:
            qp = self._pods[uid] = QueuedPod(uid, namespace, name, priority)
            self._push_active(qp, now)
            return
        if uid in self._in_flight or uid in self._in_active:
            return
        if uid in self._unschedulable:
            self._unschedulable.pop(uid)
            self._requeue(qp, now)

    def _requeue(self, qp: QueuedPod, now: float) -> None:
        if qp.attempts and self._backoff_expiry(qp) > now:
            self._backoff[qp.uid] = self._backoff_expiry(qp)
            self._parked.set()
        else:
            self._push_active(qp, now)

    def delete(self, uid: str) -> None:
        """The Pod is gone or was bound by someone: forget it (a stale heap entry is skipped)."""
        self._pods.pop(uid, None)
        self._in_active.discard(uid)
        self._backoff.pop(uid, None)
        self._unschedulable.pop(uid, None)

    def move_all_to_active_or_backoff(self, now: float) -> None:
        """A cluster change that may make unschedulable Pods fit (MoveAllToActiveOrBackoffQueue)."""
        self._move_request_cycle = self._cycle
        for uid in list(self._unschedulable):
            self._unschedulable.pop(uid)
            qp = self._pods.get(uid)
            if qp is not None:
                self._requeue(qp, now)

    def failed(self, uid: str, now: float) -> None:
        """An attempt for ``uid`` found no Node (or its bind failed)."""
        self._in_flight.discard(uid)
        qp = self._pods.get(uid)
        if qp is None:
            return
        qp.attempts += 1
        qp.last_failure = now
        if self._move_request_cycle >= qp.cycle:
            self._backoff[uid] = self._backoff_expiry(qp)
        else:
            self._unschedulable[uid] = now
        self._parked.set()

    def requeue_urgent(self, uid: str, now: float) -> None:
        """An attempt for ``uid`` lost a bind conflict: back to the head of activeQ, no backoff
        (volcano pkg/agentscheduler: the conflicting Pod is re-queued with urgent priority)."""
        self._in_flight.discard(uid)
        qp = self._pods.get(uid)
        if qp is None or uid in self._in_active:
            return
        self._backoff.pop(uid, None)
        self._unschedulable.pop(uid, None)
        qp.enqueued = now
        heapq.heappush(self._active, (-math.inf, now, next(self._seq), uid))
        self._in_active.add(uid)
        self._wakeup.set()

    def done(self, uid: str) -> None:
        """An attempt for ``uid`` ended with an assumed Node: the Pod leaves the queue."""
        self._in_flight.discard(uid)
        self._pods.pop(uid, None)

    async def wait_parked(self) -> None:
        """Return once a Pod is in backoffQ or unschedulablePods (at once if one is): until then
        :meth:`flush` has nothing to move, so the flush loop need not wake every second."""
        while not (self._backoff or self._unschedulable):
            self._parked.clear()
            await self._parked.wait()

    def flush(self, now: float) -> None:
        """Move expired backoffs to activeQ and long-unschedulable Pods out (run every second)."""
        for uid, expiry in list(self._backoff.items()):
            if expiry <= now:
                qp = self._pods.get(uid)
                self._backoff.pop(uid)
                if qp is not None:
                    self._push_active(qp, now)
        for uid, since in list(self._unschedulable.items()):
            if now - since >= MAX_IN_UNSCHEDULABLE:
                self._unschedulable.pop(uid)
                qp = self._pods.get(uid)
                if qp is not None:
                    self._requeue(qp, now)

    def pop_nowait(self) -> QueuedPod | None:
        while self._active:
            _, _, _, uid = heapq.heappop(self._active)
            if uid not in self._in_active:
                continue
            self._in_active.discard(uid)
            qp = self._pods.get(uid)
            if qp is None:
                continue
            self._cycle += 1
            qp.cycle = self._cycle
            self._in_flight.add(uid)
            return qp
        self._wakeup.clear()
        return None

    async def pop(self) -> QueuedPod:
        """Wait for the next Pod in activeQ."""
        while True:
            qp = self.pop_nowait()
            if qp is not None:
                return qp
            await self._wakeup.wait()
