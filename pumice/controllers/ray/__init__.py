"""The KubeRay operator: RayCluster, RayJob and RayService controllers, with a batch-scheduler adapter.

Entry point: :func:`setup` registers the three controllers on a :class:`pumice.runtime` Manager.

Modules:

- ``raycluster``: the RayCluster controller (services, pods, scaling, suspend, status);
- ``rayjob``: the RayJob controller, a table of steps (``RAYJOB_STEPS``) per JobDeploymentStatus;
- ``rayservice``: the RayService controller (Serve applications, zero-downtime upgrades);
- ``common/``: pure builders (``pod``, ``service``, ``job``, ``resources``);
- ``association``: names and label selectors of every child;
- ``batchscheduler/``: the adapter Protocol, the no-op default and ``volcano``;
- ``dashboard``: the Ray dashboard client Protocol and the HTTP implementation
  (fake: :mod:`pumice.testing.ray_dashboard`);
- ``expectations``: scale expectations; ``validation``: spec checks; ``status``: one-line
  summaries for progress displays; ``constants`` and ``kinds``: wire strings and scheme.

Mirrors: kuberay ray-operator/main.go (controller registration, ``--batch-scheduler``).
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple

from pumice.api import scheme
from pumice.controllers.ray.batchscheduler import UnknownBatchSchedulerError, new_batch_scheduler
from pumice.controllers.ray.dashboard import DashboardClientFactory, ServeProxyHealthCheck
from pumice.controllers.ray.raycluster import CacheReader, RayClusterOptions, RayClusterReconciler
from pumice.controllers.ray.rayjob import RayJobOptions, RayJobReconciler
from pumice.controllers.ray.rayservice import RayServiceOptions, RayServiceReconciler
from pumice.runtime.predicates import (
    AnnotationChangedPredicate,
    GenerationChangedPredicate,
    LabelChangedPredicate,
    or_,
)

__all__ = [
    "RayClusterReconciler",
    "RayJobReconciler",
    "RayReconcilers",
    "RayServiceReconciler",
    "UnknownBatchSchedulerError",
    "setup",
]


def _store(informer: Any) -> Any:
    lister = informer.lister
    return lister() if callable(lister) else lister


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
          serve_proxy_healthy: ServeProxyHealthCheck | None = None) -> RayReconcilers:
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
        serve_proxy_healthy: ``(pod_ip, port) -> bool`` for the head Pods' ``ray.io/serve`` label
            (default: HTTP GET ``/-/healthz``).
    Returns:
        The three reconcilers.
    Raises:
        UnknownBatchSchedulerError: ``batch_scheduler`` is not implemented.
    """
    client = mgr.client
    clock = getattr(mgr, "clock", None)
    scheduler = new_batch_scheduler(batch_scheduler, client)
    rng = random.Random(seed)

    def recorder(component: str) -> Any:
        fn = getattr(mgr, "event_recorder", None)
        return fn(component) if fn is not None else None

    reader = None
    informers = getattr(mgr, "informers", None)
    if informers is not None:
        pods = informers.informer(scheme.POD)
        services = informers.informer(scheme.SERVICE)
        reader = CacheReader(_store(pods), _store(services))
    rc = RayClusterReconciler(client, recorder=recorder("raycluster-controller"), clock=clock,
                              batch_scheduler=scheduler, options=raycluster_options,
                              rng=random.Random(rng.random()), reader=reader)
    rj = RayJobReconciler(client, recorder=recorder("rayjob-controller"), clock=clock, batch_scheduler=scheduler,
                          dashboard_client_factory=dashboard_client_factory, options=rayjob_options,
                          rng=random.Random(rng.random()))
    # Upstream filters the primary watch to spec, label and annotation changes: the controller's
    # own status writes do not wake it (it requeues itself 2 s after a status change).
    primary = or_(GenerationChangedPredicate, LabelChangedPredicate, AnnotationChangedPredicate)
    b = mgr.controller("raycluster").for_(scheme.RAY_CLUSTER, primary).owns(scheme.POD).owns(scheme.SERVICE)
    if batch_scheduler == "volcano":
        b = b.owns(scheme.POD_GROUP)
    b.with_options(max_concurrent_reconciles=reconcile_concurrency).complete(rc)
    b2 = mgr.controller("rayjob").for_(scheme.RAY_JOB).owns(scheme.RAY_CLUSTER).owns(scheme.SERVICE).owns(scheme.JOB)
    b2.with_options(max_concurrent_reconciles=reconcile_concurrency).complete(rj)
    rs = RayServiceReconciler(client, recorder=recorder("rayservice-controller"), clock=clock,
                              dashboard_client_factory=dashboard_client_factory,
                              serve_proxy_healthy=serve_proxy_healthy,
                              options=rayservice_options or RayServiceOptions.from_env(),
                              rng=random.Random(rng.random()))
    b3 = mgr.controller("rayservice").for_(scheme.RAY_SERVICE, primary).owns(scheme.RAY_CLUSTER).owns(scheme.SERVICE)
    b3.with_options(max_concurrent_reconciles=reconcile_concurrency).complete(rs)
    return RayReconcilers(rc, rj, rs)
