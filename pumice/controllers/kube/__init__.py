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
========================  ====================================================================

Mirrors: kubernetes cmd/kube-controller-manager/app/controllermanager.go (NewControllerDescriptors).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pumice.api.scheme import (
    DEPLOYMENT,
    ENDPOINT_SLICE,
    ENDPOINTS,
    JOB,
    LEASE,
    NAMESPACE,
    NODE,
    POD,
    REPLICA_SET,
    SERVICE,
)
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
from pumice.controllers.kube.replicaset import ReplicaSetReconciler
from pumice.runtime import Request
from pumice.runtime.manager import Manager
from pumice.runtime.predicates import FuncPredicate

Obj = dict[str, Any]

CONTROLLERS = ("replicaset", "deployment", "job", "endpoints", "namespace", "garbagecollector", "nodelifecycle")

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


def setup(mgr: Manager, *, controllers: Iterable[str] | None = None, workers: int = 8,
          pod_failure_backoff: float = DEFAULT_POD_FAILURE_BACKOFF, node_grace_period: float = GRACE_PERIOD,
          node_monitor_period: float = MONITOR_PERIOD) -> KubeControllers:
    """Register the built-in controllers on ``mgr``.

    Args:
        controllers: names from :data:`CONTROLLERS` (default: all).
        workers: concurrent reconciles for the ReplicaSet, Deployment, Job and Endpoints controllers.
        pod_failure_backoff: Job replacement backoff base, seconds (upstream 10).
        node_grace_period: seconds without a heartbeat before a Node is Unknown (upstream 50).
        node_monitor_period: seconds between node health passes (upstream 5).

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

    return out
