"""The ``proxy`` subresources: ``pods/proxy``, ``services/proxy`` and ``nodes/proxy``, as
kube-apiserver serves them (what ``kubectl proxy`` and clients such as KubeRay's
``--use-kubernetes-proxy`` use).

Paths (every method: GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS):

- ``/api/v1/namespaces/{ns}/pods/{[scheme:]name[:port]}/proxy/{path}``: the Pod's IP on ``port``
  (default: the first declared container port; none: the scheme's default port);
- ``/api/v1/namespaces/{ns}/services/{[scheme:]name[:port]}/proxy/{path}``: ``port`` is a Service
  port name, or a Service port number that stands for its name; the target is an address of the
  Service's Endpoints that has that port name and belongs to a Pod with that IP, on the endpoint's
  (target) port;
- ``/api/v1/nodes/{[scheme:]name[:port]}/proxy/{path}``: the node agent's kubelet endpoint
  (``status.daemonEndpoints.kubeletEndpoint.Port`` on the Node's ``InternalIP``).

The request's query string and body go to the target unchanged, with its headers minus the
hop-by-hop ones, ``Authorization`` and ``Impersonate-*`` (kube-apiserver drops them once it has
authenticated), plus ``X-Forwarded-Uri`` (the request's own path). The answer's status, headers
(minus hop-by-hop) and body stream back; a same-host ``Location`` gets the proxy path in front, as
apimachinery's proxy transport rewrites it. ``.../proxy`` with no path answers GET and HEAD with a
301 to ``.../proxy/``.

Errors (Status objects, kube-apiserver's texts): 400 ``invalid pod request "a:b:c:d"`` (also
``service``, ``node``; a scheme other than http/https), 404 ``pods "x" not found`` (also
``endpoints`` for a Service proxied by port name, ``services`` by port number, ``nodes``), 503 ``no
endpoints available for service "x"``, 503 ``no service port 81 found for service "x"``, 400 ``pod
x is not scheduled`` / ``address not allowed``, 503 ``error trying to reach service: dial tcp
IP:PORT: connect: connection refused``.

Where traffic may go: only to addresses the project made. A target is dialled when it is a
loopback address or an address on one of this host's bridges (the node agents' Pod bridges,
``pumice0`` / ``pumice-<hash>``) and, in each case, the Pod's or the Node's own address from the
store; anything else is refused with 400 ``address not allowed`` (kube-apiserver refuses
non-unicast Pod IPs with the same text). In-process targets (the simulated runtime's Ray
dashboards, see :meth:`ProxyAPI.add_backend`) are served without the network.

Mirrors: kubernetes pkg/registry/core/pod/strategy.go (ResourceLocation),
pkg/registry/core/service/storage/storage.go (ResourceLocation, isValidAddress),
pkg/registry/core/node/strategy.go (ResourceLocation), pkg/registry/core/{pod,service,node}/rest
(ProxyREST, ``JoinPreservingTrailingSlash``), k8s.io/apimachinery pkg/util/net/port_split.go
(SplitSchemeNamePort), pkg/util/proxy/upgradeaware.go (the root-path redirect) and transport.go
(X-Forwarded-Uri, Location rewriting, "error trying to reach service").

Deviates: HTML bodies are passed unchanged (apimachinery rewrites their same-host links); WebSocket
upgrades through the proxy are not served (400); ``nodes/proxy`` reaches only the node agent's own
port (another port on a Node answers 400), and the node agent speaks plain HTTP.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import logging
import os
import re
import socket
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx2
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from pumice._util.errors import dial_error
from pumice.api import Obj
from pumice.apiserver import errors
from pumice.apiserver.errors import StatusError
from pumice.apiserver.registry import Registry

log = logging.getLogger(__name__)

__all__ = ["Backend", "ProxyAPI", "ProxyTarget", "dial_port", "parse_proxy_path", "split_scheme_name_port"]

PROXY_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
#: RFC 7230 hop-by-hop headers (Go's httputil.ReverseProxy list), never forwarded either way
HOP_BY_HOP = frozenset({"connection", "proxy-connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "transfer-encoding", "upgrade"})
_VALID_SCHEMES = ("", "http", "https")
_CONNECT_TIMEOUT = 10.0

Backend = Callable[[str, int], "httpx2.AsyncBaseTransport | None"]
"""``(ip, port) -> transport or None``: an in-process server for that address (the simulated Ray
dashboard of a head Pod), or None to let the network serve it."""


def split_scheme_name_port(id_: str) -> tuple[str, str, str] | None:
    """``(scheme, name, port)`` of ``name``, ``name:port`` or ``scheme:name:port``; None when
    there are more parts, the name is empty or the scheme is not http/https.

    Mirrors: k8s.io/apimachinery pkg/util/net/port_split.go SplitSchemeNamePort."""
    parts = id_.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    if not name or scheme not in _VALID_SCHEMES:
        return None
    return scheme, name, port


_GO_PORT_NUMBER = re.compile(r"[+-]?[0-9]+")


def dial_port(port: str) -> str:
    """The port number a dial of ``host:port`` uses, as Go's resolver takes ``port`` (kube-apiserver
    puts the proxy id's port into the target URL as given): "" stays "" (the scheme's default), an
    ASCII decimal number with an optional sign must be 0-65535, anything else is a service name
    looked up in /etc/services (``http`` is 80).

    Raises:
        StatusError: 503 ``error trying to reach service: dial tcp: address 99999: invalid port``
            or ``...: lookup tcp/abc: unknown port``, Go's dial errors.

    Mirrors: go net/lookup.go (Resolver.LookupPort, parsePort) and net/net.go (OpError, AddrError).
    """
    if port == "":
        return ""
    if _GO_PORT_NUMBER.fullmatch(port):
        number = int(port)
        if 0 <= number <= 0xFFFF:
            return str(number)
        raise StatusError(503, f"error trying to reach service: dial tcp: address {port}: invalid port")
    try:
        return str(socket.getservbyname(port.lower(), "tcp"))
    except (OSError, ValueError, UnicodeError):
        raise StatusError(503, f"error trying to reach service: dial tcp: lookup tcp/{port}: unknown port") from None


@dataclass(frozen=True)
class ProxyTarget:
    """Where a proxy request goes: ``scheme://host:port`` (``port`` "" for the scheme's default)."""

    scheme: str
    host: str
    port: str

    def base(self) -> str:
        """``scheme://host[:port]`` (scheme ``http`` when none was given; an IPv6 host bracketed)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme or 'http'}://{host}" + (f":{self.port}" if self.port else "")

    def port_number(self) -> int:
        """The TCP port dialled: :attr:`port` (a number, see :func:`dial_port`), else the scheme's
        default (443 for https, 80 otherwise)."""
        if self.port.isdigit():
            return int(self.port)
        return 443 if self.scheme == "https" else 80


def parse_proxy_path(raw_path: str) -> tuple[str | None, str, str, str] | None:
    """``(namespace, plural, id, subpath)`` of a proxy request path, or None for other paths.

    ``raw_path`` is the request path as sent (percent-encoded); ``subpath`` keeps that encoding and
    is "" for ``.../proxy`` and "/" for ``.../proxy/``; ``id`` is decoded."""
    parts = raw_path.split("/")
    # "", "api", "v1", ["namespaces", ns,] plural, id, "proxy", ...
    if len(parts) < 6 or parts[0] != "" or parts[1] != "api" or parts[2] != "v1":
        return None
    rest, namespace = parts[3:], None
    if rest[0] == "namespaces" and len(rest) >= 5:
        namespace, rest = unquote(rest[1]), rest[2:]
    if len(rest) < 3 or rest[2] != "proxy" or rest[0] not in ("pods", "services", "nodes"):
        return None
    if (rest[0] == "nodes") != (namespace is None):
        return None
    sub = "/".join(rest[3:])
    return namespace, rest[0], unquote(rest[1]), ("/" + sub) if len(rest) > 3 else ""


class ProxyAPI:
    """Serves the proxy subresources for :class:`pumice.apiserver.http._Api` (authentication and
    authorization done by the caller: verb ``get``/``create``/``update``/``patch``/``delete`` on
    ``pods/proxy``, ``services/proxy``, ``nodes/proxy``).

    Args:
        registry: the store the Pods, Services, Endpoints and Nodes are read from.
        transport: the network transport (tests pass an ASGI one); default: a fresh httpx2 client
            per request, connect timeout 10 s and no read timeout (a proxied request is
            long-running, as in kube-apiserver).
    """

    def __init__(self, registry: Registry, transport: httpx2.AsyncBaseTransport | None = None) -> None:
        self.registry = registry
        self.transport = transport
        self._backends: list[Backend] = []
        self._network: httpx2.AsyncClient | None = None

    def _client(self, transport: httpx2.AsyncBaseTransport | None) -> tuple[httpx2.AsyncClient, bool]:
        """``(client, owned)``: one pooled client for the network (kept connections, made on first
        use in the server's loop), a fresh one around an in-process backend (closed after use)."""
        timeout = httpx2.Timeout(None, connect=_CONNECT_TIMEOUT)
        if transport is not None:
            return httpx2.AsyncClient(transport=transport, timeout=timeout, follow_redirects=False,
                                      trust_env=False), True
        if self._network is None:
            self._network = httpx2.AsyncClient(timeout=timeout, verify=False, follow_redirects=False,
                                               trust_env=False)
        return self._network, False

    async def aclose(self) -> None:
        """Close the pooled network client (the API server's shutdown)."""
        if self._network is not None:
            await self._network.aclose()
            self._network = None

    def add_backend(self, backend: Backend) -> Callable[[], None]:
        """Serve some addresses in process (checked before the network); returns the remover."""
        self._backends.append(backend)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._backends.remove(backend)

        return remove

    # ------------------------------------------------------------------ locations

    def _kind(self, kind: str) -> Any:
        rk = self.registry.scheme.by_api_version_kind("v1", kind)
        assert rk is not None
        return rk

    def pod_location(self, namespace: str, id_: str) -> ProxyTarget:
        """Raises StatusError 400 (bad id, not scheduled, no usable IP) or 404 (no Pod)."""
        parsed = split_scheme_name_port(id_)
        if parsed is None:
            raise errors.bad_request(f'invalid pod request "{id_}"')
        scheme, name, port = parsed
        pod = self.registry.get(self._kind("Pod"), namespace, name).obj
        if not port:
            port = next((str(p["containerPort"]) for c in (pod.get("spec") or {}).get("containers") or []
                         for p in (c.get("ports") or [])[:1] if p.get("containerPort")), "")
        ip = _pod_ip(pod)
        if not ip:
            raise errors.bad_request("address not allowed")
        return ProxyTarget(scheme, ip, port)

    def service_location(self, namespace: str, id_: str) -> ProxyTarget:
        """Raises StatusError 400 (bad id), 404 (no Service for a port number; no Endpoints), 503
        (no such port number; no ready address with the port name)."""
        parsed = split_scheme_name_port(id_)
        if parsed is None:
            raise errors.bad_request(f'invalid service request "{id_}"')
        scheme, name, port = parsed
        if port.isdigit() or (port[:1] in "+-" and port[1:].isdigit() and port[1:]):
            svc = self.registry.get(self._kind("Service"), namespace, name).obj
            number = int(port)
            for sp in (svc.get("spec") or {}).get("ports") or []:
                if sp.get("port") == number:
                    port = str(sp.get("name") or "")
                    break
            else:
                raise StatusError(503, f'no service port {number} found for service "{name}"')
        eps = self.registry.get(self._kind("Endpoints"), namespace, name).obj
        subsets = eps.get("subsets") or []
        if not subsets:
            raise StatusError(503, f'no endpoints available for service "{name}"')
        for ss in subsets:
            addresses = ss.get("addresses") or []
            for ep in ss.get("ports") or []:
                if (ep.get("name") or "") != port:
                    continue
                for addr in addresses:
                    if self._valid_address(namespace, addr):
                        return ProxyTarget(scheme, str(addr["ip"]), str(ep.get("port", "")))
                    log.warning("service %s/%s: endpoint address %s is not a Pod's address; skipped",
                                namespace, name, addr.get("ip"))
        raise StatusError(503, f'no endpoints available for service "{id_}"')

    def _valid_address(self, namespace: str, addr: Obj) -> bool:
        ref = addr.get("targetRef") or {}
        if ref.get("kind") != "Pod" or not ref.get("name") or not addr.get("ip"):
            return False
        s = self.registry.store.get("/pods", ref.get("namespace") or namespace, str(ref["name"]))
        if s is None:
            return False
        status = s.obj.get("status") or {}
        ips = {p.get("ip") for p in status.get("podIPs") or []} | {status.get("podIP")}
        return addr["ip"] in ips

    def node_location(self, id_: str) -> ProxyTarget:
        """Raises StatusError 400 (bad id, no kubelet endpoint, another port) or 404 (no Node)."""
        parsed = split_scheme_name_port(id_)
        if parsed is None:
            raise errors.bad_request(f'invalid node request "{id_}"')
        _, name, port = parsed
        node = self.registry.get(self._kind("Node"), None, name).obj
        status = node.get("status") or {}
        ip = next((a.get("address") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), None)
        kport = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
        if not ip or not kport:
            raise errors.bad_request(f"node {name} has no kubelet endpoint: its node agent runs the simulated "
                                     "runtime")
        if port and port != str(kport):
            raise errors.bad_request(f"port {port} of node {name} is not proxied: pumice proxies to the node "
                                     f"agent's port {kport} only")
        return ProxyTarget("http", str(ip), str(kport))

    # ------------------------------------------------------------------ serving

    async def serve(self, request: Request, namespace: str | None, plural: str, id_: str, subpath: str) -> Response:
        """Proxy one request (see the module docstring)."""
        method = request.method
        if method not in PROXY_METHODS:
            raise errors.method_not_allowed()
        if request.headers.get("upgrade"):
            raise errors.bad_request("Upgrade requests are not proxied by pumice")
        if plural == "pods":
            target = self.pod_location(namespace or "", id_)
        elif plural == "services":
            target = self.service_location(namespace or "", id_)
        else:
            target = self.node_location(id_)
        target = ProxyTarget(target.scheme, target.host, dial_port(target.port))
        raw_path = request.scope.get("raw_path") or request.scope["path"].encode()
        req_path = raw_path.decode("latin-1")
        if not subpath and method in ("GET", "HEAD"):
            query = request.scope.get("query_string", b"").decode("latin-1")
            return Response(status_code=301, headers={"Location": req_path + "/" + (f"?{query}" if query else "")})
        client, owned = self._client(self._transport_for(target, plural))
        query = request.scope.get("query_string", b"").decode("latin-1")
        url = target.base() + (subpath or "/") + (f"?{query}" if query else "")
        headers = _request_headers(request, req_path)
        body = _body(request) if method not in ("GET", "HEAD", "OPTIONS") or _has_body(request) else None
        try:
            upstream = await client.send(client.build_request(method, url, headers=headers, content=body),
                                         stream=True)
        except httpx2.HTTPError as e:
            if owned:
                await client.aclose()
            raise StatusError(503, f"error trying to reach service: {_dial_error(target, e)}") from None
        prefix = req_path[: len(req_path) - len(subpath)] if subpath else req_path
        out_headers = _response_headers(upstream.headers, target, prefix)

        async def stream() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            finally:
                await upstream.aclose()
                if owned:
                    await client.aclose()

        return StreamingResponse(stream(), status_code=upstream.status_code, headers=out_headers)

    def _transport_for(self, target: ProxyTarget, plural: str) -> httpx2.AsyncBaseTransport | None:
        """An in-process backend's transport, else :attr:`transport` (None: the network) once the
        address is allowed."""
        for backend in self._backends:
            t = backend(target.host, target.port_number())
            if t is not None:
                return t
        if not address_allowed(target.host):
            log.warning("%s proxy to %s refused: not a loopback or Pod bridge address", plural, target.host)
            raise errors.bad_request("address not allowed")
        return self.transport


def _pod_ip(pod: Obj) -> str:
    status = pod.get("status") or {}
    ips = status.get("podIPs") or []
    return str(ips[0].get("ip") or "") if ips else str(status.get("podIP") or "")


def _has_body(request: Request) -> bool:
    h = request.headers
    return bool(h.get("content-length", "0") not in ("", "0") or h.get("transfer-encoding"))


async def _body(request: Request) -> AsyncIterator[bytes]:
    async for chunk in request.stream():
        if chunk:
            yield chunk


def _request_headers(request: Request, req_path: str) -> list[tuple[str, str]]:
    drop = set(HOP_BY_HOP) | {"host", "authorization", "content-length"}
    for token in request.headers.get("connection", "").split(","):
        drop.add(token.strip().lower())
    out = [(k, v) for k, v in request.headers.items()
           if k.lower() not in drop and not k.lower().startswith("impersonate-")]
    if request.headers.get("content-length") and not request.headers.get("transfer-encoding"):
        out.append(("content-length", request.headers["content-length"]))
    out.append(("x-forwarded-uri", req_path))
    return out


def _response_headers(headers: httpx2.Headers, target: ProxyTarget, prefix: str) -> dict[str, str]:
    drop = set(HOP_BY_HOP)
    for token in headers.get("connection", "").split(","):
        drop.add(token.strip().lower())
    out: dict[str, str] = {}
    for k, v in headers.multi_items():
        lk = k.lower()
        if lk in drop:
            continue
        if lk == "location":
            v = _rewrite_location(v, target, prefix)
        out[lk] = f"{out[lk]}, {v}" if lk in out and lk != "set-cookie" else v
    return out


def _rewrite_location(location: str, target: ProxyTarget, prefix: str) -> str:
    """A same-host absolute-path redirect gets the proxy path in front (apimachinery
    Transport.rewriteURL); relative and other-host ones pass unchanged."""
    u = urlsplit(location)
    netloc = target.base().split("://", 1)[1]
    if (u.netloc and u.netloc != netloc) or not u.path.startswith("/"):
        return location
    if u.path.startswith(prefix.rstrip("/") + "/"):
        return location
    path = prefix.rstrip("/") + u.path
    return path + (f"?{u.query}" if u.query else "") + (f"#{u.fragment}" if u.fragment else "")


def _dial_error(target: ProxyTarget, e: Exception) -> str:
    """Go's dial error text for the common failures (``dial tcp 10.244.0.5:81: connect: connection
    refused``), else the client's own."""
    hostport = target.base().split("://", 1)[1]
    if ":" not in hostport.rsplit("]", 1)[-1]:
        hostport += f":{target.port_number()}"
    text = dial_error(hostport, e) if not isinstance(e, httpx2.TimeoutException) else None
    if text is not None:
        return text
    if isinstance(e, httpx2.ConnectError) and "refused" in str(e).lower():
        return f"dial tcp {hostport}: connect: connection refused"
    if isinstance(e, httpx2.TimeoutException):
        return f"dial tcp {hostport}: i/o timeout"
    return f"dial tcp {hostport}: {e or type(e).__name__}"


# ------------------------------------------------------------------------------- allowed addresses

_SIOCGIFADDR = 0x8915
_SIOCGIFNETMASK = 0x891B


def _bridge_networks() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks of this host's bridge interfaces (``/sys/class/net/<if>/bridge``)."""
    nets: list[ipaddress.IPv4Network] = []
    try:
        names = os.listdir("/sys/class/net")
    except OSError:
        return nets
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name in sorted(names):
            if not os.path.isdir(f"/sys/class/net/{name}/bridge"):
                continue
            req = struct.pack("256s", name.encode()[:15])
            try:
                addr = socket.inet_ntoa(fcntl.ioctl(s.fileno(), _SIOCGIFADDR, req)[20:24])
                mask = socket.inet_ntoa(fcntl.ioctl(s.fileno(), _SIOCGIFNETMASK, req)[20:24])
            except OSError:
                continue  # a bridge without an IPv4 address
            nets.append(ipaddress.IPv4Network(f"{addr}/{mask}", strict=False))
    return nets


def address_allowed(host: str) -> bool:
    """Whether the API server may dial ``host``: a loopback address, or one on a bridge of this host
    (the node agents' Pod bridges). The caller has already checked that it is a Pod's or Node's own
    address in the store."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if ip.is_loopback:
        return True
    if not isinstance(ip, ipaddress.IPv4Address) or ip.is_unspecified or ip.is_multicast or ip.is_link_local:
        return False
    return any(ip in net and ip != net.network_address and ip != net.broadcast_address
               for net in _bridge_networks())
