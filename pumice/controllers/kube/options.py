"""What ``pumice.controllers.kube.setup`` passes to each controller's ``setup_with_manager``."""

from __future__ import annotations

from dataclasses import dataclass

from pumice.controllers.kube.job import DEFAULT_POD_FAILURE_BACKOFF
from pumice.controllers.kube.nodelifecycle import GRACE_PERIOD, MONITOR_PERIOD
from pumice.controllers.kube.podgc import GC_CHECK_PERIOD, TERMINATED_POD_GC_THRESHOLD


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
        terminated_pod_gc_threshold: terminated Pods the pod garbage collector keeps
            (``--terminated-pod-gc-threshold``, upstream 12500; <= 0: all).
        pod_gc_check_period: seconds between the pod garbage collector's passes (upstream 20);
            None: only its event-driven passes (``pumice simulate``).
    """

    workers: int = 8
    pod_failure_backoff: float = DEFAULT_POD_FAILURE_BACKOFF
    node_grace_period: float = GRACE_PERIOD
    node_monitor_period: float = MONITOR_PERIOD
    root_ca: str | None = None
    terminated_pod_gc_threshold: int = TERMINATED_POD_GC_THRESHOLD
    pod_gc_check_period: float | None = GC_CHECK_PERIOD
