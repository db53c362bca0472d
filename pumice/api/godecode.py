"""Go's ``encoding/json`` type errors for a built-in object decoded into its Go struct.

kube-apiserver decodes the body of a built-in kind into the kind's Go struct before anything else
(sigs.k8s.io/json, a fork of encoding/json). A JSON value of a type the Go field cannot hold is an
``*json.UnmarshalTypeError``; the decoder keeps the first one in document order and goes on, and
the handler answers it as a 400 (``Deployment in version "v1" cannot be handled as a Deployment:
json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32``,
see :func:`pumice.apiserver.errors.cannot_handle`).

The error names:

- the JSON value: ``string``, ``bool``, ``object``, ``array``, ``number``; a number put into an
  integer field that cannot take it (a fraction, out of range) is ``number <literal>``;
- the innermost Go struct that holds the field (a field of an embedded ``,inline`` struct counts as
  its parent's), then the JSON names of every struct field on the way, joined with ``.`` (list
  indexes and map keys are not named: ``EnvVar.spec.template.spec.containers.env.value``);
- the Go type as reflection prints it, pointers dropped: ``int32``, ``[]v1.Container``,
  ``map[string]string``, ``v1.RestartPolicy``, ``[]uint8`` (a ``[]byte``).

Struct names, field names and types come from the protobuf schema (:mod:`pumice.api.protobuf`:
the Go types of named fields are recorded there by tools/gen_protobuf_schema.py). ``null`` is
never an error (it leaves the field unset). Types with their own JSON decoding (Time,
IntOrString, RawExtension, ...) are not checked here: their errors are not type errors; but a
Quantity that does not parse is Quantity.UnmarshalJSON's error, which stops the decoding as well
(``quantities must match the regular expression '...'``).

Mirrors: Go encoding/json decode.go (UnmarshalTypeError, errorContext), sigs.k8s.io/json.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from pumice.api import protobuf
from pumice.api.quantity import ERR_FORMAT_WRONG, go_parse_error, parse_quantity

__all__ = ["LITERAL_TEXTS", "go_json_value", "unmarshal_error"]

LITERAL_TEXTS: ContextVar[dict[int, tuple[float, str]] | None] = ContextVar("LITERAL_TEXTS", default=None)
"""The current request's JSON float literals whose text the float's ``repr`` would not give back
(``3e1``, ``1e400``), by ``id`` of the plain float now in the body: ``(float, text)`` (see
pumice.apiserver.decode.plain_floats). Go's decoder quotes a number's literal text in its error
(``number 3e1``), so :func:`unmarshal_error` takes it from here; set per request by the HTTP
handler (None: none)."""

#: messages whose Go type decodes JSON itself (an UnmarshalJSON method): not walked
_CUSTOM_JSON = frozenset({
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time", "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration", "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "k8s.io.apimachinery.pkg.api.resource.Quantity", "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "k8s.io.apimachinery.pkg.runtime.RawExtension", "k8s.io.apimachinery.pkg.runtime.Unknown",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
})
#: proto scalar -> the Go type it is when the field is not a named type
_SCALAR_GO = {"string": "string", "int32": "int32", "int64": "int64", "bool": "bool", "bytes": "[]uint8",
              "double": "float64", "float": "float32", "uint32": "uint32", "uint64": "uint64"}
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1), "uint32": (0, 2**32 - 1),
               "uint64": (0, 2**64 - 1)}


class _Found(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def go_json_value(value: Any) -> str:
    """The name Go's decoder gives a JSON value in a type error (``number`` for any number)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _number_literal(value: int | float) -> str:
    """The number's JSON text as the request wrote it (the literal Go's error quotes)."""
    if isinstance(value, int):
        return str(value)
    texts = LITERAL_TEXTS.get()
    hit = texts.get(id(value)) if texts else None
    return hit[1] if hit is not None and hit[0] is value else repr(value)


_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
#: resource.ErrFormatWrong
QUANTITY_FORMAT_WRONG = ERR_FORMAT_WRONG


