"""The HTTP face of the API server: a Starlette app that routes Kubernetes REST paths to the
:class:`~pumice.apiserver.registry.Registry`.

Paths: ``/api/v1/...`` and ``/apis/<group>/<version>/...`` with the usual collection, object and
subresource forms (namespaced and cluster-wide), plus ``/version``, ``/healthz``, ``/livez``,
``/readyz``, discovery and ``/openapi/v3``. Bodies: JSON (YAML accepted for apply patches and
``application/yaml``), at most 3 MiB (413 beyond). Every error is a ``Status`` with content type
exactly ``application/json``. Tables are served when ``Accept`` asks for ``as=Table``.

Authentication: ``Authorization: Bearer <token>`` when a token is configured (401 otherwise);
requests over the in-process transport (ASGI scope extension ``pumice.in_process``) are trusted.
``/version``, ``/healthz``, ``/livez`` and ``/readyz`` are public, as kube-apiserver's
system:public-info-viewer makes them.

Mirrors: k8s.io/apiserver pkg/endpoints/handlers (rest.go, create.go, update.go, patch.go,
delete.go, get.go, watch.go), pkg/endpoints/filters (authentication), pkg/server/filters
(maxinflight, request size).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from email.utils import formatdate
from typing import Any, NamedTuple

import msgspec
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from pumice._util.clock import Clock
from pumice._util.gostrings import atoi
from pumice._util.metrics import EXPOSITION_CONTENT_TYPE, configure_metrics, exposition
from pumice.api import gojson
from pumice.api import protobuf as pb
from pumice.api.admission import FieldCause
from pumice.api.apply import manager_or_user_agent
from pumice.api.fields import repair_bytes
from pumice.api.godecode import LITERAL_TEXTS, go_json_value, unmarshal_error
from pumice.api.meta import deep_copy
from pumice.api.params import query_bool, query_list, query_values
from pumice.api.quantity import FloatLiteral
from pumice.api.scheme import BINDING, COMPONENT_STATUS, SCALE, ResourceKind
from pumice.api.selectors import SelectorError, parse_field_selector, parse_label_selector
from pumice.api.tables import to_table
from pumice.apiserver import discovery, errors, healthz, openapi, requestmetrics
from pumice.apiserver.access import PUBLIC_PATHS, Access
from pumice.apiserver.componentstatus import DEPRECATION_WARNING, ComponentStatuses
from pumice.apiserver.decode import (
    check_query,
    check_request_timeout,
    check_resource_version,
    decode_body,
    duplicate_fields,
    plain_floats,
)
from pumice.apiserver.errors import StatusError
from pumice.apiserver.metrics import MetricsAPI
from pumice.apiserver.proxy import ProxyAPI, parse_proxy_path
from pumice.apiserver.registry import DeleteOptions, Registry
from pumice.apiserver.store import Stored
from pumice.apiserver.strategy import RETURNS_DELETED_OBJECT
from pumice.apiserver.streaming import StreamProxy, check_log_options, kubelet_endpoint

__all__ = ["MAX_BODY_BYTES", "build_app"]

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 3 * 1024 * 1024

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+json": "apply",
}

_NS_SUBRESOURCES = frozenset({"status", "finalize"})

#: the annotation on the BOOKMARK that ends a watch's initial events (metav1.InitialEventsAnnotationKey)
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_PB_WATCH = pb.PROTOBUF + ";stream=watch"
#: the scale subresource's kind (its errors name it) and protobuf message (its Go struct)
_SCALE = SCALE
_SCALE_MESSAGE = "k8s.io.api.autoscaling.v1.Scale"


def _check_scale_name(md: Any, namespace: str | None, name: str) -> None:
    """The update handler's checkName for a Scale body (:func:`errors.check_name`): also a
    namespace when the body sets one, other than the URL's is 400 (apiserver
    pkg/endpoints/handlers/rest.go checkName), as the registry checks other updates."""
    errors.check_name(md.get("name"), name)
    bns = md.get("namespace") or ""
    if namespace and bns and bns != namespace:
        raise errors.bad_request(f"the namespace of the object ({bns}) does not match the namespace on the URL "
                                 f"({namespace})")


def _go_int64(query: dict[str, str], name: str) -> int | None:
    """An int64 query parameter as kube-apiserver's parameter codec reads it (strconv.ParseInt
    base 10): None when absent.

    Raises:
        StatusError: 400 with Go's error (``strconv.ParseInt: parsing "abc": invalid syntax``,
            ``... value out of range``); an empty value is invalid syntax too.
    """
    v = query.get(name)
    if v is None:
        return None
    try:
        return atoi(v, "ParseInt")
    except ValueError as e:
        raise errors.bad_request(str(e)) from None


def _list_options(query: dict[str, str], *, watch: bool) -> tuple[int, int | None]:
    """``(limit, timeoutSeconds)`` of a list, watch or delete-collection request, after the checks
    kube-apiserver makes on its ListOptions before anything is read or deleted: the parameter
    decoding (400, :func:`_go_int64`), then ValidateListOptions (422, :func:`_check_list_options`).

    Mirrors: apiserver pkg/endpoints/handlers get.go ListResource and delete.go DeleteCollection
    (DecodeParameters, then ValidateListOptions).
    """
    limit = _go_int64(query, "limit") or 0
    timeout = _go_int64(query, "timeoutSeconds")
    _check_list_options(query, watch=watch)
    return limit, timeout


def _check_list_options(query: dict[str, str], *, watch: bool) -> None:
    """ListOptions validation of the watch-list parameters.

    Raises:
        StatusError: 422 ListOptions.meta.k8s.io Invalid, with kube-apiserver's causes.

    Mirrors: k8s.io/apimachinery pkg/apis/meta/internalversion/validation ValidateListOptions.
    """
    causes: list[dict[str, str]] = []
    sie = query_bool(query, "sendInitialEvents")
    match = query.get("resourceVersionMatch", "")
    rv = query.get("resourceVersion", "")
    if match and match not in ("NotOlderThan", "Exact"):
        causes.append({"reason": "FieldValueNotSupported", "field": "resourceVersionMatch",
                       "message": f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan", ""'})
    if sie is not None:
        if not watch:
            causes.append({"reason": "FieldValueForbidden", "field": "sendInitialEvents",
                           "message": "Forbidden: sendInitialEvents is forbidden for list"})
        else:
            if match != "NotOlderThan":
                causes.append({"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                               "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch "
                                          "to NotOlderThan"})
            if not query_bool(query, "allowWatchBookmarks"):
                causes.append({"reason": "FieldValueForbidden", "field": "allowWatchBookmarks",
                               "message": "Forbidden: sendInitialEvents requires setting allowWatchBookmarks "
                                          "to true"})
    elif match and watch:
        causes.append({"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                       "message": "Forbidden: resourceVersionMatch is forbidden for watch unless "
                                  "sendInitialEvents is provided"})
    elif match and not rv:
        causes.append({"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                       "message": "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"})
    elif match == "Exact" and rv == "0":
        causes.append({"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                       "message": 'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'})
    if causes:
        message = "; ".join(f"{c['field']}: {c['message']}" for c in causes)
        if len(causes) > 1:
            message = "[" + ", ".join(f"{c['field']}: {c['message']}" for c in causes) + "]"
        raise StatusError(422, f'ListOptions.meta.k8s.io "" is invalid: {message}', "Invalid",
                          {"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes})


_JSON_TYPE = (b"content-type", b"application/json")


def _json(data: bytes, code: int = 200, headers: dict[str, str] | None = None) -> Response:
    if headers is None and code >= 200 and code not in (204, 304):
        # every answer to a request goes through here: the raw headers Starlette's init_headers
        # would make for a bytes body, without its per-response work
        r = Response.__new__(Response)
        r.status_code, r.media_type, r.background, r.body = code, "application/json", None, data
        r.raw_headers = [(b"content-length", str(len(data)).encode("latin-1")), _JSON_TYPE]
        return r
    return Response(content=data, status_code=code, media_type="application/json", headers=headers)


def _status(e: StatusError) -> Response:
    """A Status error body; kube-apiserver's JSON encoder ends it with a newline."""
    return _json(_encode(e.status()) + b"\n", e.code)


def _page_not_found() -> Response:
    """A path under ``/apis`` of a group no API serves: kube-apiserver's mux answers it with Go's
    http.NotFound (text, not a Status). Mirrors: net/http NotFound, k8s.io/apiserver
    pkg/server/mux (the NotFoundHandler behind every API group)."""
    return Response(content=b"404 page not found\n", status_code=404, media_type="text/plain; charset=utf-8",
                    headers={"X-Content-Type-Options": "nosniff"})


def _not_found_path() -> StatusError:
    return StatusError(404, "the server could not find the requested resource", "NotFound", {})


_HEADER_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _warnings(warnings: list[str]) -> dict[str, str] | None:
    """The ``Warning`` header for ``warnings`` (RFC 7234 ``299 - "text"``, comma-joined), or None.

    As kube-apiserver (apimachinery ``NewWarningHeader``): ``"`` and ``\\`` are escaped and the text
    goes out as UTF-8 bytes (a field name a client sent may be any Unicode). Control characters
    (newlines included), which Go's server turns into spaces or refuses, become spaces, so user
    text can never end the header. The value is handed to Starlette as the Latin-1 reading of
    those bytes, which it writes out unchanged.
    """
    if not warnings:
        return None
    quoted = ('299 - "' + _HEADER_CONTROL.sub(" ", w.replace("\\", "\\\\").replace('"', '\\"')) + '"'
              for w in warnings)
    return {"Warning": ", ".join(quoted).encode("utf-8", "replace").decode("latin-1")}


