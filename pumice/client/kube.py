"""The pumice client: :class:`Client` implements :class:`pumice.client.base.KubeClient` over
lightkube's configuration, authentication and httpx2 wiring, with plain-dict objects encoded and
decoded by msgspec.

lightkube supplies the kubeconfig model (``KubeConfig``/``SingleConfig``), the auth flows (token,
token file, exec, client certs) and the httpx2 client factory; requests are raw REST calls built
from :class:`~pumice.api.scheme.ResourceKind` paths, which keeps per-call overhead small (the
simulator makes many thousands of calls). :meth:`Client.lightkube` gives a typed lightkube
``AsyncClient`` on the same connection settings for code that wants lightkube's models.

Errors: every non-2xx answer raises :class:`~pumice.client.base.ApiError` with the server's
Status; transport failures raise httpx2's exceptions unchanged.
"""

from __future__ import annotations

import asyncio
import gc
import platform
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, quote_plus, urlencode

import httpx2
import msgspec
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import KubeConfig, SingleConfig

from pumice import __version__
from pumice.api.scheme import ResourceKind, Scheme
from pumice.client.aio import AioHTTP
from pumice.client.aio import supports as aio_supports
from pumice.client.base import ApiError, ExecError, Obj, ObjectList, PatchType, WatchEvent, check_canceled
from pumice.client.transport import DirectASGI, StreamingASGITransport

__all__ = ["Client"]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_BIG = 1 << 20  # bytes

_PATCH_CT = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
_JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


def _error(resp_status: int, body: bytes) -> ApiError:
    try:
        st = _decode(body) if body else {}
    except msgspec.DecodeError:
        st = {}
    if not isinstance(st, dict) or st.get("kind") != "Status":
        text = body.decode(errors="replace").strip()
        return ApiError(resp_status, "", text or f"HTTP {resp_status}", {})
    return ApiError(int(st.get("code") or resp_status), str(st.get("reason", "")), str(st.get("message", "")), st)


def query_fields(params: Mapping[str, Any] | None) -> dict[str, str]:
    """The query parameters of a request as text: None values left out, every other value as
    ``urlencode`` writes it (``str(v)``). ``dict(parse_qsl(urlencode(f), keep_blank_values=True))``
    gives back ``f`` itself, so the in-process transport hands this dict to the server as the
    parsed query string (keys and values are str; no bytes values)."""
    if not params:
        return {}
    return {k: v if isinstance(v, str) else str(v) for k, v in params.items() if v is not None}


_PLAIN = re.compile(r"[A-Za-z0-9_.~-]*").fullmatch


_QUERIES: dict[tuple[tuple[str, str], ...], str] = {}
_QUERIES_MAX = 1024


def _query_string(fields: Mapping[str, str]) -> str:
    """``urlencode(fields)`` for a dict of str (what :func:`query_fields` gives), the same text:
    a key or value of characters ``quote_plus`` never escapes (ASCII letters, digits, ``_.-~``:
    most names, numbers and field managers) goes as it is, any other through ``quote_plus``.
    Remembered per distinct ``fields`` (most requests of a component send the same few: a
    ``fieldManager``); the memo is emptied when it holds :data:`_QUERIES_MAX` texts."""
    key = tuple(fields.items())
    text = _QUERIES.get(key)
    if text is None:
        text = "&".join(f"{k if _PLAIN(k) else quote_plus(k)}={v if _PLAIN(v) else quote_plus(v)}"
                        for k, v in key)
        if len(_QUERIES) >= _QUERIES_MAX:
            _QUERIES.clear()
        _QUERIES[key] = text
    return text


def component_user_agent(component: str = "client") -> str:
    """The User-Agent a pumice component sends: ``pumice-<component>/v<version> (<os>/<arch>)``,
    shaped like client-go's (``kube-scheduler/v1.34.0 (linux/amd64) kubernetes/<commit>``) so that
    audit logs and server-side request metrics tell the components apart."""
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"pumice-{component}/v{__version__} ({platform.system().lower()}/{machine})"


