"""What ``pumice.controllers.kube.setup`` passes to each controller's ``setup_with_manager``."""

from __future__ import annotations

from dataclasses import dataclass

from pumice.controllers.kube.job import DEFAULT_POD_FAILURE_BACKOFF
from pumice.controllers.kube.nodelifecycle import GRACE_PERIOD, MONITOR_PERIOD


@dataclass(frozen=True)
class KubeOptions:
    """Options of the built-in controllers (kube-controller-manager flags).

    Attributes:
        workers: concurrent reconciles of the ReplicaSet, Deployment, Job and Endpoints
            controllers, and the garbage collector's workers.
        pod_failure_backoff: Job replacement backoff base, seconds (upstream 10).
        node_grace_period: seconds without a heartbeat before a Node is Unknown (upstream 50).
        node_monitor_period: seconds between node health passes (upstream 5).
        root_ca: the API server's CA certificate (PEM) for ``kube-root-ca.crt``
            (``--root-ca-file``); the publisher does not run without it.
    """

    workers: int = 8
    pod_failure_backoff: float = DEFAULT_POD_FAILURE_BACKOFF
    node_grace_period: float = GRACE_PERIOD
    node_monitor_period: float = MONITOR_PERIOD
    root_ca: str | None = None
