"""The live Volcano scheduler loop.

A cycle: re-read the configuration file if it changed (a bad file keeps the previous
configuration), take a snapshot of the cache, open a session, run the configured actions, close
the session and wait for its status writes. The next cycle starts ``schedule_period`` seconds (of
the injected clock) after that (upstream's sliding ``wait.Until``). Cycles never overlap.

With ``publish_conf`` the scheduler and the ConfigMap ``volcano-system/volcano-scheduler-configmap``
hold one configuration (see :meth:`Scheduler.sync_conf_map`): without a file the ConfigMap is
the configuration, as upstream's mounted one, and an edit of it is applied before the next cycle;
with a file the file is, and the ConfigMap is its published copy. Either way the ConfigMap's
annotation ``scheduling.pumice.io/conf-in-use`` holds what the scheduler runs, which ``pumice
explain`` and the web UI replay (:func:`read_published_conf`).

Mirrors: volcano pkg/scheduler/scheduler.go (Run, runOnce, watchSchedulerConf; the kubelet's
refresh of the mounted ConfigMap becomes a read of the ConfigMap each cycle).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from pumice._util.clock import Clock, LoopClock
from pumice._util.errors import FATAL_TYPES
from pumice.client.base import KubeClient
from pumice.scheduler.volcano import metrics
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.cache.live import SchedulerCache
from pumice.scheduler.volcano.conf import (
    CONF_IN_USE_ANNOTATION,
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

#: seconds before a failed read or write of the scheduler ConfigMap is tried again
CONF_MAP_RETRY_SECONDS = 30.0


async def read_published_conf(client: KubeClient, warn: Callable[[str], Any] | None = None) -> SchedulerConfiguration | None:
    """The configuration the running scheduler runs, from ConfigMap
    ``volcano-system/volcano-scheduler-configmap``: its annotation ``scheduling.pumice.io/conf-in-use``
    (written by pumice's scheduler, see ``Scheduler(publish_conf=True)``), else its
    ``volcano-scheduler.conf`` key (upstream's scheduler, which runs the key as mounted); None when
    there is no such ConfigMap or neither holds a text. ``warn`` (a function of one line) is told
    when the key differs from what the scheduler runs (an edit not applied yet, or refused).

    Raises:
        ConfigError: the text is not a valid configuration.
        ApiError: the ConfigMap could not be read (other than 404).
    """
    from pumice.api import scheme
    from pumice.client.base import get_or_none

    cm = await get_or_none(client, scheme.CONFIG_MAP, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE)
    if cm is None:
        return None
    where = f"ConfigMap {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME}"
    in_use = ((cm.get("metadata") or {}).get("annotations") or {}).get(CONF_IN_USE_ANNOTATION)
    text = (cm.get("data") or {}).get(CONF_KEY)
    if in_use:
        if text is not None and text != in_use and warn is not None:
            warn(f"Warning: the {CONF_KEY} of {where} differs from the configuration the scheduler runs (an edit "
                 f"not applied yet, or refused: kubectl describe configmap -n {CONFIG_MAP_NAMESPACE} "
                 f"{CONFIG_MAP_NAME}); replaying the one it runs")
        return parse_conf(str(in_use), source=f"{where}: annotation {CONF_IN_USE_ANNOTATION}")
    if not text:
        return None
    return parse_conf(str(text), source=where)


class Scheduler:
    """One scheduler: a cache, a configuration and the cycle.

    Args:
        client: the KubeClient (must implement ``bind`` and ``evict``).
        conf_path: a volcano-scheduler.conf (or its ConfigMap); None: the built-in default.
        schedule_period: seconds from the end of one cycle (its close writes done) to the start
            of the next (upstream's ``wait.Until``, sliding: a long cycle does not shorten the wait).
        scheduler_name: Pods with this ``schedulerName`` are scheduled.
        clock: time source (default: the loop clock).
        sharding_mode: upstream's ``--scheduler-sharding-mode``: ``none`` (every Node), ``hard``
            (only this scheduler's NodeShard's Nodes) or ``soft`` (every Node, the shard's
            preferred by allocate, backfill, preempt and reclaim; the others are used when the
            shard has no room).
        shard_name: the NodeShard to read (default: ``scheduler_name``).
        publish_conf: keep the configuration and the ConfigMap
            ``volcano-system/volcano-scheduler-configmap`` (key ``volcano-scheduler.conf``, where
            upstream's install keeps it) one, before every cycle (see :meth:`sync_conf_map`), so
            that an edit of the ConfigMap works as on upstream and ``pumice explain`` and the web
            UI replay what runs; creates the Namespace and the ConfigMap when absent. A failed
            read or write is logged once (again when its message changes) and tried again after
            ``CONF_MAP_RETRY_SECONDS``.
        snapshot_mode: ``incremental`` (state kept across cycles, rebuilt where informer events
            changed it), ``full`` (every object every cycle) or ``verify`` (both, compared; for
            tests); see :meth:`SchedulerCache.snapshot`. Decisions are the same in every mode.
        keep_metrics: keep the upstream scheduler metrics of each cycle (:mod:`.metrics`: the
            latency histograms with the per-plugin open timing, the schedule-attempt and
            preemption figures, the per-queue gauges). False (``pumice simulate``: nothing can
            scrape a run's scheduler, and its virtual clock does not move inside a cycle, so every
            latency would be 0) skips them; the decisions, the writes and the session's
            ``queue_metrics`` are the same.

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
        keep_metrics: bool = True,
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
        self.keep_metrics = keep_metrics
        self._refused: str | None = None
        """The ConfigMap text last refused (said once)."""
        self._sync_error: str | None = None
        self._sync_retry_at = 0.0
        self._recorder: Any = None
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
            self._conf_warnings(conf)
            return conf
        except ConfigError as e:
            if initial:
                raise
            log.error("keeping the previous scheduler configuration: %s", e)
            return None

    def _conf_warnings(self, conf: SchedulerConfiguration) -> None:
        """A WARNING line per argument the loaded configuration ignores (an unknown key, or a
        wrong type of an upstream plugin's argument)."""
        for w in conf.warnings:
            log.warning("%s", w)

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
        keep = self.keep_metrics
        t0 = self.clock.monotonic() if keep else 0.0
        snap = self.cache.snapshot()
        snap.nodes_in_shard = self.cache.preferred_nodes
        ssn = open_session(snap, self.conf, self.cache, uid=None, seed=self.cycles,
                           timer=self.clock.monotonic if keep else None)
        if keep:
            metrics.open_session_duration.observe((self.clock.monotonic() - t0) * 1000)
            for name, secs in ssn.plugin_open_seconds.items():
                metrics.child(metrics.plugin_scheduling_latency, name, "OnSessionOpen").observe(secs * 1000)
        try:
            self._run_actions(ssn)
        finally:
            res = ssn.close()
            self.cache.write_close(res)
            self.cache.write_shard_status()
            self._record(ssn, res)
            ssn.release()
        if keep:
            metrics.e2e_scheduling_latency.observe((self.clock.monotonic() - t0) * 1000)
        self.cycles += 1
        self.last_result = res
        return res

    def _run_actions(self, ssn: Session) -> None:
        if not self.keep_metrics:
            for name in self.conf.actions:
                run_action(ssn, name)
            return
        for name in self.conf.actions:
            t = self.clock.monotonic()
            run_action(ssn, name)
            metrics.child(metrics.action_scheduling_latency, name).observe((self.clock.monotonic() - t) * 1000)

    def _record(self, ssn: Session, res: CloseResult) -> None:
        """The cycle's metrics (none without :attr:`keep_metrics`)."""
        if not self.keep_metrics:
            return
        counts = ssn.job_tally("record.counts", _record_entry, also=ssn.cluster.job_log or ())
        if counts is not None:
            binding = counts.get("binding", 0)
            if binding:
                metrics.child(metrics.schedule_attempts, "scheduled").inc(binding)
            unscheduled = counts.get("unscheduled", 0)
            if unscheduled:
                metrics.child(metrics.schedule_attempts, "unschedulable").inc(counts.get("pending", 0))
        else:
            unscheduled = 0
            for job in ssn.jobs.values():
                if job.count(TaskStatus.Binding):
                    metrics.child(metrics.schedule_attempts, "scheduled").inc(job.count(TaskStatus.Binding))
                if job.pod_group is not None and not job.is_ready() and job.tasks:
                    unscheduled += 1
                    metrics.child(metrics.schedule_attempts, "unschedulable").inc(job.count(TaskStatus.Pending))
        metrics.unschedule_job_count.set(unscheduled)
        victims = sum(1 for _t, r in ssn.evicted if r == "preempt")
        metrics.pod_preemption_victims.set(victims)
        if victims:
            metrics.total_preemption_attempts.inc()
        put = metrics.set_queue_gauges
        none: dict[str, Any] = {}
        for q in ssn.queues.values():
            name = q.name
            qm: dict[str, Any] = ssn.queue_metrics.get(name, none)
            alloc, des = qm.get("allocated"), qm.get("deserved")
            put(name, None if alloc is None else alloc.milli_cpu, None if alloc is None else alloc.memory,
                None if des is None else des.milli_cpu, None if des is None else des.memory, qm.get("share"), q.weight)

    async def sync_conf_map(self) -> None:
        """Make the ConfigMap ``volcano-system/volcano-scheduler-configmap`` and :attr:`conf` agree.

        * No ConfigMap, or no ``volcano-scheduler.conf`` key: write :attr:`conf_text` there
          (creating the Namespace and the ConfigMap).
        * Without ``conf_path`` the ConfigMap is the configuration (upstream's scheduler runs the
          file the kubelet refreshes from it): a changed key is parsed and run from the next
          cycle on ("scheduler configuration reloaded from ConfigMap ..."); a bad one keeps the
          previous configuration, says why once in an ERROR line and a Warning Event
          ``InvalidSchedulerConfiguration`` on the ConfigMap, and is left for the user to fix.
        * With ``conf_path`` the file is the configuration and the ConfigMap its copy: a key that
          differs is written back, after a file reload quietly, after someone else's edit with a
          WARNING line and a Warning Event ``SchedulerConfigurationOverwritten`` that say to edit
          the file.
        * The annotation ``scheduling.pumice.io/conf-in-use`` is set to :attr:`conf_text`.

        Raises:
            ApiError: the API server refused a read or write (a 409 Conflict with a concurrent
                edit is left for the next cycle).
        """
        from pumice.api import scheme
        from pumice.client.base import get_or_none, is_conflict

        cm = await get_or_none(self.client, scheme.CONFIG_MAP, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE)
        if cm is None:
            await self._create_conf_map()
            return
        text = (cm.get("data") or {}).get(CONF_KEY)
        in_use = ((cm.get("metadata") or {}).get("annotations") or {}).get(CONF_IN_USE_ANNOTATION)
        if self.conf_path is None and text is not None and text != self.conf_text:
            await self._apply_conf_map(cm, str(text))
        data, md = dict(cm.get("data") or {}), dict(cm.get("metadata") or {})
        if text is None or (self.conf_path is not None and text != self.conf_text):
            if text is not None and text != in_use:  # not a copy this scheduler wrote: someone's edit
                await self._overwritten(cm)
            data[CONF_KEY] = self.conf_text
        if data == (cm.get("data") or {}) and in_use == self.conf_text:
            return
        md["annotations"] = {**(md.get("annotations") or {}), CONF_IN_USE_ANNOTATION: self.conf_text}
        try:  # an update, not a patch: upstream's scheduler ClusterRole grants update on ConfigMaps
            await self.client.update({**cm, "apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data})
        except Exception as e:
            if is_conflict(e):  # edited meanwhile: looked at again next cycle
                log.debug("scheduler configuration: ConfigMap changed while written, next cycle: %s", e)
                return
            raise
        if data != (cm.get("data") or {}):
            log.info("scheduler configuration published to ConfigMap %s/%s", CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME)

    async def _create_conf_map(self) -> None:
        """Create the ConfigMap with :attr:`conf_text` (and its Namespace when that is missing; one
        created meanwhile is looked at next cycle)."""
        from pumice.client.base import create_unless_exists, is_not_found

        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": CONFIG_MAP_NAME, "namespace": CONFIG_MAP_NAMESPACE,
                           "annotations": {CONF_IN_USE_ANNOTATION: self.conf_text}},
              "data": {CONF_KEY: self.conf_text}}
        try:
            created = await create_unless_exists(self.client, cm)
        except Exception as e:
            if not is_not_found(e):  # 404: no Namespace volcano-system (not installed by upstream's manifests)
                raise
            await create_unless_exists(self.client, {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": CONFIG_MAP_NAMESPACE}})
            created = await create_unless_exists(self.client, cm)
        if created:
            log.info("scheduler configuration published to ConfigMap %s/%s", CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME)

    async def _apply_conf_map(self, cm: dict[str, Any], text: str) -> None:
        """Run ``text`` (the ConfigMap's, which changed) from the next cycle on, or keep the
        previous configuration and say why (once per text)."""
        where = f"ConfigMap {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME}"
        try:
            conf = parse_conf(text, source=where)
        except ConfigError as e:
            if text != self._refused:
                self._refused = text
                log.error("keeping the previous scheduler configuration: %s", e)
                await self._conf_map_event(cm, "InvalidSchedulerConfiguration",
                                           f"keeping the previous scheduler configuration: {e}")
            return
        self.conf, self.conf_text, self._refused = conf, text, None
        self._conf_warnings(conf)
        log.info("scheduler configuration reloaded from %s", where)

    async def _overwritten(self, cm: dict[str, Any]) -> None:
        message = (f"this scheduler runs the --scheduler-conf file {self.conf_path}; {CONF_KEY} was edited "
                   f"and is restored from that file (edit the file to change the configuration)")
        log.warning("ConfigMap %s/%s: %s", CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME, message)
        await self._conf_map_event(cm, "SchedulerConfigurationOverwritten", message)

    async def _conf_map_event(self, cm: dict[str, Any], reason: str, message: str) -> None:
        from pumice.runtime.events import EventRecorder

        if self._recorder is None:
            self._recorder = EventRecorder(self.client, "volcano", clock=self.clock)
        try:
            await self._recorder.event({"apiVersion": "v1", "kind": "ConfigMap", **cm}, "Warning", reason, message)
        except FATAL_TYPES:
            raise  # not logged and carried on: the scheduler ends (see FATAL_TYPES)
        except Exception as e:
            log.warning("event %s on ConfigMap %s/%s not written: %s", reason, CONFIG_MAP_NAMESPACE,
                        CONFIG_MAP_NAME, e)

    async def _sync_conf_map_logged(self) -> None:
        if not self.publish_conf or self.clock.monotonic() < self._sync_retry_at:
            return
        try:
            await self.sync_conf_map()
        except FATAL_TYPES:
            raise  # not retried: the scheduler ends (see FATAL_TYPES)
        except Exception as e:
            # e.g. no RBAC for ConfigMaps in volcano-system: said once, tried again a little later
            self._sync_retry_at = self.clock.monotonic() + CONF_MAP_RETRY_SECONDS
            if str(e) != self._sync_error:
                log.warning("cannot sync the scheduler configuration with ConfigMap %s/%s (pumice explain will "
                            "replay the built-in default unless given --scheduler-conf): %s",
                            CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME, e)
            self._sync_error = str(e)
        else:
            self._sync_error = None

    async def run(self, stop_event: asyncio.Event | None = None) -> None:
        """Start the cache, then cycle until ``stop_event`` is set (forever when None). A cycle
        ends when its session's status and Pod-condition writes have (see
        :meth:`SchedulerCache.wait_close_writes`). Once ``stop_event`` is set, the writes queued
        that have not started are dropped (see :attr:`SchedulerCache.abandon_writes`), so that a
        stop is not held up by them."""
        stop = stop_event or asyncio.Event()
        self.cache.abandon_writes = stop.is_set
        await self.cache.start()
        try:
            while not stop.is_set():
                await self._sync_conf_map_logged()
                try:
                    self.run_once()
                except FATAL_TYPES:
                    raise  # not retried: the scheduler ends (see FATAL_TYPES)
                except Exception:
                    log.exception("scheduling cycle failed")
                # the session closes once its status and condition writes are done (upstream's
                # UpdateAll), so sessions never queue writes faster than the API server takes them
                await self.cache.wait_close_writes()
                await asyncio.sleep(0)
                if stop.is_set():
                    break
                # a full period after the cycle ended, however long it took (upstream's sliding
                # wait.Until): the API server gets that quiet between a wide gang's write bursts
                sleeper = asyncio.ensure_future(self.clock.sleep(self.schedule_period))
                waiter = asyncio.ensure_future(stop.wait())
                _done, pending = await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
                for p in pending:
                    p.cancel()
        finally:
            await self.cache.stop()


def _record_entry(job: JobInfo) -> dict[Hashable, int]:
    """A job's part of :meth:`Scheduler._record`'s counts: its Binding tasks, 1 when it is
    unscheduled, and its Pending tasks when it is unscheduled (zeros left out). A function of
    the job's tasks and their statuses (every change of which the job logs)."""
    out: dict[Hashable, int] = {}
    binding = job.count(TaskStatus.Binding)
    if binding:
        out["binding"] = binding
    if job.pod_group is not None and not job.is_ready() and job.tasks:
        out["unscheduled"] = 1
        pending = job.count(TaskStatus.Pending)
        if pending:
            out["pending"] = pending
    return out
