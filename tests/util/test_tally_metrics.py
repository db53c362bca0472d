"""The controller metrics kept as plain numbers (TallyCounter, TallyHistogram) scrape exactly as
prometheus_client's Counter and Histogram of the same name, help, labels and buckets do."""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from pumice._util.metrics import TallyCounter, TallyHistogram


def _exposition(registry: CollectorRegistry) -> list[str]:
    # _created carries the creation time (wall clock): compared by presence, not value
    return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", generate_latest(registry).decode()).splitlines()


def test_tally_counter_and_histogram_scrape_like_prometheus_client(monkeypatch: pytest.MonkeyPatch) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    monkeypatch.setattr("pumice._util.metrics.REGISTRY", ours)
    buckets = (0.005, 0.01, 0.5, 1, 10)
    c1 = TallyCounter("t_reconcile", "Total reconciles", ["controller", "result"])
    h1 = TallyHistogram("t_reconcile_seconds", "Time per reconcile", ["controller"], buckets)
    c2 = Counter("t_reconcile", "Total reconciles", ["controller", "result"], registry=theirs)
    h2 = Histogram("t_reconcile_seconds", "Time per reconcile", ["controller"], buckets=buckets, registry=theirs)
    for name in ("a", "b"):
        for result in ("success", "error"):
            c1.labels(name, result)
            c2.labels(name, result)
        h1.labels(name)
        h2.labels(name)
    for v in (0.0, 0.005, 0.0051, 0.3, 1, 10, 11, 1e9):  # on, between and beyond the bounds
        c1.labels("a", "success").inc()
        c2.labels("a", "success").inc()
        h1.labels("a").observe(v)
        h2.labels("a").observe(v)
    c1.labels("b", "error").inc(2.5)
    c2.labels("b", "error").inc(2.5)
    ours_text = _exposition(ours)
    assert ours_text == _exposition(theirs)
    assert 't_reconcile_seconds_bucket{controller="a",le="0.005"} 2.0' in ours_text
    assert 't_reconcile_seconds_bucket{controller="a",le="+Inf"} 8.0' in ours_text
    assert ours.get_sample_value("t_reconcile_total", {"controller": "a", "result": "success"}) == 8.0
    assert c1.labels("b", "error").get() == 2.5


def test_tally_counter_refuses_a_negative_increment_and_wrong_label_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pumice._util.metrics.REGISTRY", CollectorRegistry())
    c = TallyCounter("t_neg", "x", ["controller"])
    with pytest.raises(ValueError, match="non-negative"):
        c.labels("a").inc(-1)
    with pytest.raises(ValueError, match="1 label values expected"):
        c.labels("a", "b")
    assert c.labels("a").get() == 0.0
