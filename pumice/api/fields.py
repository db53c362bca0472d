"""Unknown-field detection and type checks for built-in kinds, from lightkube's typed models.

kube-apiserver decodes built-in objects into Go structs: unknown JSON fields are dropped
(``fieldValidation=Ignore``), reported as warnings (``Warn``) or rejected (``Strict``, kubectl's
default). pumice keeps objects as dicts, so it walks each object along the matching
``lightkube.models`` msgspec Struct and finds (and removes) the keys the type does not have.

Paths are reported as upstream does: ``spec.containers[0].bogus``, ``metadata.labels`` keys are
never unknown (maps take any key).

Type checks (:func:`type_causes`): kube-apiserver cannot decode a built-in object whose field has
the wrong JSON type into its Go struct. pumice checks the same walk tree's scalar leaves and
container shapes before admission and finds every mismatch as a field cause in the
structural-schema wording (``spec.containers: Invalid value: "x": spec.containers in body must
be of type array: "string"``); for a built-in kind the registry then answers Go's decode error
instead (400, :mod:`pumice.api.godecode`), custom resources the 422 with these causes. ``null`` means unset, as Go's decoder reads it: such keys are
removed from the object (and a ``null`` list item of objects becomes ``{}``). An integer must
also fit its field's Go type, the OpenAPI ``format`` of the field (the protobuf schema's
``int32``/``int64``, :mod:`pumice.api.protobuf`; an integer of no known format is an int64): Go's
decoder cannot put ``2147483648`` into an int32 nor ``99999999999999999999999`` into an int64,
and such a value is a ``FieldValueInvalid`` cause in the structural-schema wording
(``spec.replicas: Invalid value: 2147483648: spec.replicas in body must be of type int32``).

Mirrors: k8s.io/apimachinery pkg/runtime/serializer/json (strict decoding errors),
k8s.io/kube-openapi pkg/validation/validate (the int32/int64 format check).
"""

from __future__ import annotations

import base64
import importlib
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pumice._util import gotime
from pumice._util.gobase64 import CorruptInputError, canonical
from pumice.api.godecode import go_json_value
from pumice.api.memo import FixedPoints
from pumice.api.scheme import ResourceKind

__all__ = ["TIME_PARSE", "FixedPoints", "bytes_error", "field_types_ok", "go_unmarshal_error", "model_for",
           "object_meta_tree", "repair_bytes", "type_causes", "types_clean", "unknown_fields"]

_encode = msgspec.json.Encoder().encode

_MODULES = {
    "": "core_v1",
    "apps": "apps_v1",
    "batch": "batch_v1",
    "coordination.k8s.io": "coordination_v1",
    "scheduling.k8s.io": "scheduling_v1",
    "rbac.authorization.k8s.io": "rbac_v1",
    "events.k8s.io": "events_v1",
    "discovery.k8s.io": "discovery_v1",
    "apiextensions.k8s.io": "apiextensions_v1",
    "policy": "policy_v1",
    "autoscaling": "autoscaling_v1",
    "networking.k8s.io": "networking_v1",
    "storage.k8s.io": "storage_v1",
}


_EXACT_JSON = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "array"}


@dataclass(eq=False)
class _Struct:
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class _List:
    item: Any


@dataclass(eq=False)
class _Map:
    value: Any


@dataclass(eq=False, frozen=True)
class _Scalar:
    """A JSON scalar leaf: the JSON types it accepts (``string``, ``integer``, ``number``,
    ``boolean``); for an integer-only leaf, its ``format`` and the inclusive range ``lo``..``hi``
    an integer value must be in (None: any integer)."""

    types: frozenset[str]
    format: str = ""
    lo: int | None = None
    hi: int | None = None
    #: a metav1.Time or MicroTime leaf: the Go layout its string must parse with
    #: (:mod:`pumice._util.gotime`), "" otherwise
    layout: str = ""
    #: the Python types (exactly these) whose every value the leaf accepts as it is: the type
    #: checks pass such a value without a call (an integer leaf with a range looks at the value)
    plain: frozenset[type] = field(init=False)

    def __post_init__(self) -> None:
        ok = {t for t, name in _EXACT_JSON.items()
              if (name in self.types or (name == "integer" and "number" in self.types))
              and not (name == "integer" and self.lo is not None) and not (name == "string" and self.layout)}
        object.__setattr__(self, "plain", frozenset(ok))


