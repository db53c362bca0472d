"""The live Agent Scheduler: the batch scheduler's informer cache, an event-driven loop, workers
and the conflict-aware binder of :mod:`.core`.

Every Pod or Node event marks the view dirty. :meth:`LiveAgentScheduler.run` starts the
:class:`~pumice.scheduler.volcano.agent.core.WorkerPool` (``workers`` threads) and, on the event
loop, acts as refresher and binder: when dirty it queues the new Pending Pods of this
``schedulerName`` and, while Pods are queued, rebuilds the view from the cache (the snapshot of
:class:`SchedulerCache`, assumed binds included, hard sharding honoured; a Node whose set of Pods
changed gets a new binding version, and the unschedulable pool moves to backoffQ); each result a
worker thread hands over is resolved after such a refresh, so a bind by another scheduler that
arrived while the worker computed makes it stale (urgent requeue). Binds go through the cache
(assumed, then the API bind); the NodeShard's ``status.nodesInUse`` is published after each
batch of results and when idle (sharding modes hard and soft); a Pod that fits nowhere gets
``PodScheduled=False``, reason ``Unschedulable``, with Volcano's per-Node histogram
(``0/2 nodes are unavailable: 2 Insufficient cpu.``) and a Warning ``FailedScheduling`` Event
when that condition changes. :meth:`LiveAgentScheduler.run_round` is one
deterministic round without threads (tests).

Mirrors: volcano pkg/agentscheduler (scheduler.go, cache), cmd/agent-scheduler.
Deviates: the view is rebuilt from the whole cache when anything changed (no incremental
snapshot); the API server does not refuse a bind to a full Node, so a batch bind that lands
between the last rebuild and the agent's bind can still overcommit, as upstream without kubelet
admission would.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pumice._util.clock import Clock, LoopClock
from pumice.client.base import KubeClient
from pumice.scheduler.volcano.agent.core import (
    AGENT_SCHEDULER_NAME,
    AgentScheduler,
    AgentView,
    ScheduleResult,
    StepReport,
    WorkerPool,
)
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.cache.live import SchedulerCache

log = logging.getLogger("pumice.scheduler.volcano.agent")


class LiveAgentScheduler:
    """The Agent Scheduler against a KubeClient.

    Args:
        client: the KubeClient (``bind`` and ``patch`` used).
        scheduler_name: Pods with this ``schedulerName`` are scheduled (upstream default
            ``agent-scheduler``).
        workers: upstream's ``--scheduler-worker-count``.
        clock: time source (default: the loop clock).
        sharding_mode, shard_name: ``none``, ``hard`` (only the NodeShard's Nodes) or ``soft``
            (its Nodes first, the others when none of them fits).
        idle_wait: seconds to wait for an event when nothing is queued (backoff flush cadence).
    """

    def __init__(self, client: KubeClient, *, scheduler_name: str = AGENT_SCHEDULER_NAME, workers: int = 1,
                 clock: Clock | None = None, sharding_mode: str = "none", shard_name: str | None = None,
                 idle_wait: float = 0.5) -> None:
        self.clock: Clock = clock or LoopClock()
        self.scheduler_name = scheduler_name
        self.cache = SchedulerCache(client, clock=self.clock, scheduler_name=scheduler_name, sharding_mode=sharding_mode,
                                    shard_name=shard_name)
        self.idle_wait = idle_wait
        self._dirty = asyncio.Event()
        self._signatures: dict[str, frozenset[str]] = {}
        self._versions: dict[str, int] = {}
        self.core = AgentScheduler(self._build_view(), self.cache.bind, workers=workers)
        # claims, volumes and classes too: VolumeBinding may let a parked Pod in once its claim binds
        for kind in ("Pod", "Node", "PersistentVolumeClaim", "PersistentVolume", "StorageClass"):
            self.cache.informers[kind].add_event_handler(self._mark, lambda _o, _n: self._dirty.set(), self._mark)

    def _mark(self, _obj: Any) -> None:
        self._dirty.set()

    def _build_view(self) -> AgentView:
        snap = self.cache.snapshot()
        view = AgentView(snap, preferred=self.cache.preferred_nodes)
        core: AgentScheduler | None = getattr(self, "core", None)
        if core is not None:
            for name, v in core.view.versions.items():
                self._versions[name] = max(self._versions.get(name, 0), v)
        for name, node in view.cluster.nodes.items():
            sig = frozenset(node.tasks)
            old = self._signatures.get(name)
            self._versions[name] = self._versions.get(name, 0) + (0 if old == sig else 1)
            self._signatures[name] = sig
            view.versions[name] = self._versions[name]
        return view

    def refresh(self) -> None:
        """After an event: queue new Pods; rebuild the view (and wake the pool) only while Pods
        are queued, so an idle agent scheduler costs a scan of the Pod cache per event."""
        if not self._dirty.is_set():
            return
        self._dirty.clear()
        now = self.clock.monotonic()
        for o in self.cache.informers["Pod"].lister.list():
            spec, md = o.get("spec") or {}, o.get("metadata") or {}
            if spec.get("schedulerName") != self.scheduler_name or spec.get("nodeName") or md.get("deletionTimestamp"):
                continue
            if (o.get("status") or {}).get("phase") not in (None, "", "Pending"):
                continue
            key = f"{md.get('namespace', '')}/{md.get('name', '')}"
            if key in self.cache.assumed or key in self.core.tasks:
                continue
            self.core.add(TaskInfo.from_pod(o), now)
        if self.core.tasks:
            self.core.set_view(self._build_view())
            self.core.cluster_event(now)

    async def run_round(self) -> StepReport:
        """One round (see the module docstring)."""
        self.refresh()
        now = self.clock.monotonic()
        results = self.core.compute(now)
        if not results:
            return StepReport()
        await asyncio.sleep(0)
        self.refresh()
        return self._resolve(results, now)

    def _resolve(self, results: list[ScheduleResult], now: float) -> StepReport:
        rep = self.core.resolve(results, now)
        for key, reason in rep.unschedulable.items():
            self.cache.task_unschedulable(key, "Unschedulable", reason)
        return rep

    async def run(self, stop_event: asyncio.Event | None = None) -> None:
        """Start the cache and the worker threads, then refresh and bind until ``stop_event`` is
        set (forever when None); the threads are stopped and joined on the way out."""
        stop = stop_event or asyncio.Event()
        await self.cache.start()
        loop = asyncio.get_running_loop()
        results: asyncio.Queue[ScheduleResult] = asyncio.Queue()
        def emit(r: ScheduleResult) -> None:
            loop.call_soon_threadsafe(results.put_nowait, r)

        pool = WorkerPool(self.core, self.clock.monotonic, emit)
        self._dirty.set()
        self.refresh()
        pool.start()
        try:
            while not stop.is_set():
                getter = asyncio.ensure_future(results.get())
                waiter = asyncio.ensure_future(self._dirty.wait())
                stopper = asyncio.ensure_future(stop.wait())
                sleeper = asyncio.ensure_future(self.clock.sleep(self.idle_wait))
                await asyncio.wait({getter, waiter, stopper, sleeper}, return_when=asyncio.FIRST_COMPLETED)
                for f in (waiter, stopper, sleeper):
                    f.cancel()
                batch: list[ScheduleResult] = []
                if getter.done() and not getter.cancelled():
                    batch.append(getter.result())
                else:
                    getter.cancel()
                while not results.empty():
                    batch.append(results.get_nowait())
                try:
                    self.refresh()
                    if batch:
                        self._resolve(batch, self.clock.monotonic())
                    self.cache.write_shard_status()
                except Exception:
                    log.exception("agent scheduling round failed")
        finally:
            await asyncio.to_thread(pool.stop)
            await self.cache.stop()


async def run(client: KubeClient, *, scheduler_name: str = AGENT_SCHEDULER_NAME, workers: int = 1, clock: Any = None,
              stop_event: asyncio.Event | None = None, sharding_mode: str = "none", shard_name: str | None = None) -> None:
    """Run the live Agent Scheduler until ``stop_event`` is set."""
    sched = LiveAgentScheduler(client, scheduler_name=scheduler_name, workers=workers, clock=clock,
                               sharding_mode=sharding_mode, shard_name=shard_name)
    await sched.run(stop_event)
