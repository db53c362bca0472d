"""OpenAPI documents generated from the schemas pumice has: /openapi/v2 (JSON, or the protobuf
kubectl asks for) and /openapi/v3 (per group-version documents with component schemas).

Built-in kinds are described from the protobuf schema (:mod:`pumice.api.protobuf`: every field,
its JSON name and type), custom resources from their CRD's ``openAPIV3Schema``. Definition names
follow upstream's (``io.k8s.api.core.v1.Pod``, ``io.ray.v1.RayCluster``); served kinds carry
``x-kubernetes-group-version-kind``. Every PATCH operation declares the ``fieldValidation``
parameter, which is what kubectl checks before it relies on server-side field validation.

Deviates: no descriptions (upstream's prose is not copied) and no ``required`` lists for built-in
kinds; in v2, custom resources are schemas without structure (any value validates), as v2 cannot
express structural schemas; the v2 document has no paths (kubectl reads only its definitions).

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

__all__ = ["OPENAPI_V2_PROTOBUF", "document_v2", "document_v2_protobuf", "document_v3", "root_v3"]


#: the media type kubectl asks /openapi/v2 for
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_SPECIAL: dict[str, Obj] = {
    f"{_META}.Time": {"type": "string", "format": "date-time"},
    f"{_META}.MicroTime": {"type": "string", "format": "date-time"},
    f"{_META}.Duration": {"type": "string"},
    f"{_META}.FieldsV1": {"type": "object"},
    "k8s.io.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
    "k8s.io.apimachinery.pkg.runtime.RawExtension": {"type": "object"},
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


def _crd_definition_name(cr: CustomResource, version: str) -> str:
    return ".".join(reversed(cr.group.split("."))) + f".{version}.{cr.kind}"


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


def _builtin_kinds(scheme: Scheme, crds: dict[str, CustomResource],
                   group_version: tuple[str, str] | None = None) -> list[tuple[ResourceKind, str, str | None]]:
    """``(kind, message, list message)`` of every served built-in kind (optionally of one GV)."""
    out = []
    custom = {(cr.group, cr.plural) for cr in crds.values()}
    for rk in scheme:
        if (rk.group, rk.plural) in custom:
            continue
        if group_version is not None and (rk.group, rk.version) != group_version:
            continue
        msg = pb.message_for(rk.api_version, rk.kind)
        if msg is not None:
            out.append((rk, msg, pb.message_for(rk.api_version, rk.list_kind)))
    return sorted(out, key=lambda t: (t[0].group, t[0].version, t[0].kind))


def _gvk(group: str, version: str, kind: str) -> Obj:
    return {"group": group, "kind": kind, "version": version}


def _definitions(scheme: Scheme, crds: dict[str, CustomResource], ref: str, *, v3: bool,
                 group_version: tuple[str, str] | None = None) -> Obj:
    kinds = _builtin_kinds(scheme, crds, group_version)
    messages: set[str] = set()
    gvks: dict[str, list[Obj]] = {}
    for rk, msg, list_msg in kinds:
        _referenced(msg, messages)
        gvks.setdefault(msg, []).append(_gvk(rk.group, rk.version, rk.kind))
        if list_msg is not None:
            _referenced(list_msg, messages)
            gvks.setdefault(list_msg, []).append(_gvk(rk.group, rk.version, rk.list_kind))
    if group_version in (None, ("", "v1")) or crds:
        # kubectl looks up meta kinds (DeleteOptions, Status, WatchEvent) and v1 List by GVK
        for kind in ("Status", "DeleteOptions", "WatchEvent"):
            _referenced(f"{_META}.{kind}", messages)
        messages.add(f"{_META}.ObjectMeta")
        _referenced(f"{_META}.ObjectMeta", messages)
    defs: Obj = {}
    for m in sorted(messages):
        if m not in pb.schema().messages and m not in _SPECIAL:
            continue
        schema = copy.deepcopy(_message_schema(m, ref))
        if m in gvks:
            schema["x-kubernetes-group-version-kind"] = gvks[m]
            props = schema.setdefault("properties", {})
            props.setdefault("apiVersion", {"type": "string"})
            props.setdefault("kind", {"type": "string"})
        defs[definition_name(m)] = schema
    for cr in sorted(crds.values(), key=lambda c: c.resource):
        for vname, ver in sorted(cr.versions.items()):
            if not ver.served:
                continue
            if group_version is not None and group_version != (cr.group, vname):
                continue
            gvk = [_gvk(cr.group, vname, cr.kind)]
            if v3 and ver.schema:
                schema = copy.deepcopy(ver.schema)
                props = schema.setdefault("properties", {})
                props["apiVersion"] = {"type": "string"}
                props["kind"] = {"type": "string"}
                props["metadata"] = {"$ref": ref + definition_name(f"{_META}.ObjectMeta")}
                schema.setdefault("type", "object")
            else:
                schema = {}
            schema["x-kubernetes-group-version-kind"] = gvk
            defs[_crd_definition_name(cr, vname)] = schema
    return defs


def document_v2(scheme: Scheme, crds: dict[str, CustomResource]) -> Obj:
    """The Swagger 2.0 document: definitions of every served kind (no paths)."""
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": _version()}, "paths": {},
            "definitions": _definitions(scheme, crds, "#/definitions/", v3=False)}


def _version() -> str:
    from pumice.apiserver.discovery import VERSION_INFO

    return str(VERSION_INFO["gitVersion"])


def root_v3(scheme: Scheme, crds: dict[str, CustomResource]) -> Obj:
    """``/openapi/v3``: one entry per served group-version, with a hash of its document."""
    paths = {}
    for g, v in scheme.group_versions():
        p = _gv_path(g, v)
        doc = document_v3(scheme, crds, g, v)
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16].upper()
        paths[p] = {"serverRelativeURL": f"/openapi/v3/{p}?hash={digest}"}
    return {"paths": paths}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def document_v3(scheme: Scheme, crds: dict[str, CustomResource], group: str, version: str) -> Obj | None:
    """The OpenAPI 3.0 document of one group-version: a PATCH operation per kind (declaring
    ``fieldValidation``) and the component schemas of its kinds."""
    kinds = scheme.kinds_in(group, version)
    if not kinds:
        return None
    paths: Obj = {}
    prefix = "/" + _gv_path(group, version)
    for rk in kinds:
        path = f"{prefix}/namespaces/{{namespace}}/{rk.plural}/{{name}}" if rk.namespaced \
            else f"{prefix}/{rk.plural}/{{name}}"
        paths[path] = {"patch": {
            "x-kubernetes-group-version-kind": _gvk(rk.group, rk.version, rk.kind),
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}},
        }}
    schemas = _definitions(scheme, crds, "#/components/schemas/", v3=True, group_version=(group, version))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": _version()}, "paths": paths,
            "components": {"schemas": schemas}}


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


def document_v2_protobuf(doc: Obj) -> bytes:
    """``doc`` (from :func:`document_v2`) as gnostic's openapi_v2.Document protobuf."""
    out = bytearray()
    _ld(out, 1, str(doc.get("swagger", "2.0")).encode())
    info = bytearray()
    _ld(info, 1, str(doc["info"]["title"]).encode())
    _ld(info, 2, str(doc["info"]["version"]).encode())
    _ld(out, 2, bytes(info))
    _ld(out, 8, b"")  # Paths
    defs = bytearray()
    for name, schema in doc["definitions"].items():
        named = bytearray()
        _ld(named, 1, name.encode())
        _ld(named, 2, _schema_pb(schema))
        _ld(defs, 1, bytes(named))
    _ld(out, 9, bytes(defs))
    return bytes(out)