def _quantity(value: Any) -> None:
    """Quantity.UnmarshalJSON: a JSON string (quotes dropped) or any other JSON text must parse as
    a quantity; its error is the decoder's as is (no ``json:`` prefix, no field)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _Found(QUANTITY_FORMAT_WRONG)
    if isinstance(value, str):
        if (error := go_parse_error(value)) is not None:
            raise _Found(error)
        try:  # a text Go reads that pumice's amounts cannot take ("-", ".")
            parse_quantity(value)
        except (KeyError, ValueError):
            raise _Found(QUANTITY_FORMAT_WRONG) from None


def _go_name(ptype: str) -> str:
    if ptype in _SCALAR_GO:
        return _SCALAR_GO[ptype]
    parts = ptype.split(".")
    return f"{parts[-2]}.{parts[-1]}"


def unmarshal_error(message: str | None, obj: Any) -> str | None:
    """The text of the first ``*json.UnmarshalTypeError`` Go's decoder meets putting ``obj`` (a
    decoded JSON object) into the Go struct of protobuf message ``message`` (the full name,
    :func:`pumice.api.protobuf.message_for`), or None (no such error; also for None ``message``)."""
    if message is None or not isinstance(obj, dict):
        return None
    schema = protobuf.schema()
    if message not in schema.messages:
        return None
    try:
        _struct(schema, message, obj, [])
    except _Found as f:
        return f.text
    return None


def _fields(schema: protobuf.Schema, message: str) -> dict[str, protobuf.Field]:
    """The JSON fields of ``message``'s Go struct, those of inline (embedded) structs promoted."""
    msg = schema.messages[message]
    out = dict(msg.by_name)
    for f in msg.inline:
        if f.type in schema.messages:
            for k, v in _fields(schema, f.type).items():
                out.setdefault(k, v)
    return out


def _fail(value: Any, go_type: str, path: list[str], struct: str, literal: bool = False) -> None:
    shown = go_json_value(value)
    if literal:
        shown = f"number {_number_literal(value)}"
    short = struct.rsplit(".", 1)[-1]
    raise _Found(f"json: cannot unmarshal {shown} into Go struct field {short}.{'.'.join(path)} of type {go_type}")


def _struct(schema: protobuf.Schema, message: str, obj: dict[str, Any], path: list[str]) -> None:
    fields = _fields(schema, message)
    for key, value in obj.items():
        f = fields.get(key)
        if f is None or value is None:
            continue
        _field(schema, f, value, [*path, key], message)


def _field(schema: protobuf.Schema, f: protobuf.Field, value: Any, path: list[str], struct: str) -> None:
    go = f.go_type
    if f.map_key:
        whole = go or f"map[{_go_name(f.map_key)}]{_go_name(f.map_value)}"
        if not isinstance(value, dict):
            _fail(value, whole, path, struct)
        elem_go = whole.split("]", 1)[1] if whole.startswith("map[") else ""
        for item in value.values():
            if item is not None:
                _value(schema, f.map_value, elem_go, item, path, struct)
        return
    if f.repeated:
        whole = go or "[]" + _go_name(f.type)
        if not isinstance(value, list):
            _fail(value, whole, path, struct)
        elem_go = whole[2:] if whole.startswith("[]") else ""
        for item in value:
            if item is not None:
                _value(schema, f.type, elem_go, item, path, struct)
        return
    _value(schema, f.type, go, value, path, struct)


def _value(schema: protobuf.Schema, ptype: str, go: str, value: Any, path: list[str], struct: str) -> None:
    """One value (not None) of proto type ``ptype``; ``go``: its Go type when a named one."""
    if ptype in _SCALAR_GO:
        go = go or _SCALAR_GO[ptype]
        t = type(value)
        if ptype == "string":
            if t is not str:
                _fail(value, go, path, struct)
        elif ptype == "bool":
            if t is not bool:
                _fail(value, go, path, struct)
        elif ptype in _INT_RANGES:
            if t is int:
                lo, hi = _INT_RANGES[ptype]
                if not lo <= value <= hi:
                    _fail(value, go, path, struct, literal=True)
            elif t is float:
                _fail(value, go, path, struct, literal=True)
            else:
                _fail(value, go, path, struct)
        elif ptype in ("double", "float"):
            if t is bool or t not in (int, float):
                _fail(value, go, path, struct)
        elif ptype == "bytes" and t is not str and t is not list:
            _fail(value, go, path, struct)
        return
    if ptype == _QUANTITY:
        _quantity(value)
        return
    if ptype in _CUSTOM_JSON or ptype not in schema.messages:
        return
    if not isinstance(value, dict):
        _fail(value, go or _go_name(ptype), path, struct)
    _struct(schema, ptype, value, path)
