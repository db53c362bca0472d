"""Controller metrics with controller-runtime's names (prometheus_client default registry).

- ``controller_runtime_reconcile_total{controller,result}``: result is ``success``, ``error``,
  ``requeue_after`` (``requeue`` is never used: there is no bare requeue flag here);
- ``controller_runtime_reconcile_errors_total{controller}``;
- ``controller_runtime_terminal_reconcile_errors_total{controller}``;
- ``controller_runtime_reconcile_panics_total{controller}`` (never incremented; Python raises);
- ``controller_runtime_reconcile_time_seconds{controller}`` histogram;
- ``controller_runtime_max_concurrent_reconciles{controller}`` and
  ``controller_runtime_active_workers{controller}`` gauges (the latter read at scrape time from
  the most recent controller of that name);
- ``leader_election_master_status{name}`` gauge (1 while leading).

The work-queue metrics live in :mod:`pumice.client.workqueue`.

The reconcile counters and the reconcile-time histogram are updated once per reconcile: they are
:class:`~pumice._util.metrics.TallyCounter` / :class:`~pumice._util.metrics.TallyHistogram`
(plain numbers, scraped exactly as prometheus_client's Counter / Histogram).

Mirrors: controller-runtime pkg/internal/controller/metrics/metrics.go and
pkg/leaderelection metrics.
"""

from __future__ import annotations

from prometheus_client import Gauge

from pumice._util.metrics import TallyCounter, TallyHistogram

RECONCILE_TOTAL = TallyCounter(
    "controller_runtime_reconcile", "Total number of reconciliations per controller",
    ["controller", "result"],
)
RECONCILE_ERRORS = TallyCounter(
    "controller_runtime_reconcile_errors", "Total number of reconciliation errors per controller",
    ["controller"],
)
TERMINAL_RECONCILE_ERRORS = TallyCounter(
    "controller_runtime_terminal_reconcile_errors",
    "Total number of terminal reconciliation errors per controller", ["controller"],
)
RECONCILE_TIME = TallyHistogram(
    "controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller",
    ["controller"],
    (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
     0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15,
     20, 25, 30, 40, 50, 60),
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per controller",
    ["controller"],
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers", "Number of currently used workers per controller",
    ["controller"],
)
LEADER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
    ["name"],
)
