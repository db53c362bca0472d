"""The ``kubernetes`` Service of namespace ``default``, and its Endpoints and EndpointSlice: how
clients in the cluster find the API server, kept by the API server itself.

- **Service** ``default/kubernetes``: labels ``component: apiserver``, ``provider: kubernetes``;
  ``type: ClusterIP`` with the first address of the service CIDR (``10.96.0.1`` for the default
  ``10.96.0.0/12``), taken through the Service IP allocator
  (:mod:`pumice.apiserver.servicealloc`) like any requested address, so no other Service gets it;
  ``ipFamilyPolicy: SingleStack``, no selector, one port ``https`` 443/TCP whose ``targetPort`` is
  the port the API server listens on.
- **Endpoints** ``default/kubernetes``: one subset, the API server's advertised address and port
  ``https``/TCP; label ``endpointslice.kubernetes.io/skip-mirror: "true"`` (no mirroring
  controller may copy it; the API server writes the slice itself).
- **EndpointSlice** ``default/kubernetes`` (discovery.k8s.io/v1): ``addressType: IPv4``, one
  endpoint with the address and ``conditions.ready: true``, port ``https`` TCP, label
  ``kubernetes.io/service-name: kubernetes`` and no other label (kube-apiserver sets no
  ``endpointslice.kubernetes.io/managed-by``), no owner.

:meth:`KubernetesServiceController.reconcile` is one idempotent pass: it makes the ``default``
Namespace when it is missing, creates the Service when it is missing, and creates or puts back the
Endpoints and the EndpointSlice when they are missing or differ; a pass with nothing to change
writes nothing. :meth:`~KubernetesServiceController.run` repeats it every ``interval`` seconds
(kube-apiserver's 10 s), so a deleted object comes back and an edited Endpoints or EndpointSlice is
put back within one interval. An edited Service is left as it is (kube-apiserver has not reconciled
it after creation since 1.17) except at the first pass of each start, which puts back its ports and
type, as the start-up pass of kube-apiserver's controller once did: a restart on another port
moves ``targetPort`` along.

Where it runs: :meth:`pumice.apiserver.server.APIServer.serve` runs the loop once it listens (``pumice
up``, ``pumice apiserver``), with the advertised address from :func:`advertise_address`. An API
server that does not listen (the in-process one of ``pumice simulate`` and of the tests) makes the
Service once at start, with ``targetPort`` 6443 (kube-apiserver's default ``--secure-port``), and
no Endpoints or EndpointSlice, as it has no address.

Mirrors: kubernetes pkg/controlplane/controller/kubernetesservice/controller.go
(CreateOrUpdateMasterServiceIfNeeded, createPortAndServiceSpec, createEndpointPortSpec,
checkServiceFormat), pkg/controlplane/reconcilers/lease.go (doReconcile,
checkEndpointSubsetFormatWithLease) and endpointsadapter.go (EnsureEndpointSliceFromEndpoints,
endpointSliceFromEndpoints, setSkipMirrorTrue), and the advertise-address default of
k8s.io/apiserver SecureServingOptions.DefaultExternalAddress (utilnet.ResolveBindAddress).

Deviates: one API server, so no master leases (the address set is this server's one address);
the Endpoints' ports are put back whenever they differ (kube-apiserver, with several servers, puts
them back only at start); any other change of the Endpoints' one subset (extra or not-ready
addresses, an address's hostname) is put back too, where kube-apiserver compares only the IPs; the
Endpoints stay when the server stops (as with one kube-apiserver, whose removal finds no lease left
and gives up); no NodePort form (``--kubernetes-service-node-port``).
"""

from __future__ import annotations

import copy
import ipaddress
import logging
import socket
from typing import Any

from pumice._util.clock import Clock, run_every
from pumice._util.errors import FATAL_TYPES
from pumice.api import Obj
from pumice.api.scheme import ENDPOINT_SLICE, ENDPOINTS, SERVICE, ResourceKind
from pumice.apiserver.errors import StatusError
from pumice.apiserver.registry import DeleteOptions
from pumice.apiserver.servicealloc import ip_family
from pumice.apiserver.systemnamespaces import SERVER_MANAGER, ensure_namespace

__all__ = [
    "DEFAULT_SECURE_PORT",
    "ENDPOINT_INTERVAL",
    "KUBERNETES_SERVICE_NAME",
    "KUBERNETES_SERVICE_NAMESPACE",
    "SERVICE_PORT",
    "KubernetesServiceController",
    "advertise_address",
    "endpoint_slice_from_endpoints",
    "kubernetes_endpoints",
    "kubernetes_service",
    "service_ip",
]

log = logging.getLogger(__name__)