_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
#: protobuf scalar type -> the OpenAPI integer format upstream publishes for it (kube-openapi)
_PROTO_INT_FORMATS = {"int32": "int32", "uint32": "int32", "int64": "int64", "uint64": "int64"}
#: protobuf message of a time field -> the leaf its JSON string is (the Go layout it is parsed with)
_PROTO_TIMES = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": _Scalar(frozenset({"string"}), layout=gotime.RFC3339_LAYOUT),
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": _Scalar(frozenset({"string"}), layout=gotime.MICRO_LAYOUT),
}
#: a resource.Quantity leaf (lightkube types it ``str``): Quantity.UnmarshalJSON takes a JSON
#: string or number (kube-openapi publishes it as oneOf string/number), and the registry stores a
#: number as its canonical string (:func:`pumice.api.protobuf.quantity_number`)
_PROTO_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_QUANTITY_LEAF = _Scalar(frozenset({"string", "number"}))
#: the reason of a :func:`type_causes` cause for a time string Go cannot parse: not a field
#: cause upstream, but the decoding error of the whole body (400, see errors.cannot_handle)
TIME_PARSE = "TimeParse"


def _scalar(types: frozenset[str], fmt: str = "int64") -> _Scalar:
    """A leaf; an integer-only leaf gets ``fmt``'s range (Go's int types: an unknown format is int64)."""
    if types != frozenset({"integer"}):
        return _Scalar(types)
    lo, hi = _INT_RANGES[fmt]
    return _Scalar(types, fmt, lo, hi)


def _with_format(node: Any, fmt: str) -> Any:
    """``node`` with its integer leaf (itself, or its list item / map value) in format ``fmt``."""
    if isinstance(node, _Scalar) and node.format and node.format != fmt:
        return _scalar(node.types, fmt)
    if isinstance(node, _List):
        item = _with_format(node.item, fmt)
        return node if item is node.item else _List(item)
    if isinstance(node, _Map):
        value = _with_format(node.value, fmt)
        return node if value is node.value else _Map(value)
    return node


_proto_index: dict[tuple[str, str, str], Any] | None = None


def _proto_message(cls: type) -> Any:
    """The protobuf message (:mod:`pumice.api.protobuf`) of a lightkube model class, or None:
    ``lightkube.models.core_v1.PodSpec`` is ``k8s.io.api.core.v1.PodSpec``, matched on the group's
    last name, the version and the type name."""
    global _proto_index
    if _proto_index is None:
        from pumice.api import protobuf

        _proto_index = {}
        for name, message in protobuf.schema().messages.items():
            parts = name.split(".")
            _proto_index[(parts[-3], parts[-2], parts[-1])] = message
    group, _, version = cls.__module__.rpartition(".")[2].rpartition("_")
    return _proto_index.get((group.rpartition("_")[2], version, cls.__name__))


_SCALARS: dict[type, str] = {
    msgspec.inspect.StrType: "string",
    msgspec.inspect.DateTimeType: "string",
    msgspec.inspect.DateType: "string",
    msgspec.inspect.BytesType: "string",
    msgspec.inspect.IntType: "integer",
    msgspec.inspect.FloatType: "number",
    msgspec.inspect.BoolType: "boolean",
}

_memo: dict[type, _Struct] = {}
_models: dict[tuple[str, str, str], Any] = {}


def _node(t: Any) -> Any:
    """A compact walk tree for a msgspec type: _Struct, _List, _Map (item/value None: any), or None
    (any value)."""
    if isinstance(t, msgspec.inspect.StructType):
        cached = _memo.get(t.cls)
        if cached is not None:
            return cached
        node = _memo[t.cls] = _Struct()
        message = _proto_message(t.cls)
        for f in t.fields:
            child = _node(f.type)
            pf = message.by_name.get(f.encode_name) if message is not None else None
            fmt = _PROTO_INT_FORMATS.get(pf.type) if pf is not None else None
            if pf is not None and pf.type in _PROTO_TIMES and type(child) is _Scalar:
                child = _PROTO_TIMES[pf.type]
            elif pf is not None and pf.type == _PROTO_QUANTITY and type(child) is _Scalar:
                child = _QUANTITY_LEAF
            node.fields[f.encode_name] = _with_format(child, fmt) if fmt else child
        return node
    if isinstance(t, msgspec.inspect.UnionType):
        members = [m for m in t.types if not isinstance(m, msgspec.inspect.NoneType)]
        if len(members) == 1:
            return _node(members[0])
        kinds = {_SCALARS.get(type(m)) for m in members}
        return None if None in kinds else _scalar(frozenset(k for k in kinds if k))
    if type(t) in _SCALARS:
        return _scalar(frozenset({_SCALARS[type(t)]}))
    # a list or map of untyped values (lightkube types Go's map[string]string as a bare dict) is
    # still a JSON array or object: only its items go unchecked
    if isinstance(t, msgspec.inspect.ListType | msgspec.inspect.SetType | msgspec.inspect.VarTupleType):
        return _List(_node(t.item_type))
    if isinstance(t, msgspec.inspect.DictType):
        return _Map(_node(t.value_type))
    return None