class _Target(NamedTuple):
    """What a resource path names: the kind, namespace (None: cluster scope or all namespaces),
    object name (None: the collection), subresource (``""``: the object itself) and query."""

    rk: ResourceKind
    namespace: str | None
    name: str | None
    sub: str
    query: dict[str, str]


Handler = Callable[[Request, _Target], Awaitable[Response]]


class _Headers(Headers):
    """Starlette's request Headers with dict lookups: the first value of each name, as
    Starlette's own scan returns it, indexed and decoded once per request (its ``get`` walks the
    list and raises and catches a KeyError for each absent name, several times per request)."""

    def __init__(self, scope: Any) -> None:
        super().__init__(scope=scope)
        # built from the end, so the first value of a repeated name is the one kept; latin-1
        # maps bytes to str one to one, so the decoded name finds what Starlette's comparison
        # of the encoded one finds
        self._first: dict[str, str] = {k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(self._list)}

    def __getitem__(self, key: str) -> str:
        v = self._first.get(key.lower())
        if v is None:
            raise KeyError(key)
        return v

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        v = self._first.get(key.lower())
        return default if v is None else v

    def __contains__(self, key: Any) -> bool:
        return key.lower() in self._first


class _Request(Request):
    """A Starlette Request whose ``headers`` are :class:`_Headers`, made with the request (every
    request reads them: Starlette's ``headers`` property returns the one set here), and whose
    ``method`` is a plain attribute (Starlette's property reads the scope through ``typing.cast``
    at each of the several reads of a request)."""

    method: str = ""  # type: ignore[assignment]  # shadows Starlette's property; set per request

    def __init__(self, scope: Any, *args: Any) -> None:
        super().__init__(scope, *args)
        self._headers = _Headers(scope)
        self.method = scope["method"]


