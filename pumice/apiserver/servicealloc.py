"""Service ClusterIP and NodePort allocation: what kube-apiserver's Service REST storage does
around a Service write.

Every create, update and final delete of a Service passes through one :class:`ServiceAllocators`
per :class:`~pumice.apiserver.registry.Registry`:

- **cluster IPs** come from the service CIDR (``10.96.0.0/12``, kubeadm's default
  ``--service-cluster-ip-range``; IPv4 single-stack). A Service without ``clusterIP`` gets one, a
  requested one must be free and inside the range, a headless one (``None``) gets none;
  ``clusterIPs``, ``ipFamilies`` and ``ipFamilyPolicy`` are filled in.
- **node ports** come from 30000-32767 (``--service-node-port-range``): every port of a NodePort or
  LoadBalancer Service without a ``nodePort`` gets one (ports with the same ``port`` number share
  one), a requested one must be free; a LoadBalancer with ``externalTrafficPolicy: Local`` also
  gets a ``healthCheckNodePort``.
- Values are freed when the Service is finally deleted and when an update no longer uses them (a
  type change, a removed port), once that update is stored.

Each range has upstream's two bands: the first ``offset`` values (16 to 128 ports, 16 to 256
addresses) are the static band, meant for requested values; automatic picks come from the rest and
reach the static band only when the rest is full. Automatic picks are deterministic: the next free
value after the last one picked, wrapping (kube-apiserver picks at random).

State: kept in memory and rebuilt from the stored Services when the registry first needs it, as
upstream's repair controllers rebuild the allocation bitmaps; so a restart on the same data dir
knows every value in use. Allocation and its bookkeeping are synchronous, with no ``await`` in
between: two creates racing on one event loop never get the same value. A write that fails after
allocating (validation, admission, AlreadyExists) reverts what it took; a dry run takes nothing.

Mirrors: kubernetes pkg/registry/core/service/storage/alloc.go (allocateCreate, allocateUpdate,
initIPFamilyFields, releaseAllocatedResources), storage.go (beginCreate, beginUpdate,
patchAllocatedValues, normalizeClusterIPs, afterDelete), pkg/registry/core/service/strategy.go
(dropTypeDependentFields), portallocator (allocator.go, operation.go), ipallocator (bitmap.go,
interfaces.go), portallocator/controller and ipallocator/controller repair.go.

The ranges come from the API server's options (``pumice apiserver`` and ``pumice up``:
``--service-cluster-ip-range``, ``--service-node-port-range``).

Deviates: single-stack IPv4 only; ClusterIP addresses are bookkeeping only: nothing routes them (no kube-proxy), and Service names
resolve to the Pod IPs behind them (:mod:`pumice.node.services`). A dry run checks requested values
and shows the value an automatic pick would get (upstream shows a placeholder). Services stored
before allocation existed keep what they have (no IP, no nodePort) until they are recreated.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pumice.api import Obj, meta
from pumice.api.admission import FieldCause
from pumice.api.schema import format_value
from pumice.api.validation import go_strings, service_cluster_ips_causes

__all__ = [
    "NODE_PORT_RANGE",
    "SERVICE_CLUSTER_IP_RANGE",
    "AllocationInternal",
    "AllocationInvalid",
    "ServiceAllocators",
    "Transaction",
    "drop_type_dependent_fields",
    "ip_family",
    "parse_node_port_range",
    "parse_service_cidr",
]

log = logging.getLogger(__name__)

#: kubeadm's default ``--service-cluster-ip-range``; clear of the Pod CIDR (10.244.0.0/16) and of
#: the simulated Nodes' addresses (10.0.0.1 and up)
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/12"
#: kube-apiserver's default ``--service-node-port-range``
NODE_PORT_RANGE = (30000, 32767)


def parse_service_cidr(text: str) -> str:
    """A ``--service-cluster-ip-range`` value: an IPv4 CIDR of at most 2^20 addresses (mask /12 or
    longer, kube-apiserver's limit), host bits masked off (``10.96.0.1/12`` is ``10.96.0.0/12``).

    Raises:
        ValueError: not an IPv4 CIDR, or too large (kube-apiserver's text: ``specified
            --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12``).

    Deviates: IPv4 only (pumice serves single-stack IPv4 Services)."""
    try:
        net = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError as e:
        raise ValueError(f"invalid CIDR address: {text}") from e
    if net.version != 4:
        raise ValueError(f"{text}: pumice allocates IPv4 cluster IPs only")
    if net.prefixlen < 12:
        raise ValueError("specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12")
    return str(net)


def parse_node_port_range(text: str) -> tuple[int, int]:
    """A ``--service-node-port-range`` value: ``first-last``, ``first+count`` or one port.

    Raises:
        ValueError: not a range of ports 1-65535 with first <= last.

    Mirrors: apimachinery pkg/util/net/port_range.go ParsePortRange (its forms, not its texts)."""
    raw = text.strip()
    try:
        if "-" in raw:
            a, b = raw.split("-", 1)
            lo, hi = int(a), int(b)
        elif "+" in raw:
            a, b = raw.split("+", 1)
            lo = int(a)
            hi = lo + int(b)
        else:
            lo = hi = int(raw)
    except ValueError:
        raise ValueError(f"unable to parse port range: {text}") from None
    if not 0 < lo <= hi <= 65535:
        raise ValueError(f"port range {text} must be within 1-65535 with the first port not after the last")
    return lo, hi

ERR_FULL = "range is full"
ERR_PORT_ALLOCATED = "provided port is already allocated"
ERR_IP_ALLOCATED = "provided IP is already allocated"


class AllocationInvalid(Exception):
    """A requested value cannot be had (422 Invalid with :attr:`causes`)."""

    def __init__(self, causes: list[FieldCause]) -> None:
        super().__init__("; ".join(f"{c.field}: {c.message}" for c in causes))
        self.causes = causes


class AllocationInternal(Exception):
    """No value left in a range (upstream's 500 InternalError ``range is full``)."""


class _PortNotInRange(Exception):
    pass


def _band_offset(size: int, low: int, high: int, step: int) -> int:
    """Size of the static band: ``size/step`` held between ``low`` and ``high``; 0 for a range of
    ``low`` values or fewer (upstream calculateRangeOffset)."""
    if size <= low:
        return 0
    return max(low, min(high, size // step))


class _Bands:
    """Used offsets ``0..size-1`` with a static band ``[0, static)``; automatic picks go round the
    dynamic band ``[static, size)`` from a cursor, then the static band."""

    def __init__(self, size: int, static: int) -> None:
        self.size = size
        self.static = static
        self.used: set[int] = set()
        self._cursor = static

    def free(self) -> int:
        return self.size - len(self.used)

    def peek(self, also_taken: Iterable[int] = ()) -> int | None:
        """The offset the next automatic pick would take (None: full)."""
        extra = set(also_taken)
        busy = self.used | extra if extra else self.used
        if len(busy) >= self.size:
            return None
        spans = [(self._cursor, self.size), (self.static, self._cursor), (0, self.static)]
        for start, end in spans:
            for o in range(start, end):
                if o not in busy:
                    return o
        return None

    def take_next(self) -> int | None:
        o = self.peek()
        if o is not None:
            self.used.add(o)
            nxt = o + 1
            self._cursor = nxt if o >= self.static and nxt < self.size else self.static
        return o


class _PortRange:
    """Node ports ``lo..hi`` (upstream portallocator.PortAllocator)."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        size = hi - lo + 1
        self.bands = _Bands(size, _band_offset(size, 16, 128, 32))

    def not_in_range(self) -> str:
        return f"provided port is not in the valid range. The range of valid ports is {self.lo}-{self.hi}"

    def offset(self, port: int) -> int:
        if not self.lo <= port <= self.hi:
            raise _PortNotInRange
        return port - self.lo


class _IPRange:
    """Addresses of a CIDR but its first and last (upstream ipallocator.Range)."""

    def __init__(self, cidr: str) -> None:
        self.net = ipaddress.IPv4Network(cidr)
        self.cidr = str(self.net)
        self.base = int(self.net.network_address) + 1
        size = max(0, self.net.num_addresses - 2)
        self.bands = _Bands(size, _band_offset(self.net.num_addresses, 16, 256, 16))

    def offset(self, ip: str) -> int | None:
        """The offset of ``ip``, None when it is outside the allocatable addresses."""
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return None
        if addr.version != 4:
            return None
        o = int(addr) - self.base
        return o if 0 <= o < self.bands.size else None

    def address(self, offset: int) -> str:
        return str(ipaddress.IPv4Address(self.base + offset))


@dataclass
class Transaction:
    """What one Service write took and what it frees once stored.

    :meth:`commit` after the write is stored (frees the values the new object gave up),
    :meth:`revert` when it fails (frees what it took). A dry run's transaction holds nothing.
    """

    owner: ServiceAllocators
    ports: list[int] = field(default_factory=list)
    ips: list[int] = field(default_factory=list)
    release_ports: list[int] = field(default_factory=list)
    release_ips: list[int] = field(default_factory=list)

    def commit(self) -> None:
        for p in self.release_ports:
            self.owner.ports.bands.used.discard(p)
        for o in self.release_ips:
            self.owner.ips.bands.used.discard(o)

    def revert(self) -> None:
        for p in self.ports:
            self.owner.ports.bands.used.discard(p)
        for o in self.ips:
            self.owner.ips.bands.used.discard(o)


class _Op:
    """The allocations of one write: taken at once (dry run: only checked and remembered here)."""

    def __init__(self, alloc: ServiceAllocators, dry_run: bool) -> None:
        self.alloc = alloc
        self.dry_run = dry_run
        self.txn = Transaction(alloc)
        self._seen_ports: list[int] = []  # offsets this op took or, in a dry run, would take
        self._seen_ips: list[int] = []

    def port(self, port: int) -> None:
        """Take ``port``. Raises _PortNotInRange, or ValueError(ERR_PORT_ALLOCATED)."""
        pr = self.alloc.ports
        o = pr.offset(port)
        if o in pr.bands.used or o in self._seen_ports:
            raise ValueError(ERR_PORT_ALLOCATED)
        self._seen_ports.append(o)
        if not self.dry_run:
            pr.bands.used.add(o)
            self.txn.ports.append(o)

    def next_port(self) -> int:
        """Take the next free port. Raises AllocationInternal when none is left."""
        pr = self.alloc.ports
        o = pr.bands.peek(self._seen_ports) if self.dry_run else pr.bands.take_next()
        if o is None:
            raise AllocationInternal(ERR_FULL)
        self._seen_ports.append(o)
        if not self.dry_run:
            self.txn.ports.append(o)
        return pr.lo + o

    def release_port(self, port: int) -> None:
        """Free ``port`` once the write is stored (out of range: nothing to free)."""
        try:
            o = self.alloc.ports.offset(port)
        except _PortNotInRange:
            return
        if not self.dry_run:
            self.txn.release_ports.append(o)

    def ip(self, ip: str) -> str | None:
        """Take ``ip``; the reason it cannot be had, else None."""
        r = self.alloc.ips
        o = r.offset(ip)
        if o is None:
            return f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is {r.cidr}"
        if o in r.bands.used or o in self._seen_ips:
            return ERR_IP_ALLOCATED
        self._seen_ips.append(o)
        if not self.dry_run:
            r.bands.used.add(o)
            self.txn.ips.append(o)
        return None

    def next_ip(self) -> str:
        r = self.alloc.ips
        o = r.bands.peek(self._seen_ips) if self.dry_run else r.bands.take_next()
        if o is None:
            raise AllocationInternal(f"failed to allocate a serviceIP: {ERR_FULL}")
        self._seen_ips.append(o)
        if not self.dry_run:
            self.txn.ips.append(o)
        return r.address(o)

    def release_ip(self, ip: str) -> None:
        o = self.alloc.ips.offset(ip)
        if o is not None and not self.dry_run:
            self.txn.release_ips.append(o)

    def fail(self) -> None:
        self.txn.revert()


# --- what a Service needs ---------------------------------------------------------------------------


def _spec(svc: Obj) -> dict[str, Any]:
    spec = svc.get("spec")
    return spec if isinstance(spec, dict) else {}


def _type(svc: Obj) -> str:
    return _spec(svc).get("type") or "ClusterIP"


def _needs_cluster_ip(svc: Obj) -> bool:
    return _type(svc) != "ExternalName"


def _needs_node_port(svc: Obj) -> bool:
    return _type(svc) in ("NodePort", "LoadBalancer")


def _needs_health_check(svc: Obj) -> bool:
    """upstream service.NeedsHealthCheck: a LoadBalancer keeping client source IPs."""
    return _type(svc) == "LoadBalancer" and _spec(svc).get("externalTrafficPolicy") == "Local"


def _allocates_node_ports(svc: Obj) -> bool:
    """NodePort always; LoadBalancer unless ``allocateLoadBalancerNodePorts: false``."""
    if _type(svc) == "NodePort":
        return True
    return _type(svc) == "LoadBalancer" and _spec(svc).get("allocateLoadBalancerNodePorts") is not False


def _ports(svc: Obj) -> list[dict[str, Any]]:
    return [p for p in _spec(svc).get("ports") or [] if isinstance(p, dict)]


def _node_port(p: dict[str, Any]) -> int:
    np = p.get("nodePort")
    return np if isinstance(np, int) and not isinstance(np, bool) else 0


def _node_ports(svc: Obj) -> list[int]:
    return [n for n in (_node_port(p) for p in _ports(svc)) if n]


def _health_check_port(svc: Obj) -> int:
    hc = _spec(svc).get("healthCheckNodePort")
    return hc if isinstance(hc, int) and not isinstance(hc, bool) else 0


def _cluster_ips(svc: Obj) -> list[str]:
    ips = _spec(svc).get("clusterIPs")
    return list(ips) if isinstance(ips, list) else []


def _headless(svc: Obj) -> bool:
    ips = _cluster_ips(svc)
    return bool(ips) and ips[0] == "None"


def ip_family(ip: Any) -> str:
    """``"IPv6"``, ``"IPv4"`` or ``"unknown"`` (not an IP address) for ``ip``, as Services and
    EndpointSlices name address families."""
    try:
        return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"
    except (TypeError, ValueError):
        return "unknown"


def _invalid(path: str, value: Any, detail: str) -> FieldCause:
    return FieldCause(path, f"Invalid value: {value}: {detail}", "FieldValueInvalid")


# --- update-time fix-ups ------------------------------------------------------------------------


def drop_type_dependent_fields(new: Obj, old: Obj) -> None:
    """On a type change, clear the fields the new type does not use that the client left as they
    were (they are freed when the update is stored); a LoadBalancer status goes with the type.

    Mirrors: kubernetes pkg/registry/core/service/strategy.go dropTypeDependentFields."""
    spec, ospec = _spec(new), _spec(old)
    if _needs_cluster_ip(old) and not _needs_cluster_ip(new):
        if spec.get("clusterIP") == ospec.get("clusterIP") and spec.get("clusterIPs") == ospec.get("clusterIPs"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if spec.get("ipFamilies") == ospec.get("ipFamilies"):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == ospec.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if _needs_node_port(old) and not _needs_node_port(new) and set(_node_ports(new)) <= set(_node_ports(old)):
        for p in _ports(new):
            p.pop("nodePort", None)
    if _needs_health_check(old) and not _needs_health_check(new) and _health_check_port(new) == _health_check_port(old):
        spec.pop("healthCheckNodePort", None)
    if _type(old) == "LoadBalancer" and _type(new) != "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") == ospec.get("allocateLoadBalancerNodePorts"):
            spec.pop("allocateLoadBalancerNodePorts", None)
        if spec.get("loadBalancerClass") == ospec.get("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    if _externally_accessible(old) and not _externally_accessible(new) and \
            spec.get("externalTrafficPolicy") == ospec.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)
    if _type(new) != "LoadBalancer" and isinstance(new.get("status"), dict):
        new["status"]["loadBalancer"] = {}


def _externally_accessible(svc: Obj) -> bool:
    return _type(svc) in ("NodePort", "LoadBalancer") or (_type(svc) == "ClusterIP" and bool(_spec(svc).get("externalIPs")))


def _patch_allocated_values(new: Obj, old: Obj) -> None:
    """Keep the values the server chose that the client did not send again (a resubmitted
    manifest), matching node ports by port name (upstream patchAllocatedValues)."""
    spec, ospec = _spec(new), _spec(old)
    if _needs_cluster_ip(old) and _needs_cluster_ip(new):
        if not spec.get("clusterIP") and ospec.get("clusterIP"):
            spec["clusterIP"] = ospec["clusterIP"]
        if not spec.get("clusterIPs") and ospec.get("clusterIPs"):
            spec["clusterIPs"] = list(ospec["clusterIPs"])
    if _needs_node_port(old) and _needs_node_port(new):
        kept = set(_node_ports(old)) & set(_node_ports(new))
        by_name = {p.get("name") or "": _node_port(p) for p in _ports(old)}
        for p in _ports(new):
            if not _node_port(p):
                prev = by_name.get(p.get("name") or "", 0)
                if prev and prev not in kept:
                    p["nodePort"] = prev
    if _needs_health_check(old) and _needs_health_check(new) and not _health_check_port(new) \
            and _health_check_port(old):
        spec["healthCheckNodePort"] = _health_check_port(old)


def _normalize_cluster_ips(new: Obj, old: Obj | None) -> None:
    """Keep ``clusterIP`` and ``clusterIPs`` in step (upstream normalizeClusterIPs)."""
    spec = _spec(new)
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if old is None:
        if ip and not ips:
            spec["clusterIPs"] = [ip]
        return
    ospec = _spec(old)
    oip, oips = ospec.get("clusterIP") or "", ospec.get("clusterIPs") or []
    if oips and not ips and oip == ip:
        spec["clusterIPs"] = ips = list(oips)
    if oip != ip:
        same = ips == oips
        if oip and not ip:
            if same:
                spec.pop("clusterIPs", None)
        elif same:
            spec["clusterIPs"] = [ip]


class ServiceAllocators:
    """The cluster IP and node port ranges of one API server.

    Args:
        cluster_ip_range: the service CIDR (IPv4).
        node_port_range: ``(first, last)`` node port.
    """

    def __init__(self, cluster_ip_range: str = SERVICE_CLUSTER_IP_RANGE,
                 node_port_range: tuple[int, int] = NODE_PORT_RANGE) -> None:
        self.ips = _IPRange(cluster_ip_range)
        self.ports = _PortRange(*node_port_range)

    # ------------------------------------------------------------------ repair

    def restore(self, services: Iterable[Obj]) -> None:
        """Mark every value the stored ``services`` hold (their clusterIPs, nodePorts and health
        check ports). A value held twice, or outside the ranges, is logged and left as it is.

        Mirrors: ipallocator/controller/repair.go and portallocator/controller/repair.go
        (runOnce: rebuild the bitmap from the stored Services)."""
        for svc in services:
            key = meta.key(svc)
            if _needs_cluster_ip(svc) and not _headless(svc):
                for ip in _cluster_ips(svc):
                    o = self.ips.offset(ip)
                    if o is None:
                        log.warning("service %s: cluster IP %s is not within the service CIDR %s; not reserved",
                                    key, ip, self.ips.cidr)
                    elif o in self.ips.bands.used:
                        log.warning("service %s: cluster IP %s was assigned to more than one Service; "
                                    "recreate one of them", key, ip)
                    else:
                        self.ips.bands.used.add(o)
            held = set(_node_ports(svc))
            if _needs_health_check(svc) and _health_check_port(svc):
                held.add(_health_check_port(svc))
            for port in sorted(held):
                try:
                    o = self.ports.offset(port)
                except _PortNotInRange:
                    log.warning("service %s: node port %d is not within %d-%d; not reserved",
                                key, port, self.ports.lo, self.ports.hi)
                    continue
                if o in self.ports.bands.used:
                    log.warning("service %s: node port %d was assigned to more than one Service; "
                                "recreate one of them", key, port)
                self.ports.bands.used.add(o)

    # ------------------------------------------------------------------ create

    def allocate_create(self, svc: Obj, dry_run: bool) -> Transaction:
        """Fill in and take what a new Service needs, in place.

        Raises:
            AllocationInvalid: bad cluster IP fields, a requested IP or port taken or out of range.
            AllocationInternal: a range is full (upstream's 500 InternalError: the server has
                no value left, whatever the client sends).

        Mirrors: storage.go beginCreate, alloc.go allocateCreate."""
        _normalize_cluster_ips(svc, None)
        self._init_ip_families(svc, None)
        op = _Op(self, dry_run)
        try:
            if _needs_cluster_ip(svc) and not _headless(svc):
                self._alloc_cluster_ips(svc, op)
            if _needs_node_port(svc):
                self._init_node_ports(svc, op)
            if _needs_health_check(svc):
                self._alloc_health_check(svc, op)
        except BaseException:
            op.fail()
            raise
        return op.txn

    # ------------------------------------------------------------------ update

    def allocate_update(self, new: Obj, old: Obj, dry_run: bool) -> Transaction:
        """Fill in, take and (once stored) free what an update changes, in place.

        Raises: as :meth:`allocate_create`.

        Mirrors: storage.go beginUpdate, alloc.go allocateUpdate."""
        _patch_allocated_values(new, old)
        _normalize_cluster_ips(new, old)
        self._init_ip_families(new, old)
        op = _Op(self, dry_run)
        try:
            if _type(old) == "ExternalName" and _needs_cluster_ip(new):
                if not _headless(new):
                    self._alloc_cluster_ips(new, op)
            elif _needs_cluster_ip(old) and not _headless(old) and not _needs_cluster_ip(new):
                for ip in _cluster_ips(old):
                    op.release_ip(ip)
            if _needs_node_port(old) and not _needs_node_port(new):
                for port in _node_ports(old):
                    op.release_port(port)
            if _needs_node_port(new):
                self._update_node_ports(new, old, op)
            self._update_health_check(new, old, op)
        except BaseException:
            op.fail()
            raise
        return op.txn

    # ------------------------------------------------------------------ delete

    def release(self, svc: Obj) -> None:
        """Free everything a deleted Service held (upstream releaseAllocatedResources)."""
        if _needs_cluster_ip(svc) and not _headless(svc):
            for ip in _cluster_ips(svc) or ([_spec(svc)["clusterIP"]] if _spec(svc).get("clusterIP") else []):
                o = self.ips.offset(ip)
                if o is not None:
                    self.ips.bands.used.discard(o)
        held = _node_ports(svc)
        if _needs_health_check(svc) and _health_check_port(svc):
            held.append(_health_check_port(svc))
        for port in held:
            try:
                self.ports.bands.used.discard(self.ports.offset(port))
            except _PortNotInRange:
                log.warning("service %s: node port %d is not within %d-%d; nothing to release",
                            meta.key(svc), port, self.ports.lo, self.ports.hi)

    # ------------------------------------------------------------------ parts

    def _init_ip_families(self, svc: Obj, old: Obj | None) -> None:
        """Default ``ipFamilyPolicy`` and ``ipFamilies`` for this IPv4 single-stack cluster and
        refuse what it cannot serve (upstream initIPFamilyFields)."""
        if not _needs_cluster_ip(svc):
            return
        spec = _spec(svc)
        ospec = _spec(old) if old is not None else {}
        if spec.get("ipFamilyPolicy") is None:
            if ospec.get("ipFamilyPolicy") is not None:
                spec["ipFamilyPolicy"] = ospec["ipFamilyPolicy"]
            elif spec.get("clusterIP") == "None" and not spec.get("selector"):
                spec["ipFamilyPolicy"] = "RequireDualStack"
            else:
                spec["ipFamilyPolicy"] = "SingleStack"
        causes = service_cluster_ips_causes(spec)
        if causes:
            raise AllocationInvalid(causes)
        policy = spec["ipFamilyPolicy"]
        ips = _cluster_ips(svc)
        families = list(spec.get("ipFamilies") or [])
        if old is not None:
            oips, ofams = _cluster_ips(old), list(ospec.get("ipFamilies") or [])
            if policy == "SingleStack":
                if ips == oips and len(ips) > 1:
                    spec["clusterIPs"] = ips = ips[:1]
                if families == ofams and len(families) > 1:
                    families = families[:1]
            else:
                if ips and len(ips) < len(oips):
                    causes.append(_invalid("spec.ipFamilyPolicy", format_value(policy),
                                           "must be 'SingleStack' to release the secondary cluster IP"))
                if families and len(families) < len(ofams):
                    causes.append(_invalid("spec.ipFamilyPolicy", format_value(policy),
                                           "must be 'SingleStack' to release the secondary IP family"))
        if policy == "SingleStack":
            if len(ips) == 2:
                causes.append(_invalid("spec.ipFamilyPolicy", format_value(policy),
                                       "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs "
                                       "are specified"))
            if len(families) == 2:
                causes.append(_invalid("spec.ipFamilyPolicy", format_value(policy),
                                       "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families "
                                       "are specified"))
        for i, ip in enumerate(ips):
            if ip == "None":
                break
            if i >= len(families):
                fam = ip_family(ip)
                if fam != "IPv4":
                    causes.append(_invalid(f"spec.clusterIPs[{i}]", go_strings(ips),
                                           f"{fam} is not configured on this cluster"))
                else:
                    families.append(fam)
        if causes:
            raise AllocationInvalid(causes)
        if spec.get("clusterIP") == "None" and not spec.get("selector"):
            # headless without a selector: any family its endpoints may have
            families = families or ["IPv4"]
            if len(families) < 2 and policy != "SingleStack":
                families.append("IPv6" if families[0] == "IPv4" else "IPv4")
            spec["ipFamilies"] = families
            return
        if policy == "RequireDualStack":
            causes.append(_invalid("spec.ipFamilyPolicy", format_value(policy),
                                   "this cluster is not configured for dual-stack services"))
        for i, fam in enumerate(families):
            if fam != "IPv4":
                causes.append(_invalid(f"spec.ipFamilies[{i}]", format_value(fam), "not configured on this cluster"))
        if causes:
            raise AllocationInvalid(causes)
        spec["ipFamilies"] = families or ["IPv4"]

    def _alloc_cluster_ips(self, svc: Obj, op: _Op) -> None:
        """Take the requested cluster IP or the next free one; set ``clusterIP`` and
        ``clusterIPs`` (upstream allocClusterIPs for one family)."""
        spec = _spec(svc)
        ips = _cluster_ips(svc)
        want = ips[0] if ips else ""
        if want:
            why = op.ip(want)
            if why is not None:
                raise AllocationInvalid([_invalid("spec.clusterIPs", go_strings(ips),
                                                  f"failed to allocate IP {want}: {why}")])
            got = want
        else:
            got = op.next_ip()
        spec["clusterIP"] = got
        spec["clusterIPs"] = [got, *ips[1:]]

    def _init_node_ports(self, svc: Obj, op: _Op) -> None:
        """Node ports of a new Service: a requested one is taken, ports sharing a ``port`` number
        share a node port, the others get the next free one (upstream initNodePorts)."""
        ports = _ports(svc)
        by_port: dict[Any, int] = {}
        for i, p in enumerate(ports):
            if not _node_port(p) and not _allocates_node_ports(svc):
                continue
            shared = by_port.get(p.get("port"), 0)
            if not shared:
                requested = next((_node_port(q) for q in ports[i:] if q.get("port") == p.get("port") and _node_port(q)), 0)
                if requested:
                    self._take_port(op, requested, i)
                    p["nodePort"] = requested
                else:
                    p["nodePort"] = self._next_port(op)
                by_port[p.get("port")] = p["nodePort"]
            elif _node_port(p) != shared:
                if not _node_port(p):
                    p["nodePort"] = shared
                else:
                    self._take_port(op, _node_port(p), i)

    def _update_node_ports(self, new: Obj, old: Obj, op: _Op) -> None:
        """Node ports of an updated NodePort or LoadBalancer Service: new requested ones are
        taken, missing ones picked, those the update drops freed once stored (upstream
        updateNodePorts)."""
        olds = _node_ports(old)
        taken: set[int] = set()
        for i, p in enumerate(_ports(new)):
            np = _node_port(p)
            if not np and not _allocates_node_ports(new):
                continue
            if np:
                if np not in olds and np not in taken:
                    self._take_port(op, np, i)
                    taken.add(np)
            else:
                np = p["nodePort"] = self._next_port(op)
        # A nodePort given twice with one protocol is left to validation, which runs next and
        # refuses it with 422 `spec.ports[i].nodePort: Duplicate value` (the allocation is then
        # reverted). Upstream's updateNodePorts answers 500 `duplicate nodePort` first; a
        # client's bad input never gets a 500 here, and the create path answers the same 422.
        news = set(_node_ports(new))
        for port in olds:
            if port not in news:
                op.release_port(port)

    def _update_health_check(self, new: Obj, old: Obj, op: _Op) -> None:
        """upstream updateHealthCheckNodePort: take one on becoming a Local LoadBalancer, free it
        on leaving, refuse a change of it while staying one (422, upstream's text)."""
        needed, needs = _needs_health_check(old), _needs_health_check(new)
        if needed and needs:
            hc = _health_check_port(new)
            if hc != _health_check_port(old):
                raise AllocationInvalid([_invalid(
                    "spec.healthCheckNodePort", hc,
                    "cannot change healthCheckNodePort on loadBalancer service with externalTraffic=Local "
                    "during update")])
        elif not needed and needs:
            self._alloc_health_check(new, op)
        elif needed and not needs and _health_check_port(old):
            op.release_port(_health_check_port(old))

    def _alloc_health_check(self, svc: Obj, op: _Op) -> None:
        hc = _health_check_port(svc)
        if hc:
            # upstream answers these two with 500 InternalError; the port is the client's input,
            # so pumice answers 422 on spec.healthCheckNodePort with upstream's words
            try:
                op.port(hc)
            except _PortNotInRange:
                raise AllocationInvalid([_invalid("spec.healthCheckNodePort", hc,
                                                  "failed to allocate requested HealthCheck NodePort: "
                                                  f"{self.ports.not_in_range()}")]) from None
            except ValueError as e:
                raise AllocationInvalid([_invalid("spec.healthCheckNodePort", hc,
                                                  f"failed to allocate requested HealthCheck NodePort: {e}")]) from None
        else:
            try:
                _spec(svc)["healthCheckNodePort"] = op.next_port()
            except AllocationInternal as e:
                raise AllocationInternal(f"failed to allocate a HealthCheck NodePort 0: {e}") from None

    def _take_port(self, op: _Op, port: int, index: int) -> None:
        try:
            op.port(port)
        except _PortNotInRange:
            raise AllocationInvalid([_invalid(f"spec.ports[{index}].nodePort", port,
                                              self.ports.not_in_range())]) from None
        except ValueError as e:
            raise AllocationInvalid([_invalid(f"spec.ports[{index}].nodePort", port, str(e))]) from None

    def _next_port(self, op: _Op) -> int:
        try:
            return op.next_port()
        except AllocationInternal as e:
            raise AllocationInternal(f"failed to allocate a nodePort: {e}") from None
