"""OpenAPI documents generated from the schemas pumice has: /openapi/v2 (JSON, or the protobuf
kubectl asks for) and /openapi/v3 (per group-version documents with component schemas).

Built-in kinds are described from the protobuf schema (:mod:`pumice.api.protobuf`: every field,
its JSON name and type), custom resources from their CRD's ``openAPIV3Schema``. Definition names
follow upstream's (``io.k8s.api.core.v1.Pod``, ``io.ray.v1.RayCluster``); served kinds carry
``x-kubernetes-group-version-kind``. Paths: every served route
(:mod:`pumice.apiserver.openapiroutes`), in v2 all of them, in v3 those of the group-version; each
PATCH declares the ``fieldValidation`` parameter, which is what kubectl checks before it relies on
server-side field validation. A custom resource's list kind gets a schema of its own
(``io.ray.v1.RayClusterList``: ``items`` of the kind, ``metadata`` ListMeta). Both documents carry
the ``BearerToken`` security scheme.

Deviates: no descriptions of fields (upstream's prose is not copied) and no ``required`` lists for
built-in kinds; in v2, custom resources are schemas without structure (any value validates), as v2
cannot express structural schemas; parameters are written inline (upstream shares them through
v2's top-level ``parameters``).

Mirrors: k8s.io/kube-openapi pkg/builder (v2), pkg/builder3 (v3), pkg/handler (the protobuf form,
gnostic's openapi_v2.Document); k8s.io/apiextensions-apiserver pkg/controller/openapi/builder.
"""

from __future__ import annotations

import copy
import hashlib
import json
from functools import cache
from typing import Any

from pumice.api import Obj
from pumice.api import protobuf as pb
from pumice.api.scheme import ResourceKind, Scheme
from pumice.apiserver.crds import CustomResource
from pumice.apiserver.openapiroutes import (
    STRING,
    VERSION_INFO,
    Operation,
    Param,
    Route,
    discovery_routes,
    group_version_routes,
)

__all__ = ["OPENAPI_V2_PROTOBUF", "document_v2", "document_v2_protobuf", "document_v3", "etag", "root_v3",
           "v3_paths"]


#: the media type kubectl asks /openapi/v2 for
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
#: apimachinery's version.Info (``/version``), a Go struct with no protobuf message
_VERSION_INFO = "k8s.io.apimachinery.pkg.version.Info"
_VERSION_FIELDS = ("buildDate", "compiler", "gitCommit", "gitTreeState", "gitVersion", "goVersion", "major", "minor",
                   "platform")
_SPECIAL: dict[str, Obj] = {
    _VERSION_INFO: {"type": "object", "required": ["major", "minor", "gitVersion", "gitCommit", "gitTreeState",
                                                   "buildDate", "goVersion", "compiler", "platform"],
                    "properties": {f: {"type": "string", "default": ""} for f in _VERSION_FIELDS}},
    f"{_META}.Time": {"type": "string", "format": "date-time"},
    f"{_META}.MicroTime": {"type": "string", "format": "date-time"},
    f"{_META}.Duration": {"type": "string"},
    f"{_META}.FieldsV1": {"type": "object"},
    "k8s.io.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
    "k8s.io.apimachinery.pkg.runtime.RawExtension": {"type": "object"},
    f"{_META}.Patch": {"type": "object"},
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON": {},
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": {},
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": {},
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": {},
}
_SCALAR_SCHEMAS: dict[str, Obj] = {
    "string": {"type": "string"},
    "bytes": {"type": "string", "format": "byte"},
    "bool": {"type": "boolean"},
    "int32": {"type": "integer", "format": "int32"},
    "int64": {"type": "integer", "format": "int64"},
    "uint32": {"type": "integer", "format": "int32"},
    "uint64": {"type": "integer", "format": "int64"},
    "double": {"type": "number", "format": "double"},
    "float": {"type": "number", "format": "float"},
}


def definition_name(message: str) -> str:
    """Upstream's definition name of a protobuf message (``k8s.io.api.core.v1.Pod`` ->
    ``io.k8s.api.core.v1.Pod``)."""
    package, _, name = message.removeprefix("k8s.io.").rpartition(".")
    return f"io.k8s.{package.replace('_', '-')}.{name}"