class _Api:
    """The request handler: a dispatch table from the first path segment (``version``,
    ``healthz``, ``openapi``, ``api``, ``apis``), then from the verb and subresource."""

    def __init__(self, registry: Registry, *, token: str | None, clock: Clock, bookmark_interval: float | None,
                 log_client_factory: Any = None, access: Access | None = None,
                 request_metrics: bool = True) -> None:
        self.access = access
        #: count each resource request in kube-apiserver's request metrics (False: a server
        #: whose metrics nobody can read, as a simulation's; see :meth:`handle`)
        self.request_metrics = request_metrics
        self.registry = registry
        self.scheme = registry.scheme
        self.token = token
        self.clock = clock
        self.bookmark_interval = bookmark_interval
        self.log_client_factory = log_client_factory
        self.ready = True
        self._openapi_docs: dict[tuple[Any, ...], Any] = {}
        self._openapi_signature: Any = None
        self._pb_cache: dict[tuple[int, str], tuple[Stored, bytes]] = {}
        self._roots: dict[str, Callable[[Request, list[str]], Awaitable[Response]]] = {
            "version": self._version, "healthz": self._health, "livez": self._health, "readyz": self._health,
            "metrics": self._metrics_endpoint,
            "openapi": self._openapi_root, "api": self._api, "apis": self._api,
        }
        self._collection_handlers: dict[str, Handler] = {
            "GET": self._get_collection, "POST": self._post_collection, "DELETE": self._delete_collection_h,
        }
        self._object_handlers: dict[tuple[str, str], Handler] = {
            ("GET", ""): self._get, ("GET", "status"): self._get, ("GET", "log"): self._get_log,
            ("GET", "scale"): self._get_scale, ("GET", "ephemeralcontainers"): self._get,
            ("PUT", "ephemeralcontainers"): self._put, ("PATCH", "ephemeralcontainers"): self._patch,
            ("PUT", ""): self._put, ("PUT", "status"): self._put, ("PUT", "finalize"): self._put,
            ("PUT", "scale"): self._put_scale_h,
            ("PATCH", ""): self._patch, ("PATCH", "status"): self._patch,
            ("PATCH", "scale"): self._patch_scale_h,
            ("DELETE", ""): self._delete,
            ("POST", "binding"): self._post_subresource, ("POST", "eviction"): self._post_subresource,
            ("POST", "token"): self._post_subresource,
            ("GET", "exec"): self._stream_without_websocket, ("POST", "exec"): self._stream_without_websocket,
            ("GET", "attach"): self._stream_without_websocket, ("POST", "attach"): self._stream_without_websocket,
            ("GET", "portforward"): self._stream_without_websocket,
            ("POST", "portforward"): self._stream_without_websocket,
        }
        self.streams = StreamProxy(registry, access)
        self.proxy = ProxyAPI(registry)
        self.metrics = MetricsAPI(registry, log_client_factory)
        #: the parts ``componentstatuses`` reports (the storage's check is added by the APIServer)
        self.components = ComponentStatuses()
        self._health_checks: dict[str, healthz.Check] = {
            "etcd": self._storage_check, "etcd-readiness": self._storage_check, "shutdown": self._shutdown_check}

    # ------------------------------------------------------------------ entry

    async def handle(self, request: Request) -> Response:
        """Answer one HTTP request (every failure as a Status); a resource request (and a health
        check) is counted in kube-apiserver's request metrics (pumice.apiserver.requestmetrics),
        unless the server was built without them (``request_metrics=False``)."""
        token = LITERAL_TEXTS.set(None)
        try:
            if not self.request_metrics:
                return await self._serve(request)
            t0 = self.clock.monotonic()
            response = await self._serve(request)
        finally:
            LITERAL_TEXTS.reset(token)
        labels = request.scope.get("pumice.metric")
        if labels is not None:
            requestmetrics.record(labels, response.status_code, self.clock.monotonic() - t0)
        return response

    async def _serve(self, request: Request) -> Response:
        scope = request.scope
        path: str = scope["path"]
        # parsed once per request (Starlette's query_params would parse it again): the first value
        # of a repeated name counts, as in kube-apiserver's parameter codec. The in-process
        # transport hands over the dict it encoded (DirectASGI.request's params) instead.
        query = scope.get("pumice.query")
        if query is None:
            query = scope["pumice.query"] = query_values(scope.get("query_string", b"").decode("latin-1"))
        # dryRun is a list option: every value is checked (the dict above keeps the first)
        raw_query: bytes = scope.get("query_string", b"")
        scope["pumice.dry_run"] = query_list(raw_query.decode("latin-1"), "dryRun") if b"dryRun" in raw_query \
            else None
        try:
            check_request_timeout(request.method, path, query)  # the deadline filter runs before authentication
            if self.access is not None:
                user = self.access.authenticate(scope, request.headers.get("authorization", ""))
                user = self.access.impersonate(user, scope.get("headers") or [])
                self.access.authorize(user, request.method, path, query)
                scope["pumice.user"] = user
            elif self.token is not None and path not in PUBLIC_PATHS and \
                    not scope.get("extensions", {}).get("pumice.in_process"):
                auth = request.headers.get("authorization", "")
                if not (auth.startswith("Bearer ") and hmac.compare_digest(auth[7:].strip(), self.token)):
                    return _json(_encode(StatusError(401, "Unauthorized", "Unauthorized").status()), 401)
        except StatusError as e:
            return _status(e)
        try:
            raw = (scope.get("raw_path") or path.encode()).decode("latin-1")
            # every proxy path has a "proxy" segment: others skip the parse
            proxied = parse_proxy_path(raw) if "/proxy" in raw else None
            if proxied is not None:  # before the query checks: the query string is the target's
                return await self.proxy.serve(request, *proxied)
            check_query(request.method, query,
                        PATCH_TYPES.get(request.headers.get("content-type", "").split(";")[0].strip().lower()),
                        scope["pumice.dry_run"])
            return await self._route(request, path)
        except StatusError as e:
            return _status(e)
        except ClientDisconnect:
            return Response(status_code=499)
        except Exception as e:  # a server bug must still answer with a Status
            log.exception("internal error on %s %s", request.method, path)
            return _status(StatusError(500, f"Internal error occurred: {type(e).__name__}: {e}", "InternalError"))

    async def _route(self, request: Request, path: str) -> Response:
        parts = [p for p in path.split("/") if p]
        if not parts:
            return _json(_encode({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/metrics", "/openapi/v2",
                                            "/openapi/v3", "/readyz", "/version"]}))
        handler = self._roots.get(parts[0])
        if handler is None:
            raise _not_found_path()
        return await handler(request, parts)

    async def _version(self, request: Request, parts: list[str]) -> Response:
        """``/version``: GET only (another method is 405, as go-restful answers; found by the
        OpenAPI route walk once ``/version/`` was documented)."""
        if request.method != "GET":
            raise errors.method_not_allowed()
        return _json(_encode(discovery.VERSION_INFO))

    async def _health(self, request: Request, parts: list[str]) -> Response:
        """``/healthz``, ``/livez``, ``/readyz`` and their named checks (``/readyz/etcd``...), as
        :mod:`pumice.apiserver.healthz` answers them; another name is 404 (the mux has no
        handler for it)."""
        root = parts[0]
        if len(parts) > 2 or (len(parts) == 2 and parts[1] not in healthz.CHECKS[root]):
            raise _not_found_path()
        if len(parts) == 1:  # upstream instruments the roots alone
            request.scope["pumice.metric"] = ("GET", "", "", "", "", "/" + root, "", "")
        raw = request.scope.get("query_string", b"")
        excluded = (query_list(raw.decode("latin-1"), "exclude") or []) if b"exclude" in raw else []
        return await healthz.answer(root, parts[1] if len(parts) == 2 else None, request.scope["pumice.query"],
                                    excluded, self._health_checks)

    async def _storage_check(self) -> str | None:
        """The etcd checks: the storage's failure (a commit or fsync error), None while it works."""
        probe = await self.components.probe("storage")
        return None if probe is None or probe.healthy else probe.message or probe.error

    async def _shutdown_check(self) -> str | None:
        return None if self.ready else "process is shutting down"

    async def _metrics_endpoint(self, request: Request, parts: list[str]) -> Response:
        """``/metrics``: every metric of prometheus_client's default registry in the Prometheus
        text format (kube-apiserver's request metrics, pumice.apiserver.requestmetrics, and, in
        ``pumice up``, the controllers'), without ``_created`` series (client_golang writes none);
        GET only. Authorized as any path: system:masters and
        the ``system:monitoring`` group (its ClusterRole grants ``get`` on ``/metrics``).

        Mirrors: k8s.io/apiserver pkg/server/routes/metrics.go (DefaultMetrics)."""
        if len(parts) > 1:
            raise _not_found_path()
        if request.method != "GET":
            raise errors.method_not_allowed()
        return Response(exposition(), media_type=EXPOSITION_CONTENT_TYPE)

    async def _openapi_root(self, request: Request, parts: list[str]) -> Response:
        return self._openapi(request, parts)

    async def _api(self, request: Request, parts: list[str]) -> Response:
        """``/api/...`` and ``/apis/...``: discovery documents (GET only: 405 otherwise, as
        go-restful answers a route's other methods), or a resource request."""
        if len(parts) <= (2 if parts[0] == "api" else 3) and request.method != "GET":
            raise errors.method_not_allowed()
        if parts[0] == "api":
            if len(parts) == 1:
                return self._discovery_root(request, legacy=True)
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return self._discovery_root(request, legacy=False)
            if not self.scheme.serves_group(parts[1]):
                return _page_not_found()
            if len(parts) == 2:
                doc = discovery.api_group(self.scheme, parts[1])
                if doc is None:
                    raise _not_found_path()
                return _json(_encode(doc))
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            doc = discovery.api_resource_list(self.scheme, group, version)
            if doc is None:
                raise _not_found_path()
            return _json(_encode(doc))
        if group == "metrics.k8s.io" and version == "v1beta1":
            if request.method != "GET":
                raise errors.method_not_allowed()
            labels, _ = self._selectors(dict(request.query_params))
            return _json(_encode(await self.metrics.serve(rest, labels)))
        if rest[0] == "watch":
            return self._deprecated_watch(request, group, version, rest[1:])
        t = self._target(request, group, version, rest)
        if self.request_metrics:
            request.scope["pumice.metric"] = requestmetrics.request_labels(
                request.method, group, version, t.rk.plural, t.sub, t.name is not None,
                t.namespace is not None and t.rk.namespaced, t.query, request.scope["pumice.dry_run"],
                request.headers.get("content-type", "").split(";")[0].strip().lower() if request.method == "PATCH"
                else "")
        self._check_accept(request, t.rk, t)
        if t.rk is COMPONENT_STATUS:
            return await self._component_statuses(request, t)
        method = request.method
        if t.name is None:
            collection = self._collection_handlers.get(method)
            # kube-apiserver serves only list and watch on a namespaced resource's all-namespaces
            # path (trial 11 F-9: a DELETE there deleted every namespace's objects)
            if collection is None or (method != "GET" and t.rk.namespaced and t.namespace is None):
                raise errors.method_not_allowed()
            return await collection(request, t)
        if t.rk.namespaced and t.namespace is None:
            raise _not_found_path()
        handler = self._object_handlers.get((method, t.sub))
        if handler is None:
            raise errors.method_not_allowed()
        return await handler(request, t)

    async def _component_statuses(self, request: Request, t: _Target) -> Response:
        """``componentstatuses``: list and get of the health of pumice's parts (computed now, see
        :mod:`pumice.apiserver.componentstatus`), as JSON, protobuf or a Table; a watch is 405,
        another method too. Every answer, errors included, carries the deprecation Warning.

        Mirrors: kubernetes pkg/registry/core/componentstatus/rest.go (List filters by labels and
        metadata fields; there are no labels, so any label requirement leaves nothing)."""
        warning = _warnings([DEPRECATION_WARNING]) or {}
        try:
            response = await self._component_statuses_answer(request, t)
        except StatusError as e:
            response = _status(e)
        response.headers.update(warning)
        return response

    async def _component_statuses_answer(self, request: Request, t: _Target) -> Response:
        if request.method != "GET" or t.sub:
            raise errors.method_not_allowed()
        if t.name is not None:
            objs = [await self.components.get(t.name)]
        else:
            if query_bool(t.query, "watch"):
                raise StatusError(405, f'watch is not supported on resources of kind "{t.rk.plural}"',
                                  "MethodNotAllowed", {"kind": t.rk.plural})
            labels, fields = self._selectors(t.query)
            objs = [o for o in await self.components.statuses()
                    if labels.matches((o.get("metadata") or {}).get("labels") or {}) and fields.matches(o)]
        items = [Stored(o, _encode(o), 0) for o in objs]
        if _wants_table(request):
            return _json(_encode(self._table(t.rk, items, _include_object(request))))
        if t.name is not None:
            return self._object(request, t.rk, items[0])
        if self._protobuf(request, t.rk):
            return self._pb_list(t.rk, items, {})
        # the items without kind and apiVersion, as kube-apiserver writes a list's items
        bare = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in objs]
        return _json(_encode({"kind": t.rk.list_kind, "apiVersion": t.rk.api_version, "metadata": {}, "items": bare}))

    def _deprecated_watch(self, request: Request, group: str, version: str, rest: list[str]) -> Response:
        """``/api/v1/watch/<path>`` and ``/apis/<g>/<v>/watch/<path>``: the deprecated watch paths
        kube-apiserver still serves (GET only), a watch of the collection ``<path>`` names, or of
        the one object it names (its name as a ``metadata.name`` field selector; a
        ``fieldSelector`` naming another object is 400).

        Mirrors: apiserver pkg/endpoints/installer.go (WATCH and WATCHLIST actions),
        handlers/get.go ListResource (forceWatch, the name check)."""
        if not rest:
            raise _not_found_path()
        t = self._target(request, group, version, rest)
        if t.sub or "watch" not in t.rk.verbs or (t.name is not None and t.rk.namespaced and t.namespace is None):
            raise _not_found_path()
        if request.method != "GET":
            raise errors.method_not_allowed()
        if self.request_metrics:
            request.scope["pumice.metric"] = requestmetrics.request_labels(
                "GET", group, version, t.rk.plural, "", t.name is not None, t.namespace is not None,
                {"watch": "true"}, None, "")
        self._check_accept(request, t.rk)
        query = dict(t.query)
        query["watch"] = "true"
        if t.name is not None:
            if query.get("fieldSelector"):
                try:
                    named = parse_field_selector(query["fieldSelector"]).exact("metadata.name")
                except SelectorError:
                    named = None  # the watch answers the parse error itself
                else:
                    if named != t.name:
                        raise errors.bad_request("fieldSelector metadata.name doesn't match requested name")
            else:
                query["fieldSelector"] = f"metadata.name={t.name}"
        return self._watch(request, t.rk, t.namespace, query)

    def _check_accept(self, request: Request, rk: ResourceKind, t: _Target | None = None) -> None:
        """406 before anything is done when ``Accept`` names no media type the server writes for
        ``rk``: JSON, YAML, protobuf for a built-in kind (CBOR is not served: 1.32 without the
        CBOR feature gate), or a wildcard.

        Mirrors: apimachinery pkg/runtime/serializer negotiation NegotiateOutputMediaType
        (NewNotAcceptableError)."""
        accept = request.headers.get("accept", "")
        if not accept or "application/json" in accept or "*/*" in accept or "application/yaml" in accept \
                or "application/*" in accept:
            return
        accept = accept.lower()  # media types are case-insensitive (RFC 9110)
        if "application/json" in accept or "application/yaml" in accept or "application/*" in accept:
            return
        supported = self.registry.custom(rk) is None and pb.message_for(rk.api_version, rk.kind) is not None
        for part in accept.split(","):
            if supported and part.split(";")[0].strip().lower() == pb.PROTOBUF:
                return
        if self.registry.custom(rk) is None:
            # a built-in kind's route refuses it in go-restful, before any handler, listing what
            # the route produces (a list also streams; pods/log also writes text)
            produces = ["application/json", "application/yaml", pb.PROTOBUF]
            if t is not None and t.sub == "log":
                produces.insert(0, "text/plain")
            if t is not None and t.name is None and request.method == "GET":
                produces += ["application/json;stream=watch", f"{pb.PROTOBUF};stream=watch"]
            raise StatusError(406, "406: Not Acceptable\n\nAvailable representations: " + ", ".join(produces),
                              "NotAcceptable")
        raise StatusError(406, f"only the following media types are accepted: application/json, application/yaml"
                          f"{', ' + pb.PROTOBUF if supported else ''}", "NotAcceptable")

    def _target(self, request: Request, group: str, version: str, rest: list[str]) -> _Target:
        """The kind, namespace, name and subresource a resource path names (404 when none)."""
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in _NS_SUBRESOURCES):
            namespace = rest[1]
            rest = rest[2:]
        if len(rest) > 3:
            raise _not_found_path()
        rk = self.scheme.by_plural(group, version, rest[0])
        if rk is None or (namespace is not None and not rk.namespaced):
            raise _not_found_path()
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in rk.subresources:
            if self.registry.custom(rk) is not None:
                # the CRD handler answers a subresource it does not serve NotFound naming the object
                raise errors.not_found(rk, rest[1])
            raise _not_found_path()
        query = request.scope.get("pumice.query")
        if query is None:
            query = query_values(request.scope.get("query_string", b"").decode("latin-1"))
        return _Target(rk, namespace, rest[1] if len(rest) > 1 else None, sub, query)

    def register_subresource(self, method: str, sub: str, handler: Handler) -> None:
        """Serve ``<method> .../<kind>/<name>/<sub>`` with ``handler(request, target)`` (for
        every kind that lists ``sub`` among its subresources)."""
        self._object_handlers[(method, sub)] = handler

    # ------------------------------------------------------------------ collection and object verbs

    async def _get_collection(self, request: Request, t: _Target) -> Response:
        if "list" not in t.rk.verbs:  # a create-only kind (bindings, the reviews): no GET handler upstream
            raise errors.method_not_allowed()
        if query_bool(t.query, "watch"):
            return self._watch(request, t.rk, t.namespace, t.query)
        return self._list(request, t.rk, t.namespace, t.query)

    async def _post_collection(self, request: Request, t: _Target) -> Response:
        if t.rk is BINDING and t.namespace is not None:
            return await self._post_binding(request, t)
        return await self._create(request, t.rk, t.namespace, t.query)

    async def _post_binding(self, request: Request, t: _Target) -> Response:
        """POST namespaces/<ns>/bindings: bind the Pod the Binding names (its metadata.name), as
        POST pods/<name>/binding does (:meth:`Registry.bind`); 201 with a Success Status.

        Mirrors: kubernetes pkg/registry/core/pod/storage/storage.go LegacyBindingREST.Create."""
        assert t.namespace is not None
        body = await self._body(request, t.rk)
        md = body.get("metadata") if isinstance(body, dict) else None
        name = md.get("name") if isinstance(md, dict) else None
        await self.registry.bind(t.namespace, name if isinstance(name, str) else "", body, dry_run=_dry_run(t.query))
        return _json(_encode(errors.status_success(201)), 201)

    async def _delete_collection_h(self, request: Request, t: _Target) -> Response:
        return await self._delete_collection(request, t.rk, t.namespace, t.query)

    async def _get(self, request: Request, t: _Target) -> Response:
        assert t.name is not None
        check_resource_version(t.query, self.registry.store.revision, listing=False)
        s = self.registry.get(t.rk, t.namespace, t.name)
        if _wants_table(request):
            table = self._table(t.rk, [s], _include_object(request))
            table["metadata"]["resourceVersion"] = str(s.rv)  # the object's, as the table generators set it
            return _json(_encode(table))
        return self._object(request, t.rk, s)

    async def _get_log(self, request: Request, t: _Target) -> Response:
        assert t.name is not None
        return await self._log(t.rk, t.namespace or "", t.name, t.query)

    async def _get_scale(self, request: Request, t: _Target) -> Response:
        assert t.name is not None
        return _json(_encode(self._scale(t.rk, self.registry.get(t.rk, t.namespace, t.name))))

    async def _put(self, request: Request, t: _Target) -> Response:
        assert t.name is not None
        dups: list[str] = []
        body = await self._body(request, t.rk, t.query, dups)
        s, warnings = await self.registry.update(t.rk, t.namespace, t.name, body, sub=t.sub,
                                                 dry_run=_dry_run(t.query),
                                                 field_validation=t.query.get("fieldValidation", ""),
                                                 field_manager=_manager(request, t.query))
        return self._object(request, t.rk, s, 200, _warnings(dups + warnings))

    async def _put_scale_h(self, request: Request, t: _Target) -> Response:
        assert t.name is not None
        body = await self._body(request)
        return await self._put_scale(t.rk, t.namespace, t.name, body, _dry_run(t.query), _manager(request, t.query))

    async def _patch_body(self, request: Request, t: _Target | None = None,
                          dups: list[str] | None = None, *, custom: bool = False) -> tuple[str, Any]:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        ptype = PATCH_TYPES.get(ctype)
        if ptype is None:
            raise errors.unsupported_media_type(custom=custom)
        raw = await self._raw_body(request)
        checked = ptype in ("json", "merge") and t is not None and t.query.get("fieldValidation", "") != "Ignore"
        try:
            patch = _parse_body(raw, yaml_ok=ptype == "apply")
        except StatusError:
            why = gojson.syntax_error(raw) if checked and raw.strip() else None
            if why is not None:
                raise errors.bad_request(f"error decoding patch: {why}") from None
            raise
        if checked:
            why = _patch_type_error(ptype, patch)
            if why is not None:
                raise errors.bad_request(f"error decoding patch: {why}")
        if t is not None and dups is not None and ptype != "json":
            dups.extend(_duplicates(request, raw, t.rk, t.query))
        return ptype, patch

    async def _patch(self, request: Request, t: _Target) -> Response:
        assert t.name is not None
        dups: list[str] = []
        ptype, patch = await self._patch_body(request, t, dups, custom=self.registry.custom(t.rk) is not None)
        q = t.query
        s, created, warnings = await self.registry.patch(
            t.rk, t.namespace, t.name, ptype, patch, sub=t.sub, dry_run=_dry_run(q),
            field_validation=q.get("fieldValidation", ""), field_manager=_manager(request, q),
            force=bool(query_bool(q, "force")))
        return self._object(request, t.rk, s, 201 if created else 200, _warnings(dups + warnings))

    async def _patch_scale_h(self, request: Request, t: _Target) -> Response:
        assert t.name is not None
        ptype, patch = await self._patch_body(request, custom=self.registry.custom(t.rk) is not None)
        return await self._patch_scale(t.rk, t.namespace, t.name, ptype, patch, _dry_run(t.query),
                                       _manager(request, t.query))

    async def _delete(self, request: Request, t: _Target) -> Response:
        assert t.name is not None
        body = await self._delete_options_body(request)
        opts = DeleteOptions.parse(DeleteOptions.decode(body), t.query, request.scope.get("pumice.dry_run"))
        s, removed = await self.registry.delete(t.rk, t.namespace, t.name, opts)
        # 202 only where the object stays and the deprecated orphanDependents asked for a
        # cascade (handlers/delete.go keeps 200 for every other delete, for old clients)
        code = 202 if not removed and opts.orphan_dependents is False else 200
        if removed and (t.rk.group, t.rk.plural) not in RETURNS_DELETED_OBJECT:
            status = errors.deleted_status(t.rk, s.obj)
            if self._protobuf(request, t.rk):
                return Response(content=pb.encode_object(status), status_code=code, media_type=pb.PROTOBUF)
            return _json(_encode(status), code)
        return self._object(request, t.rk, s, code)

    async def _stream_without_websocket(self, request: Request, t: _Target) -> Response:
        """exec/attach asked without a WebSocket upgrade (plain HTTP, or kubectl's SPDY fallback):
        the usual checks, then 400 (pumice streams over WebSocket only)."""
        self.streams.check(request.scope, request.method)
        raise errors.bad_request("Upgrade request required: pumice serves exec and attach over WebSocket "
                                 "(v5.channel.k8s.io, v4.channel.k8s.io); SPDY is not supported")

    async def _post_subresource(self, request: Request, t: _Target) -> Response:
        """POST to a subresource the kind's strategy serves (Pod ``binding``, ``eviction``)."""
        assert t.name is not None
        dry_run = _dry_run(t.query)
        if self.access is not None and t.rk.group == "" and t.rk.plural == "serviceaccounts" and t.sub == "token":
            out = self.access.special_post(request.scope.get("pumice.user"), t.rk.group, t.rk.plural, t.namespace,
                                           t.name, t.sub, await self._body(request), dry_run)
            if out is not None:
                return _json(_encode(out), 201)
        handler = self.registry.strategy(t.rk).post_subresources.get(t.sub)
        if handler is None:
            raise errors.method_not_allowed()
        body = await self._body(request, t.rk)
        await handler(self.registry, t.namespace or "", t.name, body, dry_run)
        return _json(_encode(errors.status_success(201)), 201)

    # ------------------------------------------------------------------ bodies

    async def _raw_body(self, request: Request) -> bytes:
        given = request.scope.get("pumice.body")  # the in-process transport's whole body
        if given is not None:
            if len(given) > MAX_BODY_BYTES:
                raise StatusError(413, f"Request entity too large: limit is {MAX_BODY_BYTES}", "RequestEntityTooLarge")
            return given  # type: ignore[no-any-return]
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
            raise StatusError(413, f"Request entity too large: limit is {MAX_BODY_BYTES}", "RequestEntityTooLarge")
        chunks: list[bytes] = []
        size = 0
        receive = request.receive
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise StatusError(413, f"Request entity too large: limit is {MAX_BODY_BYTES}",
                                      "RequestEntityTooLarge")
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _body(self, request: Request, rk: ResourceKind | None = None, query: Mapping[str, str] | None = None,
                    dups: list[str] | None = None) -> Any:
        """The decoded request body: JSON, YAML, or protobuf (built-in kinds only; 415 for custom
        resources, as kube-apiserver has no protobuf form for them). With ``dups`` (and ``rk``,
        ``query``), the body's duplicate fields are checked as :func:`_duplicates` says and their
        warnings appended to ``dups``."""
        ctype = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if ctype not in ("application/json", "application/yaml", pb.PROTOBUF, "", "*/*"):
            raise StatusError(415, f'the body of the request was in an unknown format - accepted media types '
                              f'include: application/json, application/yaml, {pb.PROTOBUF}', "UnsupportedMediaType")
        if ctype == pb.PROTOBUF and rk is not None and self.registry.custom(rk) is not None:
            raise StatusError(415, "the body of the request was in an unknown format - accepted media types "
                              "include: application/json, application/yaml", "UnsupportedMediaType")
        raw = await self._raw_body(request)
        if ctype == pb.PROTOBUF:
            return _parse_protobuf(raw)
        # a built-in kind's Quantity written as a JSON float is read from its literal (1e3 stays
        # "1e3", as Go's Quantity.UnmarshalJSON parses the bytes); a custom resource's numbers are
        # plain floats, as in Go's unstructured decoding
        literals: list[FloatLiteral] | None = \
            [] if rk is not None and self.registry.custom(rk) is None and ctype != "application/yaml" else None
        try:
            body = _parse_body(raw, yaml_ok=ctype == "application/yaml", literals=literals)
        except StatusError:
            if dups is not None and rk is not None and ctype != "application/yaml" and raw.strip():
                # a create or update: the JSON serializer's Interpret fails first, in Go's words
                why = gojson.syntax_error(raw)
                if why is not None:
                    raise errors.bad_request(
                        f"the object provided is unrecognized (must be of type {rk.kind}): couldn't get "
                        f"version/kind; json parse error: {why} ({gojson.summarize(raw)})") from None
            raise
        if literals:
            if rk is not None and isinstance(body, dict):
                pb.drop_zero_values(body, keys=(), quantity_keys=tuple(body), kind=(rk.api_version, rk.kind))
            texts: dict[int, tuple[float, str]] = {}
            body = plain_floats(body, texts)
            LITERAL_TEXTS.set(texts)  # for this request (handle resets it): decode errors quote the literal
        if dups is not None:
            dups.extend(_duplicates(request, raw, rk, query or {}))
        return body

    async def _delete_options_body(self, request: Request) -> Any:
        """A DELETE body (DeleteOptions as JSON or protobuf), or None when empty."""
        raw = await self._raw_body(request)
        if not raw.strip():
            return None
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == pb.PROTOBUF:
            return _parse_protobuf(raw)
        return _parse_body(raw, yaml_ok=False)

    # ------------------------------------------------------------------ content negotiation

    def _protobuf(self, request: Request, rk: ResourceKind) -> bool:
        """True when ``Accept`` prefers protobuf and ``rk`` has a protobuf form.

        Raises:
            StatusError: 406 when only protobuf is acceptable and ``rk`` is a custom resource.
        """
        accept = request.headers.get("accept", "")
        if pb.PROTOBUF not in accept:
            return False
        supported = self.registry.custom(rk) is None and pb.message_for(rk.api_version, rk.kind) is not None
        for part in accept.split(","):
            media = part.split(";")[0].strip().lower()
            if media == pb.PROTOBUF:
                if supported and "as=" not in part:
                    return True
            elif media in ("application/json", "*/*", "application/*", "application/yaml"):
                return False
        raise StatusError(406, f"only the following media types are accepted: application/json, application/yaml"
                          f"{', ' + pb.PROTOBUF if supported else ''}", "NotAcceptable")

    def _message_bytes(self, rk: ResourceKind, s: Stored) -> bytes:
        """The protobuf message (no envelope) of a stored built-in object, cached by revision."""
        key = (s.rv, rk.api_version)
        cached = self._pb_cache.get(key)
        if cached is not None and cached[0] is s:
            return cached[1]
        try:
            data = pb.encode(self._pb_message(rk), s.obj)
        except pb.ProtobufError as e:
            data = self._repaired_message(rk, s, e)
        if len(self._pb_cache) >= 65536:
            self._pb_cache.clear()
        self._pb_cache[key] = (s, data)
        return data

    def _repaired_message(self, rk: ResourceKind, s: Stored, error: pb.ProtobufError) -> bytes:
        """The protobuf message of a stored object a plain encoding failed on: a ``[]byte`` field
        that is not base64 (stored by a pumice older than the check on write, see
        :func:`pumice.api.fields.bytes_error`) is encoded as the bytes of its text, and a
        warning names the object and the fields, so a protobuf GET, LIST or WATCH (every
        client-go informer) still gets the object and the collection, never a 500. Logged once
        per object version (the result is cached with it).

        Raises:
            StatusError: 500 InternalError when the object cannot be encoded even so (a stored
                value of the wrong type: refused on write, so a server fault).
        """
        md = s.obj.get("metadata") or {}
        ns = md.get("namespace")
        where = f"{rk.kind} {ns + '/' if ns else ''}{md.get('name')}"
        obj = deep_copy(s.obj)
        fixed = repair_bytes(rk, obj)
        try:
            data = pb.encode(self._pb_message(rk), obj)
        except pb.ProtobufError as e:
            log.error("protobuf encoding of %s (resourceVersion %s) failed: %s", where, s.rv, e)
            raise StatusError(500, f"Internal error occurred: {where} cannot be encoded as protobuf: {e}",
                              "InternalError") from None
        log.warning("protobuf encoding of %s (resourceVersion %s): %s; encoded as the bytes of the text (the "
                    "object was stored before pumice checked []byte fields; write it again to fix it)",
                    where, s.rv, "; ".join(f"{path}: {why}" for path, why in fixed) or error)
        return data

    def _pb_message(self, rk: ResourceKind) -> str:
        name = pb.message_for(rk.api_version, rk.kind)
        assert name is not None
        return name

    def _pb_object(self, rk: ResourceKind, s: Stored) -> bytes:
        return pb.envelope(rk.api_version, rk.kind, self._message_bytes(rk, s))

    def _object(self, request: Request, rk: ResourceKind, s: Stored, code: int = 200,
                headers: dict[str, str] | None = None) -> Response:
        """One object as the client asked for it (protobuf or JSON)."""
        if self._protobuf(request, rk):
            return Response(content=self._pb_object(rk, s), status_code=code, media_type=pb.PROTOBUF,
                            headers=headers)
        return _json(self.registry.output(rk, s), code, headers)

    def _pb_list(self, rk: ResourceKind, items: list[Stored], meta: dict[str, Any]) -> Response:
        list_msg = pb.message_for(rk.api_version, rk.list_kind)
        assert list_msg is not None
        body = pb.list_message(list_msg, meta, [self._message_bytes(rk, s) for s in items])
        return Response(content=pb.envelope(rk.api_version, rk.list_kind, body), media_type=pb.PROTOBUF)

    # ------------------------------------------------------------------ reads

    def _selectors(self, query: dict[str, str]) -> tuple[Any, Any]:
        try:
            return parse_label_selector(query.get("labelSelector")), parse_field_selector(query.get("fieldSelector"))
        except SelectorError as e:
            raise errors.bad_request(str(e)) from None

    def _list(self, request: Request, rk: ResourceKind, namespace: str | None, query: dict[str, str]) -> Response:
        limit, _ = _list_options(query, watch=False)
        want = check_resource_version(query, self.registry.store.revision, listing=True)
        if query.get("resourceVersionMatch") == "Exact":
            self._check_exact_revision(want)
        labels, fields = self._selectors(query)
        items, rv, token, remaining = self.registry.list(rk, namespace, labels=labels, fields=fields,
                                                         limit=max(0, limit), continue_=query.get("continue", ""))
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if token:
            meta["continue"] = token
            # the storage counts what is left only when nothing is filtered out (etcd3 GetList:
            # pred.Empty()); with a selector the count is unknown and omitted
            if not query.get("labelSelector") and not query.get("fieldSelector"):
                meta["remainingItemCount"] = remaining
        if _wants_table(request):
            table = self._table(rk, items, _include_object(request))
            table["metadata"] = meta  # the list's metadata, as the table generators copy it
            return _json(_encode(table))
        if self._protobuf(request, rk):
            return self._pb_list(rk, items, meta)
        head = (b'{"kind":"' + rk.list_kind.encode() + b'","apiVersion":"' + rk.api_version.encode()
                + b'","metadata":' + _encode(meta) + b',"items":')
        body = self.registry.list_json(rk, head, items)
        return _json(body)

    def _check_exact_revision(self, want: int) -> None:
        """``resourceVersionMatch=Exact``: the list must be the collection at that revision. The
        store keeps only the current state, so only the current revision can be served.

        Raises:
            StatusError: 410 Expired ``The resourceVersion for the provided list is too old.`` for
                an older revision (as kube-apiserver for a compacted one: etcd3 interpretListError),
                504 (:func:`errors.too_large_resource_version`) for a later one.

        Deviates: kube-apiserver serves any revision etcd has not compacted yet (5 minutes of
        history by default); pumice has compacted all but the current one.
        """
        current = self.registry.store.revision
        if want == 0 or want == current:
            return
        if want > current:
            raise errors.too_large_resource_version(want, current)
        raise errors.expired("The resourceVersion for the provided list is too old.")

    def _table(self, rk: ResourceKind, items: list[Stored], include_object: str = "Metadata") -> dict[str, Any]:
        """Table rows carry PartialObjectMetadata, the whole object for ``includeObject=Object``
        (kubectl's ``--sort-by`` asks for it), or nothing for ``None``."""
        cr = self.registry.custom(rk)
        columns = None
        if cr is not None:
            v = cr.versions.get(rk.version)
            columns = v.printer_columns if v is not None else None
        objs = [s.obj if s.obj.get("apiVersion") == rk.api_version else
                {**s.obj, "apiVersion": rk.api_version} for s in items]
        table = render_table(rk, objs, self.clock.now(), columns)
        if include_object == "Object":
            for row, obj in zip(table["rows"], objs, strict=True):
                row["object"] = obj
        elif include_object == "None":
            for row in table["rows"]:
                row.pop("object", None)
        return table

    def _scale(self, rk: ResourceKind, s: Stored) -> dict[str, Any]:
        obj = s.obj
        cr = self.registry.custom(rk)
        from pumice.api.selectors import field_value

        if cr is not None:
            v = cr.versions.get(rk.version)
            paths = (v.scale if v is not None else None) or {}
            spec_path = str(paths.get("specReplicasPath", ".spec.replicas")).lstrip(".")
            status_path = str(paths.get("statusReplicasPath", ".status.replicas")).lstrip(".")
            sel_path = str(paths.get("labelSelectorPath", "")).lstrip(".")
            spec_r = field_value(obj, spec_path)
            status_r = field_value(obj, status_path)
            selector = field_value(obj, sel_path) if sel_path else ""
        else:
            spec_r = str(obj.get("spec", {}).get("replicas", 0))
            status_r = str(obj.get("status", {}).get("replicas", 0))
            ml = (obj.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
            selector = ",".join(f"{k}={v}" for k, v in sorted(ml.items()))
        md = obj["metadata"]
        out_md = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md}
        status: dict[str, Any] = {"replicas": int(status_r or 0)}
        if selector:
            status["selector"] = selector
        return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": out_md,
                "spec": {"replicas": int(spec_r or 0)}, "status": status}

    def _replicas_path(self, rk: ResourceKind) -> str:
        cr = self.registry.custom(rk)
        if cr is not None:
            v = cr.versions.get(rk.version)
            paths = (v.scale if v is not None else None) or {}
            return str(paths.get("specReplicasPath", ".spec.replicas")).lstrip(".")
        return "spec.replicas"

    async def _put_scale(self, rk: ResourceKind, namespace: str | None, name: str, body: Any,
                         dry_run: bool, manager: str = "") -> Response:
        """PUT of the scale subresource: ``body`` is decoded as an autoscaling/v1 Scale (a value of
        the wrong JSON type is 400 ``Scale in version "v1" cannot be handled as a Scale: json:
        cannot unmarshal ...``), its name (and namespace, when set) must be the URL's (400, the
        update handler's checkName), then :meth:`_set_replicas`."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body must be an autoscaling/v1 Scale")
        why = unmarshal_error(_SCALE_MESSAGE, body)
        if why is not None:
            raise errors.cannot_handle(_SCALE, why)
        md = body.get("metadata") or {}
        _check_scale_name(md, namespace, name)
        replicas = (body.get("spec") or {}).get("replicas")
        return await self._set_replicas(rk, namespace, name, replicas, md.get("resourceVersion"), dry_run, manager)

    async def _patch_scale(self, rk: ResourceKind, namespace: str | None, name: str, ptype: str, patch: Any,
                           dry_run: bool, manager: str = "") -> Response:
        """PATCH of the scale subresource: the patch is applied to the current Scale, the result
        decoded as a Scale (one Go cannot hold is 422 ``patch: Invalid value: ...``, the patch
        handler's words), its name checked as the patch handler does, then :meth:`_set_replicas`
        (``spec.replicas`` removed or ``null`` is Go's zero value: 0)."""
        from pumice.api.patch import PatchError, json_patch, merge_patch

        current = self._scale(rk, self.registry.get(rk, namespace, name))
        try:
            new = json_patch(current, patch) if ptype == "json" else merge_patch(current, patch)
        except PatchError as e:
            log.info("JSON patch of %s %s/%s/scale refused: %s", rk.kind, namespace or "", name, e)
            raise errors.json_patch_error(e) from None
        if not isinstance(new, dict):
            raise StatusError(422, "the patch result is not a JSON object", "Invalid")
        why = unmarshal_error(_SCALE_MESSAGE, new)
        if why is not None:
            raise Registry._patch_decode_error(_SCALE, ptype, patch, new, why)
        md = new.get("metadata") or {}
        errors.check_name(md.get("name"), name)  # patch.go applyPatch -> checkName
        return await self._set_replicas(rk, namespace, name, (new.get("spec") or {}).get("replicas"), None, dry_run,
                                        manager)

    async def _set_replicas(self, rk: ResourceKind, namespace: str | None, name: str, replicas: int | None,
                            rv: Any, dry_run: bool, manager: str = "") -> Response:
        """Write ``replicas`` (a decoded Scale's ``spec.replicas``: an int32 or None, Go's zero
        value 0) to the object's replicas path; a negative count is 422 with the Scale's field
        cause (autoscaling validation ValidateScale)."""
        replicas = replicas or 0
        if replicas < 0:
            raise errors.invalid(_SCALE, name, [FieldCause(
                "spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0")])
        path = self._replicas_path(rk).split(".")
        patch: dict[str, Any] = {}
        cur = patch
        for p in path[:-1]:
            cur = cur.setdefault(p, {})
        cur[path[-1]] = replicas
        if rv:
            patch.setdefault("metadata", {})["resourceVersion"] = str(rv)
        s, _, _ = await self.registry.patch(rk, namespace, name, "merge", patch, dry_run=dry_run, field_manager=manager,
                                            _manager_sub="scale")
        return _json(_encode(self._scale(rk, s)))

    # ------------------------------------------------------------------ writes

    async def _create(self, request: Request, rk: ResourceKind, namespace: str | None,
                      query: dict[str, str]) -> Response:
        if rk.namespaced and namespace is None:
            raise errors.method_not_allowed()
        dups: list[str] = []
        body = await self._body(request, rk, query, dups)
        if self.access is not None:
            out = self.access.special_post(request.scope.get("pumice.user"), rk.group, rk.plural, namespace, None, "",
                                           body, _dry_run(query))
            if out is not None:
                return _json(_encode(out), 201)
        s, warnings = await self.registry.create(rk, namespace, body, dry_run=_dry_run(query),
                                                 field_validation=query.get("fieldValidation", ""),
                                                 field_manager=_manager(request, query))
        return self._object(request, rk, s, 201, _warnings(dups + warnings))

    async def _delete_collection(self, request: Request, rk: ResourceKind, namespace: str | None,
                                 query: dict[str, str]) -> Response:
        if "deletecollection" not in rk.verbs:
            raise errors.method_not_allowed()
        # the list options first, checked as a list's are (trial 10 F-3: `?limit=abc` deleted
        # everything); the store holds one revision, so resourceVersion only has to be valid
        _list_options(query, watch=False)
        want = check_resource_version(query, self.registry.store.revision, listing=True)
        if query.get("resourceVersionMatch") == "Exact":
            self._check_exact_revision(want)
        labels, fields = self._selectors(query)
        body = DeleteOptions.decode(await self._delete_options_body(request))
        opts = DeleteOptions.parse(body, query, request.scope.get("pumice.dry_run"))
        items, rv, _, _ = self.registry.list(rk, namespace, labels=labels, fields=fields)
        for s in items:
            md = s.obj["metadata"]
            try:
                await self.registry.delete(rk, md.get("namespace"), md["name"], opts, collection=True)
            except StatusError as e:
                if e.code != 404:
                    raise
        # the answer is the list the deletes worked from, as listed (the store's DeleteCollection)
        if self._protobuf(request, rk):
            return self._pb_list(rk, items, {"resourceVersion": str(rv)})
        head = (b'{"kind":"' + rk.list_kind.encode() + b'","apiVersion":"' + rk.api_version.encode()
                + b'","metadata":{"resourceVersion":"' + str(rv).encode() + b'"},"items":')
        return _json(self.registry.list_json(rk, head, items))

    # ------------------------------------------------------------------ watch

    def _watch_options(self, query: dict[str, str]) -> tuple[float | None, bool, str | None, bool | None]:
        """``(timeoutSeconds, allowWatchBookmarks, resourceVersion to start from,
        sendInitialEvents)`` of a watch request. With sendInitialEvents=true the start is None
        (the current state as synthetic ADDED events, then the initial-events-end bookmark);
        with false and no resourceVersion, the current revision (no synthetic events).

        Raises:
            StatusError: 400 for a bad parameter; 504 (ResourceVersionTooLarge) for a revision
                the store has not reached (:func:`check_resource_version`).
        """
        _, seconds = _list_options(query, watch=True)
        timeout = float(seconds) if seconds is not None else None
        bookmarks = bool(query_bool(query, "allowWatchBookmarks"))
        rv = query.get("resourceVersion")
        store = self.registry.store
        check_resource_version(query, store.revision, listing=False)
        send_initial = query_bool(query, "sendInitialEvents")
        if send_initial:
            rv = None
        elif send_initial is False and rv in (None, "", "0"):
            rv = str(store.revision)
        return timeout, bookmarks, rv, send_initial

    @staticmethod
    def _expired_watch(e: StatusError, proto: bool) -> Response:
        """kube-apiserver's answer to a watch from a compacted revision: 200 and one ERROR event."""
        if proto:
            frame = pb.encode_watch_event("ERROR", pb.encode_object(e.status()))
            return Response(content=frame, media_type=_PB_WATCH)
        return _json(b'{"type":"ERROR","object":' + _encode(e.status()) + b"}\n")

    def _watch(self, request: Request, rk: ResourceKind, namespace: str | None, query: dict[str, str]) -> Response:
        labels, fields = self._selectors(query)
        timeout, bookmarks, rv, send_initial = self._watch_options(query)
        store = self.registry.store
        proto = not _wants_table(request) and self._protobuf(request, rk)
        try:
            w = self.registry.watch(rk, namespace, resource_version=rv, labels=labels, fields=fields)
        except StatusError as e:
            if e.code != 410:
                raise
            return self._expired_watch(e, proto)
        initial_left = w.queue.qsize() if send_initial else -1
        initial_rv = store.bookmark_revision(w)
        clock = self.clock
        interval = self.bookmark_interval
        table = _wants_table(request)
        objects = not proto and not table and request.scope.get("pumice.watch_objects") is True
        line, bookmark = (_object_encoders(self, rk) if objects else
                          _watch_encoders(self, rk, proto=proto, table=table, include=_include_object(request)))
        join: Callable[[list[Any]], Any] = _same if objects else b"".join

        async def stream() -> AsyncIterator[bytes]:
            q = w.queue
            deadline = clock.monotonic() + timeout if timeout is not None else None
            pending = initial_left
            try:
                if pending == 0:
                    yield join([bookmark(initial_rv, True)])
                    pending = -1
                while True:
                    if q.empty():
                        wait: float | None = None
                        if deadline is not None:
                            wait = deadline - clock.monotonic()
                            if wait <= 0:
                                return
                        if bookmarks and interval is not None:
                            wait = interval if wait is None else min(wait, interval)
                        if wait is None:
                            item = await q.get()
                        else:
                            try:
                                async with asyncio.timeout(wait):
                                    item = await q.get()
                            except TimeoutError:
                                # an event published as the wait timed out is queued, not yet sent:
                                # a bookmark now would carry its revision ahead of it
                                if bookmarks and not w.closed and q.empty():
                                    yield join([bookmark(store.bookmark_revision(w))])
                                continue
                        if item is None:
                            return
                        chunk = [line(item[0], item[1])]
                        if pending > 0:
                            pending -= 1
                    else:
                        chunk = []
                    while not q.empty():
                        if pending == 0:
                            chunk.append(bookmark(initial_rv, True))
                            pending = -1
                        item = q.get_nowait()
                        if item is None:
                            if chunk:
                                yield join(chunk)
                            return
                        chunk.append(line(item[0], item[1]))
                        if pending > 0:
                            pending -= 1
                    if pending == 0:
                        chunk.append(bookmark(initial_rv, True))
                        pending = -1
                    yield join(chunk)
            finally:
                store.unwatch(w)

        return StreamingResponse(stream(), media_type=_PB_WATCH if proto else "application/json")

    # ------------------------------------------------------------------ logs

    async def _log(self, rk: ResourceKind, namespace: str, name: str, query: dict[str, str]) -> Response:
        """Proxy ``pods/<name>/log`` to the node agent serving the Pod's Node, as kube-apiserver
        proxies to the kubelet: GET ``http://<InternalIP>:<kubeletEndpoint.Port>/containerLogs/
        <ns>/<pod>/<container>`` with follow, tailLines, sinceSeconds, timestamps, previous
        (checked first: :func:`~pumice.apiserver.streaming.check_log_options`)."""
        check_log_options(name, query)
        pod = self.registry.get(rk, namespace, name).obj
        containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        container = query.get("container") or ""
        if not container:
            if len(containers) != 1:
                raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                         f"[{' '.join(str(c) for c in containers)}]")
            container = str(containers[0])
        else:
            spec = pod.get("spec") or {}
            inits = [c.get("name") for key in ("initContainers", "ephemeralContainers") for c in spec.get(key) or []]
            if container not in containers and container not in inits:
                raise errors.bad_request(f"container {container} is not valid for pod {name}")
        if not (pod.get("spec") or {}).get("nodeName"):
            # LogLocation gives no location before the Pod is on a Node, and the stream handler
            # answers an empty stream 204 No Content (kubectl logs then prints nothing)
            return Response(status_code=204)
        ip, port = kubelet_endpoint(self.registry, pod, "logs")
        params: dict[str, str] = {k: query[k] for k in ("follow", "tailLines", "sinceSeconds", "sinceTime", "timestamps",
                                        "previous", "limitBytes") if k in query}
        url = f"http://{ip}:{port}/containerLogs/{namespace}/{name}/{container}"
        import httpx2

        client = self.log_client_factory() if self.log_client_factory else httpx2.AsyncClient(timeout=None)
        try:
            req = client.build_request("GET", url, params=params)
            resp = await client.send(req, stream=True)
        except httpx2.HTTPError as e:
            await client.aclose()
            raise StatusError(500, f"Get \"{url}\": {e}", "InternalError") from None
        if resp.status_code != 200:
            text = (await resp.aread()).decode(errors="replace")
            await resp.aclose()
            await client.aclose()
            if resp.status_code == 404:
                raise errors.bad_request(text.strip() or f"container {container} in pod {name} has no logs")
            raise StatusError(resp.status_code if resp.status_code >= 400 else 500, text.strip() or "log proxy error")

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk
            finally:
                await resp.aclose()
                await client.aclose()

        return StreamingResponse(body(), media_type="text/plain")

    # ------------------------------------------------------------------ discovery

    def _discovery_root(self, request: Request, *, legacy: bool) -> Response:
        version = _aggregated_version(request.headers.get("accept", ""))
        if version is not None:
            doc = discovery.aggregated(self.scheme, legacy=legacy, version=version)
            return Response(content=_encode(doc), status_code=200,
                            media_type=f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
        doc = discovery.api_versions() if legacy else discovery.api_group_list(self.scheme)
        return _json(_encode(doc))

    def _openapi_cached(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """OpenAPI documents are rebuilt only when the served kinds or CRDs change."""
        crds = self.registry.crds
        signature = (tuple(sorted((rk.group, rk.version, rk.plural) for rk in self.scheme)),
                     tuple(sorted((k, id(v)) for k, v in crds.items())))
        if self._openapi_signature != signature:
            self._openapi_docs.clear()
            self._openapi_signature = signature
        if key not in self._openapi_docs:
            self._openapi_docs[key] = build()
        return self._openapi_docs[key]

    def _openapi_v3(self, path: str) -> tuple[bytes, str]:
        """The served bytes of the v3 document at ``path`` and their etag; 404 when none."""
        def build() -> tuple[bytes, str] | None:
            doc = openapi.document_v3(self.scheme, self.registry.crds, path)
            if doc is None:
                return None
            data = _encode(doc)
            return data, openapi.etag(data)
        out = self._openapi_cached(("v3", path), build)
        if out is None:
            raise _not_found_path()
        return out

    def _openapi(self, request: Request, parts: list[str]) -> Response:
        crds = self.registry.crds
        if len(parts) == 2 and parts[1] == "v2":
            if openapi.OPENAPI_V2_PROTOBUF in request.headers.get("accept", ""):
                data = self._openapi_cached(("v2", "pb"), lambda: openapi.document_v2_protobuf(
                    self._openapi_cached(("v2",), lambda: openapi.document_v2(self.scheme, crds))))
                # the media type has an "@" that Go's mime parser refuses: kube-openapi answers octet-stream
                return Response(content=data, media_type="application/octet-stream")
            data = self._openapi_cached(("v2", "json"), lambda: _encode(
                self._openapi_cached(("v2",), lambda: openapi.document_v2(self.scheme, crds))))
            return _json(data)
        if len(parts) >= 2 and parts[1] == "v3":
            if len(parts) == 2:
                return _json(self._openapi_cached(("v3",), lambda: _encode(openapi.root_v3(
                    {p: self._openapi_v3(p)[1] for p in openapi.v3_paths(self.scheme)}))))
            path = "/".join(parts[2:])
            data, etag = self._openapi_v3(path)
            headers = {"Etag": f'"{etag}"'}
            # kube-openapi's handler3: a stale or wrong hash is sent to the current one; the
            # current hash may be cached for good (a year from now)
            if (want := request.query_params.get("hash")) and want != etag:
                return Response(status_code=301, headers={**headers,
                                                          "Location": f"/openapi/v3/{path}?hash={etag}"})
            if want:
                expires = formatdate(self.clock.now() + 365 * 24 * 3600, usegmt=True)
                headers.update({"Vary": "Accept", "Cache-Control": "public, immutable", "Expires": expires})
            return _json(data, headers=headers)
        raise _not_found_path()


def _aggregated_version(accept: str) -> str | None:
    """The aggregated discovery version named first in ``Accept`` (v2 or v2beta1), or None."""
    for part in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in part.split(";")[1:])
        if params.get("as") == "APIGroupDiscoveryList" and params.get("g") == "apidiscovery.k8s.io" \
                and params.get("v") in ("v2", "v2beta1"):
            return params["v"]
        if part.strip().split(";")[0].strip() in ("application/json", "*/*") and "as=" not in part:
            return None
    return None


def _watch_encoders(api: _Api, rk: ResourceKind, *, proto: bool, table: bool, include: str
                    ) -> tuple[Callable[[str, Stored], bytes], Callable[..., bytes]]:
    """The two encoders of one watch stream: ``event(type, stored)`` for ADDED/MODIFIED/DELETED
    (JSON lines, Table rows for ``as=Table``, or protobuf frames; each object as the registry
    presents it) and ``bookmark(revision, end_of_initial=False)`` (``end_of_initial`` marks the
    end of sendInitialEvents). Closures over locals: they run once per event and watcher."""
    out = api.registry.output
    render = api._table
    pb_object = api._pb_object
    present = api.registry.present if api.registry.strategy(rk).converts else None

    def event(kind: str, s: Stored) -> bytes:
        if present is not None:
            s = present(rk, s)
        if proto:
            return pb.encode_watch_event(kind, pb_object(rk, s))
        if table:
            return b'{"type":"' + kind.encode() + b'","object":' + _encode(render(rk, [s], include)) + b"}\n"
        return b'{"type":"' + kind.encode() + b'","object":' + out(rk, s) + b"}\n"

    def bookmark(revision: int, end_of_initial: bool = False) -> bytes:
        md: dict[str, Any] = {"resourceVersion": str(revision)}
        if end_of_initial:
            md["annotations"] = {INITIAL_EVENTS_END: "true"}
        bm = {"kind": rk.kind, "apiVersion": rk.api_version, "metadata": md}
        if proto:
            return pb.encode_watch_event("BOOKMARK", pb.encode_object(bm))
        return b'{"type":"BOOKMARK","object":' + _encode(bm) + b"}\n"

    return event, bookmark


def _object_encoders(api: _Api, rk: ResourceKind) -> tuple[Callable[[str, Stored], Any], Callable[..., Any]]:
    """:func:`_watch_encoders` for an in-process watch that asked for objects (ASGI scope key
    ``pumice.watch_objects``, set by :class:`~pumice.client.transport.DirectASGI` for a caller
    that promised not to change them): each event as ``(type, object)`` instead of a JSON line,
    the object being what decoding that line would give. Where the stored object is served as it
    is stored (no conversion, same apiVersion: every built-in kind, single-version custom
    resources), it is the stored object itself (:attr:`Stored.obj`, never changed after it is
    stored): no encode, no decode and no copy per watcher; otherwise a fresh decode of the line's
    object. The stream then yields lists of these pairs instead of joined bytes."""
    out = api.registry.output
    present = api.registry.present if api.registry.strategy(rk).converts else None
    api_version = rk.api_version

    def event(kind: str, s: Stored) -> tuple[str, Any]:
        if present is None and s.obj.get("apiVersion") == api_version:
            return kind, s.obj
        if present is not None:
            s = present(rk, s)
        return kind, _decode(out(rk, s))

    def bookmark(revision: int, end_of_initial: bool = False) -> tuple[str, Any]:
        md: dict[str, Any] = {"resourceVersion": str(revision)}
        if end_of_initial:
            md["annotations"] = {INITIAL_EVENTS_END: "true"}
        return "BOOKMARK", {"kind": rk.kind, "apiVersion": rk.api_version, "metadata": md}

    return event, bookmark


def _same(chunk: list[Any]) -> list[Any]:
    return chunk


def _include_object(request: Request) -> str:
    """The ``includeObject`` query parameter of a Table request: None, Metadata (default) or Object."""
    v = request.query_params.get("includeObject") or "Metadata"
    if v not in ("None", "Metadata", "Object"):
        raise errors.bad_request(f"invalid includeObject {v!r}: must be None, Metadata or Object")
    return v


def _wants_table(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "as=Table" in accept and "g=meta.k8s.io" in accept


def _manager(request: Request, query: dict[str, str]) -> str:
    """The field manager of a write: ``fieldManager``, else from the User-Agent
    (:func:`pumice.api.apply.manager_or_user_agent`)."""
    return manager_or_user_agent(query.get("fieldManager", ""), request.headers.get("user-agent", ""))


def _dry_run(query: dict[str, str]) -> bool:
    """Whether a create, update or patch is a dry run: ``dryRun`` given (its values were checked
    by :func:`pumice.apiserver.decode.check_query` before routing: each is ``All``)."""
    return "dryRun" in query


def _parse_protobuf(raw: bytes) -> Any:
    try:
        return pb.decode_object(raw)
    except pb.ProtobufError as e:
        raise errors.bad_request(f"error decoding the request body as protobuf: {e}") from None


def _patch_type_error(ptype: str, patch: Any) -> str | None:
    """Go's unmarshal error for a JSON or merge patch body of the wrong shape, as kube-apiserver
    decodes it under fieldValidation Warn or Strict (the default) before applying it: a JSON
    patch into ``[]handlers.jsonPatchOp`` (op, path and from strings), a merge patch into
    ``map[string]interface {}``; None when it decodes.

    Mirrors: k8s.io/apiserver pkg/endpoints/handlers/patch.go (jsonPatcher.applyJSPatch,
    jsonPatchOp)."""
    if patch is None:
        return None
    if ptype == "merge":
        if isinstance(patch, dict):
            return None
        return f"json: cannot unmarshal {go_json_value(patch)} into Go value of type map[string]interface {{}}"
    if not isinstance(patch, list):
        return f"json: cannot unmarshal {go_json_value(patch)} into Go value of type []handlers.jsonPatchOp"
    for op in patch:
        if op is None:
            continue
        if not isinstance(op, dict):
            return f"json: cannot unmarshal {go_json_value(op)} into Go value of type handlers.jsonPatchOp"
        for key in ("op", "path", "from"):
            v = op.get(key)
            if v is not None and not isinstance(v, str):
                return (f"json: cannot unmarshal {go_json_value(v)} into Go struct field jsonPatchOp.{key} of "
                        "type string")
    return None


def _parse_body(raw: bytes, *, yaml_ok: bool, literals: list[FloatLiteral] | None = None) -> Any:
    return decode_body(raw, yaml_ok=yaml_ok, literals=literals)


def _duplicates(request: Request, raw: bytes, rk: ResourceKind | None, query: Mapping[str, str]) -> list[str]:
    """The duplicate-field warnings of a write's body (create, update, merge/strategic/apply
    patch) under its ``fieldValidation``: none for ``Ignore``; 400 BadRequest for ``Strict``
    (``<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: ...``);
    otherwise (``Warn``, or unset: kube-apiserver's default) one warning per repetition.

    Bodies from the in-process transport (pumice's own components, ``pumice simulate``) are not
    checked: they are built from dicts, which cannot repeat a key, and a second decode would
    cost every in-process write.

    Mirrors: k8s.io/apiserver pkg/endpoints/handlers (create.go, update.go, patch.go: strict
    decoding errors as warnings or a BadRequest by fieldValidation).
    """
    fv = query.get("fieldValidation", "")
    if fv == "Ignore" or rk is None or (request.scope.get("extensions") or {}).get("pumice.in_process"):
        return []
    dups = duplicate_fields(raw)
    if dups and fv == "Strict":
        listed = ("yaml: unmarshal errors:\n  " + "\n  ".join(dups)) if dups[0].startswith("line ") else ", ".join(dups)
        raise errors.strict_decoding(rk, listed)
    return dups


def render_table(rk: ResourceKind, objs: list[dict[str, Any]], now: float,
                 printer_columns: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of ``objs`` (kubectl's columns; CRD printer columns when given)."""
    return to_table(rk, objs, now, printer_columns)


def build_app(registry: Registry, *, token: str | None, clock: Clock, bookmark_interval: float | None = 60.0,
              log_client_factory: Any = None, access: Access | None = None,
              request_metrics: bool = True) -> tuple[Starlette, Any]:
    """The Starlette app serving ``registry``; returns ``(app, handler)`` where the handler has a
    ``ready`` flag and the ``token`` (both may be changed later). With ``access``, requests are
    authenticated and authorized by it (else only the admin ``token`` is checked).
    ``request_metrics=False``: no request is counted in kube-apiserver's request metrics. Sets
    up the process's metrics for ``/metrics`` (:func:`pumice._util.metrics.configure_metrics`)."""
    configure_metrics()
    api = _Api(registry, token=token, clock=clock, bookmark_interval=bookmark_interval,
               log_client_factory=log_client_factory, access=access, request_metrics=request_metrics)
    app = _App(api)
    app.state.api = api
    return app, api


class _App(Starlette):
    """Starlette, with HTTP requests handed straight to the API handler (every path is one route;
    the handler answers every error with a Status itself), skipping the router and middleware
    stack on the hot path. Lifespan and other scope types go through Starlette as usual."""

    def __init__(self, api: _Api) -> None:
        super().__init__(routes=[Route("/{path:path}", api.handle,
                                       methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])])
        self._handle = api.handle
        self._streams = api.streams

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await self._streams.serve(scope, receive, send)
            return
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self
        response = await self._handle(_Request(scope, receive, send))
        await response(scope, receive, send)

    async def respond(self, scope: Any, receive: Any) -> Response:
        """The in-process fast path (:class:`~pumice.client.transport.DirectASGI`): the answer to
        the HTTP request ``scope`` (body read through ``receive``) as the Response object, not sent.
        The caller takes its ``status_code`` and ``body``, or iterates a StreamingResponse's
        ``body_iterator`` itself (a watch: the events with no ASGI messages, no queue and no task
        in between; closing the iterator ends the watch). The same handler as :meth:`__call__`
        (authentication, authorization, routing, every Status)."""
        scope["app"] = self
        return await self._handle(_Request(scope, receive))
