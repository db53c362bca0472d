"""The KubeRay operator: RayCluster, RayJob and RayService controllers, with a batch-scheduler adapter.

Entry point: :func:`setup` resolves the flags into a :class:`~pumice.controllers.ray.options.RayOperatorOptions`
and calls each controller's ``setup_with_manager(mgr, opts)`` on a :class:`pumice.runtime` Manager.

Modules:

- ``raycluster``: the RayCluster controller (services, pods, scaling, suspend, status);
- ``rayjob``: the RayJob controller, a table of steps (``RAYJOB_STEPS``) per JobDeploymentStatus;
- ``rayservice``: the RayService controller (Serve applications, zero-downtime upgrades);
- ``common/``: pure builders (``pod``, ``service``, ``job``, ``resources``);
- ``association``: names and label selectors of every child;
- ``batchscheduler/``: the adapter Protocol, the no-op default and ``volcano``;
- ``dashboard``: the Ray dashboard client Protocol and the HTTP implementation
  (fake: :mod:`pumice.testing.ray_dashboard`);
- ``options``: :class:`RayOperatorOptions`; ``wiring``: what the ``setup_with_manager`` share;
- ``expectations``: scale expectations; ``validation``: spec checks; ``status``: one-line
  summaries for progress displays; ``constants`` and ``kinds``: wire strings and scheme.

Mirrors: kuberay ray-operator/main.go (controller registration, ``--batch-scheduler``).
"""

from __future__ import annotations

import logging
import random
from typing import Any, NamedTuple

from pumice.controllers.ray.batchscheduler import UnknownBatchSchedulerError, new_batch_scheduler
from pumice.controllers.ray.dashboard import DashboardClientFactory, ServeProxyHealthCheck
from pumice.controllers.ray.options import RayOperatorOptions, parse_watch_namespace
from pumice.controllers.ray.raycluster import RayClusterOptions, RayClusterReconciler
from pumice.controllers.ray.rayjob import RayJobOptions, RayJobReconciler
from pumice.controllers.ray.rayservice import RayServiceOptions, RayServiceReconciler

__all__ = [
    "RayClusterReconciler",
    "RayJobReconciler",
    "RayOperatorOptions",
    "RayReconcilers",
    "RayServiceReconciler",
    "UnknownBatchSchedulerError",
    "setup",
]

log = logging.getLogger(__name__)


class RayReconcilers(NamedTuple):
    """The reconcilers :func:`setup` registered."""

    raycluster: RayClusterReconciler
    rayjob: RayJobReconciler
    rayservice: RayServiceReconciler


def setup(mgr: Any, *, batch_scheduler: str | None = None, dashboard_client_factory: DashboardClientFactory | None = None,
          reconcile_concurrency: int = 1, seed: int | None = None,
          raycluster_options: RayClusterOptions = RayClusterOptions(),
          rayjob_options: RayJobOptions = RayJobOptions(),
          rayservice_options: RayServiceOptions | None = None,
          serve_proxy_healthy: ServeProxyHealthCheck | None = None, watch_namespace: str = "") -> RayReconcilers:
    """Register the RayCluster, RayJob and RayService controllers on ``mgr``.

    Args:
        mgr: a pumice.runtime Manager (``mgr.client``, ``mgr.clock``, ``mgr.event_recorder(name)``,
            ``mgr.controller(name)`` builder).
        batch_scheduler: ``"volcano"`` or None (``--batch-scheduler``; the deprecated
            ``--enable-batch-scheduler`` means ``"volcano"``).
        dashboard_client_factory: ``(ray_cluster, dashboard_url) -> RayDashboardClient``; default is
            the HTTP client dialing the head Pod IP.
        seed: seed of the generator for generated names (None: OS entropy, drawn here, not at import).
        rayservice_options: RayService switches (default: from the environment, ``ENABLE_ZERO_DOWNTIME``).
        serve_proxy_healthy: ``(head Pod, port) -> bool`` for the head Pods' ``ray.io/serve`` label
            (default: HTTP GET ``/-/healthz``).
        watch_namespace: KubeRay's ``--watch-namespace``: the namespaces, separated by commas, whose
            RayClusters, RayJobs and RayServices (and their Pods, Services and Jobs) are reconciled;
            empty: all (:func:`~pumice.controllers.ray.options.parse_watch_namespace`).
    Returns:
        The three reconcilers.
    Raises:
        UnknownBatchSchedulerError: ``batch_scheduler`` is not implemented.
    """
    namespaces = parse_watch_namespace(watch_namespace)
    if namespaces is None:
        log.info("KubeRay: watchNamespace is not set (or names the empty namespace): custom resources are watched in "
                 "all namespaces")
    else:
        log.info("KubeRay: custom resources are watched only in the namespaces %s", sorted(namespaces))
    opts = RayOperatorOptions(
        batch_scheduler_name=batch_scheduler, batch_scheduler=new_batch_scheduler(batch_scheduler, mgr.client),
        dashboard_client_factory=dashboard_client_factory, reconcile_concurrency=reconcile_concurrency,
        rng=random.Random(seed), raycluster=raycluster_options, rayjob=rayjob_options,
        rayservice=rayservice_options, serve_proxy_healthy=serve_proxy_healthy,
        watch_namespaces=namespaces)
    return RayReconcilers(RayClusterReconciler.setup_with_manager(mgr, opts),
                          RayJobReconciler.setup_with_manager(mgr, opts),
                          RayServiceReconciler.setup_with_manager(mgr, opts))
