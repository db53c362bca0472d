"""The head Ingress of a RayCluster (``headGroupSpec.enableIngress: true``): one rule sending
``ingressOptions.path`` (default ``/``, pathType ``Prefix``) on ``ingressOptions.host`` to the head
Service's dashboard port, for traffic from outside the cluster.

Mirrors: kuberay ray-operator/controllers/ray/common/ingress.go (BuildIngressForHeadService) and
raycluster_controller.go ingressNeedsUpdate.
"""

from __future__ import annotations

import copy
import logging

from pumice.api import Obj, scheme
from pumice.controllers.ray import association as assoc
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.common.service import head_service_ports

log = logging.getLogger(__name__)

#: The deprecated class annotation: read from the RayCluster as the Ingress's
#: ``spec.ingressClassName``, never copied onto the Ingress (upstream IngressClassAnnotationKey).
INGRESS_CLASS_ANNOTATION_KEY = "kubernetes.io/ingress.class"
DEFAULT_PATH = "/"
DEFAULT_PATH_TYPE = "Prefix"


def build_ingress_for_head_service(cluster: Obj) -> Obj:
    """The desired head Ingress (no owner reference; the caller sets it at create).

    Name ``<cluster>-head-ingress`` (:func:`~pumice.controllers.ray.association.ingress_name`);
    labels ``ray.io/cluster``, ``ray.io/identifier`` (``<cluster>-head``),
    ``app.kubernetes.io/name: kuberay``, ``app.kubernetes.io/created-by: kuberay-operator``; the
    annotations are the RayCluster's, less ``kubernetes.io/ingress.class``, whose value becomes
    ``spec.ingressClassName`` (left unset, with a log line, when the cluster has none: the API
    server's DefaultIngressClass admission may then pick one). The backend is the head Service
    (``headGroupSpec.headService.metadata.name`` or ``<cluster>-head-svc``) at the head
    container's port named ``dashboard`` (8265 when none is). ``ingressOptions``: ``host`` sets
    the rule's host, ``path``/``pathType`` the path, ``tls`` (when non-empty) ``spec.tls``.

    Args:
        cluster: the RayCluster (wire dict); not modified.

    Returns:
        a networking.k8s.io/v1 Ingress (wire dict).
    """
    md = cluster["metadata"]
    name = md["name"]
    annotations = dict(md.get("annotations") or {})
    class_name = annotations.pop(INGRESS_CLASS_ANNOTATION_KEY, None)
    head = (cluster.get("spec") or {}).get("headGroupSpec") or {}
    opts = head.get("ingressOptions") or {}
    port = head_service_ports(cluster).get(c.DASHBOARD_PORT_NAME, c.DEFAULT_DASHBOARD_PORT)
    path = {
        "path": opts["path"] if opts.get("path") is not None else DEFAULT_PATH,
        "pathType": opts["pathType"] if opts.get("pathType") is not None else DEFAULT_PATH_TYPE,
        "backend": {"service": {"name": assoc.head_service_name(cluster), "port": {"number": port}}},
    }
    rule: Obj = {"http": {"paths": [path]}}
    if opts.get("host"):
        rule = {"host": opts["host"], **rule}
    meta: Obj = {
        "name": assoc.ingress_name(name),
        "namespace": md.get("namespace", "default"),
        "labels": {
            c.RAY_CLUSTER_LABEL_KEY: name,
            c.RAY_ID_LABEL_KEY: assoc.identifier(name, c.RayNodeType.HEAD),
            c.KUBERNETES_APPLICATION_NAME_LABEL_KEY: c.APPLICATION_NAME,
            c.KUBERNETES_CREATED_BY_LABEL_KEY: c.COMPONENT_NAME,
        },
    }
    if annotations:
        meta["annotations"] = annotations
    spec: Obj = {"rules": [rule]}
    if opts.get("tls"):
        spec["tls"] = copy.deepcopy(opts["tls"])
    if class_name is None:
        log.info("Ingress class annotation is not set for the cluster %s/%s", meta["namespace"], name)
    else:
        spec["ingressClassName"] = class_name
    return {"apiVersion": scheme.INGRESS.api_version, "kind": scheme.INGRESS.kind, "metadata": meta, "spec": spec}


def ingress_needs_update(existing: Obj, desired: Obj) -> bool:
    """Copy ``desired``'s labels, annotations and spec onto ``existing`` where they differ; return
    whether anything changed. A desired Ingress without ``ingressClassName`` keeps the live one (the
    DefaultIngressClass admission may have set it; clearing it would fight the API server).

    Args:
        existing: the live Ingress; modified in place.
        desired: from :func:`build_ingress_for_head_service`; its spec may get the live class.
    """
    changed = False
    emd, dmd = existing.setdefault("metadata", {}), desired.get("metadata") or {}
    for key in ("labels", "annotations"):
        if (emd.get(key) or {}) != (dmd.get(key) or {}):
            if dmd.get(key):
                emd[key] = dict(dmd[key])
            else:
                emd.pop(key, None)
            changed = True
    dspec = desired.setdefault("spec", {})
    if dspec.get("ingressClassName") is None and (existing.get("spec") or {}).get("ingressClassName") is not None:
        dspec["ingressClassName"] = existing["spec"]["ingressClassName"]
    if (existing.get("spec") or {}) != dspec:
        existing["spec"] = copy.deepcopy(dspec)
        changed = True
    return changed