KUBERNETES_SERVICE_NAME = "kubernetes"
KUBERNETES_SERVICE_NAMESPACE = "default"
#: the Service's port (fixed at 443 in kube-apiserver)
SERVICE_PORT = 443
#: the port name of the Service, the Endpoints and the EndpointSlice
PORT_NAME = "https"
#: kube-apiserver's default ``--secure-port``: the ``targetPort`` of an API server that does not listen
DEFAULT_SECURE_PORT = 6443
#: seconds between passes (kube-apiserver's DefaultEndpointReconcilerInterval)
ENDPOINT_INTERVAL = 10.0
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
SERVICE_LABELS = {"provider": "kubernetes", "component": "apiserver"}


def service_ip(service_cidr: str) -> str:
    """The ``kubernetes`` Service's cluster IP: the first address after the network address of
    ``service_cidr`` (``10.96.0.0/12`` -> ``10.96.0.1``).

    Raises:
        ValueError: not a CIDR.

    Mirrors: kubernetes pkg/controlplane/services.go ServiceIPRange (GetIndexedIP(cidr, 1))."""
    net = ipaddress.ip_network(service_cidr, strict=False)
    return str(net.network_address + 1)


def _service_ports(public_port: int) -> list[Obj]:
    return [{"name": PORT_NAME, "protocol": "TCP", "port": SERVICE_PORT, "targetPort": public_port}]


def _endpoint_ports(public_port: int) -> list[Obj]:
    return [{"name": PORT_NAME, "port": public_port, "protocol": "TCP"}]


