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
from pathlib import Path
from typing import Any

from pumice._util.clock import Clock, LoopClock
from pumice.client.base import KubeClient
from pumice.scheduler.volcano import metrics
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.cache.live import SchedulerCache
from pumice.scheduler.volcano.conf import (
    CONF_KEY,
    CONFIG_MAP_NAME,
    CONFIG_MAP_NAMESPACE,
    DEFAULT_SCHEDULER_CONF,
    ConfigError,
    SchedulerConfiguration,
    configmap_text,
    default_conf,
    parse_conf,
)
from pumice.scheduler.volcano.framework.session import CloseResult, Session, open_session, run_action

log = logging.getLogger("pumice.scheduler.volcano")


async def read_published_conf(client: KubeClient) -> SchedulerConfiguration | None:
    """The configuration a running scheduler published (see ``Scheduler(publish_conf=True)``):
    the ``volcano-scheduler.conf`` key of ConfigMap ``volcano-system/volcano-scheduler-configmap``;
    None when there is no such ConfigMap or key.

    Raises:
        ConfigError: the text is not a valid configuration.
        ApiError: the ConfigMap could not be read (other than 404).
    """
    from pumice.api import scheme
    from pumice.client.base import is_not_found

    try:
        cm = await client.get(scheme.CONFIG_MAP, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE)
    except Exception as e:
        if is_not_found(e):
            return None
        raise
    text = (cm.get("data") or {}).get(CONF_KEY)
    if not text:
        return None
    return parse_conf(str(text), source=f"ConfigMap {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME}")


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
        publish_conf: write the configuration in use (at start and after each reload) to the
            ConfigMap ``volcano-system/volcano-scheduler-configmap`` (key ``volcano-scheduler.conf``,
            where upstream's install keeps it) so that ``pumice explain`` and the web UI replay the
            same one; creates the Namespace when absent. A failed write is logged once and
            tried again after the next reload.
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
        publish_conf: bool = False,
    ) -> None:
        self.client = client
        self.clock: Clock = clock or LoopClock()
        self.conf_path = conf_path
        self.schedule_period = schedule_period
        self.cache = SchedulerCache(client, clock=self.clock, scheduler_name=scheduler_name, sharding_mode=sharding_mode,
                                    shard_name=shard_name, snapshot_mode=snapshot_mode)
        self._conf_mtime: float | None = None
        self.conf_text: str = DEFAULT_SCHEDULER_CONF
        """The volcano-scheduler.conf text of :attr:`conf`."""
        self.publish_conf = publish_conf
        self._published: str | None = None
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
            try:
                text = Path(self.conf_path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ConfigError(f"{self.conf_path}: cannot read: {getattr(e, 'strerror', None) or e}") from e
            conf = parse_conf(text, source=self.conf_path)
            self.conf_text = configmap_text(text)
            return conf
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

    async def publish(self) -> None:
        """Write :attr:`conf_text` to the scheduler ConfigMap when it differs from what this
        scheduler last wrote (see ``publish_conf``).

        Raises:
            ApiError: the API server refused a write (other than the Namespace already existing).
        """
        from pumice.api import scheme
        from pumice.client.base import is_already_exists, is_not_found

        text = self.conf_text
        if text == self._published:
            return
        data = {CONF_KEY: text}
        try:
            cm = await self.client.get(scheme.CONFIG_MAP, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE)
        except Exception as e:
            if not is_not_found(e):
                raise
            try:
                await self.client.create({"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": CONFIG_MAP_NAMESPACE}})
            except Exception as e2:
                if not is_already_exists(e2):
                    raise
            await self.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": CONFIG_MAP_NAME, "namespace": CONFIG_MAP_NAMESPACE},
                                      "data": data})
        else:
            if (cm.get("data") or {}).get(CONF_KEY) != text:
                await self.client.patch(scheme.CONFIG_MAP, CONFIG_MAP_NAME, {"data": data}, CONFIG_MAP_NAMESPACE)
        self._published = text
        log.info("scheduler configuration published to ConfigMap %s/%s", CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME)

    async def _publish_logged(self) -> None:
        if not self.publish_conf:
            return
        try:
            await self.publish()
        except Exception as e:
            # e.g. no RBAC for ConfigMaps in volcano-system: said once, tried again after a reload
            self._published = self.conf_text
            log.warning("cannot publish the scheduler configuration to ConfigMap %s/%s (pumice explain will "
                        "replay the built-in default unless given --scheduler-conf): %s",
                        CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME, e)

    async def run(self, stop_event: asyncio.Event | None = None) -> None:
        """Start the cache, then cycle until ``stop_event`` is set (forever when None)."""
        stop = stop_event or asyncio.Event()
        await self.cache.start()
        try:
            while not stop.is_set():
                started = self.clock.monotonic()
                await self._publish_logged()
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
