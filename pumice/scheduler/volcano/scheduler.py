"""The live Volcano scheduler loop.

Every ``schedule_period`` seconds (of the injected clock): re-read the configuration file if it
changed (a bad file keeps the previous configuration), take a snapshot of the cache, open a
session, run the configured actions, close the session and queue the status writes. Cycles
never overlap.

Mirrors: volcano pkg/scheduler/scheduler.go (Run, runOnce, watchSchedulerConf).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from pumice._util.clock import Clock, LoopClock
from pumice.client.base import KubeClient
from pumice.scheduler.volcano import metrics
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.cache.live import SchedulerCache
from pumice.scheduler.volcano.conf import ConfigError, SchedulerConfiguration, default_conf, load_conf
from pumice.scheduler.volcano.framework.session import CloseResult, Session, open_session, run_action

log = logging.getLogger("pumice.scheduler.volcano")


class Scheduler:
    """One scheduler: a cache, a configuration and the cycle.

    Args:
        client: the KubeClient (must implement ``bind`` and ``evict``).
        conf_path: a volcano-scheduler.conf (or its ConfigMap); None: the built-in default.
        schedule_period: seconds between cycles.
        scheduler_name: Pods with this ``schedulerName`` are scheduled.
        clock: time source (default: the loop clock).
        sharding_mode: upstream's ``--scheduler-sharding-mode``: ``none`` (every Node), ``hard``
            (only this scheduler's NodeShard's Nodes) or ``soft`` (every Node, the shard's
            preferred by allocate, backfill, preempt and reclaim; the others are used when the
            shard has no room).
        shard_name: the NodeShard to read (default: ``scheduler_name``).
        snapshot_mode: ``incremental`` (state kept across cycles, rebuilt where informer events
            changed it), ``full`` (every object every cycle) or ``verify`` (both, compared; for
            tests); see :meth:`SchedulerCache.snapshot`. Decisions are the same in every mode.

    Raises:
        ConfigError: at construction, when the first configuration cannot be loaded.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        conf_path: str | None = None,
        schedule_period: float = 1.0,
        scheduler_name: str = "volcano",
        clock: Clock | None = None,
        sharding_mode: str = "none",
        shard_name: str | None = None,
        snapshot_mode: str = "incremental",
    ) -> None:
        self.client = client
        self.clock: Clock = clock or LoopClock()
        self.conf_path = conf_path
        self.schedule_period = schedule_period
        self.cache = SchedulerCache(client, clock=self.clock, scheduler_name=scheduler_name, sharding_mode=sharding_mode,
                                    shard_name=shard_name, snapshot_mode=snapshot_mode)
        self._conf_mtime: float | None = None
        self.conf: SchedulerConfiguration = self._load_conf(initial=True) or default_conf()
        self.cycles = 0
        self.last_result: CloseResult | None = None

    def _load_conf(self, *, initial: bool = False) -> SchedulerConfiguration | None:
        if self.conf_path is None:
            return None if not initial else default_conf()
        try:
            mtime = os.stat(self.conf_path).st_mtime
        except OSError as e:
            if initial:
                raise ConfigError(f"{self.conf_path}: cannot read: {e.strerror}") from e
            return None
        if not initial and mtime == self._conf_mtime:
            return None
        self._conf_mtime = mtime
        try:
            return load_conf(self.conf_path)
        except ConfigError as e:
            if initial:
                raise
            log.error("keeping the previous scheduler configuration: %s", e)
            return None

    def reload_conf_if_changed(self) -> bool:
        new = self._load_conf()
        if new is None:
            return False
        self.conf = new
        log.info("scheduler configuration reloaded from %s", self.conf_path)
        return True

    def run_once(self) -> CloseResult:
        """One cycle: snapshot, session, actions, close, queue writes."""
        self.reload_conf_if_changed()
        t0 = self.clock.monotonic()
        snap = self.cache.snapshot()
        snap.nodes_in_shard = self.cache.preferred_nodes
        ssn = open_session(snap, self.conf, self.cache, uid=None, seed=self.cycles, timer=self.clock.monotonic)
        metrics.open_session_duration.observe((self.clock.monotonic() - t0) * 1000)
        for name, secs in ssn.plugin_open_seconds.items():
            metrics.plugin_scheduling_latency.labels(plugin=name, OnSession="OnSessionOpen").observe(secs * 1000)
        try:
            self._run_actions(ssn)
        finally:
            res = ssn.close()
            self.cache.write_close(res)
            self.cache.write_shard_status()
            self._record(ssn, res)
        metrics.e2e_scheduling_latency.observe((self.clock.monotonic() - t0) * 1000)
        self.cycles += 1
        self.last_result = res
        return res

    def _run_actions(self, ssn: Session) -> None:
        for name in self.conf.actions:
            t = self.clock.monotonic()
            run_action(ssn, name)
            metrics.action_scheduling_latency.labels(action=name).observe((self.clock.monotonic() - t) * 1000)

    def _record(self, ssn: Session, res: CloseResult) -> None:
        unscheduled = 0
        for job in ssn.jobs.values():
            if job.count(TaskStatus.Binding):
                metrics.schedule_attempts.labels(result="scheduled").inc(job.count(TaskStatus.Binding))
            if job.pod_group is not None and not job.is_ready() and job.tasks:
                unscheduled += 1
                metrics.schedule_attempts.labels(result="unschedulable").inc(job.count(TaskStatus.Pending))
        metrics.unschedule_job_count.set(unscheduled)
        victims = sum(1 for _t, r in ssn.evicted if r == "preempt")
        metrics.pod_preemption_victims.set(victims)
        if victims:
            metrics.total_preemption_attempts.inc()
        for q in ssn.queues.values():
            qm: dict[str, Any] = ssn.queue_metrics.get(q.name, {})
            alloc = qm.get("allocated")
            if alloc is not None:
                metrics.queue_allocated_milli_cpu.labels(queue_name=q.name).set(alloc.milli_cpu)
                metrics.queue_allocated_memory_bytes.labels(queue_name=q.name).set(alloc.memory)
            des = qm.get("deserved")
            if des is not None:
                metrics.queue_deserved_milli_cpu.labels(queue_name=q.name).set(des.milli_cpu)
                metrics.queue_deserved_memory_bytes.labels(queue_name=q.name).set(des.memory)
            if "share" in qm:
                metrics.queue_share.labels(queue_name=q.name).set(qm["share"])
                metrics.queue_overused.labels(queue_name=q.name).set(1 if qm["share"] >= 1 else 0)
            metrics.queue_weight.labels(queue_name=q.name).set(q.weight)

    async def run(self, stop_event: asyncio.Event | None = None) -> None:
        """Start the cache, then cycle until ``stop_event`` is set (forever when None)."""
        stop = stop_event or asyncio.Event()
        await self.cache.start()
        try:
            while not stop.is_set():
                started = self.clock.monotonic()
                try:
                    self.run_once()
                except Exception:
                    log.exception("scheduling cycle failed")
                await asyncio.sleep(0)
                remaining = self.schedule_period - (self.clock.monotonic() - started)
                if remaining > 0:
                    sleeper = asyncio.ensure_future(self.clock.sleep(remaining))
                    waiter = asyncio.ensure_future(stop.wait())
                    _done, pending = await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
                    for p in pending:
                        p.cancel()
        finally:
            await self.cache.stop()