def model_for(rk: ResourceKind) -> Any:
    """The walk tree of a built-in kind's lightkube model, or None (no model: nothing checked)."""
    key = (rk.group, rk.version, rk.kind)
    if key in _models:
        return _models[key]
    tree = None
    module_name = _MODULES.get(rk.group)
    if module_name is not None and not module_name.endswith("_" + rk.version):  # autoscaling v1 and v2
        module_name = module_name.rsplit("_", 1)[0] + "_" + rk.version
    if module_name is not None:
        try:
            module = importlib.import_module(f"lightkube.models.{module_name}")
            cls = getattr(module, rk.kind, None)
            if cls is not None:
                tree = _node(msgspec.inspect.type_info(cls))
        except (ImportError, TypeError, ValueError):
            tree = None
    _models[key] = tree
    return tree


def object_meta_tree() -> Any:
    """The walk tree of metav1.ObjectMeta (checked for custom resources too)."""
    from lightkube.models.meta_v1 import ObjectMeta

    return _node(msgspec.inspect.type_info(ObjectMeta))


def unknown_fields(tree: Any, obj: Any, *, remove: bool, known: FixedPoints | None = None) -> list[str]:
    """Paths of fields of ``obj`` the model does not have (removed from ``obj`` when ``remove``),
    in document order.

    ``known``: the top-level object values other than ``metadata`` in which the walk found
    nothing before, by tree, field and JSON encoding (the walk is a function of those); such a
    value is not walked again, and one in which nothing is found now is added."""
    out: list[str] = []
    if known is None or type(tree) is not _Struct or type(obj) is not dict:
        _walk(tree, obj, "", out, remove)
        return out
    fields = tree.fields
    for k in list(obj):
        if k not in fields:
            out.append(k)
            if remove:
                del obj[k]
            continue
        child = fields[k]
        if child is None:
            continue
        v = obj[k]
        if type(v) is dict and k != "metadata":
            key = ((tree, k), _encode(v))
            if key in known:
                continue
            found = len(out)
            _walk(child, v, k, out, remove)
            if len(out) == found and known.usable(key[1]):
                known.add(key)
        else:
            _walk(child, v, k, out, remove)
    return out


def _walk(node: Any, value: Any, path: str, out: list[str], remove: bool) -> None:
    if node is None or isinstance(node, _Scalar):
        return
    if isinstance(node, _Struct):
        if not isinstance(value, dict):
            return
        fields = node.fields
        for k in list(value):
            if k in fields:
                child = fields[k]
                if child is not None:
                    _walk(child, value[k], f"{path}.{k}" if path else k, out, remove)
            else:
                out.append(f"{path}.{k}" if path else k)
                if remove:
                    del value[k]
    elif isinstance(node, _List):
        if isinstance(value, list):
            for i, item in enumerate(value):
                _walk(node.item, item, f"{path}[{i}]", out, remove)
    elif isinstance(node, _Map) and isinstance(value, dict):
        for k, item in value.items():
            _walk(node.value, item, f"{path}[{k}]", out, remove)


_PY_JSON = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (dict, "object"),
            (list, "array"))


def _json_type(value: Any) -> str:
    for py, name in _PY_JSON:
        if isinstance(value, py):
            return name
    return "null" if value is None else type(value).__name__


def _accepts(kinds: frozenset[str], value: Any) -> bool:
    t = _json_type(value)
    return t in kinds or (t == "integer" and "number" in kinds)


#: what a field error shows instead of a Secret's data (upstream's text)
REDACTED = "<secret contents redacted>"


