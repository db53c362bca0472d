"""kube-apiserver's request metrics, counted on every resource request and served on ``/metrics``.

``apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}``
and ``apiserver_request_duration_seconds{verb,dry_run,group,version,resource,subresource,scope,
component}`` (upstream's buckets, 5 ms to 60 s), registered with prometheus_client's default
registry: the one ``/metrics`` serves, with every other metric the process exports (in ``pumice
up``, the controllers' and work queues'; see pumice.runtime.metrics).

The labels, as upstream's MonitorRequest reports them: ``verb`` upper case, ``GET`` of one object,
``LIST`` of a collection, ``WATCH`` (``?watch=true`` or the deprecated ``/watch/`` paths),
``APPLY`` (a server-side apply patch), ``CONNECT`` (the ``log``, ``exec``, ``attach``,
``portforward`` and ``proxy`` subresources), else the HTTP method (``POST``, ``PUT``, ``PATCH``,
``DELETE``); ``dry_run`` the sorted distinct ``dryRun`` values joined by commas (empty without);
``scope`` ``resource`` (a named object, or a create), ``namespace`` (a namespaced collection) or
``cluster``; ``component`` ``apiserver``; ``code`` the HTTP status. Health checks count as
upstream instruments them: verb ``GET``, subresource the path (``/livez``), the other labels empty.
The duration is read from the server's clock (so 0 on a simulation's virtual clock) from the
request's arrival to its answer (a watch: to its first byte, not its end).

Kept cheap for the hot path: one dict lookup per request for each metric, the children cached by
label values (see :class:`pumice._util.metrics.TallyCounter`).

Mirrors: k8s.io/apiserver pkg/endpoints/metrics/metrics.go (requestCounter, requestLatencies,
MonitorRequest, CanonicalVerb, CleanVerb, cleanDryRun) and pkg/endpoints/installer.go (the scope).
"""

from __future__ import annotations

from typing import Any

from pumice._util.metrics import TallyCounter, TallyHistogram

__all__ = ["CONNECT_SUBRESOURCES", "REQUEST_DURATION", "REQUEST_TOTAL", "record", "request_labels"]

#: label names of both metrics but ``code`` (upstream's order)
LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")

REQUEST_TOTAL = TallyCounter(
    "apiserver_request_total",
    "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, "
    "component, and HTTP response code.",
    (*LABELS, "code"))
REQUEST_DURATION = TallyHistogram(
    "apiserver_request_duration_seconds",
    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, "
    "subresource, scope and component.",
    LABELS,
    buckets=(0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45,
             60))

#: subresources whose requests upstream reports as verb ``CONNECT``
CONNECT_SUBRESOURCES = frozenset({"log", "exec", "portforward", "attach", "proxy"})

_APPLY = "application/apply-patch+yaml"
_WATCH_OFF = frozenset({"0", "false"})

_totals: dict[tuple[tuple[str, ...], int], Any] = {}
_durations: dict[tuple[str, ...], Any] = {}


def request_labels(method: str, group: str, version: str, resource: str, subresource: str, named: bool,
                   namespaced_collection: bool, query: dict[str, str], dry_run: list[str] | None,
                   content_type: str) -> tuple[str, ...]:
    """The label values (:data:`LABELS`) of one resource request.

    Args:
        method: the HTTP method.
        group, version, resource, subresource: what the path names (``""``: the core group, no
            subresource).
        named: the path names one object.
        namespaced_collection: the path is a collection in one namespace.
        query: the query parameters (first value of each).
        dry_run: every ``dryRun`` value, or None when there is none.
        content_type: the request's Content-Type (its media type: ``application/apply-patch+yaml``).
    """
    scope = "resource" if named or method == "POST" else "namespace" if namespaced_collection else "cluster"
    if subresource in CONNECT_SUBRESOURCES:
        verb = "CONNECT"
    elif method in ("GET", "HEAD"):
        watch = query.get("watch")
        if watch is not None and watch.lower() not in _WATCH_OFF:
            verb = "WATCH"
        else:
            verb = "GET" if scope == "resource" else "LIST"
    elif method == "PATCH" and content_type == _APPLY:
        verb = "APPLY"
    elif method in ("POST", "PUT", "PATCH", "DELETE"):
        verb = method
    else:
        verb = "other"
    dry = ",".join(sorted(set(dry_run))) if dry_run else ""
    return (verb, dry, group, version, resource, subresource, scope, "apiserver")


def record(labels: tuple[str, ...], code: int, seconds: float) -> None:
    """Count one answered request of ``labels`` (see :func:`request_labels`) with HTTP status
    ``code`` that took ``seconds``."""
    total = _totals.get((labels, code))
    if total is None:
        total = _totals[(labels, code)] = REQUEST_TOTAL.labels(*labels, str(code))
    total.inc()
    duration = _durations.get(labels)
    if duration is None:
        duration = _durations[labels] = REQUEST_DURATION.labels(*labels)
    duration.observe(seconds)