def _crd_definition_name(cr: CustomResource, version: str, kind: str) -> str:
    """``io.ray.v1.RayCluster`` (``kind`` is the CRD's kind or list kind)."""
    return ".".join(reversed(cr.group.split("."))) + f".{version}.{kind}"


def _field_schema(ftype: str, ref: str) -> Obj:
    if ftype in _SCALAR_SCHEMAS:
        return dict(_SCALAR_SCHEMAS[ftype])
    if ftype not in pb.schema().messages and ftype not in _SPECIAL:
        return {}  # a message of an API group outside the schema (alpha versions): any value
    return {"$ref": ref + definition_name(ftype)}


@cache
def _message_schema(message: str, ref: str) -> Obj:
    """The JSON schema of one message's JSON form (refs to other definitions)."""
    if message in _SPECIAL:
        return dict(_SPECIAL[message])
    msg = pb.schema().messages[message]
    if msg.list_wrapper:
        return {"type": "array", "items": _field_schema(msg.fields[0].type, ref)}
    props: Obj = {}
    for f in msg.fields:
        if f.inline:
            props.update(_message_schema(f.type, ref).get("properties", {}))
            continue
        if f.map_key:
            s: Obj = {"type": "object", "additionalProperties": _field_schema(f.map_value, ref)}
        elif f.repeated:
            s = {"type": "array", "items": _field_schema(f.type, ref)}
        else:
            s = _field_schema(f.type, ref)
        if f.patch_strategy:
            s["x-kubernetes-patch-strategy"] = f.patch_strategy
        if f.patch_merge_key:
            s["x-kubernetes-patch-merge-key"] = f.patch_merge_key
        props[f.name] = s
    return {"type": "object", "properties": props}


def _referenced(message: str, seen: set[str]) -> None:
    """Add ``message`` and every message its fields reach to ``seen``."""
    if message in seen:
        return
    seen.add(message)
    if message in _SPECIAL:
        return
    msg = pb.schema().messages.get(message)
    if msg is None:
        return
    for f in msg.fields:
        for t in (f.type, f.map_value):
            if t and t not in _SCALAR_SCHEMAS and not t.startswith("map:"):
                _referenced(t, seen)


def _gvk(group: str, version: str, kind: str) -> Obj:
    return {"group": group, "kind": kind, "version": version}


def _custom_by_kind(crds: dict[str, CustomResource]) -> dict[tuple[str, str], CustomResource]:
    return {(cr.group, cr.kind): cr for cr in crds.values()} | {(cr.group, cr.list_kind): cr for cr in crds.values()}


