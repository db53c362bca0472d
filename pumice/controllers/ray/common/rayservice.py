"""Pure builders of the RayService controller: the RayCluster a RayService owns, its spec hash, and
the two Services that follow the serving cluster.

Mirrors: kuberay ray-operator/controllers/ray/rayservice_controller.go
(constructRayClusterForRayService, rayClusterSpecForHashing, isClusterSpecHashEqual) and
common/service.go (BuildHeadServiceForRayService, BuildServeService).
"""

from __future__ import annotations

import copy

from pumice.api import Obj, scheme
from pumice.api.meta import owner_reference
from pumice.api.ray import constants as api_c
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.common import service as svcb
from pumice.controllers.ray.common.hashing import hash_without_replicas_and_workers_to_delete

SERVE_PORT_MISSING = svcb.SERVE_PORT_MISSING


def cluster_spec_for_hashing(rayservice: Obj) -> Obj:
    """``rayClusterConfig`` without ``suspend`` (Kueue owns it after creation)."""
    spec = copy.deepcopy((rayservice.get("spec") or {}).get("rayClusterConfig") or {})
    spec.pop("suspend", None)
    return spec


def goal_hash(rayservice: Obj) -> str:
    return hash_without_replicas_and_workers_to_delete(cluster_spec_for_hashing(rayservice))


def is_cluster_spec_hash_equal(rayservice: Obj, cluster: Obj, partial: bool) -> bool:
    """Whether ``cluster`` was built from the RayService's current ``rayClusterConfig``.

    ``partial``: compare only the first ``ray.io/num-worker-groups`` groups of the goal (True when
    the only change is worker groups appended at the end); an unparsable count counts as equal.
    """
    ann = (cluster.get("metadata") or {}).get("annotations") or {}
    recorded = ann.get(api_c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY, "")
    goal = cluster_spec_for_hashing(rayservice)
    if not partial:
        return recorded == hash_without_replicas_and_workers_to_delete(goal)
    try:
        n = int(ann.get(api_c.NUM_WORKER_GROUPS_KEY, ""))
    except ValueError:
        return True
    groups = goal.get("workerGroupSpecs") or []
    if len(groups) < n:
        return recorded == ""
    goal["workerGroupSpecs"] = groups[:n]
    return recorded == hash_without_replicas_and_workers_to_delete(goal)


def build_cluster_for_rayservice(rayservice: Obj, cluster_name: str, kuberay_version: str = c.KUBERAY_VERSION) -> Obj:
    """The RayCluster ``cluster_name`` for ``rayservice``: its labels and annotations plus the
    originated-from labels, the spec hash, the worker-group count and the operator version; a copy
    of ``rayClusterConfig``; controller owner → the RayService."""
    meta = rayservice["metadata"]
    spec = (rayservice.get("spec") or {}).get("rayClusterConfig") or {}
    labels = {**(meta.get("labels") or {}),
              c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: meta["name"],
              c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRDType.RAY_SERVICE.value}
    annotations = {**(meta.get("annotations") or {}),
                   api_c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY: goal_hash(rayservice),
                   api_c.NUM_WORKER_GROUPS_KEY: str(len(spec.get("workerGroupSpecs") or [])),
                   api_c.KUBERAY_VERSION_KEY: kuberay_version}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": cluster_name, "namespace": meta.get("namespace", "default"), "labels": labels,
                     "annotations": annotations, "ownerReferences": [owner_reference(rayservice, default=scheme.RAY_SERVICE)]},
        "spec": copy.deepcopy(spec),
    }


def serve_service_name(rayservice: Obj) -> str:
    """``serveService.metadata.name`` or ``<rs>-serve-svc``."""
    user = ((rayservice.get("spec") or {}).get("serveService") or {}).get("metadata") or {}
    return str(user.get("name") or f"{rayservice['metadata']['name']}-serve-svc")


def build_serve_service(rayservice: Obj, cluster: Obj) -> Obj:
    """The serve Service of ``rayservice`` selecting ``cluster``'s Pods labelled ``ray.io/serve=true``.

    Ports are the head container ports named ``serve`` or ``serve-*``; a user ``serveService`` keeps
    its fields, has its selector overwritten and, per detected serve port, its same-named port wins.

    Raises:
        ValueError: no serve port and no ``serveService`` (upstream's "Please specify a port named
            'serve'..." message).
    """
    rs_meta = rayservice["metadata"]
    rs_spec = rayservice.get("spec") or {}
    name, namespace = rs_meta["name"], rs_meta.get("namespace", "default")
    labels = {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: name,
              c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRDType.RAY_SERVICE.value,
              c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: f"{name}-serve"}
    selector = {c.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"], c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: "true"}
    svc_type = ((rs_spec.get("rayClusterConfig") or {}).get("headGroupSpec") or {}).get("serviceType") or ""
    ports = [{"name": n, "port": p} for n, p in sorted(svcb.head_service_ports(cluster).items()) if svcb.is_serving_port(n)]
    user = rs_spec.get("serveService")
    if not ports and not user:
        raise ValueError(SERVE_PORT_MISSING)
    if user:
        svc = copy.deepcopy(user)
        svc.setdefault("apiVersion", "v1")
        svc.setdefault("kind", "Service")
        meta = svc.setdefault("metadata", {})
        sspec = svc.setdefault("spec", {})
        sspec["selector"] = selector
        if ports:
            by_name = {p.get("name"): p for p in sspec.get("ports") or []}
            sspec["ports"] = [by_name.get(p["name"], p) for p in ports]
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
        meta["name"] = meta.get("name") or f"{name}-serve-svc"
        meta["namespace"] = meta.get("namespace") or namespace
        if not sspec.get("type") and svc_type:
            sspec["type"] = svc_type
    else:
        sspec = {"selector": selector, "ports": ports}
        if svc_type:
            sspec["type"] = svc_type
        svc = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": f"{name}-serve-svc", "namespace": namespace, "labels": labels}, "spec": sspec}
    svc["metadata"]["ownerReferences"] = [owner_reference(rayservice, default=scheme.RAY_SERVICE)]
    return svc
