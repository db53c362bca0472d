"""Time series the charts draw: sampled from the cache (and from Prometheus metrics) every few
seconds, kept in memory for the last hour.

Every sample tick appends one timestamp and one value per series (None where a series has no
value at that tick), so all series share one x axis, as uPlot wants them.

Series names:

- ``queue/<q>/allocated/cpu``, ``queue/<q>/deserved/cpu``, ``queue/<q>/capability/cpu`` (cores; the
  same for ``memory`` in GiB), ``queue/<q>/share`` (the scheduler's ``volcano_queue_share`` when
  metrics are available), ``queue/<q>/<phase>`` PodGroup counts;
- ``cluster/util/cpu`` and ``cluster/util/memory`` (percent of allocatable held by bound Pods),
  ``cluster/pending`` (waiting PodGroups), ``cluster/delay/p50`` and ``cluster/delay/max``
  (queueing delay in seconds of the PodGroups that became Scheduled in the last minute);
- ``metric/<sample name>{labels}`` for every Volcano, KubeRay, controller-runtime and work-queue
  metric the metric sources expose (gauges and counters as read; histograms as ``_sum``/``_count``).

Metric sources: a ``prometheus_client`` registry in the same process (``pumice up``), or a
``/metrics`` URL (``pumice dashboard --metrics-url``), read with prometheus_client's text parser.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from pumice._util.clock import Clock, default_clock
from pumice.dashboard import views as v
from pumice.dashboard.cache import ClusterCache

log = logging.getLogger(__name__)

KEEP = 720
"""Ticks kept per series (an hour at the default 5 s interval)."""
METRIC_PREFIXES = ("volcano_", "kuberay_", "controller_runtime_", "workqueue_")
MAX_METRIC_SERIES = 400
GiB = float(1 << 30)


class MetricSource:
    """Where Prometheus samples come from: ``collect()`` returns ``(name, labels, value)``."""

    def __init__(self, collect: Callable[[], list[tuple[str, dict[str, str], float]]], label: str) -> None:
        self.collect = collect
        self.label = label

    @classmethod
    def from_registry(cls, registry: Any, label: str = "in-process") -> MetricSource:
        """Samples of a ``prometheus_client.CollectorRegistry``."""

        def collect() -> list[tuple[str, dict[str, str], float]]:
            return [(s.name, dict(s.labels), float(s.value)) for fam in registry.collect() for s in fam.samples]

        return cls(collect, label)

    @classmethod
    def from_text(cls, fetch: Callable[[], str], label: str) -> MetricSource:
        """Samples of a Prometheus text exposition returned by ``fetch()``."""
        from prometheus_client.parser import text_string_to_metric_families

        def collect() -> list[tuple[str, dict[str, str], float]]:
            return [(s.name, dict(s.labels), float(s.value))
                    for fam in text_string_to_metric_families(fetch()) for s in fam.samples]

        return cls(collect, label)


def metric_key(name: str, labels: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{labels[k]}"' for k in sorted(labels))
    return f"metric/{name}{{{inner}}}" if inner else f"metric/{name}"


def _wanted(name: str) -> bool:
    if not name.startswith(METRIC_PREFIXES):
        return False
    return not name.endswith(("_bucket", "_created"))


class Sampler:
    """Samples the cache and the metric sources every ``interval`` seconds.

    Args:
        cache: the dashboard's cluster cache.
        sources: Prometheus metric sources (may be empty).
        clock: time source (tick timestamps, the sleep between ticks).
        interval: seconds between ticks.
    """

    def __init__(self, cache: ClusterCache, sources: Iterable[MetricSource] = (), *,
                 clock: Clock | None = None, interval: float = 5.0, keep: int = KEEP) -> None:
        self.cache = cache
        self.sources = list(sources)
        self.clock = clock or default_clock()
        self.interval = interval
        self.keep = keep
        self.times: deque[float] = deque(maxlen=keep)
        self.values: dict[str, deque[float | None]] = {}
        self.metric_errors: dict[str, str] = {}
        self.listeners: list[asyncio.Event] = []

    # ------------------------------------------------------------------ reading

    def names(self, prefix: str = "") -> list[str]:
        return sorted(n for n in self.values if n.startswith(prefix))

    def table(self, names: list[str]) -> list[list[float | None]]:
        """uPlot data: ``[times, series1, series2, ...]`` (missing series are all None)."""
        n = len(self.times)
        out: list[list[float | None]] = [list(self.times)]
        for name in names:
            vals = self.values.get(name)
            out.append(list(vals) if vals is not None else [None] * n)
        return out

    def latest(self, name: str) -> float | None:
        vals = self.values.get(name)
        return vals[-1] if vals else None

    # ------------------------------------------------------------------ sampling

    async def run(self, stop: asyncio.Event) -> None:
        """Tick until ``stop`` is set; a failing tick is logged and the next one runs."""
        while not stop.is_set():
            try:
                self.tick()
            except Exception:
                log.exception("dashboard sampler tick failed")
            try:
                await asyncio.wait_for(stop.wait(), timeout=self.interval)
            except TimeoutError:
                pass

    def tick(self) -> None:
        """Take one sample of everything."""
        now = self.clock.now()
        point: dict[str, float | None] = {}
        metrics = self._metrics(point)
        self._queues(point, metrics)
        self._cluster(point, now)
        self.times.append(now)
        for name, val in point.items():
            series = self.values.get(name)
            if series is None:
                series = deque([None] * (len(self.times) - 1), maxlen=self.keep)
                self.values[name] = series
            series.append(val)
        for name, series in self.values.items():
            if name not in point:
                series.append(None)
        for ev in self.listeners:
            ev.set()

    def _metrics(self, point: dict[str, float | None]) -> dict[str, float]:
        found: dict[str, float] = {}
        for src in self.sources:
            try:
                samples = src.collect()
                self.metric_errors.pop(src.label, None)
            except Exception as e:
                self.metric_errors[src.label] = f"{type(e).__name__}: {e}"
                log.warning("dashboard: metrics from %s failed: %s", src.label, e)
                continue
            for name, labels, value in samples:
                if _wanted(name):
                    found[metric_key(name, labels)] = value
        for k in sorted(found)[:MAX_METRIC_SERIES]:
            point[k] = found[k]
        return found

    def _queues(self, point: dict[str, float | None], metrics: dict[str, float]) -> None:
        pgs_by_queue: dict[str, list[v.Obj]] = {}
        for pg in self.cache.list("PodGroup"):
            pgs_by_queue.setdefault(str(v.spec(pg).get("queue") or "default"), []).append(pg)
        for q in self.cache.list("Queue"):
            name = v.md(q).get("name", "")
            alloc = v.res_map(v.status(q).get("allocated"))
            cap = v.res_map(v.spec(q).get("capability"))
            des = v.res_map(v.spec(q).get("deserved"))
            m_des = {"cpu": metrics.get(metric_key("volcano_queue_deserved_milli_cpu", {"queue_name": name})),
                     "memory": metrics.get(metric_key("volcano_queue_deserved_memory_bytes", {"queue_name": name}))}
            for res, scale in (("cpu", 1000.0), ("memory", GiB)):
                point[f"queue/{name}/allocated/{res}"] = alloc.get(res, 0.0) / scale
                d = des.get(res, m_des[res])
                point[f"queue/{name}/deserved/{res}"] = d / scale if d is not None else None
                c = cap.get(res)
                point[f"queue/{name}/capability/{res}"] = c / scale if c is not None else None
            share = metrics.get(metric_key("volcano_queue_share", {"queue_name": name}))
            if share is not None:
                point[f"queue/{name}/share"] = share
            for phase, n in v.queue_counts(pgs_by_queue.get(name, [])).items():
                point[f"queue/{name}/{phase}"] = float(n)

    def _cluster(self, point: dict[str, float | None], now: float) -> None:
        nodes, pods = self.cache.list("Node"), self.cache.list("Pod")
        for res in ("cpu", "memory"):
            used, total = v.utilisation(nodes, pods, res)
            point[f"cluster/util/{res}"] = 100.0 * used / total if total else None
        pgs = self.cache.list("PodGroup")
        point["cluster/pending"] = float(sum(1 for pg in pgs
                                             if (v.status(pg).get("phase") or "Pending") in v.PG_WAITING))
        recent = []
        for pg in pgs:
            d = v.queueing_delay(pg)
            created = v.ts(v.md(pg).get("creationTimestamp"))
            if d is not None and created is not None and now - (created + d) <= 60.0:
                recent.append(d)
        recent.sort()
        point["cluster/delay/p50"] = recent[len(recent) // 2] if recent else None
        point["cluster/delay/max"] = recent[-1] if recent else None