class _Definitions:
    """Resolves ``(api_version, kind)`` to a definition name and records every definition the
    routes need, then builds them (each built-in message with the messages its fields reach).

    Built-in kinds are described from the protobuf schema, custom kinds from their CRD (v3: its
    ``openAPIV3Schema``; v2: a schema without structure), their lists from the kind."""

    def __init__(self, scheme: Scheme, crds: dict[str, CustomResource], ref: str, *, v3: bool) -> None:
        self.scheme = scheme
        self.crds = crds
        self.ref = ref
        self.v3 = v3
        self._custom = _custom_by_kind(crds)
        self._custom_resources = {(cr.group, cr.plural) for cr in crds.values()}
        self.messages: set[str] = set()
        self.custom: set[tuple[str, str, str]] = set()  # (group, version, kind or list kind)

    def is_custom(self, rk: ResourceKind) -> bool:
        return (rk.group, rk.plural) in self._custom_resources

    def __call__(self, api_version: str, kind: str) -> str | None:
        group, _, version = api_version.rpartition("/")
        if (api_version, kind) == VERSION_INFO:
            self.messages.add(_VERSION_INFO)
            return definition_name(_VERSION_INFO)
        if api_version == "meta/v1":
            msg: str | None = f"{_META}.{kind}"
            if msg not in pb.schema().messages and msg not in _SPECIAL:
                return None
        else:
            cr = self._custom.get((group, kind))
            if cr is not None:
                ver = cr.versions.get(version)
                if ver is None or not ver.served:
                    return None
                self.custom.add((group, version, kind))
                if kind == cr.list_kind:  # a list refers to its items and ListMeta
                    self.custom.add((group, version, cr.kind))
                    self.messages.add(f"{_META}.ListMeta")
                return _crd_definition_name(cr, version, kind)
            msg = pb.message_for(api_version, kind)
            if msg is None:
                return None
        self.messages.add(msg)
        return definition_name(msg)

    def build(self, kinds: list[ResourceKind], *, resources: bool = True) -> Obj:
        """The definitions recorded (plus, when ``resources``, ObjectMeta, Status, DeleteOptions
        and WatchEvent, which kubectl looks up), ``x-kubernetes-group-version-kind`` on each
        served kind of ``kinds``."""
        messages: set[str] = set()
        for m in sorted(self.messages):
            _referenced(m, messages)
        for kind in ("ObjectMeta", "Status", "DeleteOptions", "WatchEvent") if resources else ():
            _referenced(f"{_META}.{kind}", messages)
        gvks: dict[str, list[Obj]] = {}
        for rk in sorted(kinds, key=lambda r: (r.group, r.version, r.kind)):
            if self.is_custom(rk):
                continue
            for kind in (rk.kind, rk.list_kind):
                msg = pb.message_for(rk.api_version, kind)
                if msg is not None and _gvk(rk.group, rk.version, kind) not in gvks.get(msg, []):
                    gvks.setdefault(msg, []).append(_gvk(rk.group, rk.version, kind))
        defs: Obj = {}
        for m in sorted(messages):
            if m not in pb.schema().messages and m not in _SPECIAL:
                continue
            schema = copy.deepcopy(_message_schema(m, self.ref))
            if m in gvks:
                schema["x-kubernetes-group-version-kind"] = gvks[m]
                props = schema.setdefault("properties", {})
                props.setdefault("apiVersion", {"type": "string"})
                props.setdefault("kind", {"type": "string"})
            defs[definition_name(m)] = schema
        for group, version, kind in sorted(self.custom):
            cr = self._custom[(group, kind)]
            if kind != cr.list_kind:
                defs[_crd_definition_name(cr, version, kind)] = self._custom_schema(cr, version)
                continue
            defs[_crd_definition_name(cr, version, kind)] = {
                "type": "object", "required": ["items"], "properties": {
                    "apiVersion": {"type": "string"},
                    "items": {"type": "array", "items": {"$ref": self.ref + _crd_definition_name(cr, version, cr.kind)}},
                    "kind": {"type": "string"},
                    "metadata": {"$ref": self.ref + definition_name(f"{_META}.ListMeta")},
                }, "x-kubernetes-group-version-kind": [_gvk(group, version, kind)]}
        return dict(sorted(defs.items()))

    def _custom_schema(self, cr: CustomResource, version: str) -> Obj:
        ver = cr.versions[version]
        schema: Obj
        if self.v3 and ver.schema:
            schema = copy.deepcopy(ver.schema)
            props = schema.setdefault("properties", {})
            props["apiVersion"] = {"type": "string"}
            props["kind"] = {"type": "string"}
            props["metadata"] = {"$ref": self.ref + definition_name(f"{_META}.ObjectMeta")}
            schema.setdefault("type", "object")
        else:
            schema = {}
        schema["x-kubernetes-group-version-kind"] = [_gvk(cr.group, version, cr.kind)]
        return schema


def _routes(scheme: Scheme, defs: _Definitions, group_version: tuple[str, str] | None = None) -> list[Route]:
    routes: list[Route] = []
    for g, v in scheme.group_versions():
        if group_version is None or group_version == (g, v):
            routes += group_version_routes(g, v, scheme.kinds_in(g, v), defs, defs.is_custom)
    return routes


def _params(params: tuple[Param, ...], *, v3: bool) -> list[Obj]:
    out = []
    for p in params:
        o: Obj = {"name": p.name, "in": p.location}
        if p.required:
            o["required"] = True
        if v3:
            o["schema"] = {"type": p.type}
        else:
            o["type"] = p.type
        out.append(o)
    return out


_REASONS = {"200": "OK", "201": "Created", "202": "Accepted", "401": "Unauthorized"}


def _schema_of(definition: str, ref: str) -> Obj:
    return {"type": "string"} if definition == STRING else {"$ref": ref + definition}


