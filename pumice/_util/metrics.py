"""Prometheus counters and histograms kept as plain numbers and read at scrape time.

:class:`TallyCounter` and :class:`TallyHistogram` stand where a prometheus_client ``Counter`` or
``Histogram`` is updated on a hot path (once per reconcile, per work-queue step): they keep one
number (or one count per bucket) per label values, and build the same samples the library's
classes expose when the registry is scraped (``_total``; ``_bucket``, ``_count``, ``_sum``; and
``_created`` unless the library's created series are disabled), without a lock or the library's
per-update checks. Not thread-safe: each is updated from the one event-loop thread.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterator, Sequence

from prometheus_client import REGISTRY
from prometheus_client import metrics as _prometheus_metrics
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString


class TallyCounter(Collector):
    """A labelled counter kept as plain numbers, read at scrape time; exposed as
    prometheus_client's ``Counter(name, documentation, labelnames)`` is (``name`` without
    ``_total``). Registered with the default registry on creation.

    ``labels(*values)`` returns the child of those label values (made on first use, value 0),
    with ``inc(amount=1.0)`` and ``get()``. Not thread-safe: updated from one thread."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, tuple(labelnames)
        self._children: dict[tuple[str, ...], _CounterChild] = {}
        REGISTRY.register(self)

    def labels(self, *values: str) -> _CounterChild:
        key = tuple(str(v) for v in values)
        child = self._children.get(key)
        if child is None:
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name}: {len(self.labelnames)} label values expected, got {key!r}")
            child = self._children[key] = _CounterChild()
        return child

    def collect(self) -> Iterator[Metric]:
        fam = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for key, child in list(self._children.items()):
            fam.add_metric(key, child.value, created=child.created if _prometheus_metrics._use_created else None)
        yield fam


class _CounterChild:
    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()  # the creation stamp prometheus_client's Counter exposes

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self.value += amount

    def get(self) -> float:
        return self.value


class TallyHistogram(Collector):
    """A labelled histogram kept as plain numbers, read at scrape time; exposed as
    prometheus_client's ``Histogram(name, documentation, labelnames, buckets=buckets)`` is
    (``buckets``: sorted upper bounds, ``+Inf`` added when missing). Registered with the default
    registry on creation. ``labels(*values)`` returns the child, with ``observe(seconds)``."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]) -> None:
        bounds = [float(b) for b in buckets]
        if bounds != sorted(bounds):
            raise ValueError("Buckets not in sorted order")
        if not bounds or bounds[-1] != float("inf"):
            bounds.append(float("inf"))
        self.name, self.documentation, self.labelnames = name, documentation, tuple(labelnames)
        self.bounds = tuple(bounds)
        self._les = tuple(floatToGoString(b) for b in bounds)
        self._children: dict[tuple[str, ...], _HistogramChild] = {}
        REGISTRY.register(self)

    def labels(self, *values: str) -> _HistogramChild:
        key = tuple(str(v) for v in values)
        child = self._children.get(key)
        if child is None:
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name}: {len(self.labelnames)} label values expected, got {key!r}")
            child = self._children[key] = _HistogramChild(self.bounds)
        return child

    def collect(self) -> Iterator[Metric]:
        fam = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for key, child in list(self._children.items()):
            total, buckets = 0.0, []
            for le, n in zip(self._les, child.counts, strict=True):
                total += n
                buckets.append((le, total))
            fam.add_metric(key, buckets, child.sum)
            if _prometheus_metrics._use_created:
                fam.samples.append(Sample(self.name + "_created", dict(zip(self.labelnames, key, strict=True)),
                                          child.created))
        yield fam


class _HistogramChild:
    __slots__ = ("bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)  # per bucket, not cumulative: bucket i holds bounds[i-1] < v <= bounds[i]
        self.sum = 0.0
        self.created = time.time()  # the creation stamp prometheus_client's Histogram exposes

    def observe(self, amount: float) -> None:
        self.sum += amount
        self.counts[bisect.bisect_left(self.bounds, amount)] += 1
