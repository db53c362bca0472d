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
``serviceaccount``        :mod:`.serviceaccount`: a ``default`` ServiceAccount in every Namespace
``root-ca-cert-publisher`` :mod:`.rootcacert`: ConfigMap ``kube-root-ca.crt`` in every Namespace
                          (only when ``setup`` is given the API server's CA)
``clusterrole-aggregation`` :mod:`.clusterroleaggregation`: rules of aggregated ClusterRoles
``persistentvolume-binder`` :mod:`.persistentvolume`: binds claims to volumes, asks provisioners
========================  ====================================================================

Mirrors: kubernetes cmd/kube-controller-manager/app/controllermanager.go (NewControllerDescriptors).
"""

from __future__ import annotations

from collections.abc import Iterable

from pumice.api import Obj
from pumice.api.scheme import (
    CLUSTER_ROLE,
    CONFIG_MAP,
    DEPLOYMENT,
    ENDPOINT_SLICE,
    ENDPOINTS,
    JOB,
    LEASE,
    NAMESPACE,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    REPLICA_SET,
    SERVICE,
    SERVICE_ACCOUNT,
    STORAGE_CLASS,
)
from pumice.controllers.kube.clusterroleaggregation import ClusterRoleAggregationReconciler
from pumice.controllers.kube.deployment import DeploymentReconciler
from pumice.controllers.kube.endpoints import EndpointsReconciler, services_for_pod
from pumice.controllers.kube.garbagecollector import GarbageCollector
from pumice.controllers.kube.job import DEFAULT_POD_FAILURE_BACKOFF, JobReconciler
from pumice.controllers.kube.namespace import NamespaceReconciler
from pumice.controllers.kube.nodelifecycle import (
    GRACE_PERIOD,
    LEASE_NAMESPACE,
    MONITOR_PERIOD,
    NodeLifecycleController,
)
from pumice.controllers.kube.persistentvolume import PersistentVolumeBinder, VolumeReconciler, claim_of_volume
from pumice.controllers.kube.replicaset import ReplicaSetReconciler
from pumice.controllers.kube.rootcacert import RootCACertPublisher, namespace_of_configmap
from pumice.controllers.kube.serviceaccount import ServiceAccountsReconciler, namespace_of_service_account
from pumice.runtime import Request
from pumice.runtime.manager import Manager
from pumice.runtime.predicates import FuncPredicate

CONTROLLERS = ("replicaset", "deployment", "job", "endpoints", "namespace", "garbagecollector", "nodelifecycle",
               "serviceaccount", "root-ca-cert-publisher", "clusterrole-aggregation", "persistentvolume-binder")

__all__ = ["CONTROLLERS", "KubeControllers", "setup"]


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
        self.serviceaccount: ServiceAccountsReconciler | None = None
        self.root_ca_cert_publisher: RootCACertPublisher | None = None
        self.clusterrole_aggregation: ClusterRoleAggregationReconciler | None = None
        self.persistentvolume_binder: PersistentVolumeBinder | None = None


def setup(mgr: Manager, *, controllers: Iterable[str] | None = None, workers: int = 8,
          pod_failure_backoff: float = DEFAULT_POD_FAILURE_BACKOFF, node_grace_period: float = GRACE_PERIOD,
          node_monitor_period: float = MONITOR_PERIOD, root_ca: str | None = None) -> KubeControllers:
    """Register the built-in controllers on ``mgr``.

    Args:
        controllers: names from :data:`CONTROLLERS` (default: all).
        workers: concurrent reconciles for the ReplicaSet, Deployment, Job and Endpoints controllers.
        pod_failure_backoff: Job replacement backoff base, seconds (upstream 10).
        node_grace_period: seconds without a heartbeat before a Node is Unknown (upstream 50).
        node_monitor_period: seconds between node health passes (upstream 5).
        root_ca: the API server's CA certificate (PEM) for ``kube-root-ca.crt``; the publisher does
            not run without it (kube-controller-manager's ``--root-ca-file``).

    Raises:
        ValueError: an unknown controller name (the message lists the known ones).
    """
    wanted = list(CONTROLLERS if controllers is None else controllers)
    unknown = [c for c in wanted if c not in CONTROLLERS]
    if unknown:
        raise ValueError(f"unknown kube controllers {unknown}; known: {', '.join(CONTROLLERS)}")
    inf = mgr.informers
    out = KubeControllers()
    pods = inf.informer(POD)

    if "replicaset" in wanted:
        rs = ReplicaSetReconciler(mgr.client, replica_sets=inf.informer(REPLICA_SET), pods=pods, clock=mgr.clock,
                                  recorder=mgr.event_recorder("replicaset-controller"))
        mgr.controller("replicaset").for_(REPLICA_SET).owns(POD).with_options(
            max_concurrent_reconciles=workers).complete(rs)
        out.replicaset = rs

    if "deployment" in wanted:
        replica_sets = inf.informer(REPLICA_SET)

        def deployment_of_pod(pod: Obj) -> list[Request]:
            md = pod.get("metadata") or {}
            for ref in md.get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == "ReplicaSet":
                    owner = replica_sets.store.get(md.get("namespace"), str(ref.get("name")))
                    for oref in ((owner or {}).get("metadata") or {}).get("ownerReferences") or []:
                        if oref.get("controller") and oref.get("kind") == "Deployment":
                            return [Request(md.get("namespace") or "", str(oref.get("name")))]
            return []

        dep = DeploymentReconciler(mgr.client, deployments=inf.informer(DEPLOYMENT), replica_sets=replica_sets,
                                   pods=pods, clock=mgr.clock, recorder=mgr.event_recorder("deployment-controller"))
        mgr.controller("deployment").for_(DEPLOYMENT).owns(REPLICA_SET).watches(
            POD, deployment_of_pod, predicates=FuncPredicate(create=lambda _o: False, update=lambda _o, _n: False)
        ).with_options(max_concurrent_reconciles=workers).complete(dep)
        out.deployment = dep

    if "job" in wanted:
        job = JobReconciler(mgr.client, jobs=inf.informer(JOB), pods=pods, clock=mgr.clock,
                            recorder=mgr.event_recorder("job-controller"), pod_failure_backoff=pod_failure_backoff)
        mgr.controller("job").for_(JOB).owns(POD).with_options(max_concurrent_reconciles=workers).complete(job)
        out.job = job

    if "endpoints" in wanted:
        services = inf.informer(SERVICE)
        ep = EndpointsReconciler(mgr.client, services=services, pods=pods, endpoints=inf.informer(ENDPOINTS),
                                 slices=inf.informer(ENDPOINT_SLICE))
        mgr.controller("endpoints").for_(SERVICE).watches(POD, lambda p: services_for_pod(services, p)).watches(
            ENDPOINTS, lambda e: [Request.for_object(e)]).with_options(
            max_concurrent_reconciles=workers).complete(ep)
        out.endpoints = ep

    if "namespace" in wanted:
        ns = NamespaceReconciler(mgr.client, namespaces=inf.informer(NAMESPACE), clock=mgr.clock)
        mgr.controller("namespace").for_(NAMESPACE).with_options(max_concurrent_reconciles=2).complete(ns)
        out.namespace = ns

    if "garbagecollector" in wanted:
        gc = GarbageCollector(mgr.client, inf, mgr.clock, workers=workers)
        mgr.add_runnable(gc.run, name="garbagecollector")
        out.garbagecollector = gc

    if "nodelifecycle" in wanted:
        nl = NodeLifecycleController(mgr.client, nodes=inf.informer(NODE), leases=inf.informer(LEASE, LEASE_NAMESPACE),
                                     pods=pods, clock=mgr.clock, recorder=mgr.event_recorder("node-controller"),
                                     grace_period=node_grace_period, monitor_period=node_monitor_period)
        mgr.add_runnable(nl.run, name="nodelifecycle")
        out.nodelifecycle = nl

    if "serviceaccount" in wanted:
        namespaces = inf.informer(NAMESPACE)
        sa = ServiceAccountsReconciler(mgr.client, namespaces=namespaces,
                                       service_accounts=inf.informer(SERVICE_ACCOUNT))
        mgr.controller("serviceaccount").for_(NAMESPACE).watches(
            SERVICE_ACCOUNT, namespace_of_service_account).complete(sa)
        out.serviceaccount = sa

    if "root-ca-cert-publisher" in wanted and root_ca:
        pub = RootCACertPublisher(mgr.client, namespaces=inf.informer(NAMESPACE), configmaps=inf.informer(CONFIG_MAP),
                                  root_ca=root_ca)
        mgr.controller("root-ca-cert-publisher").for_(NAMESPACE).watches(
            CONFIG_MAP, namespace_of_configmap).complete(pub)
        out.root_ca_cert_publisher = pub

    if "clusterrole-aggregation" in wanted:
        agg = ClusterRoleAggregationReconciler(mgr.client, cluster_roles=inf.informer(CLUSTER_ROLE))
        mgr.controller("clusterrole-aggregation").for_(CLUSTER_ROLE).watches(
            CLUSTER_ROLE, lambda _r: agg.aggregators()).complete(agg)
        out.clusterrole_aggregation = agg

    if "persistentvolume-binder" in wanted:
        binder = PersistentVolumeBinder(mgr.client, claims=inf.informer(PERSISTENT_VOLUME_CLAIM),
                                        volumes=inf.informer(PERSISTENT_VOLUME), classes=inf.informer(STORAGE_CLASS),
                                        recorder=mgr.event_recorder("persistentvolume-controller"))
        mgr.controller("persistentvolume-binder").for_(PERSISTENT_VOLUME_CLAIM).watches(
            PERSISTENT_VOLUME, claim_of_volume).complete(binder)
        mgr.controller("persistentvolume-binder-volumes").for_(PERSISTENT_VOLUME).watches(
            PERSISTENT_VOLUME_CLAIM, lambda c: [Request("", str((c.get("spec") or {}).get("volumeName") or ""))]
            if (c.get("spec") or {}).get("volumeName") else []).complete(VolumeReconciler(binder))
        out.persistentvolume_binder = binder

    return out