def _operation_v2(op: Operation) -> Obj:
    ref = "#/definitions/"
    params = []
    if op.body is not None:
        body: Obj = {"name": "body", "in": "body", "schema": _schema_of(op.body, ref)}
        if op.body_required:
            body["required"] = True
        params.append(body)
    params += _params(op.params, v3=False)
    out: Obj = {"description": op.description, "operationId": op.operation_id, "consumes": list(op.consumes),
                "produces": list(op.produces)}
    if params:
        out["parameters"] = params
    out["responses"] = {code: {"description": _REASONS[code], "schema": _schema_of(d, ref)} for code, d in op.responses}
    out["responses"]["401"] = {"description": _REASONS["401"]}
    return out


def _operation_v3(op: Operation) -> Obj:
    ref = "#/components/schemas/"
    out: Obj = {"description": op.description, "operationId": op.operation_id}
    if op.params:
        out["parameters"] = _params(op.params, v3=True)
    if op.body is not None:
        out["requestBody"] = {"content": {t: {"schema": _schema_of(op.body, ref)} for t in op.consumes}}
        if op.body_required:
            out["requestBody"]["required"] = True
    out["responses"] = {code: {"description": _REASONS[code],
                               "content": {t: {"schema": _schema_of(d, ref)} for t in op.produces}}
                        for code, d in op.responses}
    out["responses"]["401"] = {"description": _REASONS["401"]}
    return out


def _paths(routes: list[Route], *, v3: bool) -> Obj:
    paths: Obj = {}
    for r in routes:
        item: Obj = {}
        if r.params:
            item["parameters"] = _params(r.params, v3=v3)
        for op in r.operations:
            o = _operation_v3(op) if v3 else _operation_v2(op)
            o["tags"] = [r.tag]
            if op.action:
                o["x-kubernetes-action"] = op.action
            if op.gvk is not None:
                o["x-kubernetes-group-version-kind"] = _gvk(*op.gvk)
            item[op.method] = o
        paths[r.path] = item
    return paths


#: the bearer token every request but the public ones carries (kube-apiserver's BearerToken scheme)
_BEARER: Obj = {"type": "apiKey", "name": "authorization", "in": "header",
                "description": "Bearer token: 'authorization: Bearer <token>'"}


def document_v2(scheme: Scheme, crds: dict[str, CustomResource]) -> Obj:
    """The Swagger 2.0 document: every served route (:mod:`pumice.apiserver.openapiroutes`) and
    the definitions of every served kind and of what the routes reference."""
    defs = _Definitions(scheme, crds, "#/definitions/", v3=False)
    for rk in scheme:  # every served kind, even one no route references
        defs(rk.api_version, rk.kind)
    routes = _routes(scheme, defs) + discovery_routes(_groups(scheme), defs)
    definitions = defs.build(list(scheme))
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": _version()},
            "paths": _paths(routes, v3=False), "definitions": definitions,
            "securityDefinitions": {"BearerToken": _BEARER}, "security": [{"BearerToken": []}]}


def _groups(scheme: Scheme) -> list[str]:
    return sorted({g for g, _ in scheme.group_versions() if g})


def _version() -> str:
    from pumice.apiserver.discovery import VERSION_INFO

    return str(VERSION_INFO["gitVersion"])


def v3_paths(scheme: Scheme) -> list[str]:
    """The documents ``/openapi/v3`` lists, as kube-apiserver splits them: ``api`` (``/api/``),
    ``api/v1``, ``apis`` (``/apis/``), ``apis/<group>`` (``/apis/<group>/``), each served
    ``apis/<group>/<version>`` and ``version`` (``/version/``), sorted."""
    gvs = [_gv_path(g, v) for g, v in scheme.group_versions()]
    return sorted({"api", "apis", "version", *gvs, *(f"apis/{g}" for g in _groups(scheme))})


def etag(data: bytes) -> str:
    """kube-openapi's hash of a served v3 document: the upper-case hex SHA-512 of its bytes."""
    return hashlib.sha512(data).hexdigest().upper()