def type_causes(tree: Any, obj: Any, path: str = "", *, redact: tuple[str, ...] = ()) -> list[Any]:
    """Field causes for every value of ``obj`` whose JSON type the model does not accept, or that
    is an integer out of its field's format range, in document order; ``null`` struct fields are removed from ``obj`` (unset), ``null`` items of a
    list of objects become ``{}``. Values under a path that starts with one of ``redact``
    (a Secret's ``data`` and ``stringData``) are shown as ``<secret contents redacted>``.

    Returns:
        :class:`pumice.api.admission.FieldCause` objects, reason ``FieldValueTypeInvalid`` (a
        wrong JSON type) or ``FieldValueInvalid`` (an integer out of range).
    """
    out: list[Any] = []
    if _types_ok(tree, obj):
        return out
    _types(tree, obj, path, out)
    if redact:
        for c in out:
            if c.field.startswith(redact) and c.reason == "FieldValueTypeInvalid":
                c.message = _type_cause(c.field, REDACTED, c.message.rsplit("must be of type ", 1)[1].split(":")[0],
                                        shown_type=c.message.rsplit('"', 2)[-2]).message
    return out


def types_clean(tree: Any, obj: Any, clean: FixedPoints, *, keep: str = "spec") -> bool:
    """True when :func:`type_causes` would find nothing in ``obj`` (making the same removals of
    ``null`` fields, so ``obj`` ends the same either way); False as soon as a value is wrong, with
    some of those removals made (then call :func:`type_causes`: it makes the rest and finds the
    causes, in document order, as it would have alone). The value
    under the top-level field ``keep`` (a Pod's ``spec``: unchanged by a status or metadata
    write) is looked up in ``clean`` by its JSON encoding and skipped when found; one that passes
    unchanged is added."""
    if type(tree) is not _Struct or type(obj) is not dict:
        return _types_ok(tree, obj)
    fields = tree.fields
    for k in [k for k in obj if k in fields]:
        v = obj[k]
        if v is None:
            del obj[k]
            continue
        if k == keep and type(v) is dict:
            key = (tree, _encode(v))
            if key in clean:
                continue
            if not _types_ok(fields[k], v):
                return False
            if clean.usable(key[1]) and _encode(v) == key[1]:
                clean.add(key)
        elif not _types_ok(fields[k], v):
            return False
    return True


def field_types_ok(tree: Any, key: str, value: Any) -> bool:
    """Whether :func:`type_causes` of an object would find nothing under its top-level field
    ``key`` holding ``value`` (not None), making the same removals of ``null`` fields in
    ``value``; False as well when ``tree`` is not an object's tree (then check the whole object)."""
    if type(tree) is not _Struct:
        return False
    node = tree.fields.get(key, _MISSING)
    return node is _MISSING or _types_ok(node, value)


def _type_cause(path: str, value: Any, want: str, *, shown_type: str | None = None) -> Any:
    from pumice.api.admission import FieldCause
    from pumice.api.schema import format_value

    shown = path or "<root>"
    seen = shown_type or _json_type(value)
    # the bad value shown is the JSON type seen (kube-openapi InvalidType's value), not the value
    return FieldCause(path, f"Invalid value: {format_value(seen)}: {shown} in body must be of type {want}: "
                            f"\"{seen}\"", "FieldValueTypeInvalid")


def _types_ok(node: Any, value: Any) -> bool:
    """:func:`_types` without building paths or causes: True when it would find nothing. Makes the
    same removals of ``null`` struct fields and the same ``null`` -> ``{}`` list items (they do not
    change what :func:`_types` reports afterwards), and stops at the first bad value."""
    if node is None:
        return True
    t = type(node)
    if t is _Scalar:
        name = _EXACT_JSON.get(type(value))
        if name is None:
            return _accepts(node.types, value) and _in_range(node, value)
        if name == "integer" and node.lo is not None:
            return node.lo <= value <= node.hi
        if name == "string" and node.layout:
            return gotime.parses(value, node.layout)
        return name in node.types or (name == "integer" and "number" in node.types)
    if t is _Struct:
        if type(value) is not dict:
            return False
        fields = node.fields
        for k in [k for k in value if k in fields]:
            v = value[k]
            if v is None:
                del value[k]
                continue
            child = fields[k]
            if type(child) is _Scalar and type(v) in child.plain:
                continue
            if not _types_ok(child, v):
                return False
        return True
    if t is _List:
        if type(value) is not list:
            return False
        item_node = node.item
        struct = isinstance(item_node, _Struct)
        plain = item_node.plain if type(item_node) is _Scalar else frozenset()
        for i, item in enumerate(value):
            if item is None and struct:
                value[i] = item = {}
            if type(item) not in plain and not _types_ok(item_node, item):
                return False
        return True
    if t is _Map:
        if type(value) is not dict:
            return False
        vnode = node.value
        plain = vnode.plain if type(vnode) is _Scalar else frozenset()
        return all(type(item) in plain or _types_ok(vnode, item) for item in value.values())
    return _types_slow_ok(node, value)


