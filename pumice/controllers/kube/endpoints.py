"""Endpoints and EndpointSlice controllers: the Pods behind each Service with a selector.

For a Service with a non-empty ``spec.selector``: every Pod in its namespace whose labels match,
that has a ``status.podIP`` and is not Succeeded/Failed, becomes an address; Ready Pods go to
``addresses`` and the others to ``notReadyAddresses`` (all to ``addresses`` with
``publishNotReadyAddresses``). Terminating Pods are left out of Endpoints (unless
publishNotReadyAddresses) and kept in the EndpointSlice with ``terminating: true``. Service
ports resolve ``targetPort`` (number, or a container port name) per Pod; Pods with the same
resolved ports share a subset. A headless Service without ports gets addresses and no ports.

The Endpoints object has the Service's name (and labels, plus ``service.kubernetes.io/headless``
for headless Services); the EndpointSlice is ``<service>-<hash>`` with
``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by``, owned by the
Service. Services without a selector are left alone; when a Service is deleted its Endpoints are
deleted (the slice goes with its owner through the garbage collector).

Mirrors: kubernetes pkg/controller/endpoint/endpoints_controller.go (syncService, addEndpointSubset,
podToEndpointAddressForService) and pkg/controller/endpointslice (one slice per address type up to
100 endpoints; here one slice, all endpoints). Deviates: no last-change-trigger-time annotation, no
100-endpoint slice splitting.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from pumice.api import Obj, meta
from pumice.api.meta import owner_reference
from pumice.api.scheme import ENDPOINT_SLICE, ENDPOINTS, POD, SERVICE
from pumice.api.selectors import from_set
from pumice.client.base import ApiError, KubeClient, create_unless_exists, is_not_found
from pumice.client.informer import Informer
from pumice.controllers.kube.podutil import compute_hash, is_terminal
from pumice.runtime import Request, Result
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


HEADLESS_LABEL = "service.kubernetes.io/headless"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
ENDPOINTS_CONTROLLER = "endpoint-controller"


def _selector(svc: Obj) -> dict[str, str] | None:
    sel = (svc.get("spec") or {}).get("selector")
    return dict(sel) if sel else None


def services_for_pod(services: Informer, pod: Obj) -> list[Request]:
    """Requests of the Services in the Pod's namespace whose selector matches it."""
    md = pod.get("metadata") or {}
    ns = md.get("namespace") or ""
    labels = md.get("labels") or {}
    out = []
    for svc in services.store.list(ns):
        sel = _selector(svc)
        if sel and from_set(sel).matches(labels):
            out.append(Request(ns, svc["metadata"]["name"]))
    return out


def resolve_port(svc_port: Obj, pod: Obj) -> int | None:
    """The Pod port a Service port targets (number, or a named container port)."""
    target = svc_port.get("targetPort", svc_port.get("port"))
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return int(target)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == target and (p.get("protocol") or "TCP") == (svc_port.get("protocol") or "TCP"):
                return int(p["containerPort"])
    return None


def _pod_ports(svc: Obj, pod: Obj) -> tuple[tuple[str, int, str], ...] | None:
    out = []
    for sp in (svc.get("spec") or {}).get("ports") or []:
        port = resolve_port(sp, pod)
        if port is None:
            return None
        out.append((sp.get("name") or "", port, sp.get("protocol") or "TCP"))
    return tuple(out)


def _address(pod: Obj) -> Obj:
    md = pod["metadata"]
    a: Obj = {"ip": pod["status"]["podIP"],
              "targetRef": {"kind": "Pod", "namespace": md.get("namespace", ""), "name": md["name"],
                            "uid": md.get("uid", "")}}
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        a["nodeName"] = node
    return a


def _ports_json(ports: tuple[tuple[str, int, str], ...]) -> list[Obj]:
    out = []
    for name, port, proto in ports:
        p: Obj = {"port": port, "protocol": proto}
        if name:
            p["name"] = name
        out.append(p)
    return out


def build_subsets(svc: Obj, pods: list[Obj]) -> list[Obj]:
    """Endpoints ``subsets`` for a Service over its selected Pods (pure)."""
    publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
    groups: dict[tuple[tuple[str, int, str], ...], tuple[list[Obj], list[Obj]]] = {}
    for pod in pods:
        if is_terminal(pod) or not (pod.get("status") or {}).get("podIP"):
            continue
        if pod["metadata"].get("deletionTimestamp") and not publish:
            continue
        ports = _pod_ports(svc, pod)
        if ports is None:
            continue
        ready, not_ready = groups.setdefault(ports, ([], []))
        (ready if publish or meta.pod_is_ready(pod) else not_ready).append(_address(pod))
    subsets = []
    for ports in sorted(groups):
        ready, not_ready = groups[ports]
        s: Obj = {}
        if ready:
            s["addresses"] = sorted(ready, key=lambda a: (a["ip"], a["targetRef"]["name"]))
        if not_ready:
            s["notReadyAddresses"] = sorted(not_ready, key=lambda a: (a["ip"], a["targetRef"]["name"]))
        if ports:
            s["ports"] = _ports_json(ports)
        subsets.append(s)
    return subsets