def client_go_user_agent(command: str) -> str:
    """The User-Agent client-go's rest.DefaultKubernetesUserAgent gives a binary named
    ``command`` built without Kubernetes' version ldflags (as plugins such as kubectl-ray are):
    ``kubectl-ray/v0.0.0 (linux/amd64) kubernetes/$Format``; the API server derives the field
    manager ``kubectl-ray`` from it when a write names none."""
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"{command}/v0.0.0 ({platform.system().lower()}/{machine}) kubernetes/$Format"


class Client:
    """Async access to a Kubernetes API (pumice's own server or a real cluster).

    Args:
        config: a lightkube ``SingleConfig`` or ``KubeConfig`` (its current context is used).
        transport: an httpx2 transport (e.g. :class:`~pumice.client.transport.StreamingASGITransport`
            for the in-process server); None for real HTTP.
        scheme: the kinds this client resolves; defaults to the built-in kinds. Unknown
            ``(apiVersion, kind)`` pairs are looked up through discovery on first use.
        field_manager: the ``fieldManager`` sent on writes; "" sends none, so the server derives the
            manager from the User-Agent (as client-go's typed clients leave it).
        timeout: seconds for non-watch requests.
        user_agent: the User-Agent header (default :func:`component_user_agent` of ``"client"``); each
            component passes its own.

    Build one with :func:`pumice.client.kubeconfig.connect` or
    :func:`pumice.client.kubeconfig.in_process`.
    """

    def __init__(
        self,
        config: SingleConfig | KubeConfig,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        scheme: Scheme | None = None,
        field_manager: str = "pumice",
        timeout: float = 30.0,
        user_agent: str | None = None,
    ) -> None:
        if isinstance(config, KubeConfig):
            single = config.get()
            if single is None:
                raise ValueError("the kubeconfig has no current context")
            config = single
        self.config = config
        self.scheme = scheme if scheme is not None else Scheme.builtin()
        self.namespace = config.namespace
        self.field_manager = field_manager
        self._transport = transport
        self._http: httpx2.AsyncClient
        if transport is not None or config.cluster.server.startswith("http://"):
            # no TLS: skip building a verifying SSL context (it costs ~0.25 s per client)
            self._http = httpx2.AsyncClient(base_url=config.cluster.server, verify=False,
                                            auth=client_adapter.user_auth(config.user), transport=transport,
                                            timeout=httpx2.Timeout(timeout), trust_env=False)
        else:
            params = client_adapter.ConnectionParams(timeout=httpx2.Timeout(timeout), trust_env=False)
            self._http = client_adapter.AsyncClient(config, params)
        self.user_agent = user_agent or component_user_agent()
        self._http.headers["User-Agent"] = self.user_agent
        self._ua = self.user_agent.encode()
        self._lightkube: Any = None
        self._kinds: dict[tuple[str, str], ResourceKind] = {}
        self._direct = (DirectASGI(transport.app, loop=transport.loop)
                        if isinstance(transport, StreamingASGITransport) else None)
        self._aio = (AioHTTP(config, timeout=timeout, user_agent=self.user_agent)
                     if transport is None and aio_supports(config) else None)

    # ------------------------------------------------------------------ plumbing

    @property
    def http(self) -> httpx2.AsyncClient:
        """The underlying httpx2 client (base URL and auth set)."""
        return self._http

    def lightkube(self) -> Any:
        """A lightkube ``AsyncClient`` on the same config and transport (created once)."""
        if self._lightkube is None:
            import lightkube

            self._lightkube = lightkube.AsyncClient(self.config, transport=self._transport,
                                                    field_manager=self.field_manager or None)
        return self._lightkube

    async def request(self, method: str, path: str, *, body: Any = None, content_type: str = "application/json",
                      params: Mapping[str, Any] | None = None) -> Any:
        """A raw REST call; returns the decoded JSON answer.

        Raises:
            ApiError: on a non-2xx answer.
            ContextCanceled: before sending, when the calling task was told to stop
                (:func:`pumice.client.base.cancel_scope`).
        """
        check_canceled()
        fields = query_fields(params)
        query = _query_string(fields) if fields else ""
        content = None if body is None else (body if isinstance(body, bytes) else _encode(body))
        if self._direct is not None:
            raw = [(b"accept", b"application/json"), (b"user-agent", self._ua)]
            if content is not None:
                raw.append((b"content-type", content_type.encode()))
                raw.append((b"content-length", str(len(content)).encode()))
            status, data = await self._direct.request(method, path, query.encode(), raw, content or b"",
                                                      params=fields)
        elif self._aio is not None:
            headers = {"Content-Type": content_type, "Accept": "application/json"} if content is not None \
                else {"Accept": "application/json"}
            status, data = await self._aio.request(method, f"{path}?{query}" if query else path, headers, content)
        else:
            headers = {"Content-Type": content_type, "Accept": "application/json"} if content is not None \
                else {"Accept": "application/json"}
            resp = await self._http.request(method, f"{path}?{query}" if query else path, content=content,
                                            headers=headers)
            status, data = resp.status_code, resp.content
        if status >= 300:
            raise _error(status, data)
        if len(data) > _BIG and gc.isenabled():
            # decoding builds no reference cycles; pausing the collector avoids repeated full
            # collections over every live object while a large list is decoded
            gc.disable()
            try:
                return _decode(data)
            finally:
                gc.enable()
        return _decode(data) if data else None

    async def _stream(self, path: str, query: str, *, objects: bool = False) -> tuple[int, AsyncIterator[Any], Any]:
        """Open a streaming GET; returns ``(status, chunks, aclose)``. ``objects``: see
        :meth:`DirectASGI.stream` (in-process only; other transports give bytes)."""
        if self._direct is not None:
            return await self._direct.stream("GET", path, query.encode(), [(b"accept", b"application/json"),
                                                                            (b"user-agent", self._ua)], objects=objects)
        if self._aio is not None:
            return await self._aio.stream(f"{path}?{query}" if query else path, {"Accept": "application/json"})
        req = self._http.build_request("GET", f"{path}?{query}" if query else path,
                                       headers={"Accept": "application/json"}, timeout=httpx2.Timeout(None))
        resp = await self._http.send(req, stream=True)
        return resp.status_code, resp.aiter_raw(), resp.aclose

    def _ns(self, kind: ResourceKind, namespace: str | None) -> str | None:
        if not kind.namespaced:
            return None
        return namespace or self.namespace

    async def resolve(self, api_version: str, kind: str) -> ResourceKind:
        """The served kind of ``(apiVersion, kind)``, refreshing from discovery when unknown.

        Raises:
            ApiError: 404 when the server does not serve it.
        """
        rk = self._kinds.get((api_version, kind))
        if rk is not None:
            return rk
        rk = self.scheme.by_api_version_kind(api_version, kind)
        if rk is None:
            await self.discover(api_version)
            rk = self.scheme.by_api_version_kind(api_version, kind)
        if rk is None:
            raise ApiError(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"', {})
        self._kinds[(api_version, kind)] = rk
        return rk

    async def discover(self, api_version: str | None = None) -> None:
        """Add the server's kinds (of one group-version, or all) to :attr:`scheme`."""
        self._kinds.clear()
        gvs: list[str]
        if api_version is not None:
            gvs = [api_version]
        else:
            groups = await self.request("GET", "/apis")
            gvs = ["v1"] + [v["groupVersion"] for g in groups.get("groups", []) for v in g.get("versions", [])]
        for gv in gvs:
            path = f"/apis/{gv}" if "/" in gv else f"/api/{gv}"
            try:
                doc = await self.request("GET", path)
            except ApiError as e:
                if e.code == 404:
                    continue
                raise
            group, _, version = gv.rpartition("/")
            res = doc.get("resources", [])
            subs: dict[str, list[str]] = {}
            for r in res:
                if "/" in r["name"]:
                    base, _, sub = r["name"].partition("/")
                    subs.setdefault(base, []).append(sub)
            for r in res:
                if "/" in r["name"]:
                    continue
                self.scheme.add(ResourceKind(
                    group, version, r["kind"], r["name"], namespaced=bool(r.get("namespaced")),
                    singular=r.get("singularName", ""), short_names=tuple(r.get("shortNames") or ()),
                    categories=tuple(r.get("categories") or ()), subresources=tuple(subs.get(r["name"], ())),
                    verbs=tuple(r.get("verbs") or ()),
                ))

    async def _kind_of(self, obj: Obj) -> ResourceKind:
        av, kind = obj.get("apiVersion"), obj.get("kind")
        if not av or not kind:
            raise ValueError("the object needs apiVersion and kind")
        return await self.resolve(av, kind)

    # ------------------------------------------------------------------ KubeClient

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj:
        result: Obj = await self.request("GET", kind.path(self._ns(kind, namespace), name))
        return result

    async def list(
        self,
        kind: ResourceKind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
    ) -> ObjectList:
        params = {"labelSelector": label_selector or None, "fieldSelector": field_selector or None,
                  "limit": limit, "continue": continue_ or None, "resourceVersion": resource_version}
        doc = await self.request("GET", kind.path(namespace if kind.namespaced else None), params=params)
        md = doc.get("metadata") or {}
        items = doc.get("items") or []
        for it in items:
            it.setdefault("apiVersion", kind.api_version)
            it.setdefault("kind", kind.kind)
        return ObjectList(items, str(md.get("resourceVersion", "")), str(md.get("continue") or ""))

    async def create(self, obj: Obj, *, dry_run: bool = False, field_manager: str | None = None) -> Obj:
        kind = await self._kind_of(obj)
        ns = self._ns(kind, obj.get("metadata", {}).get("namespace"))
        result: Obj = await self.request("POST", kind.path(ns), body=obj,
                                         params={"fieldManager": field_manager or self.field_manager or None,
                                                 "dryRun": "All" if dry_run else None})
        return result

    async def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        return await self._put(obj, field_manager=field_manager)

    async def update_status(self, obj: Obj) -> Obj:
        return await self._put(obj, "status")

    async def _put(self, obj: Obj, subresource: str | None = None, *, field_manager: str | None = None) -> Obj:
        kind = await self._kind_of(obj)
        md = obj.get("metadata", {})
        result: Obj = await self.request(
            "PUT", kind.path(self._ns(kind, md.get("namespace")), md["name"], subresource), body=obj,
            params={"fieldManager": field_manager or self.field_manager or None})
        return result

    async def patch(
        self,
        kind: ResourceKind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> Obj:
        ct = _PATCH_CT[patch_type]
        params: dict[str, Any] = {"fieldManager": field_manager or self.field_manager or None}
        if patch_type == "apply" and force:
            params["force"] = "true"
        result: Obj = await self.request("PATCH", kind.path(self._ns(kind, namespace), name, subresource),
                                         body=patch, content_type=ct, params=params)
        return result

    async def delete(
        self,
        kind: ResourceKind,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Obj | None:
        opts: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy is not None:
            opts["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            opts["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            opts["preconditions"] = dict(preconditions)
        result: Obj | None = await self.request("DELETE", kind.path(self._ns(kind, namespace), name), body=opts)
        return result

    async def watch(
        self,
        kind: ResourceKind,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        read_only: bool = False,
    ) -> AsyncIterator[WatchEvent]:
        params = {"watch": "true", "resourceVersion": resource_version or None,
                  "labelSelector": label_selector or None, "fieldSelector": field_selector or None,
                  "timeoutSeconds": timeout_seconds, "allowWatchBookmarks": "true" if allow_bookmarks else None}
        status, chunks, aclose = await self._stream(
            kind.path(namespace if kind.namespaced else None),
            _query_string(query_fields(params)), objects=read_only)
        try:
            if status >= 300:
                raise _error(status, b"".join([c async for c in chunks]))
            buf = b""
            async for chunk in chunks:
                if type(chunk) is list:  # an in-process watch of objects (read_only)
                    for etype, obj in chunk:
                        yield WatchEvent(etype, obj)
                    continue
                buf += chunk
                if b"\n" not in buf:
                    continue
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    ev = _decode(line)
                    etype, obj = ev.get("type"), ev.get("object") or {}
                    if etype == "ERROR":
                        raise _error(int(obj.get("code") or 500), line[line.find(b'"object":') + 9:-1]
                                     if obj.get("kind") == "Status" else b"")
                    yield WatchEvent(etype, obj)
        finally:
            await aclose()

    async def bind(self, namespace: str, pod_name: str, node_name: str, *, pod_uid: str | None = None,
                   annotations: Mapping[str, str] | None = None) -> None:
        md: dict[str, Any] = {"name": pod_name, "namespace": namespace}
        if pod_uid:
            md["uid"] = pod_uid
        if annotations:
            md["annotations"] = dict(annotations)
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": md,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        await self.request("POST", f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod_name)}/binding",
                           body=body)

    async def evict(self, namespace: str, pod_name: str, *, grace_period_seconds: int | None = None) -> None:
        body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                                "metadata": {"name": pod_name, "namespace": namespace}}
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        await self.request("POST", f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod_name)}/eviction",
                           body=body)

    async def logs(self, namespace: str, pod_name: str, *, container: str | None = None, follow: bool = False,
                   tail_lines: int | None = None, timestamps: bool = False,
                   previous: bool = False) -> AsyncIterator[bytes]:
        """Stream ``pods/<name>/log`` as raw bytes.

        Raises:
            ApiError: on a non-2xx answer.
        """
        params = {"container": container, "follow": "true" if follow else None, "tailLines": tail_lines,
                  "timestamps": "true" if timestamps else None, "previous": "true" if previous else None}
        status, chunks, aclose = await self._stream(
            f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod_name)}/log",
            urlencode({k: v for k, v in params.items() if v is not None}))
        try:
            if status >= 300:
                raise _error(status, b"".join([c async for c in chunks]))
            async for chunk in chunks:
                yield chunk
        finally:
            await aclose()

    async def exec(self, namespace: str, pod_name: str, command: Sequence[str], *,
                   container: str | None = None) -> AsyncIterator[tuple[int, bytes]]:
        """Run ``command`` in a container of the Pod through ``pods/<name>/exec`` (a WebSocket with
        Kubernetes' channel protocol, ``v5.channel.k8s.io`` or ``v4.channel.k8s.io``; stdin closed,
        no TTY) and yield ``(channel, bytes)`` as they arrive: channel 1 is stdout, 2 stderr.

        Only for a client built from a kubeconfig whose user authenticates with a token, token
        file, client certificate or nothing (not the in-process transport, not exec plugins).

        Raises:
            ApiError: the server refused the upgrade (its Status: 404 no Pod, 400 no container or a
                node without a kubelet endpoint, 401, 403).
            ExecError: the command ended with a non-zero exit code (``exit_code``) or could not run.
            ConnectionError: the stream ended without the error channel's final Status.
            NotImplementedError: this client cannot open WebSockets.

        Mirrors: client-go tools/remotecommand (the WebSocket executor) and
        apimachinery pkg/util/remotecommand/constants.go (channel numbers, ``NonZeroExitCode``).
        """
        from pumice.client.websocket import WebSocketError

        if self._aio is None:
            raise NotImplementedError("exec needs a kubeconfig with a token, token file or client certificate "
                                      "(not the in-process transport or an exec plugin)")
        query = [("command", c) for c in command] + [("stdout", "true"), ("stderr", "true")]
        if container:
            query.append(("container", container))
        path = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod_name)}/exec?{urlencode(query)}"
        try:
            ws = await self._aio.websocket(path, ["v5.channel.k8s.io", "v4.channel.k8s.io"])
        except WebSocketError as e:
            raise _error(e.status, e.body) from None
        status: Obj | None = None
        try:
            while (msg := await ws.recv()) is not None:
                if not msg:
                    continue
                channel, data = msg[0], msg[1:]
                if channel in (1, 2) and data:
                    yield channel, data
                elif channel == 3 and data:
                    status = _decode(data)
        finally:
            await ws.close()
        if status is None:
            raise ConnectionError(f"exec in pod {namespace}/{pod_name} ended without an exit status")
        if status.get("status") != "Success":
            causes = ((status.get("details") or {}).get("causes")) or []
            code = next((c.get("message") for c in causes if c.get("reason") == "ExitCode"), None)
            raise ExecError(str(status.get("message") or status), int(code) if code is not None else None)

    async def close(self) -> None:
        if self._lightkube is not None:
            closer = getattr(self._lightkube, "close", None)
            if closer is not None:
                result = closer()
                if asyncio.iscoroutine(result):
                    await result
        if self._aio is not None:
            await self._aio.close()
        await self._http.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