def _in_range(node: _Scalar, value: Any) -> bool:
    """Whether an accepted value is in the leaf's integer range (non-integers: nothing to check)."""
    return node.lo is None or type(value) is not int or node.lo <= value <= node.hi  # type: ignore[operator]


def _types_slow_ok(node: Any, value: Any) -> bool:
    out: list[Any] = []
    _types(node, value, "", out)
    return not out


def _types(node: Any, value: Any, path: str, out: list[Any]) -> None:
    # iterative over containers would be overkill: decode already bounded the depth (decode.py)
    if node is None:
        return
    if isinstance(node, _Scalar):
        if not _accepts(node.types, value):
            out.append(_type_cause(path, value, ",".join(sorted(node.types))))
        elif not _in_range(node, value):
            from pumice.api.admission import FieldCause
            from pumice.api.schema import format_value

            out.append(FieldCause(path, f"Invalid value: {format_value(value)}: {path or '<root>'} in body must be of "
                                        f"type {node.format}"))
        elif node.layout and type(value) is str:
            why = gotime.parse_error(value, node.layout)
            if why is not None:
                from pumice.api.admission import FieldCause

                out.append(FieldCause(path, why, TIME_PARSE))
        return
    if isinstance(node, _Struct):
        if not isinstance(value, dict):
            out.append(_type_cause(path, value, "object"))
            return
        for k in list(value):
            child = node.fields.get(k, _MISSING)
            if child is _MISSING:
                continue
            if value[k] is None:
                del value[k]
                continue
            _types(child, value[k], f"{path}.{k}" if path else k, out)
    elif isinstance(node, _List):
        if not isinstance(value, list):
            out.append(_type_cause(path, value, "array"))
            return
        for i, item in enumerate(value):
            if item is None and isinstance(node.item, _Struct):
                value[i] = item = {}
            _types(node.item, item, f"{path}[{i}]", out)
    elif isinstance(node, _Map):
        if not isinstance(value, dict):
            out.append(_type_cause(path, value, "object"))
            return
        for k, item in value.items():
            _types(node.value, item, f"{path}[{k}]", out)


_MISSING = object()


# ------------------------------------------------------------------ []byte fields

#: a ``[]byte`` leaf in a bytes tree
_BYTES = "bytes"
_bytes_trees: dict[tuple[str, str], Any] = {}


def _bytes_tree(message: str, seen: dict[str, Any]) -> Any:
    """The fields of protobuf ``message`` that lead to a ``bytes`` field, as a dict JSON name ->
    :data:`_BYTES`, ``("list", child)``, ``("map", child)`` or a nested dict (inline structs merged
    into their parent, as in JSON); None when there is none. ``seen``: messages in progress or done
    (the schema is recursive: JSONSchemaProps)."""
    from pumice.api import protobuf

    if message in seen:
        return seen[message]
    seen[message] = None
    msg = protobuf.schema().messages.get(message)
    if msg is None:
        return None
    tree: dict[str, Any] = {}
    node: Any
    for f in msg.fields:
        if f.map_key:
            child = _BYTES if f.map_value == "bytes" else _bytes_tree(f.map_value, seen)
            node = ("map", child) if child is not None else None
        else:
            child = _BYTES if f.type == "bytes" else _bytes_tree(f.type, seen)
            node = ("list", child) if child is not None and f.repeated and f.type != "bytes" else child
        if node is None:
            continue
        if f.inline and isinstance(node, dict):
            tree.update(node)
        else:
            tree[f.name] = node
    seen[message] = tree or None
    return seen[message]


def _bytes_tree_for(rk: ResourceKind) -> Any:
    key = (rk.api_version, rk.kind)
    if key not in _bytes_trees:
        from pumice.api import protobuf

        message = protobuf.message_for(rk.api_version, rk.kind)
        _bytes_trees[key] = _bytes_tree(message, {}) if message is not None else None
    return _bytes_trees[key]