def kubernetes_service(cluster_ip: str, public_port: int) -> Obj:
    """The ``default/kubernetes`` Service as the API server creates it (pure).

    Args:
        cluster_ip: :func:`service_ip` of the service CIDR.
        public_port: the port the API server listens on (the ``targetPort``)."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": KUBERNETES_SERVICE_NAME, "namespace": KUBERNETES_SERVICE_NAMESPACE,
                     "labels": dict(SERVICE_LABELS)},
        "spec": {"ports": _service_ports(public_port), "clusterIP": cluster_ip, "ipFamilyPolicy": "SingleStack",
                 "sessionAffinity": "None", "type": "ClusterIP"},
    }


def kubernetes_endpoints(public_ip: str, public_port: int) -> Obj:
    """The ``default/kubernetes`` Endpoints of one API server at ``public_ip:public_port`` (pure)."""
    return {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": KUBERNETES_SERVICE_NAME, "namespace": KUBERNETES_SERVICE_NAMESPACE,
                     "labels": {SKIP_MIRROR_LABEL: "true"}},
        "subsets": [{"addresses": [{"ip": public_ip}], "ports": _endpoint_ports(public_port)}],
    }


def endpoint_slice_from_endpoints(endpoints: Obj) -> Obj:
    """The EndpointSlice kube-apiserver writes for its Endpoints (pure): same name and namespace,
    the one label ``kubernetes.io/service-name``, ``addressType`` IPv6 only when every address of
    the first subset is IPv6 (else IPv4), the first subset's ports, one endpoint per ready address
    (``conditions.ready: true``) then per not-ready one (``false``) of that address type.

    Mirrors: kubernetes pkg/controlplane/reconcilers/endpointsadapter.go endpointSliceFromEndpoints."""
    md = endpoints.get("metadata") or {}
    name = md.get("name", "")
    out: Obj = {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": md.get("namespace", ""), "labels": {SERVICE_NAME_LABEL: name}},
        "addressType": "IPv4",
        "endpoints": [],
    }
    subsets = endpoints.get("subsets") or []
    if subsets:
        sub = subsets[0]
        ports = [{k: p[k] for k in ("name", "port", "protocol") if k in p} for p in sub.get("ports") or []]
        if ports:
            out["ports"] = ports
        ready, not_ready = sub.get("addresses") or [], sub.get("notReadyAddresses") or []
        if (ready or not_ready) and all(ip_family(a.get("ip", "")) == "IPv6" for a in [*ready, *not_ready]):
            out["addressType"] = "IPv6"
        want_v6 = out["addressType"] == "IPv6"
        for addrs, ok in ((ready, True), (not_ready, False)):
            for a in addrs:
                if (ip_family(a.get("ip", "")) == "IPv6") != want_v6:
                    continue
                ep: Obj = {"addresses": [a.get("ip", "")], "conditions": {"ready": ok}}
                if a.get("targetRef"):
                    ep["targetRef"] = copy.deepcopy(a["targetRef"])
                if a.get("nodeName"):
                    ep["nodeName"] = a["nodeName"]
                out["endpoints"].append(ep)
    return out


def advertise_address(bind_host: str) -> str | None:
    """The IPv4 address the API server advertises in the Endpoints: ``bind_host`` itself when it
    is a specific, non-loopback IPv4 address; otherwise (``127.0.0.1``, ``localhost``,
    ``0.0.0.0``, a name) the address this host sends from on its default route, as kube-apiserver
    picks its ``--advertise-address`` from the default-route interface. None when the host has no
    such route (no Endpoints are written then: kube-apiserver's Endpoints validation refuses
    loopback addresses).

    Mirrors: k8s.io/apimachinery pkg/util/net ResolveBindAddress / ChooseHostInterface (the
    kernel's route choice instead of reading /proc/net/route)."""
    try:
        ip = ipaddress.ip_address(bind_host)
    except ValueError:
        ip = None
    if isinstance(ip, ipaddress.IPv4Address) and not (ip.is_loopback or ip.is_unspecified):
        return str(ip)
    # a UDP "connect" sends nothing: it only asks the kernel which source address the default
    # route would use (192.0.2.1 is TEST-NET-1, never a local address)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            addr = str(s.getsockname()[0])
    except OSError as e:
        log.warning("kubernetes Service: no default route to take the API server's advertised address from "
                    "(%s); the Endpoints and EndpointSlice \"kubernetes\" are not written", e)
        return None
    if ipaddress.ip_address(addr).is_loopback or addr == "0.0.0.0":
        return None
    return addr


class KubernetesServiceController:
    """Keeps ``default/kubernetes`` (Service, Endpoints, EndpointSlice) for one API server.

    Args:
        registry: the API server's :class:`~pumice.apiserver.registry.Registry` (writes go
            through it, admission included, as kube-apiserver's loopback client's do).
        clock: the project clock (:meth:`run` sleeps on it).
        service_ip: the Service's cluster IP (:func:`service_ip` of the service CIDR).
        public_port: the port the API server listens on.
        public_ip: the advertised address (:func:`advertise_address`); None: Service only.
        interval: seconds between the passes of :meth:`run`.
    """

    def __init__(self, registry: Any, clock: Clock, *, service_ip: str, public_port: int,
                 public_ip: str | None, interval: float = ENDPOINT_INTERVAL) -> None:
        self.registry = registry
        self.clock = clock
        self.service_ip = service_ip
        self.public_port = public_port
        self.public_ip = public_ip
        self.interval = interval
        self._repair_service = True

    # ------------------------------------------------------------------ reads

    def _get(self, rk: ResourceKind, namespace: str, name: str) -> Obj | None:
        try:
            obj: Obj = self.registry.get(rk, namespace or None, name).obj
        except StatusError as e:
            if e.code == 404:
                return None
            raise
        return obj

    # ------------------------------------------------------------------ the pass

    async def reconcile(self) -> None:
        """One pass: the ``default`` Namespace, the Service, then (with an address) the Endpoints
        and the EndpointSlice. Writes only what is missing or differs.

        Raises:
            StatusError: a write was refused (e.g. the cluster IP is held by another Service:
                422 ``provided IP is already allocated``, or a conflicting concurrent write)."""
        await self._ensure_namespace()
        await self._ensure_service(repair=self._repair_service)
        self._repair_service = False
        if self.public_ip is None:
            return
        endpoints = await self._ensure_endpoints()
        await self._ensure_endpoint_slice(endpoints)

    async def run(self, *, wait_first: bool = False) -> None:
        """Run :meth:`reconcile` every ``interval`` seconds (the first pass at once, or after one
        interval with ``wait_first``) until cancelled; a failed pass is logged with its reason and
        tried again at the next one, except a FATAL_TYPES error, which ends the loop."""
        await run_every(self.clock, self.interval, self.reconcile_logged, wait_first=wait_first)

    async def reconcile_logged(self) -> bool:
        """:meth:`reconcile`, with a failure logged (with its reason) instead of raised; True when
        the pass succeeded.

        Raises:
            MemoryError: (any of FATAL_TYPES) not logged and carried on: the loop, and serve()
                waiting on it, end with it."""
        try:
            await self.reconcile()
        except FATAL_TYPES:
            raise
        except Exception as e:  # logged with its reason; the next pass tries again
            log.error("unable to sync kubernetes service: %s: %s", type(e).__name__, e)
            return False
        return True

    async def _ensure_namespace(self) -> None:
        if await ensure_namespace(self.registry, KUBERNETES_SERVICE_NAMESPACE):
            log.info("created namespace %s for the kubernetes Service", KUBERNETES_SERVICE_NAMESPACE)

    async def _ensure_service(self, *, repair: bool) -> None:
        desired = kubernetes_service(self.service_ip, self.public_port)
        live = self._get(SERVICE, KUBERNETES_SERVICE_NAMESPACE, KUBERNETES_SERVICE_NAME)
        if live is None:
            await self.registry.create(SERVICE, KUBERNETES_SERVICE_NAMESPACE, desired, field_manager=SERVER_MANAGER)
            log.info("created Service default/kubernetes (clusterIP %s, port %d -> %d)", self.service_ip,
                     SERVICE_PORT, self.public_port)
            return
        if not repair:
            return
        spec = live.get("spec") or {}
        want = desired["spec"]
        if spec.get("type") == want["type"] and _ports_key(spec.get("ports")) == _ports_key(want["ports"]):
            return
        new = copy.deepcopy(live)
        new["spec"]["ports"] = want["ports"]
        new["spec"]["type"] = want["type"]
        log.warning("resetting Service default/kubernetes to type %s, port %s %d/TCP -> %d", want["type"], PORT_NAME,
                    SERVICE_PORT, self.public_port)
        await self.registry.update(SERVICE, KUBERNETES_SERVICE_NAMESPACE, KUBERNETES_SERVICE_NAME, new,
                                   field_manager=SERVER_MANAGER)

    async def _ensure_endpoints(self) -> Obj:
        if self.public_ip is None:
            raise RuntimeError("Endpoints default/kubernetes need the API server's advertised address")
        desired = kubernetes_endpoints(self.public_ip, self.public_port)
        live = self._get(ENDPOINTS, KUBERNETES_SERVICE_NAMESPACE, KUBERNETES_SERVICE_NAME)
        if live is None:
            stored, _ = await self.registry.create(ENDPOINTS, KUBERNETES_SERVICE_NAMESPACE, desired,
                                                   field_manager=SERVER_MANAGER)
            log.info("created Endpoints default/kubernetes (%s:%d)", self.public_ip, self.public_port)
            obj: Obj = stored.obj
            return obj
        labels = (live.get("metadata") or {}).get("labels") or {}
        if labels.get(SKIP_MIRROR_LABEL) == "true" and live.get("subsets") == desired["subsets"]:
            return live
        new = copy.deepcopy(live)
        new["metadata"]["labels"] = {**labels, SKIP_MIRROR_LABEL: "true"}
        new["subsets"] = desired["subsets"]
        log.warning("resetting Endpoints default/kubernetes to %s:%d", self.public_ip, self.public_port)
        stored, _ = await self.registry.update(ENDPOINTS, KUBERNETES_SERVICE_NAMESPACE, KUBERNETES_SERVICE_NAME, new,
                                               field_manager=SERVER_MANAGER)
        obj = stored.obj
        return obj

    async def _ensure_endpoint_slice(self, endpoints: Obj) -> None:
        desired = endpoint_slice_from_endpoints(endpoints)
        name = desired["metadata"]["name"]
        live = self._get(ENDPOINT_SLICE, KUBERNETES_SERVICE_NAMESPACE, name)
        if live is not None and live.get("addressType") != desired["addressType"]:
            # addressType cannot change in place: the slice is made again
            log.warning("EndpointSlice default/%s has addressType %s, not %s: recreating it", name,
                        live.get("addressType"), desired["addressType"])
            await self.registry.delete(ENDPOINT_SLICE, KUBERNETES_SERVICE_NAMESPACE, name, DeleteOptions())
            live = None
        if live is None:
            await self.registry.create(ENDPOINT_SLICE, KUBERNETES_SERVICE_NAMESPACE, desired,
                                       field_manager=SERVER_MANAGER)
            log.info("created EndpointSlice default/%s", name)
            return
        if all((live.get(k) or None) == (desired.get(k) or None) for k in ("endpoints", "ports")) and \
                ((live.get("metadata") or {}).get("labels") or {}) == desired["metadata"]["labels"]:
            return
        new = copy.deepcopy(live)
        new["metadata"]["labels"] = desired["metadata"]["labels"]
        for k in ("endpoints", "ports"):
            if desired.get(k):
                new[k] = desired[k]
            else:
                new.pop(k, None)
        log.warning("resetting EndpointSlice default/%s to %s", name,
                    ", ".join(a for e in desired["endpoints"] for a in e["addresses"]) or "no endpoints")
        await self.registry.update(ENDPOINT_SLICE, KUBERNETES_SERVICE_NAMESPACE, name, new,
                                   field_manager=SERVER_MANAGER)


def _ports_key(ports: Any) -> list[tuple[Any, ...]]:
    """A ServicePort list as kube-apiserver's checkServiceFormat compares it (every field)."""
    keys = ("name", "protocol", "port", "targetPort", "nodePort", "appProtocol")
    return [tuple(p.get(k) for k in keys) for p in ports or [] if isinstance(p, dict)]

