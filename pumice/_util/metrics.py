"""Prometheus counters and histograms kept as plain numbers and read at scrape time.

:class:`TallyCounter` and :class:`TallyHistogram` stand where a prometheus_client ``Counter`` or
``Histogram`` is updated on a hot path (once per reconcile, per work-queue step): they keep one
number (or one count per bucket) per label values, and build the same samples the library's
classes expose when the registry is scraped (``_total``; ``_bucket``, ``_count``, ``_sum``; and
``_created`` unless the library's created series are disabled), without a lock or the library's
per-update checks. Not thread-safe: each is updated from the one event-loop thread.

The library's created series are disabled by :func:`configure_metrics`, which each pumice server
that serves ``/metrics`` calls where it builds its app (kube-apiserver and controller-runtime
expose their metrics with client_golang, whose text format has no ``_created`` samples); importing
this module changes nothing in the process.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, disable_created_metrics, generate_latest
from prometheus_client import metrics as _prometheus_metrics
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

_C = TypeVar("_C")


def configure_metrics() -> None:
    """Set up the process's Prometheus metrics as pumice's ``/metrics`` endpoints serve them:
    prometheus_client's created series (the ``_created`` sample of every counter, histogram and
    summary, the tallies' here too) are turned off, for the whole process and every registry, as
    client_golang's text format writes none. Idempotent.

    Called where a server builds its ``/metrics`` app: the API server's
    (:func:`pumice.apiserver.http.build_app`) and a Manager's health and metrics server
    (:func:`pumice.runtime.health.build_app` with ``metrics``). A program embedding pumice that
    keeps created series of its own starts no such server, or re-enables them after
    (``prometheus_client.enable_created_metrics``)."""
    disable_created_metrics()


EXPOSITION_CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""``text/plain; version=0.0.4; charset=utf-8``: the Content-Type of :func:`exposition`, as
client_golang's expfmt names the text format (prometheus_client's CONTENT_TYPE_LATEST says
``version=1.0.0``, its UTF-8 names form, which it only writes when a scraper asks for it).
Newer client_golang releases append ``; escaping=underscores``; not written here."""


def exposition(registry: CollectorRegistry = REGISTRY) -> bytes:
    """The Prometheus text format (0.0.4) of ``registry`` (default: the process's), without
    ``_created`` series once :func:`configure_metrics` ran (as the server serving it did): what a
    ``/metrics`` endpoint serves, as :data:`EXPOSITION_CONTENT_TYPE`.

    Mirrors: client_golang prometheus/promhttp (the text encoding, which writes no created samples)."""
    return generate_latest(registry)


class _Tally(Collector, Generic[_C]):
    """What both tallies share: name, documentation and label names, registration with the
    default registry, and one child per label values, made on first use by :meth:`_new_child`."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, tuple(labelnames)
        self._children: dict[tuple[str, ...], _C] = {}

    def _new_child(self) -> _C:
        raise NotImplementedError

    def labels(self, *values: str) -> _C:
        """The child of these label values (made on first use).

        Raises:
            ValueError: not one value per label name."""
        key = tuple(str(v) for v in values)
        child = self._children.get(key)
        if child is None:
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name}: {len(self.labelnames)} label values expected, got {key!r}")
            child = self._children[key] = self._new_child()
        return child


class TallyCounter(_Tally["_CounterChild"]):
    """A labelled counter kept as plain numbers, read at scrape time; exposed as
    prometheus_client's ``Counter(name, documentation, labelnames)`` is (``name`` without
    ``_total``). Registered with the default registry on creation.

    ``labels(*values)`` returns the child of those label values (made on first use, value 0),
    with ``inc(amount=1.0)`` and ``get()``. Not thread-safe: updated from one thread."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        super().__init__(name, documentation, labelnames)
        REGISTRY.register(self)

    def _new_child(self) -> _CounterChild:
        return _CounterChild()

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


class TallyHistogram(_Tally["_HistogramChild"]):
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
        super().__init__(name, documentation, labelnames)
        self.bounds = tuple(bounds)
        self._les = tuple(floatToGoString(b) for b in bounds)
        REGISTRY.register(self)

    def _new_child(self) -> _HistogramChild:
        return _HistogramChild(self.bounds)

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