def bytes_error(rk: ResourceKind, obj: Any) -> tuple[str, str] | None:
    """Check and canonicalise the ``[]byte`` fields of a built-in object (every ``bytes`` field of
    its protobuf message: a ConfigMap's ``binaryData``, a Secret's ``data``, a ``caBundle``, a
    CertificateSigningRequest's ``request``...) as kube-apiserver's JSON decoding does: each string
    must be base64 to Go (:func:`pumice._util.gobase64.std_decode`) and is stored as Go encodes the
    decoded bytes again (newlines dropped, padding bits zero), in place.

    Returns:
        None, or ``(path, message)`` of the first value in document order that is not base64
        (``binaryData[a]``, ``illegal base64 data at input byte 3``): Go's decoder keeps the first
        error. Values of another JSON type are left to :func:`type_causes`.

    Kinds without a ``bytes`` field (most) cost one dictionary lookup.
    """
    tree = _bytes_tree_for(rk)
    if tree is None or type(obj) is not dict:
        return None
    return _walk_bytes(tree, obj, "")


def repair_bytes(rk: ResourceKind, obj: Any) -> list[tuple[str, str]]:
    """Make every ``[]byte`` field of ``obj`` that is not base64 (stored before pumice checked them
    on write) the base64 of its UTF-8 text, in place, so it can be encoded (protobuf) as the bytes
    a writer most likely meant; the others are canonicalised as :func:`bytes_error` does.

    Returns:
        ``(path, message)`` for each value replaced, in document order.
    """
    tree = _bytes_tree_for(rk)
    found: list[tuple[str, str]] = []
    if tree is not None and type(obj) is dict:
        _walk_bytes(tree, obj, "", found)
    return found


def _fix_bytes(container: Any, key: Any, path: str, repaired: list[tuple[str, str]] | None) -> tuple[str, str] | None:
    """Canonicalise the ``[]byte`` string at ``container[key]``; a bad one is returned, or (with
    ``repaired``) replaced by the base64 of its UTF-8 text and listed there."""
    v = container[key]
    if type(v) is not str or not v:
        return None
    try:
        container[key] = canonical(v)
    except CorruptInputError as e:
        if repaired is None:
            return path, str(e)
        repaired.append((path, str(e)))
        container[key] = base64.b64encode(v.encode("utf-8", "surrogatepass")).decode()
    return None


def _walk_bytes(node: Any, value: Any, path: str, repaired: list[tuple[str, str]] | None = None) -> tuple[str, str] | None:
    if type(node) is dict:
        if type(value) is not dict:
            return None
        for k in list(value):
            child = node.get(k)
            if child is None:
                continue
            sub = f"{path}.{k}" if path else k
            found = (_fix_bytes(value, k, sub, repaired) if child is _BYTES
                     else _walk_bytes(child, value[k], sub, repaired))
            if found:
                return found
        return None
    shape, child = node
    if shape == "list":
        keys: list[Any] = list(range(len(value))) if type(value) is list else []
    else:
        keys = list(value) if type(value) is dict else []
    for k in keys:
        sub = f"{path}[{k}]"
        found = (_fix_bytes(value, k, sub, repaired) if child is _BYTES
                 else _walk_bytes(child, value[k], sub, repaired))
        if found:
            return found
    return None


_GO_SEGMENT = re.compile(r"([^.\[]+)|\[([^\]]*)\]")
_GO_SCALARS: dict[type, str] = {
    msgspec.inspect.StrType: "string", msgspec.inspect.BoolType: "bool", msgspec.inspect.FloatType: "float64",
    msgspec.inspect.DateTimeType: "v1.Time", msgspec.inspect.BytesType: "[]uint8", msgspec.inspect.AnyType: "string",
}


def _go_package(cls: type, package: str) -> str:
    """The Go package name of a model class: lightkube's ``core_v1``/``meta_v1``... are ``v1``;
    pumice's own models are in ``package`` (the kind's version)."""
    if cls.__module__.startswith("lightkube.models."):
        return cls.__module__.rpartition("_")[2]
    return package


