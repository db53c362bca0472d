"""Services of a RayCluster: the head Service, the headless worker Service (multi-host groups), the
serve Service of a cluster annotated ``ray.io/enable-serve-service: "true"``, and the RayJob's own
head Service.

Mirrors: kuberay ray-operator/controllers/ray/common/service.go (BuildServiceForHeadPod,
BuildHeadlessServiceForRayCluster, BuildServeServiceForRayCluster) and common/job.go
(BuildHeadServiceForRayJob).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from pumice.api import Obj, scheme
from pumice.api.meta import owner_reference
from pumice.controllers.ray import association as assoc
from pumice.controllers.ray import constants as c

DEFAULT_HEAD_PORTS = {
    c.CLIENT_PORT_NAME: c.DEFAULT_CLIENT_PORT,
    c.GCS_SERVER_PORT_NAME: c.DEFAULT_GCS_SERVER_PORT,
    c.DASHBOARD_PORT_NAME: c.DEFAULT_DASHBOARD_PORT,
    c.METRICS_PORT_NAME: c.DEFAULT_METRICS_PORT,
    c.SERVING_PORT_NAME: c.DEFAULT_SERVING_PORT,
}


@dataclass(frozen=True)
class ServiceOptions:
    """``ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE``: a ClusterIP head Service instead of a headless one."""

    enable_head_cluster_ip_service: bool = False


DEFAULT_SERVICE_OPTIONS = ServiceOptions()


def head_service_ports(cluster: Obj) -> dict[str, int]:
    """Named container ports of the head's Ray container (unnamed → ``<port>-port``); the default
    set when it declares none; ``metrics: 8080`` added when missing."""
    containers = cluster.get("spec", {}).get("headGroupSpec", {}).get("template", {}).get("spec", {}).get(
        "containers") or []
    declared = (containers[c.RAY_CONTAINER_INDEX].get("ports") or []) if containers else []
    if not declared:
        ports = dict(DEFAULT_HEAD_PORTS)
    else:
        ports = {}
        for p in declared:
            name = p.get("name") or f"{p['containerPort']}-port"
            ports[name] = int(p["containerPort"])
    ports.setdefault(c.METRICS_PORT_NAME, c.DEFAULT_METRICS_PORT)
    return ports


def head_service_labels(cluster: Obj) -> dict[str, str]:
    name = cluster["metadata"]["name"]
    head_labels = (cluster.get("spec", {}).get("headGroupSpec", {}).get("template", {}).get("metadata") or {}).get(
        "labels") or {}
    return {
        c.RAY_CLUSTER_LABEL_KEY: name,
        c.RAY_NODE_TYPE_LABEL_KEY: str(c.RayNodeType.HEAD),
        c.RAY_ID_LABEL_KEY: assoc.identifier(name, c.RayNodeType.HEAD),
        c.KUBERNETES_APPLICATION_NAME_LABEL_KEY: head_labels.get(c.KUBERNETES_APPLICATION_NAME_LABEL_KEY, c.APPLICATION_NAME),
        c.KUBERNETES_CREATED_BY_LABEL_KEY: c.COMPONENT_NAME,
    }


def build_head_service(cluster: Obj, options: ServiceOptions = DEFAULT_SERVICE_OPTIONS) -> Obj:
    """The head Service ``<cluster>-head-svc``.

    Headless (``clusterIP: None``, ``publishNotReadyAddresses: true``) when the type is empty or
    ClusterIP and the ClusterIP option is off; ports sorted by name, appProtocol ``tcp``; a user
    ``headService`` keeps its fields, gets the selector forced and the ports appended.

    Raises:
        ValueError: the Service would have no ports.
    """
    spec = cluster.get("spec", {})
    head = spec.get("headGroupSpec") or {}
    labels = head_service_labels(cluster)
    selector = dict(labels)
    svc_type = head.get("serviceType") or ""
    ports = [{"name": n, "port": p, "appProtocol": c.DEFAULT_SERVICE_APP_PROTOCOL}
             for n, p in head_service_ports(cluster).items()]
    annotations = dict(spec.get("headServiceAnnotations") or {})
    user = head.get("headService")
    if user:
        svc = copy.deepcopy(user)
        svc.setdefault("apiVersion", "v1")
        svc.setdefault("kind", "Service")
        meta = svc.setdefault("metadata", {})
        meta.setdefault("annotations", {}).update(annotations)
        if not meta["annotations"]:
            meta.pop("annotations")
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
        meta["name"] = meta.get("name") or assoc.head_service_name(cluster)
        meta["namespace"] = cluster["metadata"].get("namespace", "default")
        sspec = svc.setdefault("spec", {})
        sspec["selector"] = selector
        sspec["ports"] = [*(sspec.get("ports") or []), *ports]
        if not sspec.get("type") and svc_type:
            sspec["type"] = svc_type
    else:
        meta = {"name": assoc.head_service_name(cluster), "namespace": cluster["metadata"].get("namespace", "default"),
                "labels": labels}
        if annotations:
            meta["annotations"] = annotations
        sspec = {"selector": selector, "ports": sorted(ports, key=lambda p: p["name"])}
        if svc_type:
            sspec["type"] = svc_type
        if not options.enable_head_cluster_ip_service and svc_type in ("", "ClusterIP"):
            sspec["clusterIP"] = "None"
            sspec["publishNotReadyAddresses"] = True
        svc = {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": sspec}
    if not svc["spec"].get("ports"):
        raise ValueError(f"head Service of RayCluster {cluster['metadata']['name']} would have no ports")
    svc["metadata"]["ownerReferences"] = [owner_reference(cluster, default=scheme.RAY_CLUSTER)]
    return svc


def is_serving_port(name: str) -> bool:
    """A head container port Ray Serve listens on: named ``serve`` or ``serve-*`` (``serve-grpc``)."""
    return name == c.SERVING_PORT_NAME or name.startswith(c.SERVING_PORT_NAME + "-")


#: Upstream's text when a serve Service would have no port.
SERVE_PORT_MISSING = ("Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') "
                      "in the Ray head container; otherwise, the Kubernetes service for Ray Serve will not be created.")


def wants_serve_service(cluster: Obj) -> bool:
    """The cluster is annotated ``ray.io/enable-serve-service: "true"`` (exactly)."""
    return ((cluster.get("metadata") or {}).get("annotations") or {}).get(c.ENABLE_SERVE_SERVICE_KEY) == "true"


def build_serve_service_for_raycluster(cluster: Obj) -> Obj:
    """``<cluster>-serve-svc``: every Pod of the cluster (selector ``ray.io/cluster``) at the head
    container's serving ports (sorted by name), of the head's ``serviceType``; labels
    ``ray.io/originated-from-cr-name``, ``ray.io/originated-from-crd: RayCluster`` and
    ``ray.io/serve: <cluster>-serve``; controller reference to the cluster.

    Raises:
        ValueError: the head declares no serving port (:data:`SERVE_PORT_MISSING`).

    Deviates: ports sorted by name (upstream walks a Go map: any order)."""
    name = cluster["metadata"]["name"]
    ports = [{"name": n, "port": p} for n, p in sorted(head_service_ports(cluster).items()) if is_serving_port(n)]
    if not ports:
        raise ValueError(SERVE_PORT_MISSING)
    spec: Obj = {"selector": {c.RAY_CLUSTER_LABEL_KEY: name}, "ports": ports}
    svc_type = (cluster.get("spec", {}).get("headGroupSpec") or {}).get("serviceType")
    if svc_type:
        spec["type"] = svc_type
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": assoc.serve_service_name(name),
            "namespace": cluster["metadata"].get("namespace", "default"),
            "labels": {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: name,
                       c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRDType.RAY_CLUSTER.value,
                       c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: f"{name}-{c.SERVING_PORT_NAME}"},
            "ownerReferences": [owner_reference(cluster, default=scheme.RAY_CLUSTER)],
        },
        "spec": spec,
    }


def needs_headless_service(cluster: Obj) -> bool:
    return any(int(g.get("numOfHosts") or 1) > 1 for g in cluster.get("spec", {}).get("workerGroupSpecs") or [])


def build_headless_service(cluster: Obj) -> Obj:
    """``<cluster>-headless``: peer DNS for multi-host worker groups."""
    name = cluster["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": assoc.headless_service_name(name),
            "namespace": cluster["metadata"].get("namespace", "default"),
            "labels": {c.RAY_CLUSTER_HEADLESS_SERVICE_LABEL_KEY: name},
            "ownerReferences": [owner_reference(cluster, default=scheme.RAY_CLUSTER)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {c.RAY_CLUSTER_LABEL_KEY: name, c.RAY_NODE_TYPE_LABEL_KEY: c.RayNodeType.WORKER},
            "publishNotReadyAddresses": True,
        },
    }


def build_owner_head_service(owner: Obj, crd: c.CRDType, cluster: Obj,
                             options: ServiceOptions = DEFAULT_SERVICE_OPTIONS) -> Obj:
    """``<owner>-head-svc``: a copy of the cluster's head Service named, labelled and owned as the
    RayJob or RayService ``owner`` (``crd`` says which)."""
    svc = build_head_service(cluster, options)
    owner_name = owner["metadata"]["name"]
    svc["metadata"] = {
        "name": assoc.owner_head_service_name(owner_name),
        "namespace": owner["metadata"].get("namespace", "default"),
        "labels": {
            c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: owner_name,
            c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: crd.value,
            c.RAY_NODE_TYPE_LABEL_KEY: str(c.RayNodeType.HEAD),
            c.RAY_ID_LABEL_KEY: assoc.identifier(owner_name, c.RayNodeType.HEAD),
        },
        "ownerReferences": [owner_reference(owner, default=scheme.RAY_SERVICE if crd is c.CRDType.RAY_SERVICE
                                            else scheme.RAY_JOB)],
    }
    return svc
