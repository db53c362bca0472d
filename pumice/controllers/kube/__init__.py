"""The built-in Kubernetes controllers (kube-controller-manager subset).

``setup(mgr)`` registers, on a :class:`pumice.runtime.Manager`:

========================  ====================================================================
name                      what it does
========================  ====================================================================
``replicaset``            :mod:`.replicaset`: Pods for ReplicaSets (expectations, deletion order)
``deployment``            :mod:`.deployment`: ReplicaSets for Deployments (RollingUpdate, Recreate)
``job``                   :mod:`.job`: Pods for batch/v1 Jobs (backoffLimit, deadline, TTL, ...)
``endpoints``             :mod:`.endpoints`: Endpoints + EndpointSlice for Services with selectors
``namespace``             :mod:`.namespace`: empties Terminating Namespaces, then finalizes them
``garbagecollector``      :mod:`.garbagecollector`: ownerReferences (background, foreground, orphan)
``nodelifecycle``         :mod:`.nodelifecycle`: heartbeat expiry, taints, NoExecute evictions
``podgc``                 :mod:`.podgc`: orphaned, unscheduled terminating and excess terminated Pods
``serviceaccount``        :mod:`.serviceaccount`: a ``default`` ServiceAccount in every Namespace
``root-ca-cert-publisher`` :mod:`.rootcacert`: ConfigMap ``kube-root-ca.crt`` in every Namespace
                          (only when ``setup`` is given the API server's CA)
``clusterrole-aggregation`` :mod:`.clusterroleaggregation`: rules of aggregated ClusterRoles
``persistentvolume-binder`` :mod:`.persistentvolume`: binds claims to volumes, asks provisioners
``statefulset``           :mod:`.statefulset`: stable names and claims, ordered start, rolling update
``daemonset``             :mod:`.daemonset`: one Pod per eligible Node
``cronjob``               :mod:`.cronjob`: Jobs on a cron schedule, concurrency policy, history
``replicationcontroller`` :mod:`.replicaset` with ``kind="ReplicationController"``
``disruption``            :mod:`.disruption`: PodDisruptionBudget status
``resourcequota``         :mod:`.resourcequota`: ResourceQuota status (hard, used)
``pvc-protection``        :mod:`.volumeprotection`: a claim in use by a Pod outlives its delete
``pv-protection``         :mod:`.volumeprotection`: a bound volume outlives its delete
``ephemeral-volume``      :mod:`.ephemeral`: the claim of each generic ephemeral volume of a Pod
========================  ====================================================================

and ``horizontalpodautoscaling`` (:mod:`.horizontal`: HPA bounds, conditions and Events, no metrics).

Mirrors: kubernetes cmd/kube-controller-manager/app/controllermanager.go (NewControllerDescriptors).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pumice.controllers.kube.clusterroleaggregation import ClusterRoleAggregationReconciler
from pumice.controllers.kube.cronjob import CronJobReconciler
from pumice.controllers.kube.daemonset import DaemonSetReconciler
from pumice.controllers.kube.deployment import DeploymentReconciler
from pumice.controllers.kube.disruption import DisruptionReconciler
from pumice.controllers.kube.endpoints import EndpointsReconciler
from pumice.controllers.kube.ephemeral import EphemeralVolumeReconciler
from pumice.controllers.kube.garbagecollector import GarbageCollector
from pumice.controllers.kube.horizontal import HorizontalReconciler
from pumice.controllers.kube.job import DEFAULT_POD_FAILURE_BACKOFF, JobReconciler
from pumice.controllers.kube.namespace import NamespaceReconciler
from pumice.controllers.kube.nodelifecycle import GRACE_PERIOD, MONITOR_PERIOD, NodeLifecycleController
from pumice.controllers.kube.options import KubeOptions
from pumice.controllers.kube.persistentvolume import PersistentVolumeBinder
from pumice.controllers.kube.podgc import GC_CHECK_PERIOD, TERMINATED_POD_GC_THRESHOLD, PodGCController
from pumice.controllers.kube.replicaset import ReplicaSetReconciler, setup_replication_controller
from pumice.controllers.kube.resourcequota import ResourceQuotaReconciler
from pumice.controllers.kube.rootcacert import RootCACertPublisher
from pumice.controllers.kube.serviceaccount import ServiceAccountsReconciler
from pumice.controllers.kube.statefulset import StatefulSetReconciler
from pumice.controllers.kube.volumeprotection import PVCProtectionReconciler, PVProtectionReconciler
from pumice.runtime.manager import Manager

SETUPS: dict[str, Callable[[Manager, KubeOptions], object]] = {
    "replicaset": ReplicaSetReconciler.setup_with_manager,
    "deployment": DeploymentReconciler.setup_with_manager,
    "job": JobReconciler.setup_with_manager,
    "endpoints": EndpointsReconciler.setup_with_manager,
    "namespace": NamespaceReconciler.setup_with_manager,
    "garbagecollector": GarbageCollector.setup_with_manager,
    "nodelifecycle": NodeLifecycleController.setup_with_manager,
    "podgc": PodGCController.setup_with_manager,
    "serviceaccount": ServiceAccountsReconciler.setup_with_manager,
    "root-ca-cert-publisher": RootCACertPublisher.setup_with_manager,
    "clusterrole-aggregation": ClusterRoleAggregationReconciler.setup_with_manager,
    "persistentvolume-binder": PersistentVolumeBinder.setup_with_manager,
    "statefulset": StatefulSetReconciler.setup_with_manager,
    "daemonset": DaemonSetReconciler.setup_with_manager,
    "cronjob": CronJobReconciler.setup_with_manager,
    "replicationcontroller": setup_replication_controller,
    "disruption": DisruptionReconciler.setup_with_manager,
    "resourcequota": ResourceQuotaReconciler.setup_with_manager,
    "horizontalpodautoscaling": HorizontalReconciler.setup_with_manager,
    "pvc-protection": PVCProtectionReconciler.setup_with_manager,
    "pv-protection": PVProtectionReconciler.setup_with_manager,
    "ephemeral-volume": EphemeralVolumeReconciler.setup_with_manager,
}
"""Controller name -> its ``setup_with_manager`` (each controller builds and registers itself)."""

CONTROLLERS = tuple(SETUPS)

__all__ = ["CONTROLLERS", "SETUPS", "KubeControllers", "KubeOptions", "setup"]


class KubeControllers:
    """Handles on what :func:`setup` registered (reconcilers and runnables), for tests."""

    def __init__(self) -> None:
        self.replicaset: ReplicaSetReconciler | None = None
        self.deployment: DeploymentReconciler | None = None
        self.job: JobReconciler | None = None
        self.endpoints: EndpointsReconciler | None = None
        self.namespace: NamespaceReconciler | None = None
        self.garbagecollector: GarbageCollector | None = None
        self.nodelifecycle: NodeLifecycleController | None = None
        self.podgc: PodGCController | None = None
        self.serviceaccount: ServiceAccountsReconciler | None = None
        self.root_ca_cert_publisher: RootCACertPublisher | None = None
        self.clusterrole_aggregation: ClusterRoleAggregationReconciler | None = None
        self.persistentvolume_binder: PersistentVolumeBinder | None = None
        self.statefulset: StatefulSetReconciler | None = None
        self.daemonset: DaemonSetReconciler | None = None
        self.cronjob: CronJobReconciler | None = None
        self.replicationcontroller: ReplicaSetReconciler | None = None
        self.disruption: DisruptionReconciler | None = None
        self.resourcequota: ResourceQuotaReconciler | None = None
        self.horizontalpodautoscaling: HorizontalReconciler | None = None
        self.pvc_protection: PVCProtectionReconciler | None = None
        self.pv_protection: PVProtectionReconciler | None = None
        self.ephemeral_volume: EphemeralVolumeReconciler | None = None


def setup(mgr: Manager, *, controllers: Iterable[str] | None = None, workers: int = 8,
          pod_failure_backoff: float = DEFAULT_POD_FAILURE_BACKOFF, node_grace_period: float = GRACE_PERIOD,
          node_monitor_period: float = MONITOR_PERIOD, root_ca: str | None = None,
          terminated_pod_gc_threshold: int = TERMINATED_POD_GC_THRESHOLD,
          pod_gc_check_period: float | None = GC_CHECK_PERIOD) -> KubeControllers:
    """Register the built-in controllers on ``mgr``.

    Args:
        controllers: names from :data:`CONTROLLERS` (default: all).
        workers: concurrent reconciles for the ReplicaSet, Deployment, Job and Endpoints controllers.
        pod_failure_backoff: Job replacement backoff base, seconds (upstream 10).
        node_grace_period: seconds without a heartbeat before a Node is Unknown (upstream 50).
        node_monitor_period: seconds between node health passes (upstream 5).
        root_ca: the API server's CA certificate (PEM) for ``kube-root-ca.crt``; the publisher does
            not run without it (kube-controller-manager's ``--root-ca-file``).
        terminated_pod_gc_threshold: terminated Pods the pod garbage collector keeps (upstream
            ``--terminated-pod-gc-threshold`` 12500; <= 0: all).
        pod_gc_check_period: seconds between pod garbage collection passes (upstream 20); None:
            only event-driven passes (Node deleted or tainted out-of-service, quarantine over).

    Raises:
        ValueError: an unknown controller name (the message lists the known ones).
    """
    wanted = list(CONTROLLERS if controllers is None else controllers)
    unknown = [c for c in wanted if c not in CONTROLLERS]
    if unknown:
        raise ValueError(f"unknown kube controllers {unknown}; known: {', '.join(CONTROLLERS)}")
    opts = KubeOptions(workers=workers, pod_failure_backoff=pod_failure_backoff,
                       node_grace_period=node_grace_period, node_monitor_period=node_monitor_period,
                       root_ca=root_ca, terminated_pod_gc_threshold=terminated_pod_gc_threshold,
                       pod_gc_check_period=pod_gc_check_period)
    out = KubeControllers()
    for name in wanted:
        setattr(out, name.replace("-", "_"), SETUPS[name](mgr, opts))
    return out