def root_v3(etags: dict[str, str]) -> Obj:
    """``/openapi/v3``: ``etags`` is ``{document path: etag of its served bytes}``; each entry's
    ``serverRelativeURL`` carries the hash, as kube-openapi's ``/openapi/v3/<path>?hash=<etag>``."""
    return {"paths": {p: {"serverRelativeURL": f"/openapi/v3/{p}?hash={e}"} for p, e in sorted(etags.items())}}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def document_v3(scheme: Scheme, crds: dict[str, CustomResource], path: str) -> Obj | None:
    """The OpenAPI 3.0 document at ``path`` (one of :func:`v3_paths`). A group-version's has its
    routes (every operation, see :mod:`pumice.apiserver.openapiroutes`) and the component schemas
    they reference, with its kinds'; ``api``, ``apis``, ``apis/<group>`` and ``version`` have
    their one discovery route. None when nothing is served at ``path``."""
    if path not in v3_paths(scheme):
        return None
    defs = _Definitions(scheme, crds, "#/components/schemas/", v3=True)
    parts = path.split("/")
    kinds: list[ResourceKind] = []
    if path in ("api", "apis", "version"):
        routes = discovery_routes([], defs, core=path == "api", apis=path == "apis", version=path == "version")
    elif parts[0] == "apis" and len(parts) == 2:
        routes = discovery_routes([parts[1]], defs, core=False, apis=False, version=False)
    else:
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        kinds = scheme.kinds_in(group, version)
        for rk in kinds:  # every kind of the group-version, even one no route references
            defs(rk.api_version, rk.kind)
        routes = _routes(scheme, defs, (group, version))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": _version()},
            "paths": _paths(routes, v3=True),
            "components": {"schemas": defs.build(kinds, resources=bool(kinds)),
                           "securitySchemes": {"BearerToken": _BEARER}},
            "security": [{"BearerToken": []}]}


# ---------------------------------------------------------------------- gnostic openapi_v2 protobuf
# field numbers of gnostic's openapi_v2 messages (Document, Info, Definitions, NamedSchema, Schema,
# TypeItem, ItemsItem, Properties, AdditionalPropertiesItem, NamedAny, Any)


def _ld(out: bytearray, number: int, data: bytes) -> None:
    out += _key(number, 2) + _uvarint(len(data)) + data


def _key(number: int, wire: int) -> bytes:
    return _uvarint((number << 3) | wire)


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _named_any(name: str, value: Any) -> bytes:
    any_msg = bytearray()
    _ld(any_msg, 2, json.dumps(value, separators=(",", ":")).encode())  # Any.yaml (JSON is YAML)
    out = bytearray()
    _ld(out, 1, name.encode())
    _ld(out, 2, bytes(any_msg))
    return bytes(out)


def _schema_pb(s: Obj) -> bytes:
    out = bytearray()
    if "$ref" in s:
        _ld(out, 1, str(s["$ref"]).encode())
    if "format" in s:
        _ld(out, 2, str(s["format"]).encode())
    if "description" in s:
        _ld(out, 4, str(s["description"]).encode())
    for r in s.get("required") or []:
        _ld(out, 19, str(r).encode())
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        item = bytearray()
        _ld(item, 1, _schema_pb(ap))
        _ld(out, 21, bytes(item))
    elif isinstance(ap, bool):
        _ld(out, 21, _key(2, 0) + _uvarint(int(ap)))
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        t = bytearray()
        for v in types:
            _ld(t, 1, str(v).encode())
        _ld(out, 22, bytes(t))
    if isinstance(s.get("items"), dict):
        it = bytearray()
        _ld(it, 1, _schema_pb(s["items"]))
        _ld(out, 23, bytes(it))
    if isinstance(s.get("properties"), dict):
        props = bytearray()
        for name, sub in s["properties"].items():
            named = bytearray()
            _ld(named, 1, name.encode())
            _ld(named, 2, _schema_pb(sub if isinstance(sub, dict) else {}))
            _ld(props, 1, bytes(named))
        _ld(out, 25, bytes(props))
    for k, v in s.items():
        if k.startswith("x-"):
            _ld(out, 31, _named_any(k, v))
    return bytes(out)


def _named(name: str, value: bytes) -> bytes:
    out = bytearray()
    _ld(out, 1, name.encode())
    _ld(out, 2, value)
    return bytes(out)