def build_endpoints(svc: Obj, pods: list[Obj]) -> Obj:
    md = svc["metadata"]
    labels = dict(md.get("labels") or {})
    if (svc.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    ep: Obj = {"apiVersion": "v1", "kind": "Endpoints",
               "metadata": {"name": md["name"], "namespace": md.get("namespace", "")}}
    if labels:
        ep["metadata"]["labels"] = labels
    subsets = build_subsets(svc, pods)
    if subsets:
        ep["subsets"] = subsets
    return ep


def build_endpoint_slice(svc: Obj, pods: list[Obj]) -> Obj:
    """The Service's EndpointSlice (pure)."""
    md = svc["metadata"]
    publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoints = []
    port_sets = set()
    for pod in sorted(pods, key=lambda p: ((p.get("status") or {}).get("podIP") or "", p["metadata"]["name"])):
        if is_terminal(pod) or not (pod.get("status") or {}).get("podIP"):
            continue
        pod_ports = _pod_ports(svc, pod)
        if pod_ports is None:
            continue
        port_sets.add(pod_ports)
        terminating = bool(pod["metadata"].get("deletionTimestamp"))
        ready = meta.pod_is_ready(pod)
        e: Obj = {"addresses": [pod["status"]["podIP"]],
                  "conditions": {"ready": (ready or publish) and not terminating, "serving": ready or publish,
                                 "terminating": terminating},
                  "targetRef": {"kind": "Pod", "namespace": pod["metadata"].get("namespace", ""),
                                "name": pod["metadata"]["name"], "uid": pod["metadata"].get("uid", "")}}
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            e["nodeName"] = node
        endpoints.append(e)
    ports: tuple[tuple[str, int, str], ...] = sorted(port_sets)[0] if port_sets else ()
    labels = {**(md.get("labels") or {}), SERVICE_NAME_LABEL: md["name"], MANAGED_BY_LABEL: MANAGED_BY}
    if (svc.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    return {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": f"{md['name']}-{compute_hash({'uid': md.get('uid', '')})[:5]}",
                     "namespace": md.get("namespace", ""), "labels": labels, "ownerReferences": [owner_reference(svc)]},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": _ports_json(ports) if ports else [],
    }


class EndpointsReconciler:
    """Writes the Endpoints and the EndpointSlice of every Service with a selector."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> EndpointsReconciler:
        """Build the controller and register it: Services, the Pods they select, their Endpoints."""
        inf = mgr.informers
        services = inf.informer(SERVICE)
        ep = cls(mgr.client, services=services, pods=inf.informer(POD), endpoints=inf.informer(ENDPOINTS),
                 slices=inf.informer(ENDPOINT_SLICE))
        mgr.controller("endpoints").for_(SERVICE).watches(POD, lambda p: services_for_pod(services, p)).watches(
            ENDPOINTS, lambda e: [Request.for_object(e)]).with_options(
            max_concurrent_reconciles=opts.workers).complete(ep)
        return ep

    def __init__(self, client: KubeClient, *, services: Informer, pods: Informer, endpoints: Informer,
                 slices: Informer) -> None:
        self.client = client
        self.services = services
        self.pods = pods
        self.endpoints = endpoints
        self.slices = slices

    async def _apply(self, desired: Obj, live: Obj | None, fields: tuple[str, ...]) -> None:
        kind = ENDPOINTS if desired["kind"] == "Endpoints" else ENDPOINT_SLICE
        md = desired["metadata"]
        if live is None:
            if await create_unless_exists(self.client, desired):
                return
            live = await self.client.get(kind, md["name"], md["namespace"])
        new = copy.deepcopy(live)
        for f in fields:
            if f in desired:
                new[f] = desired[f]
            else:
                new.pop(f, None)
        for mf in ("labels", "ownerReferences"):
            if mf in md:
                new["metadata"][mf] = md[mf]
        if new != live:
            await self.client.update(new)

    async def reconcile(self, req: Request) -> Result:
        svc = self.services.store.get(req.namespace, req.name)
        if svc is None or svc["metadata"].get("deletionTimestamp"):
            live = self.endpoints.store.get(req.namespace, req.name)
            if live is not None and svc is None:
                try:
                    await self.client.delete(ENDPOINTS, req.name, req.namespace)
                except ApiError as e:
                    if not is_not_found(e):
                        raise
            return Result()
        sel = _selector(svc)
        if not sel:
            return Result()
        pods = self.pods.store.list(req.namespace, from_set(sel))
        ep = build_endpoints(svc, pods)
        await self._apply(ep, self.endpoints.store.get(req.namespace, req.name), ("subsets",))
        es = build_endpoint_slice(svc, pods)
        await self._apply(es, self.slices.store.get(req.namespace, es["metadata"]["name"]),
                          ("addressType", "endpoints", "ports"))
        return Result()
