"""Scheduler metrics with upstream names (subsystem ``volcano``), in their own registry.

Mirrors: volcano pkg/scheduler/metrics/metrics.go and queue.go.
Deviates: a dedicated :data:`REGISTRY` (several schedulers may run in one process); expose it
with ``prometheus_client.generate_latest(REGISTRY)``.
"""

from __future__ import annotations

import math
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)
_NS = "volcano"
_MS_BUCKETS = (5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240)

e2e_scheduling_latency = Histogram(
    "e2e_scheduling_latency_milliseconds", "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
    namespace=_NS, buckets=_MS_BUCKETS, registry=REGISTRY,
)
open_session_duration = Histogram(
    "open_session_duration_milliseconds", "Open session duration in milliseconds",
    namespace=_NS, buckets=_MS_BUCKETS, registry=REGISTRY,
)
plugin_scheduling_latency = Histogram(
    "plugin_scheduling_latency_milliseconds", "Plugin scheduling latency in milliseconds",
    ["plugin", "OnSession"], namespace=_NS, buckets=_MS_BUCKETS, registry=REGISTRY,
)
action_scheduling_latency = Histogram(
    "action_scheduling_latency_milliseconds", "Action scheduling latency in milliseconds",
    ["action"], namespace=_NS, buckets=_MS_BUCKETS, registry=REGISTRY,
)
task_scheduling_latency = Histogram(
    "task_scheduling_latency_milliseconds", "Task scheduling latency in milliseconds",
    namespace=_NS, buckets=_MS_BUCKETS, registry=REGISTRY,
)
schedule_attempts = Counter(
    "schedule_attempts",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem.",
    ["result"], namespace=_NS, registry=REGISTRY,
)
pod_preemption_victims = Gauge(
    "pod_preemption_victims", "Number of selected preemption victims", namespace=_NS, registry=REGISTRY
)
total_preemption_attempts = Counter(
    "total_preemption_attempts", "Total preemption attempts in the cluster till now", namespace=_NS, registry=REGISTRY
)
eviction_transactions = Counter(
    "eviction_transactions", "Total number of committed eviction transactions, by action",
    ["action"], namespace=_NS, registry=REGISTRY,
)
eviction_errors = Counter(
    "eviction_errors", "Evictions that failed at commit (the victim keeps running), by action",
    ["action"], namespace=_NS, registry=REGISTRY,
)
"""Deviates: pumice's own counter; upstream only logs a failed eviction."""
unschedule_task_count = Gauge(
    "unschedule_task_count", "Number of tasks could not be scheduled", ["job_id"], namespace=_NS, registry=REGISTRY
)
unschedule_job_count = Gauge(
    "unschedule_job_count", "Number of jobs could not be scheduled", namespace=_NS, registry=REGISTRY
)
queue_allocated_milli_cpu = Gauge(
    "queue_allocated_milli_cpu", "Allocated CPU count for one queue", ["queue_name"], namespace=_NS, registry=REGISTRY
)
queue_allocated_memory_bytes = Gauge(
    "queue_allocated_memory_bytes", "Allocated memory for one queue", ["queue_name"], namespace=_NS, registry=REGISTRY
)
queue_deserved_milli_cpu = Gauge(
    "queue_deserved_milli_cpu", "Deserved CPU count for one queue", ["queue_name"], namespace=_NS, registry=REGISTRY
)
queue_deserved_memory_bytes = Gauge(
    "queue_deserved_memory_bytes", "Deserved memory for one queue", ["queue_name"], namespace=_NS, registry=REGISTRY
)
queue_share = Gauge("queue_share", "Share for one queue", ["queue_name"], namespace=_NS, registry=REGISTRY)
queue_weight = Gauge("queue_weight", "Weight for one queue", ["queue_name"], namespace=_NS, registry=REGISTRY)
queue_overused = Gauge("queue_overused", "If one queue is overused", ["queue_name"], namespace=_NS, registry=REGISTRY)

_CHILDREN: dict[tuple[Any, tuple[str, ...]], Any] = {}


def child(metric: Any, *values: str) -> Any:
    """``metric.labels(*values)``, looked up once per metric and label values (no metric here is
    ever cleared or has a child removed, so the child stays the one ``labels`` gives)."""
    key = (metric, values)
    got = _CHILDREN.get(key)
    if got is None:
        got = _CHILDREN[key] = metric.labels(*values)
    return got


_GAUGE_LAST: dict[Any, float] = {}
"""Gauge (child) -> the value :func:`set_gauge` last set it to."""


def set_gauge(gauge: Any, value: float) -> None:
    """``gauge.set(value)``, left out when the last :func:`set_gauge` of this gauge set the very
    same float (equal, and the same sign for zeros; NaN is always set). Exact only for gauges
    every write of which goes through here: the per-queue gauges :meth:`Scheduler._record` sets
    at every session (most of them do not move from one session to the next)."""
    v = float(value)
    last = _GAUGE_LAST.get(gauge)
    if last is not None and v == last and (v != 0.0 or math.copysign(1.0, v) == math.copysign(1.0, last)):
        return
    gauge.set(v)
    _GAUGE_LAST[gauge] = v


_QUEUE_CHILDREN: dict[str, tuple[Any, ...]] = {}
_QUEUE_LAST: dict[str, tuple[float | None, ...]] = {}
"""Queue name -> the values :func:`set_queue_gauges` last put (None: left as it was)."""


def set_queue_gauges(name: str, alloc_cpu: float | None, alloc_mem: float | None, des_cpu: float | None,
                     des_mem: float | None, share: float | None, weight: float) -> None:
    """The per-queue gauges of one session, each through :func:`set_gauge` (None: that gauge is
    left as it is; ``queue_overused`` follows ``share``: 1 when it is >= 1). When every value is
    the very float (zeros of the same sign) this function last put for the queue, every
    ``set_gauge`` would leave its gauge out, and so the whole call is left out (exact as long as
    these gauges are set only here, as :meth:`Scheduler._record` does)."""
    values = (alloc_cpu, alloc_mem, des_cpu, des_mem, share, weight)
    last = _QUEUE_LAST.get(name)
    # (tuple == compares items by identity first: the very NaN object again passes, and setting
    # a gauge that holds NaN to NaN changes nothing)
    if last is not None and last == values and (0.0 not in values or _same_zeros(values, last)):
        return
    kids = _QUEUE_CHILDREN.get(name)
    if kids is None:
        kids = _QUEUE_CHILDREN[name] = tuple(child(g, name) for g in (
            queue_allocated_milli_cpu, queue_allocated_memory_bytes, queue_deserved_milli_cpu,
            queue_deserved_memory_bytes, queue_share, queue_overused, queue_weight))
    if alloc_cpu is not None and alloc_mem is not None:
        set_gauge(kids[0], alloc_cpu)
        set_gauge(kids[1], alloc_mem)
    if des_cpu is not None and des_mem is not None:
        set_gauge(kids[2], des_cpu)
        set_gauge(kids[3], des_mem)
    if share is not None:
        set_gauge(kids[4], share)
        set_gauge(kids[5], 1 if share >= 1 else 0)
    set_gauge(kids[6], weight)
    _QUEUE_LAST[name] = values


def _same_zeros(values: tuple[float | None, ...], last: tuple[float | None, ...]) -> bool:
    """Every zero of ``values`` has the sign of the value at its place in ``last`` (equal tuples)."""
    for v, w in zip(values, last, strict=True):
        if v is not None and v == 0.0 and math.copysign(1.0, v) != math.copysign(1.0, w):  # type: ignore[arg-type]
            return False
    return True