def _parameter_pb(p: Obj) -> bytes:
    """A ParametersItem: a BodyParameter, or a query or path NonBodyParameter sub-schema."""
    sub = bytearray()
    if p["in"] == "body":
        _ld(sub, 2, str(p["name"]).encode())
        _ld(sub, 3, b"body")
        if p.get("required"):
            sub += _key(4, 0) + _uvarint(1)
        _ld(sub, 5, _schema_pb(p["schema"]))
        choice = bytearray()
        _ld(choice, 1, bytes(sub))  # Parameter.body_parameter
    else:
        if p.get("required"):
            sub += _key(1, 0) + _uvarint(1)
        _ld(sub, 2, str(p["in"]).encode())
        _ld(sub, 4, str(p["name"]).encode())
        _ld(sub, 6 if p["in"] == "query" else 5, str(p["type"]).encode())
        non_body = bytearray()
        _ld(non_body, 3 if p["in"] == "query" else 4, bytes(sub))  # query / path sub-schema
        choice = bytearray()
        _ld(choice, 2, bytes(non_body))  # Parameter.non_body_parameter
    parameter = bytearray()
    _ld(parameter, 1, bytes(choice))  # ParametersItem.parameter
    return bytes(parameter)


def _operation_pb(op: Obj) -> bytes:
    out = bytearray()
    for tag in op.get("tags", []):
        _ld(out, 1, str(tag).encode())
    if "description" in op:
        _ld(out, 3, str(op["description"]).encode())
    _ld(out, 5, str(op["operationId"]).encode())
    for media in op.get("produces", []):
        _ld(out, 6, str(media).encode())
    for media in op.get("consumes", []):
        _ld(out, 7, str(media).encode())
    for p in op.get("parameters", []):
        _ld(out, 8, _parameter_pb(p))
    responses = bytearray()
    for code, r in op["responses"].items():
        response = bytearray()
        _ld(response, 1, str(r["description"]).encode())
        if "schema" in r:
            item = bytearray()
            _ld(item, 1, _schema_pb(r["schema"]))  # SchemaItem.schema
            _ld(response, 2, bytes(item))
        value = bytearray()
        _ld(value, 1, bytes(response))  # ResponseValue.response
        _ld(responses, 1, _named(code, bytes(value)))
    _ld(out, 9, bytes(responses))
    for k, v in op.items():
        if k.startswith("x-"):
            _ld(out, 13, _named_any(k, v))
    return bytes(out)


#: PathItem field numbers of the HTTP methods
_PATH_ITEM_FIELDS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item_pb(item: Obj) -> bytes:
    out = bytearray()
    for method, number in _PATH_ITEM_FIELDS.items():
        if method in item:
            _ld(out, number, _operation_pb(item[method]))
    for p in item.get("parameters", []):
        _ld(out, 9, _parameter_pb(p))
    return bytes(out)


def document_v2_protobuf(doc: Obj) -> bytes:
    """``doc`` (from :func:`document_v2`) as gnostic's openapi_v2.Document protobuf: info, paths
    (operations with their parameters, responses and ``x-kubernetes-*`` extensions),
    definitions, security and the BearerToken security definition."""
    out = bytearray()
    _ld(out, 1, str(doc.get("swagger", "2.0")).encode())
    info = bytearray()
    _ld(info, 1, str(doc["info"]["title"]).encode())
    _ld(info, 2, str(doc["info"]["version"]).encode())
    _ld(out, 2, bytes(info))
    paths = bytearray()
    for name, item in doc.get("paths", {}).items():
        _ld(paths, 2, _named(name, _path_item_pb(item)))
    _ld(out, 8, bytes(paths))
    defs = bytearray()
    for name, schema in doc["definitions"].items():
        _ld(defs, 1, _named(name, _schema_pb(schema)))
    _ld(out, 9, bytes(defs))
    for requirement in doc.get("security", []):
        req = bytearray()
        for name, scopes in requirement.items():
            values = bytearray()
            for scope in scopes:
                _ld(values, 1, str(scope).encode())
            _ld(req, 1, _named(name, bytes(values)))
        _ld(out, 12, bytes(req))
    if doc.get("securityDefinitions"):
        sec = bytearray()
        for name, d in doc["securityDefinitions"].items():
            key = bytearray()
            for number, field in ((1, "type"), (2, "name"), (3, "in"), (4, "description")):
                if field in d:
                    _ld(key, number, str(d[field]).encode())
            item = bytearray()
            _ld(item, 2, bytes(key))  # SecurityDefinitionsItem.api_key_security
            _ld(sec, 1, _named(name, bytes(item)))
        _ld(out, 13, bytes(sec))
    return bytes(out)
