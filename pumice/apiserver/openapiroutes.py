"""The routes the API server serves, as OpenAPI operations: one :class:`Route` per URL template,
each with the operations (HTTP methods) served on it, independent of the document version.
:mod:`pumice.apiserver.openapi` renders them as Swagger 2.0 ``paths`` (/openapi/v2) and OpenAPI
3.0 ``paths`` (/openapi/v3/<group-version>).

For every served resource (its :class:`~pumice.api.scheme.ResourceKind` ``verbs`` say which):
list (with watch) and create on the collection, deletecollection where served, get, replace,
patch and delete on ``{name}``, list across namespaces for a namespaced resource, the deprecated
``/watch/...`` paths (``watch``, ``watchlist``), and each subresource with the verbs discovery
gives it (``status``, ``scale``, ``binding``, ``eviction``, ``token``, ``log``, ``finalize``,
``ephemeralcontainers``) or, for the streaming ones (``exec``, ``attach``, ``portforward``,
``proxy``), the HTTP methods kube-apiserver connects. Every route of a group-version is also
preceded by ``GET /<group-version>/`` (its APIResourceList).

Operation IDs, tags, ``x-kubernetes-action`` values, parameter names and media types are
upstream's: ``listBatchV1NamespacedJob``, ``deleteBatchV1CollectionNamespacedJob``,
``connectCoreV1GetNamespacedPodExec``, tag ``batch_v1``.

Mirrors: k8s.io/apiserver pkg/endpoints/installer.go (registerResourceHandlers: which actions a
storage's verbs give, their operation names and media types), pkg/endpoints/openapi
(GetOperationIDAndTags); k8s.io/apiextensions-apiserver pkg/controller/openapi/builder (custom
resources: no protobuf, no strategic merge patch).

Deviates: DELETE of an object answers the object (200, 202) for every kind, as pumice does;
kube-apiserver answers a Status for the kinds whose storage does not return the deleted object
(ConfigMap, Deployment, ...); deletecollection answers the list of deleted objects where
kube-apiserver's document says Status. ``ignoreStoreReadErrorWithClusterBreakingPotential`` (1.32 alpha, feature-gated off)
and the log ``stream`` parameter are not advertised, as pumice does not serve them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pumice.api.scheme import ResourceKind
from pumice.apiserver.discovery import sub_kind

__all__ = ["STRING", "VERSION_INFO", "Operation", "Param", "Route", "discovery_routes", "group_version_routes",
           "valid_operation_id"]

#: a response or body "definition" that is a plain string (logs, streams) rather than a schema
STRING = ""

PROTOBUF = "application/vnd.kubernetes.protobuf"
JSON = "application/json"
YAML = "application/yaml"
WATCH_SUFFIX = ";stream=watch"
#: the patch media types, in upstream's order (strategic merge only for built-in kinds)
PATCH_TYPES_BUILTIN = ("application/json-patch+json", "application/merge-patch+json",
                       "application/strategic-merge-patch+json", "application/apply-patch+yaml")
PATCH_TYPES_CUSTOM = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")

_META = "meta/v1"  # the api_version the resolver maps to apimachinery's meta types
#: ``(api_version, kind)`` the resolver maps to apimachinery's version.Info (``/version/``)
VERSION_INFO = ("version", "Info")


@dataclass(frozen=True)
class Param:
    """One parameter: ``location`` is ``path`` or ``query``; ``type`` a JSON type name."""

    name: str
    location: str
    type: str = "string"

    @property
    def required(self) -> bool:
        return self.location == "path"


@dataclass(frozen=True)
class Operation:
    """One served HTTP method of a route.

    Attributes:
        method: lower-case HTTP method (``get``, ``put``, ``post``, ``delete``, ``patch``,
            ``head``, ``options``).
        operation_id: upstream's ``operationId``.
        action: ``x-kubernetes-action`` (``get``, ``list``, ``post``, ``put``, ``patch``,
            ``delete``, ``deletecollection``, ``watch``, ``watchlist``, ``connect``), or ``""``
            (discovery routes carry none).
        gvk: ``(group, version, kind)`` of ``x-kubernetes-group-version-kind``, or None.
        description: one line.
        params: the operation's own query parameters (the route's are shared).
        body: definition name of the request body, or None.
        body_required: whether the body is required (not for delete and deletecollection).
        consumes: request media types.
        produces: response media types.
        responses: ``(status code, definition name or STRING)`` pairs; every operation also
            answers 401.
    """

    method: str
    operation_id: str
    action: str
    gvk: tuple[str, str, str] | None
    description: str
    params: tuple[Param, ...] = ()
    body: str | None = None
    body_required: bool = True
    consumes: tuple[str, ...] = ()
    produces: tuple[str, ...] = ()
    responses: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Route:
    """One URL template (``/api/v1/namespaces/{namespace}/pods/{name}``) and what it serves."""

    path: str
    params: tuple[Param, ...]
    operations: tuple[Operation, ...]
    tag: str


#: ``(api_version, kind) -> definition name`` or None when no schema describes the kind; the
#: caller records which definitions its routes need
Resolver = Callable[[str, str], "str | None"]

_PRETTY = Param("pretty", "query")
_NAME = Param("name", "path")
_NAMESPACE = Param("namespace", "path")
_DRY_RUN = Param("dryRun", "query")
_WRITE = (_DRY_RUN, Param("fieldManager", "query"), Param("fieldValidation", "query"))
_PATCH = (*_WRITE, Param("force", "query", "boolean"))
_DELETE = (_DRY_RUN, Param("gracePeriodSeconds", "query", "integer"), Param("orphanDependents", "query", "boolean"),
           Param("propagationPolicy", "query"))
_SELECT = (Param("continue", "query"), Param("fieldSelector", "query"), Param("labelSelector", "query"),
           Param("limit", "query", "integer"), Param("resourceVersion", "query"),
           Param("resourceVersionMatch", "query"), Param("sendInitialEvents", "query", "boolean"),
           Param("timeoutSeconds", "query", "integer"))
_LIST = (Param("allowWatchBookmarks", "query", "boolean"), *_SELECT, Param("watch", "query", "boolean"))
_DELETE_COLLECTION = (*_DELETE, *_SELECT)
_LOG = (Param("container", "query"), Param("follow", "query", "boolean"),
        Param("insecureSkipTLSVerifyBackend", "query", "boolean"), Param("limitBytes", "query", "integer"),
        Param("previous", "query", "boolean"), Param("sinceSeconds", "query", "integer"),
        Param("tailLines", "query", "integer"), Param("timestamps", "query", "boolean"))
_STDIO = (Param("stderr", "query", "boolean"), Param("stdin", "query", "boolean"),
          Param("stdout", "query", "boolean"), Param("tty", "query", "boolean"))
#: streaming subresources: (HTTP methods, query parameters, options kind or "" for <Kind>ProxyOptions)
_CONNECT: dict[str, tuple[tuple[str, ...], tuple[Param, ...], str]] = {
    "exec": (("get", "post"), (Param("command", "query"), Param("container", "query"), *_STDIO), "PodExecOptions"),
    "attach": (("get", "post"), (Param("container", "query"), *_STDIO), "PodAttachOptions"),
    "portforward": (("get", "post"), (Param("ports", "query", "integer"),), "PodPortForwardOptions"),
    "proxy": (("delete", "get", "head", "options", "patch", "post", "put"), (Param("path", "query"),), ""),
}
#: discovery verb -> (HTTP method, operation verb, x-kubernetes-action) on an object or subresource
_OBJECT_VERBS = (("get", "get", "read", "get"), ("update", "put", "replace", "put"),
                 ("patch", "patch", "patch", "patch"), ("delete", "delete", "delete", "delete"))


def valid_operation_id(s: str, capitalize_first: bool) -> str:
    """``s`` as an operation-ID fragment: letters and ``_`` kept (digits too, after the first
    character); any other character dropped, upper-casing the letter after it (``ray.io`` ->
    ``RayIo`` with ``capitalize_first``, ``rayIo`` without).

    Mirrors: k8s.io/apiserver pkg/endpoints/openapi ToValidOperationID."""
    out = []
    capitalize = capitalize_first
    for i, ch in enumerate(s):
        if ch.isalpha() or ch == "_" or (i and ch.isdigit()):
            out.append(ch.upper() if capitalize else ch)
            capitalize = False
        else:
            capitalize = True
    return "".join(out)


def _gv_prefix(group: str, version: str) -> tuple[str, str]:
    """``(operation-ID infix, tag)``: ``("BatchV1", "batch_v1")``, ``("CoreV1", "core_v1")``,
    ``("RbacAuthorizationV1", "rbacAuthorization_v1")``."""
    g = group.removesuffix(".k8s.io") if group else "core"
    return (valid_operation_id(g, True) + valid_operation_id(version, True),
            valid_operation_id(g, False) + "_" + valid_operation_id(version, False))


def gv_path(group: str, version: str) -> str:
    """``/api/v1`` or ``/apis/<group>/<version>``."""
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def _media(custom: bool, *, watch: bool = False) -> tuple[str, ...]:
    if custom:
        return (JSON, JSON + WATCH_SUFFIX, YAML) if watch else (JSON, YAML)
    return (JSON, JSON + WATCH_SUFFIX, PROTOBUF, PROTOBUF + WATCH_SUFFIX, YAML) if watch else (JSON, YAML, PROTOBUF)


def _kind_ops(rk: ResourceKind, resolve: Resolver, custom: bool, gv: str, tag: str) -> Iterator[Route]:
    """The routes of one resource (see the module docstring)."""
    obj = resolve(rk.api_version, rk.kind)
    lst = resolve(rk.api_version, rk.list_kind)
    delete_options = resolve(_META, "DeleteOptions")
    event = resolve(_META, "WatchEvent")
    patch = resolve(_META, "Patch")
    gvk = (rk.group, rk.version, rk.kind)
    kind = rk.kind
    verbs = set(rk.verbs)
    base = gv_path(rk.group, rk.version)
    media = _media(custom)
    scopes: list[tuple[str, tuple[Param, ...], str]] = (
        [(f"{base}/namespaces/{{namespace}}/{rk.plural}", (_NAMESPACE,), "Namespaced")] if rk.namespaced
        else [(f"{base}/{rk.plural}", (), "")])
    for collection, scope_params, ns in scopes:
        ops: list[Operation] = []
        if "deletecollection" in verbs and delete_options and lst:
            ops.append(Operation("delete", f"delete{gv}Collection{ns}{kind}", "deletecollection", gvk,
                                 f"delete a collection of {kind}", _DELETE_COLLECTION, delete_options, False,
                                 ("*/*",), media, (("200", lst),)))  # the deleted objects, as pumice answers
        if "list" in verbs and lst:
            ops.append(Operation("get", f"list{gv}{ns}{kind}", "list", gvk, f"list or watch {kind} objects",
                                 _LIST if "watch" in verbs else _SELECT, None, False, ("*/*",),
                                 _media(custom, watch="watch" in verbs), (("200", lst),)))
        if "create" in verbs and obj:
            ops.append(Operation("post", f"create{gv}{ns}{kind}", "post", gvk, f"create a {kind}", _WRITE, obj, True,
                                 ("*/*",), media, (("200", obj), ("201", obj), ("202", obj))))
        if ops:
            yield Route(collection, (*scope_params, _PRETTY), tuple(ops), tag)
        ops = []
        for verb, method, op_verb, action in _OBJECT_VERBS:
            if verb not in verbs or not obj:
                continue
            if verb == "get":
                ops.append(Operation(method, f"{op_verb}{gv}{ns}{kind}", action, gvk, f"read the specified {kind}",
                                     (), None, False, ("*/*",), media, (("200", obj),)))
            elif verb == "update":
                ops.append(Operation(method, f"{op_verb}{gv}{ns}{kind}", action, gvk, f"replace the specified {kind}",
                                     _WRITE, obj, True, ("*/*",), media, (("200", obj), ("201", obj))))
            elif verb == "patch" and patch:
                ops.append(Operation(method, f"{op_verb}{gv}{ns}{kind}", action, gvk,
                                     f"partially update the specified {kind}", _PATCH, patch, True,
                                     PATCH_TYPES_CUSTOM if custom else PATCH_TYPES_BUILTIN, media,
                                     (("200", obj), ("201", obj))))
            elif verb == "delete" and delete_options:
                # pumice answers the deleted (or deleting) object for every kind
                ops.append(Operation(method, f"{op_verb}{gv}{ns}{kind}", action, gvk, f"delete a {kind}", _DELETE,
                                     delete_options, False, ("*/*",), media, (("200", obj), ("202", obj))))
        if ops:
            yield Route(f"{collection}/{{name}}", (_NAME, *scope_params, _PRETTY), tuple(ops), tag)
        yield from _subresource_routes(rk, resolve, custom, gv, tag, f"{collection}/{{name}}",
                                       (_NAME, *scope_params), ns)
    if rk.namespaced and "list" in verbs and lst:
        yield Route(f"{base}/{rk.plural}", (*(_LIST if "watch" in verbs else _SELECT), _PRETTY),
                    (Operation("get", f"list{gv}{kind}ForAllNamespaces", "list", gvk,
                               f"list or watch {kind} objects in every namespace", (), None, False, ("*/*",),
                               _media(custom, watch="watch" in verbs), (("200", lst),)),), tag)
    if "watch" in verbs and event:
        watch_media = _media(custom, watch=True)
        shared = (*_LIST, _PRETTY)
        if rk.namespaced:
            yield Route(f"{base}/watch/namespaces/{{namespace}}/{rk.plural}", (_NAMESPACE, *shared),
                        (Operation("get", f"watch{gv}Namespaced{kind}List", "watchlist", gvk,
                                   f"watch changes to a list of {kind} (deprecated: use list with watch)", (), None,
                                   False, ("*/*",), watch_media, (("200", event),)),), tag)
            yield Route(f"{base}/watch/namespaces/{{namespace}}/{rk.plural}/{{name}}", (_NAME, _NAMESPACE, *shared),
                        (Operation("get", f"watch{gv}Namespaced{kind}", "watch", gvk,
                                   f"watch changes to a {kind} (deprecated: use list with watch and a "
                                   f"metadata.name field selector)", (), None, False, ("*/*",), watch_media,
                                   (("200", event),)),), tag)
            yield Route(f"{base}/watch/{rk.plural}", shared,
                        (Operation("get", f"watch{gv}{kind}ListForAllNamespaces", "watchlist", gvk,
                                   f"watch changes to a list of {kind} in every namespace (deprecated)", (), None,
                                   False, ("*/*",), watch_media, (("200", event),)),), tag)
        else:
            yield Route(f"{base}/watch/{rk.plural}", shared,
                        (Operation("get", f"watch{gv}{kind}List", "watchlist", gvk,
                                   f"watch changes to a list of {kind} (deprecated: use list with watch)", (), None,
                                   False, ("*/*",), watch_media, (("200", event),)),), tag)
            yield Route(f"{base}/watch/{rk.plural}/{{name}}", (_NAME, *shared),
                        (Operation("get", f"watch{gv}{kind}", "watch", gvk,
                                   f"watch changes to a {kind} (deprecated: use list with watch and a "
                                   f"metadata.name field selector)", (), None, False, ("*/*",), watch_media,
                                   (("200", event),)),), tag)


def _subresource_routes(rk: ResourceKind, resolve: Resolver, custom: bool, gv: str, tag: str, obj_path: str,
                        obj_params: tuple[Param, ...], ns: str) -> Iterator[Route]:
    patch = resolve(_META, "Patch")
    media = _media(custom)
    for sub in rk.subresources:
        title = sub.capitalize()
        if sub in _CONNECT:
            methods, params, options = _CONNECT[sub]
            options = options or f"{rk.kind}ProxyOptions"
            gvk = ("", "v1", options)
            connect = tuple(Operation(m, f"connect{gv}{m.capitalize()}{ns}{rk.kind}{title}", "connect", gvk,
                                  f"connect {m.upper()} requests to {sub} of {rk.kind}", (), None, False, ("*/*",),
                                  ("*/*",), (("200", STRING),)) for m in methods)
            yield Route(f"{obj_path}/{sub}", (*obj_params, *params), connect, tag)
            if sub == "proxy":
                connect = tuple(Operation(m, f"connect{gv}{m.capitalize()}{ns}{rk.kind}{title}WithPath", "connect", gvk,
                                      f"connect {m.upper()} requests to {sub} of {rk.kind}", (), None, False,
                                      ("*/*",), ("*/*",), (("200", STRING),)) for m in methods)
                yield Route(f"{obj_path}/{sub}/{{path}}", (*obj_params, Param("path", "path"), *params), connect, tag)
            continue
        g, v, kind, verbs = sub_kind(rk, sub)
        kind = kind or rk.kind
        api_version = (f"{g}/{v}" if g else v) if v else rk.api_version
        gvk = (g if v else rk.group, v or rk.version, kind)
        body = resolve(api_version, kind)
        if not body:
            continue
        if sub == "log":
            yield Route(f"{obj_path}/{sub}", (*obj_params, *_LOG, _PRETTY),
                        (Operation("get", f"read{gv}{ns}{rk.kind}Log", "get", gvk, f"read the log of the specified "
                                   f"{rk.kind}", (), None, False, ("*/*",), ("text/plain", JSON, YAML, PROTOBUF),
                                   (("200", STRING),)),), tag)
            continue
        ops: list[Operation] = []
        if "create" in verbs:
            ops.append(Operation("post", f"create{gv}{ns}{rk.kind}{title}", "post", gvk,
                                 f"create {sub} of a {rk.kind}", _WRITE, body, True, ("*/*",), media,
                                 (("200", body), ("201", body), ("202", body))))
        if "get" in verbs:
            ops.append(Operation("get", f"read{gv}{ns}{rk.kind}{title}", "get", gvk,
                                 f"read {sub} of the specified {rk.kind}", (), None, False, ("*/*",), media,
                                 (("200", body),)))
        if "update" in verbs:
            ops.append(Operation("put", f"replace{gv}{ns}{rk.kind}{title}", "put", gvk,
                                 f"replace {sub} of the specified {rk.kind}", _WRITE, body, True, ("*/*",), media,
                                 (("200", body), ("201", body))))
        if "patch" in verbs and patch:
            ops.append(Operation("patch", f"patch{gv}{ns}{rk.kind}{title}", "patch", gvk,
                                 f"partially update {sub} of the specified {rk.kind}", _PATCH, patch, True,
                                 PATCH_TYPES_CUSTOM if custom else PATCH_TYPES_BUILTIN, media,
                                 (("200", body), ("201", body))))
        if ops:
            yield Route(f"{obj_path}/{sub}", (*obj_params, _PRETTY), tuple(ops), tag)


def group_version_routes(group: str, version: str, kinds: list[ResourceKind], resolve: Resolver,
                         is_custom: Callable[[ResourceKind], bool]) -> list[Route]:
    """Every route of one served group-version, sorted by path: ``GET /<gv>/`` (APIResourceList)
    first, then each resource's (see the module docstring). ``resolve`` names the definition of
    a kind (None: the kind has no schema, and operations needing it are left out)."""
    gv, tag = _gv_prefix(group, version)
    routes: list[Route] = []
    resources = resolve(_META, "APIResourceList")
    if resources:
        routes.append(Route(gv_path(group, version) + "/", (), (Operation(
            "get", f"get{gv}APIResources", "", None, "get available resources", (), None, False,
            (JSON, YAML, PROTOBUF), (JSON, YAML, PROTOBUF), (("200", resources),)),), tag))
    for rk in kinds:
        routes.extend(_kind_ops(rk, resolve, is_custom(rk), gv, tag))
    return sorted(routes, key=lambda r: r.path)


def _discovery_get(operation_id: str, description: str, definition: str, media: tuple[str, ...]) -> Operation:
    return Operation("get", operation_id, "", None, description, (), None, False, media, media,
                     (("200", definition),))


def discovery_routes(groups: list[str], resolve: Resolver, *, core: bool = True, apis: bool = True,
                     version: bool = True) -> list[Route]:
    """The non-resource discovery routes kube-apiserver documents, sorted by path: ``GET /api/``
    (getCoreAPIVersions, APIVersions) when ``core``, ``GET /apis/`` (getAPIVersions,
    APIGroupList) when ``apis``, ``GET /apis/<group>/`` (get<Group>APIGroup, APIGroup) for each
    of ``groups`` and ``GET /version/`` (getCodeVersion, version.Info) when ``version``.
    A route whose definition ``resolve`` does not know is left out."""
    media = (JSON, YAML, PROTOBUF)
    routes: list[Route] = []
    versions = resolve(_META, "APIVersions") if core else None
    if versions:
        routes.append(Route("/api/", (), (_discovery_get("getCoreAPIVersions", "get available API versions",
                                                          versions, media),), "core"))
    group_list = resolve(_META, "APIGroupList") if apis else None
    if group_list:
        routes.append(Route("/apis/", (), (_discovery_get("getAPIVersions", "get available API versions",
                                                           group_list, media),), "apis"))
    group_def = resolve(_META, "APIGroup") if groups else None
    for group in groups:
        if not group_def:
            break
        name = group.removesuffix(".k8s.io")
        routes.append(Route(f"/apis/{group}/", (), (_discovery_get(
            f"get{valid_operation_id(name, True)}APIGroup", "get information of a group", group_def, media),),
            valid_operation_id(name, False)))
    info = resolve(*VERSION_INFO) if version else None
    if info:
        routes.append(Route("/version/", (), (_discovery_get(
            "getCodeVersion", "get the version information for this server", info, (JSON,)),), "version"))
    return sorted(routes, key=lambda r: r.path)