def _go_type(t: Any, owner: type | None, name: str, package: str) -> str:
    """The Go type of a msgspec type (the field ``name`` of struct ``owner`` when at a field)."""
    fmt = ""
    while True:
        if isinstance(t, msgspec.inspect.Metadata):
            fmt = fmt or str((t.extra_json_schema or {}).get("format") or "")
            t = t.type
        elif isinstance(t, msgspec.inspect.UnionType):
            members = [m for m in t.types if not isinstance(m, msgspec.inspect.NoneType)]
            if len(members) != 1:
                return "intstr.IntOrString"
            t = members[0]
        else:
            break
    if isinstance(t, msgspec.inspect.IntType):
        if fmt in _INT_RANGES:
            return fmt
        message = _proto_message(owner) if owner is not None else None
        pf = message.by_name.get(name) if message is not None else None
        return _PROTO_INT_FORMATS.get(pf.type, "int64") if pf is not None else "int64"
    if isinstance(t, msgspec.inspect.StructType):
        return f"{_go_package(t.cls, package)}.{t.cls.__name__}"
    if isinstance(t, msgspec.inspect.ListType | msgspec.inspect.SetType | msgspec.inspect.VarTupleType):
        return "[]" + _go_type(t.item_type, None, "", package)
    if isinstance(t, msgspec.inspect.DictType):
        return "map[string]" + _go_type(t.value_type, None, "", package)
    return _GO_SCALARS.get(type(t), "interface {}")


def _go_json_kind(value: Any, go_type: str) -> str:
    """How Go's encoding/json names the JSON value in an UnmarshalTypeError (a number that does
    not fit an integer type shows its literal)."""
    kind = go_json_value(value)
    if kind == "number" and go_type.startswith(("int", "uint")):
        return f"number {_encode(value).decode()}"
    return kind


def go_unmarshal_error(model: type, obj: Any, path: str, package: str) -> str:
    """The text of Go's ``encoding/json`` UnmarshalTypeError for the value at ``path`` of ``obj``
    (a type cause's field path, ``spec.tasks[0].replicas``; ``""``: ``obj`` itself) decoded into
    the Go type of the msgspec model ``model``: ``json: cannot unmarshal string into Go struct
    field JobSpec.spec.tasks of type []v1alpha1.TaskSpec``, or for the whole object ``json:
    cannot unmarshal string into Go value of type v1alpha1.Job``. The struct is the innermost one
    holding the field, the field path the JSON names of the struct fields from the root (map keys
    and list indexes are not part of it, as in Go). ``package``: the Go package name of pumice's
    own model classes (the kind's version, ``v1alpha1``); lightkube's classes are ``v1``.

    Go type names follow the model: integer formats from the model's ``format`` or, for
    lightkube classes, the protobuf schema; a named Go type over a builtin one (``v1.ResourceList``,
    ``v1alpha1.JobPhase``) shows as the builtin (``map[string]...``, ``string``).

    Mirrors: Go encoding/json UnmarshalTypeError.Error (Go 1.20+ field paths), as
    sigs.k8s.io/json reports it through apimachinery's JSON serializer."""
    t: Any = msgspec.inspect.type_info(model)
    owner: type | None = None
    keys: list[str] = []
    value = obj
    name = ""
    for key, index in _GO_SEGMENT.findall(path):
        while isinstance(t, msgspec.inspect.Metadata | msgspec.inspect.UnionType):
            if isinstance(t, msgspec.inspect.Metadata):
                t = t.type
            else:
                members = [m for m in t.types if not isinstance(m, msgspec.inspect.NoneType)]
                t = members[0] if len(members) == 1 else msgspec.inspect.AnyType()
        step = key or index
        if key and isinstance(t, msgspec.inspect.StructType):
            f = next((f for f in t.fields if f.encode_name == key), None)
            if f is None:
                break
            owner, name, t = t.cls, key, f.type
            keys.append(key)
        elif isinstance(t, msgspec.inspect.ListType | msgspec.inspect.SetType | msgspec.inspect.VarTupleType):
            t = t.item_type
        elif isinstance(t, msgspec.inspect.DictType):
            t = t.value_type
        else:
            break
        value = value[int(step)] if isinstance(value, list) else (value or {}).get(step)
    go_type = _go_type(t, owner, name, package)
    kind = _go_json_kind(value, go_type)
    if owner is None:
        return f"json: cannot unmarshal {kind} into Go value of type {go_type}"
    return f"json: cannot unmarshal {kind} into Go struct field {owner.__name__}.{'.'.join(keys)} of type {go_type}"
