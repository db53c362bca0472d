"""The API server object: storage, registry, admission chain and the ASGI app, wired together.

``APIServer(data_dir)`` stores objects in ``<data_dir>/pumice.db`` (SQLite, WAL; a write is
acknowledged once it is durable, see :mod:`pumice.apiserver.storage`); ``APIServer(None)`` keeps
them in memory. ``await server.start()`` (also done by ``serve``) creates
the default namespaces, the system PriorityClasses and the built-in CRDs (ray.io, volcano) when
they are missing. ``server.app`` is the ASGI app (use it with the in-process transport, or
``await server.serve(host, port)`` for HTTP with uvicorn). The Service ``default/kubernetes`` and,
while the server listens, its Endpoints and EndpointSlice are kept by
:mod:`pumice.apiserver.kubernetesservice`; while it listens, a deleted system namespace
(``kube-system``, ``kube-public``, ``kube-node-lease``) is made again by
:mod:`pumice.apiserver.systemnamespaces`.

HTTPS by default: a self-signed certificate and key are generated into ``<data_dir>/tls.crt`` /
``tls.key`` and the kubeconfig carries the CA data (kubectl sends bearer tokens over TLS only).
Plain HTTP is allowed on loopback addresses only.

Mirrors: kubernetes cmd/kube-apiserver/app/server.go (in spirit: one process, one storage).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import ipaddress
import logging
import secrets
import socket
import ssl
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec
import yaml
from starlette.responses import Response
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from pumice._util.clock import Clock, default_clock
from pumice._util.files import write_durably
from pumice._util.tls import self_signed
from pumice.api.crds import builtin_crds
from pumice.api.scheme import Scheme
from pumice.apiserver.access import Access
from pumice.apiserver.admission import SYSTEM_PRIORITY_CLASSES, AdmissionChain, builtin_plugins
from pumice.apiserver.authn import Authenticator, ServiceAccountTokenIssuer, load_token_file
from pumice.apiserver.authz import RBACAuthorizer, bootstrap_policy
from pumice.apiserver.componentstatus import Check, Probe
from pumice.apiserver.errors import StatusError
from pumice.apiserver.http import build_app
from pumice.apiserver.kubernetesservice import (
    DEFAULT_SECURE_PORT,
    ENDPOINT_INTERVAL,
    KubernetesServiceController,
    advertise_address,
    service_ip,
)
from pumice.apiserver.registry import Registry
from pumice.apiserver.servicealloc import NODE_PORT_RANGE, SERVICE_CLUSTER_IP_RANGE
from pumice.apiserver.storage import Durability, MemoryStorage, SqliteStorage, Storage, StorageError
from pumice.apiserver.store import Store
from pumice.apiserver.systemnamespaces import (
    SERVER_MANAGER,
    SYSTEM_NAMESPACES,
    SYSTEM_NAMESPACES_INTERVAL,
    SystemNamespacesController,
    ensure_namespace,
)
from pumice.apiserver.tlsfront import TLSFront
from pumice.runtime.health import QuietServer

__all__ = ["DEFAULT_NAMESPACES", "APIServer", "AckWhenDurable", "is_loopback"]

log = logging.getLogger(__name__)

BUILTIN_CRD_ANNOTATION = "pumice.dev/builtin-crd-spec"
#: the field manager of the built-in CRDs pumice installs (their label
#: ``app.kubernetes.io/managed-by`` says the same): a server-side apply that conflicts with them
#: names ``"pumice"``, not ``"unknown"``
BUILTIN_CRD_MANAGER = "pumice"
DEFAULT_NAMESPACES = ("default", *SYSTEM_NAMESPACES)


#: the bridge gateways of the node agent's default /22 slots of 10.244.0.0/16: Pods reach the API
#: server there (KUBERNETES_SERVICE_HOST), so the serving certificate names them all
POD_GATEWAYS = tuple(f"10.244.{4 * i}.1" for i in range(64))


#: the StorageClass a fresh pumice has (like a distribution's default class): volumes are
#: directories made by the node agent's local-path provisioner
DEFAULT_STORAGE_CLASS: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
    "provisioner": "pumice.dev/local-path", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate",
}


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class StatusOnParseError(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools), answering a request it cannot parse with a 400
    ``Status`` as every other refusal, instead of uvicorn's plain-text ``Invalid HTTP request
    received.``: a malformed request line or header, or a URL over 65535 bytes (the most httptools'
    URL parser takes; kube-apiserver reads URLs up to its 1 MiB header limit). Its log lines go to
    pumice's log (``pumice.apiserver.server``) instead of uvicorn's own format.

    Relies on uvicorn's ``send_400_response`` hook (uvicorn 0.30-0.54); tests/apiserver/
    test_hostile_input.py checks the answer over a socket.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.logger = log

    def send_400_response(self, msg: str) -> None:
        body = msgspec.json.encode(StatusError(
            400, "invalid HTTP request: the request line or a header cannot be parsed (the URL is limited "
            "to 65535 bytes)", "BadRequest").status())
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body),
                 b"connection: close\r\n\r\n"]
        self.transport.write(b"".join(head) + body)
        self.transport.close()


class APIServer:
    """A Kubernetes-compatible API server.

    Args:
        data_dir: where ``pumice.db``, ``kubeconfig``, ``token`` and TLS files live; None keeps
            everything in memory (and writes no files).
        storage: a :class:`~pumice.apiserver.storage.Storage` overriding the default backend.
        durability: ``"strict"`` (default) or ``"relaxed"``, for the default SQLite backend.
        admission_plugins: extra admission plugins, run after the built-in ones.
        clock: time source (default: the process clock).
        token: the bearer token clients must present over HTTP; read from / written to
            ``<data_dir>/token`` when None (a fresh random one without a data dir).
        builtin_admission: install NamespaceLifecycle, ServiceAccount and Priority (default True).
        install_crds: install :func:`pumice.api.crds.builtin_crds` at start (default True).
        history: watch events kept per resource (older resourceVersions get 410).
        bookmark_interval: seconds between watch bookmarks for clients that allow them (None: no
            bookmarks but the initial-events-end one).
        seed: seeds uids and generateName suffixes (deterministic runs); None (default): random
            uids from the OS, as kube-apiserver's.
        event_ttl: seconds an Event lives after its last write (kube-apiserver's --event-ttl).
        service_cluster_ip_range: IPv4 CIDR of the Services' cluster IPs (kube-apiserver's
            ``--service-cluster-ip-range``; default kubeadm's 10.96.0.0/12).
        service_node_port_range: ``(first, last)`` node port (``--service-node-port-range``,
            default 30000-32767).
        token_auth_file: a static token file (kube-apiserver's ``--token-auth-file``:
            ``token,user,uid,"group1,group2"`` lines) for users besides the admin.
        authorization: ``"RBAC"`` (default: system:masters and the admin token may do anything,
            other users what their Roles allow) or ``"AlwaysAllow"`` (every authenticated user).
        tls_sans: extra names and addresses the serving certificate covers (the address Pods reach
            the API server at, e.g. the Pod bridge's gateway).
        advertise_address: the IPv4 address the Endpoints ``default/kubernetes`` give for this
            server (kube-apiserver's ``--advertise-address``); None: the bind host when it is a
            specific non-loopback address, else this host's default-route address
            (:func:`pumice.apiserver.kubernetesservice.advertise_address`).
        endpoint_reconciler_interval: seconds between the passes that keep ``default/kubernetes``
            (Service, Endpoints, EndpointSlice) while the server listens (kube-apiserver's 10 s).
        system_namespaces_interval: seconds between the passes that create the missing system
            namespaces while the server listens (kube-apiserver's 60 s;
            :mod:`pumice.apiserver.systemnamespaces`).
        request_metrics: count each request in kube-apiserver's ``apiserver_request_total`` and
            ``apiserver_request_duration_seconds`` (default True); False for a server nobody
            can scrape (``pumice simulate``'s: no sockets), which then skips the per-request
            labels, timing and counting.

    Files in the data dir: ``pumice.db``, ``token`` (admin), ``sa.key`` (the ServiceAccount token
    signing key), ``tls.crt``/``tls.key``, ``kubeconfig``.
    """

    def __init__(
        self,
        data_dir: Path | str | None,
        *,
        storage: Storage | None = None,
        durability: Durability | str = Durability.STRICT,
        admission_plugins: Iterable[Any] = (),
        clock: Clock | None = None,
        token: str | None = None,
        builtin_admission: bool = True,
        install_crds: bool = True,
        history: int = 20_000,
        bookmark_interval: float | None = 60.0,
        seed: int | None = None,
        event_ttl: float = 3600.0,
        service_cluster_ip_range: str = SERVICE_CLUSTER_IP_RANGE,
        service_node_port_range: tuple[int, int] = NODE_PORT_RANGE,
        token_auth_file: Path | str | None = None,
        authorization: str = "RBAC",
        tls_sans: Iterable[str] = (),
        advertise_address: str | None = None,
        endpoint_reconciler_interval: float = ENDPOINT_INTERVAL,
        system_namespaces_interval: float = SYSTEM_NAMESPACES_INTERVAL,
        request_metrics: bool = True,
    ) -> None:
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        if storage is None:
            storage = (SqliteStorage(self.data_dir / "pumice.db", durability=durability)
                       if self.data_dir is not None else MemoryStorage())
        self.storage = storage
        self.clock = clock or default_clock()
        self.scheme = Scheme.builtin()
        self.store = Store(storage, history=history)
        self.admission = AdmissionChain()
        if builtin_admission:
            for p in builtin_plugins():
                self.admission.add(p)
        for p in admission_plugins:
            self.admission.add(p)
        self.registry = Registry(self.store, self.scheme, self.clock, self.admission, seed=seed,
                                 event_ttl=event_ttl, service_cluster_ip_range=service_cluster_ip_range,
                                 service_node_port_range=service_node_port_range)
        self.registry.load_crds()
        self.token = token if token is not None else self._load_token()
        self.install_crds = install_crds
        if authorization not in ("RBAC", "AlwaysAllow"):
            raise ValueError(f"unknown authorization mode {authorization!r} (RBAC or AlwaysAllow)")
        self.tls_sans = tuple(tls_sans)
        self.issuer = ServiceAccountTokenIssuer(self.data_dir / "sa.key" if self.data_dir is not None else None)
        static = load_token_file(token_auth_file) if token_auth_file else {}
        self.authenticator = Authenticator(self.token, static_tokens=static, issuer=self.issuer,
                                           lookup=self._lookup, now=self.clock.now)
        rbac = [f"rbac.authorization.k8s.io/{r}" for r in ("roles", "clusterroles", "rolebindings",
                                                             "clusterrolebindings")]
        self.authorizer = RBACAuthorizer(
            lambda res, ns: (s.obj for s in self.store.list(res, ns)),
            lambda res, ns, name: (lambda st: None if st is None else st.obj)(self.store.get(res, ns, name)),
            version=lambda: tuple(self.store.changed_at(r) for r in rbac))
        self.authorization = authorization
        self.access = Access(self.authenticator, self.authorizer, self.issuer, self._lookup, self.clock.now,
                             mode=authorization)
        app, self._api = build_app(self.registry, token=self.token, clock=self.clock,
                                   bookmark_interval=bookmark_interval, access=self.access,
                                   request_metrics=request_metrics)
        self.app = AckWhenDurable(app, self.store)
        self.add_component("storage", self._storage_health)
        self._started = False
        self._serving = False
        self.advertise_address = advertise_address
        self.endpoint_reconciler_interval = endpoint_reconciler_interval
        self.system_namespaces_interval = system_namespaces_interval
        #: the ``default/kubernetes`` controller while the server listens (see :meth:`serve`)
        self.kubernetes_service: KubernetesServiceController | None = None
        self._uvicorn: Any = None
        self.url: str | None = None

    # ------------------------------------------------------------------ setup

    @property
    def proxy(self) -> Any:
        """The :class:`~pumice.apiserver.proxy.ProxyAPI` serving ``pods|services|nodes/proxy``
        (``add_backend`` serves in-process targets, e.g. the simulated Ray dashboards)."""
        return self._api.proxy

    @property
    def metrics(self) -> Any:
        """The :class:`~pumice.apiserver.metrics.MetricsAPI` serving ``metrics.k8s.io``
        (``add_source`` reads in-process usage, e.g. the simulated runtime's)."""
        return self._api.metrics

    def add_admission_plugin(self, plugin: Any) -> None:
        """Append an admission plugin (mutating when it has ``admit``, validating when it has
        ``validate``); takes effect for the next request."""
        self.admission.add(plugin)

    def _lookup(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        st = self.store.get(f"/{plural}", namespace, name)
        return None if st is None else st.obj

    def _load_token(self) -> str:
        if self.data_dir is None:
            return secrets.token_urlsafe(24)
        path = self.data_dir / "token"
        if path.exists():
            text = path.read_text().strip()
            if text:
                return text
        tok = secrets.token_urlsafe(24)
        write_durably(path, tok + "\n", mode=0o600)
        return tok

    async def start(self) -> None:
        """Create what kube-apiserver creates at start (idempotent): default namespaces, system
        PriorityClasses, the built-in CRDs, the bootstrap RBAC policy, (once, when there is no
        StorageClass at all) the default StorageClass ``standard``, and, for a server that does
        not listen, the Service ``default/kubernetes`` (:meth:`serve` keeps it, with its
        Endpoints and EndpointSlice, once it listens; see
        :mod:`pumice.apiserver.kubernetesservice`)."""
        if self._started:
            return
        self._started = True
        reg = self.registry
        pc_kind = self.scheme.by_api_version_kind("scheduling.k8s.io/v1", "PriorityClass")
        assert pc_kind is not None
        for ns in DEFAULT_NAMESPACES:
            await ensure_namespace(reg, ns)
        for pc in SYSTEM_PRIORITY_CLASSES:
            if self.store.get("scheduling.k8s.io/priorityclasses", "", pc["metadata"]["name"]) is None:
                await reg.create(pc_kind, None, _copy(pc), field_manager=SERVER_MANAGER)
        if self.install_crds:
            await self.apply_crds(builtin_crds(), builtin=True)
        await self._bootstrap_rbac()
        sc_kind = self.scheme.by_api_version_kind("storage.k8s.io/v1", "StorageClass")
        if sc_kind is not None and not self.store.list("storage.k8s.io/storageclasses"):
            await reg.create(sc_kind, None, _copy(DEFAULT_STORAGE_CLASS), field_manager=SERVER_MANAGER)
        if not self._serving:
            await self._kubernetes_service_controller(DEFAULT_SECURE_PORT, None).reconcile_logged()

    def _kubernetes_service_controller(self, public_port: int, public_ip: str | None) -> KubernetesServiceController:
        return KubernetesServiceController(
            self.registry, self.clock, service_ip=service_ip(self.registry.service_cluster_ip_range),
            public_port=public_port, public_ip=public_ip, interval=self.endpoint_reconciler_interval)

    async def _bootstrap_rbac(self) -> None:
        """Create the bootstrap ClusterRoles and ClusterRoleBindings that are missing (kube-apiserver's
        rbac/bootstrap-roles post-start hook; existing ones, possibly edited, are left alone)."""
        roles, bindings = bootstrap_policy()
        for kind, res, objs in (("ClusterRole", "clusterroles", roles),
                                ("ClusterRoleBinding", "clusterrolebindings", bindings)):
            rk = self.scheme.by_api_version_kind("rbac.authorization.k8s.io/v1", kind)
            assert rk is not None
            for obj in objs:
                if self.store.get(f"rbac.authorization.k8s.io/{res}", "", obj["metadata"]["name"]) is None:
                    await self.registry.create(rk, None, obj, field_manager=SERVER_MANAGER)

    async def apply_crds(self, crds: Iterable[dict[str, Any]], *, builtin: bool = False) -> None:
        """Create or update CustomResourceDefinitions (as ``kubectl apply`` would).

        With ``builtin``, each CRD is marked with the hash of its spec (annotation
        ``pumice.dev/builtin-crd-spec``), written by field manager ``pumice``, and a stored CRD is
        replaced only while it still carries pumice's own spec: a CRD a user re-applied (e.g. the
        upstream manifest) is left alone. Without it the writes name no manager (``unknown``).
        """
        crd_kind = self.scheme.by_api_version_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        assert crd_kind is not None
        manager = BUILTIN_CRD_MANAGER if builtin else ""
        for crd in crds:
            name = crd["metadata"]["name"]
            old = self.store.get("apiextensions.k8s.io/customresourcedefinitions", "", name)
            body = _copy(crd)
            if builtin:
                body["metadata"].setdefault("annotations", {})[BUILTIN_CRD_ANNOTATION] = _spec_hash(body)
            if old is None:
                await self.registry.create(crd_kind, None, body, field_manager=manager)
                continue
            if old.obj.get("spec") == body.get("spec"):
                continue
            if builtin:
                mark = (old.obj["metadata"].get("annotations") or {}).get(BUILTIN_CRD_ANNOTATION)
                if mark != _spec_hash(old.obj):
                    continue
            body["metadata"]["resourceVersion"] = str(old.rv)
            await self.registry.update(crd_kind, None, name, body, field_manager=manager)

    # ------------------------------------------------------------------ HTTP

    def write_kubeconfig(self, url: str, path: Path | None = None, *, ca_data: str | None = None) -> Path:
        """Write a kubeconfig for ``url`` with this server's bearer token; returns its path
        (``<data_dir>/kubeconfig`` by default).

        Raises:
            ValueError: no ``path`` given and the server has no data dir.
        """
        if path is None:
            if self.data_dir is None:
                raise ValueError("write_kubeconfig needs a path when the server has no data dir")
            path = self.data_dir / "kubeconfig"
        cluster: dict[str, Any] = {"server": url}
        if url.startswith("https://"):
            ca = ca_data
            if ca is None and self.data_dir is not None and (self.data_dir / "tls.crt").exists():
                import base64

                ca = base64.b64encode((self.data_dir / "tls.crt").read_bytes()).decode()
            if ca:
                cluster["certificate-authority-data"] = ca
            else:
                cluster["insecure-skip-tls-verify"] = True
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "pumice", "cluster": cluster}],
            "users": [{"name": "pumice-admin", "user": {"token": self.token}}],
            "contexts": [{"name": "pumice", "context": {"cluster": "pumice", "user": "pumice-admin",
                                                         "namespace": "default"}}],
            "current-context": "pumice",
            "preferences": {},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        write_durably(path, yaml.safe_dump(cfg, sort_keys=False), mode=0o600)
        return path

    def ensure_tls(self, host: str) -> tuple[Path, Path]:
        """Generate (once) a self-signed certificate for ``host``, 127.0.0.1 and localhost into
        the data dir; returns ``(cert, key)`` paths.

        Raises:
            ValueError: the server has no data dir.
        """
        if self.data_dir is None:
            raise ValueError("TLS needs a data dir for the certificate")
        cert_path, key_path = self.data_dir / "tls.crt", self.data_dir / "tls.key"
        wanted = self._sans(host)
        if cert_path.exists() and key_path.exists() and wanted <= _cert_sans(cert_path):
            return cert_path, key_path
        cert, key = self_signed("pumice-apiserver", sorted(wanted), now=_dt.datetime.now(_dt.UTC))
        write_durably(key_path, key, mode=0o600)
        write_durably(cert_path, cert)
        return cert_path, key_path

    def _sans(self, host: str) -> set[str]:
        """The names and addresses the serving certificate must cover."""
        out = {"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
               "kubernetes.default.svc.cluster.local", "127.0.0.1", *POD_GATEWAYS, *self.tls_sans}
        if host not in ("0.0.0.0", "::", ""):
            out.add(host)
        return out

    def add_component(self, name: str, check: Check) -> None:
        """Report the health of the part ``name`` in ``componentstatuses`` with ``check`` (see
        :mod:`pumice.apiserver.componentstatus`; ``pumice up`` adds its controllers, schedulers and
        node agent)."""
        self._api.components.add(name, check)

    async def _storage_health(self) -> Probe:
        """The storage's health: unhealthy with the error once a commit or fsync failed."""
        failure = self.storage.failure
        return Probe(True, "ok") if failure is None else Probe(False, str(failure))

    async def serve(self, host: str = "127.0.0.1", port: int = 6443, *, tls: bool | None = None,
                    ready: asyncio.Event | None = None) -> None:
        """Run uvicorn until cancelled. Writes ``<data_dir>/kubeconfig`` when there is a data dir.
        ``port=0`` picks a free port (see :attr:`url` once ``ready`` is set).

        ``tls``: None (default) serves HTTPS with the self-signed certificate whenever the server
        has a data dir (kubectl sends its bearer token over TLS only) or the host is not loopback;
        False serves plain HTTP (loopback only; Python clients still send the token).

        Raises:
            ValueError: a non-loopback ``host`` without TLS.
        """
        import uvicorn

        if tls is None:
            # kubectl (client-go) sends bearer tokens over TLS only, so serve TLS whenever there is a
            # data dir for the certificate; plain HTTP only for data-dir-less loopback servers
            tls = self.data_dir is not None or not is_loopback(host)
        if not tls and not is_loopback(host):
            raise ValueError(f"binding to non-loopback address {host} requires TLS")
        self._serving = True
        await self.start()
        front: TLSFront | None = None
        if tls:
            # TLS through our own listener (tlsfront.py), so that plain HTTP to this port gets Go's
            # "Client sent an HTTP request to an HTTPS server." instead of an empty reply; uvicorn
            # listens on an internal loopback port only until its protocol factory is taken.
            cert, key = self.ensure_tls(host)
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(str(cert), str(key))
            public = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET,
                                          backlog=2048)
        config = uvicorn.Config(self.app, host="127.0.0.1" if tls else host, port=0 if tls else port,
                                http=StatusOnParseError, log_level="warning", access_log=False,
                                lifespan="off", timeout_graceful_shutdown=1,
                                timeout_keep_alive=120, proxy_headers=False, server_header=False,
                                # wsproto: the websockets library refuses kubectl's port-forward
                                # subprotocol "SPDY/3.1+portforward.k8s.io" ("/" is not a token char)
                                ws="wsproto")
        server = QuietServer(config)
        self._uvicorn = server
        task = asyncio.create_task(server.serve())
        kube_svc_task: asyncio.Task[None] | None = None
        sys_ns_task: asyncio.Task[None] | None = None
        try:
            while not server.started:
                if task.done():
                    await task
                    raise RuntimeError(f"the API server could not listen on {host}:{port}")
                await asyncio.sleep(0.01)
            sock = server.servers[0].sockets[0]
            if tls:
                internal = server.servers[0]
                front = TLSFront(public, internal._protocol_factory, ctx)  # type: ignore[attr-defined]
                internal.close()  # nothing connects there any more
                front.start()
                sock = public
            real_port = sock.getsockname()[1]
            shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
            self.url = f"{'https' if tls else 'http'}://{shown}:{real_port}"
            if self.data_dir is not None:
                self.write_kubeconfig(self.url)
            # default/kubernetes: first pass before ready, then one every interval
            kube_svc = self._kubernetes_service_controller(
                real_port, self.advertise_address or advertise_address(host))
            self.kubernetes_service = kube_svc
            await kube_svc.reconcile_logged()
            kube_svc_task = asyncio.create_task(kube_svc.run(wait_first=True), name="kubernetes-service")
            # start() made them; from now on a deleted one comes back within an interval
            sys_ns = SystemNamespacesController(self.registry, self.clock, interval=self.system_namespaces_interval)
            sys_ns_task = asyncio.create_task(sys_ns.run(wait_first=True), name="system-namespaces")
            if ready is not None:
                ready.set()
            # uvicorn and the two loops together: a loop that ends (only an error ends one) stops
            # the server with that error instead of leaving it serving without the loop. asyncio.wait
            # does not cancel what it waits on: a cancel of serve() (SIGTERM) must not cancel
            # uvicorn mid-response, which logs every open watch as "Exception in ASGI application"
            # (CancelledError); the finally below ends the watches first, then lets uvicorn stop
            # gracefully
            loops = (kube_svc_task, sys_ns_task)
            await asyncio.wait({task, *loops}, return_when=asyncio.FIRST_COMPLETED)
            for loop_task in loops:
                if loop_task.done():
                    log.error("API server: the %s loop ended; stopping the server", loop_task.get_name())
                    raise loop_task.exception() or RuntimeError(f"the {loop_task.get_name()} loop returned")
            await task
        finally:
            for running in (kube_svc_task, sys_ns_task):
                if running is not None and not running.done():
                    running.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await running
            self.store.close_watchers()  # each watch stream ends as on a normal timeout
            if front is not None:
                await front.close()
            elif tls:
                public.close()
            try:  # the proxy's pooled connections to Pods and node agents
                await self._api.proxy.aclose()
            except Exception as e:  # a failing close must not stop the shutdown, but is said
                log.warning("API server shutdown: closing the proxy's pooled connections failed: %s: %s",
                            type(e).__name__, e)
            if not task.done():
                server.should_exit = True
                try:
                    await asyncio.wait_for(asyncio.shield(task), 5)
                except (TimeoutError, asyncio.CancelledError):
                    task.cancel()

    def close(self) -> None:
        """End every watch and close the storage."""
        self.store.close_watchers()
        self.storage.close()


_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class AckWhenDurable:
    """ASGI middleware: the response to a write request (POST, PUT, PATCH, DELETE) starts only
    once every revision committed before it is durable, so an acknowledged write survives a power
    cut; reads pass straight through and never wait. Concurrent writers wait for the same group
    fsync. When the storage cannot make the write durable the client gets a 500 ``Status``
    (InternalError) instead of the handler's answer.

    Mirrors: etcd's contract with kube-apiserver (a Put returns after the WAL fsync).
    """

    def __init__(self, app: Any, store: Store) -> None:
        self.app = app
        self.store = store
        # in memory a commit is durable at once and sync neither waits nor fails: the in-process
        # path of a write need not await it (the answer and the scheduling stay the same)
        self._instant = type(store.storage) is MemoryStorage

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") not in _WRITE_METHODS:
            await self.app(scope, receive, send)
            return
        store = self.store
        failed = False

        async def send_when_durable(message: dict[str, Any]) -> None:
            nonlocal failed
            if failed:
                return
            if message["type"] == "http.response.start":
                try:
                    await store.wait_durable(store.revision)
                except StorageError as e:
                    failed = True
                    body = msgspec.json.encode(StatusError(500, f"Internal error occurred: {e}").status()) + b"\n"
                    await send({"type": "http.response.start", "status": 500,
                                "headers": [(b"content-type", b"application/json"),
                                            (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body})
                    return
            await send(message)

        await self.app(scope, receive, send_when_durable)

    async def respond(self, scope: dict[str, Any], receive: Any) -> Response:
        """The in-process fast path of the wrapped app's ``respond`` (see
        :meth:`pumice.apiserver.http._App.respond`) with the same acknowledgement rule: the
        answer to a write is returned once every revision committed before it is durable, else
        a 500 ``Status``."""
        response = await self.app.respond(scope, receive)
        if not self._instant and scope.get("method") in _WRITE_METHODS:
            store = self.store
            try:
                await store.wait_durable(store.revision)
            except StorageError as e:
                body = msgspec.json.encode(StatusError(500, f"Internal error occurred: {e}").status()) + b"\n"
                return Response(content=body, status_code=500, media_type="application/json")
        return response


def _cert_sans(path: Path) -> set[str]:
    """The subject alternative names of a PEM certificate (empty when unreadable)."""
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound, OSError):
        return set()
    return {str(n) for n in ext.get_values_for_type(x509.DNSName)} | \
        {str(a) for a in ext.get_values_for_type(x509.IPAddress)}


def _spec_hash(crd: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(msgspec.json.encode(crd.get("spec"), order="sorted")).hexdigest()[:20]


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(obj))
    return out


