"""What the three Ray controllers are set up with.

:func:`pumice.controllers.ray.setup` resolves the operator's flags once into a
:class:`RayOperatorOptions`; each controller's ``setup_with_manager(mgr, opts)`` classmethod
(:class:`~pumice.controllers.ray.raycluster.RayClusterReconciler`,
:class:`~pumice.controllers.ray.rayjob.RayJobReconciler`,
:class:`~pumice.controllers.ray.rayservice.RayServiceReconciler`) then builds its reconciler and
registers its watches, as the kube and Volcano controllers do.

Mirrors: kuberay ray-operator/main.go (one options struct for the reconcilers) and each
controller's ``SetupWithManager``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pumice.controllers.ray.batchscheduler import BatchScheduler, DefaultBatchScheduler
from pumice.controllers.ray.dashboard import DashboardClientFactory, ServeProxyHealthCheck
from pumice.controllers.ray.raycluster import RayClusterOptions
from pumice.controllers.ray.rayjob import RayJobOptions
from pumice.controllers.ray.rayservice import RayServiceOptions

__all__ = ["RayOperatorOptions"]


@dataclass(frozen=True)
class RayOperatorOptions:
    """The KubeRay operator's configuration, resolved once for all three controllers.

    Attributes:
        batch_scheduler_name: ``--batch-scheduler`` (None: no batch scheduler).
        batch_scheduler: the adapter built from it (shared by RayCluster and RayJob).
        dashboard_client_factory: ``(ray_cluster, dashboard_url) -> RayDashboardClient`` (None:
            HTTP to the head Pod IP).
        reconcile_concurrency: workers per controller.
        rng: the generator each controller draws its own seed from, in setup order
            (RayCluster, RayJob, RayService), so a seeded operator names children reproducibly.
        raycluster, rayjob, rayservice: each controller's switches (``rayservice`` None: from
            the environment, ``ENABLE_ZERO_DOWNTIME``).
        serve_proxy_healthy: ``(head Pod, port) -> bool`` for the ``ray.io/serve`` label (None:
            HTTP GET ``/-/healthz``).
    """

    batch_scheduler_name: str | None = None
    batch_scheduler: BatchScheduler = field(default_factory=DefaultBatchScheduler)
    dashboard_client_factory: DashboardClientFactory | None = None
    reconcile_concurrency: int = 1
    rng: random.Random = field(default_factory=random.Random)
    raycluster: RayClusterOptions = field(default_factory=RayClusterOptions)
    rayjob: RayJobOptions = field(default_factory=RayJobOptions)
    rayservice: RayServiceOptions | None = None
    serve_proxy_healthy: ServeProxyHealthCheck | None = None

    def child_rng(self) -> random.Random:
        """A generator for one controller, seeded by the next draw of :attr:`rng`."""
        return random.Random(self.rng.random())
