"""Structural schemas (apiextensions.k8s.io/v1 ``openAPIV3Schema``): wire-type markers for the
typed models, and (below) validation, defaulting and pruning of custom resources.

Type markers: the ray.io and volcano.sh Structs annotate their fields with these so that
:func:`pumice.api.crds.builtin_crds` can turn ``msgspec.json.schema`` output into the structural
schema the upstream CRDs declare (``format: int32``, ``x-kubernetes-int-or-string``, which
defaults are published in the CRD).

Validation, defaulting and pruning: :func:`validate`, :func:`default`, :func:`prune`, called by
the API server for custom resources (prune and default on every write, then validate).

Mirrors: apiextensions-apiserver pkg/apiserver/validation (ValidateCustomResource and the
kube-openapi error texts), pkg/apiserver/schema/defaulting and pkg/apiserver/schema/pruning.

CEL rules (``x-kubernetes-validations``) are not evaluated here but by the API server
(:mod:`pumice.apiserver.celrules`).

Deviates: ``format`` is checked only for ``int32``/``int64`` ranges and ``date-time``; ``not`` is ignored.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Annotated, Any

import msgspec

from pumice._util.gostrings import quote
from pumice.api.admission import FieldCause

#: JSON-schema key marking a field whose Python default is also the CRD ``default:``; removed
#: by the CRD generator. Fields without it publish no default (Go zero values are not defaults).
CRD_DEFAULT_MARK = "x-pumice-crd-default"

#: JSON-schema key marking a field the CRD lists as required although the model gives it a
#: default (upstream ``minReplicas``: required, defaulted by the server before validation).
CRD_REQUIRED_MARK = "x-pumice-crd-required"

#: Upstream's resource.Quantity pattern (apimachinery ``resource.Quantity`` OpenAPI definition).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

Int32 = Annotated[int, msgspec.Meta(extra_json_schema={"format": "int32"})]
Int64 = Annotated[int, msgspec.Meta(extra_json_schema={"format": "int64"})]
#: RFC 3339 timestamp string (``metav1.Time``), e.g. ``"2024-01-02T03:04:05Z"``.
DateTime = Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]
#: ``intstr.IntOrString``.
IntOrString = Annotated[int | str, msgspec.Meta(extra_json_schema={"x-kubernetes-int-or-string": True})]
#: ``resource.Quantity``: ``"500m"``, ``"1Gi"``, ``2``.
Quantity = Annotated[
    int | str,
    msgspec.Meta(extra_json_schema={"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}),
]
#: ``corev1.ResourceList``: resource name -> quantity.
ResourceList = dict[str, Quantity]


def crd_default(*, required: bool = False, **extra: Any) -> msgspec.Meta:
    """Meta marking the field's Python default as the CRD's published ``default:``.

    ``required`` also lists the field in its parent's ``required``; ``extra`` adds further schema
    keys (``minimum=1``, ``enum=[...]``) to the field.
    """
    marks: dict[str, Any] = {CRD_DEFAULT_MARK: True}
    if required:
        marks[CRD_REQUIRED_MARK] = True
    return msgspec.Meta(extra_json_schema={**marks, **extra})


def extra(**schema: Any) -> msgspec.Meta:
    """Meta adding schema keys (``minimum``, ``maximum``, ``enum``, ``maxLength``...) verbatim."""
    return msgspec.Meta(extra_json_schema=schema)


# --- validation -----------------------------------------------------------------------------------

_JSON_TYPE_NAMES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                    (dict, "object"), (list, "array"))


def json_type_name(value: Any) -> str:
    """The JSON type of a decoded value: ``string``, ``integer``, ``number``, ``boolean``,
    ``object``, ``array`` or ``null``."""
    if value is None:
        return "null"
    for py, name in _JSON_TYPE_NAMES:
        if isinstance(value, py):
            return name
    return type(value).__name__


def format_value(value: Any) -> str:
    """A bad value as kube-apiserver prints it in a field error (strings quoted, numbers bare)."""
    if isinstance(value, str):
        return quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _num(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _num(v: float | int) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
#: the names kube-openapi's format registry knows date-time by (it drops dashes: "date-time" is "datetime")
_DATE_TIME_FORMATS = frozenset({"date-time", "datetime"})
#: what every date-time format cause's message holds
DATE_TIME_TYPE = "in body must be of type date"
_RX_DATE = re.compile(r"(\d{4})-(\d\d)-(\d\d)")
_RX_DATE_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_date_time(value: str) -> bool:
    """Whether ``value`` is a ``format: date-time`` string to kube-openapi: a date Go's
    ``time.Parse("2006-01-02", ...)`` takes, a ``t`` (any case; the text after a second ``t`` is
    ignored), then ``hh:mm:ss[.fraction](z|±hh:mm)`` with hh <= 23, mm and ss <= 59.

    Mirrors: k8s.io/kube-openapi pkg/validation/strfmt IsDateTime and IsDate."""
    if len(value) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2:
        return False
    d = _RX_DATE.fullmatch(parts[0])
    if d is None or not d.group(0).isascii():
        return False
    year, month, day = int(d.group(1)), int(d.group(2)), int(d.group(3))
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= month <= 12 or not 1 <= day <= (28 if month == 2 and not leap else _MONTH_DAYS[month - 1]):
        return False
    m = _RX_DATE_TIME.fullmatch(parts[1])
    return m is not None and m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def validate(schema: dict[str, Any], obj: Any, path: str = "") -> list[FieldCause]:
    """Validate a decoded object against a structural schema, as the apiextensions-apiserver does.

    Args:
        schema: an ``openAPIV3Schema`` (dict), or any sub-schema of one.
        obj: the decoded JSON value (a whole custom resource at the root).
        path: field path of ``obj`` (``""`` at the root, ``"spec"``...).

    Returns:
        One :class:`FieldCause` per violation, in document order; ``[]`` when valid. Paths look
        like ``spec.workerGroupSpecs[0].replicas``; reasons and messages follow kube-apiserver:

        * wrong type: ``FieldValueTypeInvalid``, ``Invalid value: "x": spec.replicas in body must
          be of type integer: "string"`` (the last part names the JSON type that was given);
        * missing required: ``FieldValueRequired``, ``Required value``;
        * enum: ``FieldValueNotSupported``, ``Unsupported value: "x": supported values: "a", "b"``;
        * maxLength / maxItems: ``FieldValueTooLong`` / ``FieldValueTooMany``;
        * minimum, maximum, pattern, minLength, minItems, int32 range: ``FieldValueInvalid``;
        * duplicate items of ``x-kubernetes-list-type: set`` / keys of ``map``:
          ``FieldValueDuplicate``.

        ``metadata`` at the root is left to the API server's object-meta validation.

    A schema checked many times is better wrapped once in :class:`CompiledSchema`.
    """
    return CompiledSchema(schema).validate(obj, path)


def has_type_errors(schema: dict[str, Any], value: Any, root: bool = True) -> bool:
    """Whether :func:`validate` could report any ``FieldValueTypeInvalid`` cause for ``value``: a
    fast walk over the same (sub)schema/value pairs that builds no message (every ``anyOf`` /
    ``oneOf`` branch is walked, so it errs on the side of True). False means ``validate``'s type
    causes are ``[]``; the API server's type check runs ``validate`` only when this is True.
    ``root``: ``value`` is a whole object (its ``metadata`` is not looked at)."""
    return _types_bad(_Node(schema), value, root)


class CompiledSchema:
    """A structural schema ready to check many objects: :meth:`validate`, :meth:`has_type_errors`,
    :meth:`default` and :meth:`prune` answer exactly as the module functions of the same names,
    but what each (sub)schema asks (its type, properties, checks, defaults) is read from the
    schema once, when a walk first reaches it, instead of on every walk.

    The schema must not change afterwards (the API server makes one per served CRD version;
    a CRD update makes a new one). Values are walked by their own keys, so an object with few of
    a schema's many properties costs what it holds.
    """

    __slots__ = ("_root", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._root = _Node(schema)

    def validate(self, obj: Any, path: str = "") -> list[FieldCause]:
        """:func:`validate` under this schema."""
        causes: list[FieldCause] = []
        _check(self._root, obj, path, causes, path == "")
        return causes

    def has_type_errors(self, value: Any) -> bool:
        """:func:`has_type_errors` of a whole object under this schema."""
        return _types_bad(self._root, value, True)

    def date_time_causes(self, obj: Any) -> list[FieldCause] | None:
        """The causes of :meth:`validate` of ``obj`` (a whole object, as at the root) that are
        ``FieldValueTypeInvalid`` with :data:`DATE_TIME_TYPE` in their message, in the same
        order, for an ``obj`` whose :meth:`has_type_errors` is False; None when this walk
        cannot tell (a value of the wrong type or a null the schema refuses on its way, or an
        ``allOf`` / ``anyOf`` / ``oneOf``: take :meth:`validate` then).

        With no type cause in ``obj``, the only such causes :meth:`validate` can give are the
        ``format: date-time`` ones (its other value checks have other reasons), so this walk
        visits only the values under (sub)schemas that hold a date-time format, in
        :meth:`validate`'s order, and builds only those causes."""
        out: list[FieldCause] = []
        return out if _dt_walk(self._root, obj, "", out, True) else None

    def default(self, obj: Any) -> None:
        """:func:`default` under this schema."""
        _default(self._root, obj)

    def prune(self, obj: Any) -> list[str]:
        """:func:`prune` under this schema."""
        removed: list[str] = []
        _prune(self._root, obj, "", removed, True)
        return removed


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


#: whether a value has each known ``type`` (any other type name passes every value)
_TYPE_OK: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
    "integer": _is_integer, "number": _is_number,
}

#: the keywords :func:`_value_checks` reads (a schema with none of them has nothing to check there)
_VALUE_CHECK_KEYS = ("enum", "minimum", "maximum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
                     "maxProperties", "minProperties")

#: the scalar types (exactly these, no subclass) that pass each ``type`` (no type: all of them);
#: under a schema with nothing else to check, such a value passes every walker unchanged, so the
#: walkers do not descend to it (a float is left to the integer check, which looks at its value)
_PLAIN: dict[Any, frozenset[type]] = {
    None: frozenset({str, int, float, bool}), "string": frozenset({str}), "boolean": frozenset({bool}),
    "integer": frozenset({int}), "number": frozenset({int, float}), "object": frozenset(), "array": frozenset(),
}


class _Node:
    """One (sub)schema as the walkers read it; its children are made when a walk first needs them."""

    __slots__ = (
        "_addl",
        "_all_of",
        "_branches",
        "_dt",
        "_items",
        "_kids",
        "addl_null",
        "defaults",
        "drop_null",
        "embedded",
        "has_addl",
        "has_items",
        "int_range",
        "ios",
        "list_type",
        "null_ok",
        "ok",
        "plain",
        "pos",
        "preserve",
        "props",
        "required",
        "required_nullable",
        "required_set",
        "schema",
        "simple",
        "type_ok",
        "type_plain",
        "value_checks",
        "want",
    )

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.ok = ok = isinstance(schema, dict)
        get = schema.get if ok else {}.get
        self.want = want = get("type")
        self.type_ok = _TYPE_OK.get(want) if want else None
        self.ios = ios = bool(get("x-kubernetes-int-or-string"))
        self.null_ok = bool(get("nullable")) or (not want and not ios)
        props = get("properties") or {}
        self.props: dict[str, Any] = props
        self.pos = {name: i for i, name in enumerate(props)}
        self._kids: dict[str, _Node] | None = None
        addl = get("additionalProperties")
        self._addl: _Node | None = None
        self.has_addl = isinstance(addl, dict)
        self.has_items = isinstance(get("items"), dict)
        self._items: _Node | None = None
        self._all_of: list[_Node] | None = None
        self._branches: list[_Node] | None = None
        self._dt: tuple[Any, ...] | bool | None = None  # bool: False only (nothing to walk)
        self.required: tuple[str, ...] = tuple(get("required") or ())
        self.required_set = frozenset(self.required)
        self.required_nullable = frozenset(n for n in self.required if (props.get(n) or {}).get("nullable"))
        self.embedded = bool(get("x-kubernetes-embedded-resource"))
        fmt = get("format", "")
        self.value_checks = (any(get(k) is not None for k in _VALUE_CHECK_KEYS) or fmt in _INT_RANGES
                             or fmt in _DATE_TIME_FORMATS)
        # only a set or map list has something to check (an atomic one, like none, has not)
        list_type = get("x-kubernetes-list-type")
        self.list_type = list_type if list_type in ("set", "map") else None
        combos = bool(get("allOf") or get("anyOf") or get("oneOf"))
        # a scalar that passes the type check has nothing more to answer to
        self.simple = ok and not ios and not self.value_checks and not combos
        self.plain = _PLAIN.get(want or None, _PLAIN[None]) if self.simple else frozenset()
        # an integer whose only check is its format's range (the int32/int64 fields of Pod
        # templates): checked inline, and an int passes the type walk unvisited
        self.int_range = _INT_RANGES.get(fmt) if (
            ok and want == "integer" and not ios and not combos
            and not any(get(k) is not None for k in _VALUE_CHECK_KEYS)) else None
        self.type_plain = _PLAIN["integer"] if self.int_range is not None else self.plain
        self.preserve = bool(get("x-kubernetes-preserve-unknown-fields")) or addl is True
        self.defaults = [(name, sub["default"], bool(sub.get("nullable"))) for name, sub in props.items()
                         if isinstance(sub, dict) and "default" in sub]
        self.drop_null = frozenset(name for name, sub in props.items()
                                   if isinstance(sub, dict) and not sub.get("nullable") and "default" not in sub)
        # what a null value of a name outside the properties becomes: None (left), or ("drop",) / ("default", v)
        self.addl_null: tuple[Any, ...] | None = None
        if isinstance(addl, dict) and not addl.get("nullable"):
            self.addl_null = ("default", addl["default"]) if "default" in addl else ("drop",)

    def kids(self) -> dict[str, _Node]:
        kids = self._kids
        if kids is None:
            kids = self._kids = {name: _Node(sub) for name, sub in self.props.items()}
        return kids

    def addl(self) -> _Node | None:
        if self._addl is None and self.has_addl:
            self._addl = _Node(self.schema["additionalProperties"])
        return self._addl

    def items(self) -> _Node | None:
        if self._items is None and self.has_items:
            self._items = _Node(self.schema["items"])
        return self._items

    def all_of(self) -> list[_Node]:
        if self._all_of is None:
            self._all_of = [_Node(s) for s in (self.schema.get("allOf") or ())] if self.ok else []
        return self._all_of

    def branches(self) -> list[_Node]:
        if self._branches is None:
            self._branches = [_Node(s) for s in (self.schema.get("anyOf") or []) + (self.schema.get("oneOf") or [])] \
                if self.ok else []
        return self._branches


def _dt_plan(node: _Node) -> tuple[Any, ...] | None:
    """What :func:`_dt_walk` looks at under ``node``: None when no value under it can meet a
    ``format: date-time`` (sub)schema or an ``allOf`` / ``anyOf`` / ``oneOf`` (where the walk
    stops); else ``(date-time format here, combinator here, the properties that hold either
    (name, node) in the schema's order, the additionalProperties node if it holds either, the
    items node if it holds either)``. Worked out once per node (the schema is a finite tree)."""
    plan = node._dt
    if plan is None:
        plan = False
        if node.ok:
            here = node.schema.get("format", "") in _DATE_TIME_FORMATS
            combos = bool(node.all_of()) or bool(node.branches())
            kids = tuple((name, kid) for name, kid in node.kids().items() if _dt_plan(kid) is not None)
            addl, items = node.addl(), node.items()
            addl = addl if addl is not None and _dt_plan(addl) is not None else None
            items = items if items is not None and _dt_plan(items) is not None else None
            if here or combos or kids or addl is not None or items is not None:
                plan = (here, combos, kids, addl, items)
        node._dt = plan
    return plan if isinstance(plan, tuple) else None


#: :func:`is_date_time` answers of recent strings (a run writes the same few times again and again)
_DATE_TIME_OK: dict[str, bool] = {}


def _date_time_ok(value: str) -> bool:
    """:func:`is_date_time`, remembered for up to 4096 strings (then forgotten all at once)."""
    ok = _DATE_TIME_OK.get(value)
    if ok is None:
        if len(_DATE_TIME_OK) >= 4096:
            _DATE_TIME_OK.clear()
        ok = _DATE_TIME_OK[value] = is_date_time(value)
    return ok


def _dt_walk(node: _Node, value: Any, path: str, out: list[FieldCause], root: bool) -> bool:
    """:func:`_check` restricted to the date-time format causes (see
    :meth:`CompiledSchema.date_time_causes`): the same visits in the same order, skipping the
    (sub)schemas that hold no date-time format (:func:`_dt_plan`); False where it cannot tell."""
    if not node.ok:
        return True
    if value is None:
        return node.null_ok
    if node.ios and (isinstance(value, bool) or not isinstance(value, int | str)):
        return False
    type_ok = node.type_ok
    if type_ok is not None and not type_ok(value):
        return False
    plan = _dt_plan(node)
    if plan is None:
        return True
    here, combos, kids, addl, items = plan
    if combos:
        return False
    if here and isinstance(value, str) and not _date_time_ok(value):
        fmt = node.schema["format"]
        out.append(FieldCause(path, f"Invalid value: {format_value(value)}: {path or '<root>'} in body must be of "
                                    f"type {fmt}: {quote(value)}", "FieldValueTypeInvalid"))
    if isinstance(value, dict):
        required_set = node.required_set
        for name, kid in kids:  # the schema's order, as _check sorts what is present
            if name not in value or (root and name == "metadata"):
                continue
            v = value[name]
            if v is None and name in required_set:
                continue
            if not _dt_walk(kid, v, f"{path}.{name}" if path else name, out, False):
                return False
        if addl is not None:
            props = node.props
            for name, v in value.items():
                if name not in props and not _dt_walk(addl, v, _join(path, name), out, False):
                    return False
    elif isinstance(value, list) and items is not None:
        for i, item in enumerate(value):
            if not _dt_walk(items, item, f"{path}[{i}]", out, False):
                return False
    return True


def _types_bad(node: _Node, value: Any, root: bool) -> bool:
    """:func:`has_type_errors` over a compiled node."""
    if not node.ok:
        return False
    if value is None:
        return not node.null_ok
    if node.ios and (isinstance(value, bool) or not isinstance(value, int | str)):
        return True
    type_ok = node.type_ok
    if type_ok is not None and not type_ok(value):
        return True
    if isinstance(value, dict):
        if node.props:
            kids = node.kids()
            for name, v in value.items():
                kid = kids.get(name)
                if kid is None or (root and name == "metadata") or type(v) in kid.type_plain:
                    continue
                if _types_bad(kid, v, False):
                    return True
        addl = node.addl()
        if addl is not None:
            props = node.props
            a_plain = addl.type_plain
            for name, v in value.items():
                if name not in props and type(v) not in a_plain \
                        and _types_bad(addl, v, False):
                    return True
    elif isinstance(value, list):
        items = node.items()
        if items is not None:
            i_plain = items.type_plain
            for item in value:
                if type(item) not in i_plain \
                        and _types_bad(items, item, False):
                    return True
    if node.simple:
        return False
    for sub in node.all_of():
        if _types_bad(sub, value, False):
            return True
    branches = node.branches()
    if branches and not node.ios:
        # validate reports a failing branch's causes only when no branch passes cleanly
        for sub in branches:
            errs: list[FieldCause] = []
            _check(sub, value, "", errs, False)
            if not errs:
                return False
        return any(_types_bad(sub, value, False) for sub in branches)
    return False


def _check(node: _Node, value: Any, path: str, out: list[FieldCause], root: bool) -> None:
    """:func:`validate` over a compiled node (causes in document order: properties in the
    schema's order, then additional properties in the value's)."""
    if not node.ok:
        return
    if value is None:
        if node.null_ok:
            return
        want = node.want or "integer"
        out.append(FieldCause(path, f"Invalid value: \"null\": {path or '<root>'} in body must be of type {want}: \"null\"",
                              "FieldValueTypeInvalid"))
        return
    if node.ios and (isinstance(value, bool) or not isinstance(value, int | str)):
        out.append(FieldCause(
            path,
            f"Invalid value: \"{json_type_name(value)}\": {path or '<root>'} in body must be of type integer,string: "
            f"\"{json_type_name(value)}\"",
            "FieldValueTypeInvalid"))
        return
    type_ok = node.type_ok
    if type_ok is not None and not type_ok(value):
        out.append(FieldCause(
            path,
            f"Invalid value: \"{json_type_name(value)}\": {path or '<root>'} in body must be of type {node.want}: "
            f"\"{json_type_name(value)}\"",
            "FieldValueTypeInvalid"))
        return

    before = len(out)
    if node.value_checks:
        rng = node.int_range
        if rng is None:
            _value_checks(node.schema, value, path, path or "<root>", out)
        elif (type(value) is int or (type(value) is float and value.is_integer())) \
                and not rng[0] <= value <= rng[1]:  # 3e9 is an integer to the schema, so ranged too
            out.append(FieldCause(path, f"Invalid value: {format_value(value)}: {path or '<root>'} in body must be "
                                        f"of type {node.schema['format']}"))

    if isinstance(value, dict):
        props = node.props
        if props:
            kids = node.kids()
            present = [name for name in value if name in kids]
            if len(present) > 1:
                present.sort(key=node.pos.__getitem__)
            required_set = node.required_set
            for name in present:
                if root and name == "metadata":
                    continue
                v = value[name]
                if v is None and name in required_set:
                    continue  # already reported as required
                kid = kids[name]
                if type(v) not in kid.plain:
                    _check(kid, v, f"{path}.{name}" if path else name, out, False)
        # the required fields after the properties' own causes, as kube-openapi's objectValidator
        for name in node.required:
            if name not in value or (value[name] is None and name not in node.required_nullable):
                out.append(FieldCause(_join(path, name), "Required value", "FieldValueRequired"))
        if node.embedded:
            for name in ("apiVersion", "kind"):
                if not value.get(name):
                    out.append(FieldCause(_join(path, name), "Required value", "FieldValueRequired"))
        addl = node.addl()
        if addl is not None:
            a_plain = addl.plain
            for name, v in value.items():
                if name not in props and type(v) not in a_plain:
                    _check(addl, v, _join(path, name), out, False)
    elif isinstance(value, list):
        items = node.items()
        if items is not None:
            i_plain = items.plain
            for i, item in enumerate(value):
                if type(item) not in i_plain:
                    _check(items, item, f"{path}[{i}]", out, False)
        if node.list_type is not None:
            _list_type_checks(node.schema, value, path, out)

    if node.simple:
        return
    for sub in node.all_of():
        _check(sub, value, path, out, False)
    branches = node.branches()
    if branches and len(out) == before and not node.ios:
        trials = []
        for sub in branches:
            errs: list[FieldCause] = []
            _check(sub, value, path, errs, False)
            if not errs:
                break
            trials.append(errs)
        else:
            out.extend(trials[0])


def _list_type_checks(schema: dict[str, Any], value: list[Any], path: str, out: list[FieldCause]) -> None:
    """``x-kubernetes-list-type``: ``set`` items and ``map`` keys must be unique."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                out.append(FieldCause(f"{path}[{i}]", f"Duplicate value: {format_value(item)}",
                                      "FieldValueDuplicate"))
            else:
                seen.append(item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        if len(value) < 2:
            return
        seen_keys: list[dict[str, Any]] = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = {k: item.get(k) for k in keys}
            if key in seen_keys:
                out.append(FieldCause(f"{path}[{i}]", f"Duplicate value: {format_value(key)}",
                                      "FieldValueDuplicate"))
            else:
                seen_keys.append(key)


def _value_checks(schema: dict[str, Any], value: Any, path: str, shown: str, out: list[FieldCause]) -> None:
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(format_value(e) for e in enum)
        out.append(FieldCause(path, f"Unsupported value: {format_value(value)}: supported values: {supported}",
                              "FieldValueNotSupported"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is not None:
            if schema.get("exclusiveMinimum") and value <= lo:
                out.append(FieldCause(path, f"Invalid value: {format_value(value)}: {shown} in body should be greater than {_num(lo)}"))
            elif value < lo:
                out.append(FieldCause(
                    path, f"Invalid value: {format_value(value)}: {shown} in body should be greater than or equal to {_num(lo)}"))
        if hi is not None:
            if schema.get("exclusiveMaximum") and value >= hi:
                out.append(FieldCause(path, f"Invalid value: {format_value(value)}: {shown} in body should be less than {_num(hi)}"))
            elif value > hi:
                out.append(FieldCause(
                    path, f"Invalid value: {format_value(value)}: {shown} in body should be less than or equal to {_num(hi)}"))
        rng = _INT_RANGES.get(schema.get("format", ""))
        if rng and (type(value) is int or (type(value) is float and value.is_integer())) \
                and not rng[0] <= value <= rng[1]:
            out.append(FieldCause(path, f"Invalid value: {format_value(value)}: {shown} in body must be of type {schema['format']}"))
    if isinstance(value, str):
        max_len, min_len = schema.get("maxLength"), schema.get("minLength")
        if max_len is not None and len(value) > max_len:
            out.append(FieldCause(path, f"Too long: may not be more than {max_len} bytes", "FieldValueTooLong"))
        if min_len is not None and len(value) < min_len:
            out.append(FieldCause(path, f"Invalid value: {format_value(value)}: {shown} in body should be at least {min_len} chars long"))
        pattern = schema.get("pattern")
        if pattern is not None and not _search(pattern, value):
            out.append(FieldCause(path, f"Invalid value: {format_value(value)}: {shown} in body should match '{pattern}'"))
        fmt = schema.get("format")
        if fmt in _DATE_TIME_FORMATS and not _date_time_ok(value):
            out.append(FieldCause(path, f"Invalid value: {format_value(value)}: {shown} in body must be of type {fmt}: "
                                        f"{quote(value)}", "FieldValueTypeInvalid"))
    if isinstance(value, list):
        max_items, min_items = schema.get("maxItems"), schema.get("minItems")
        if max_items is not None and len(value) > max_items:
            out.append(FieldCause(path, f"Too many: {len(value)}: must have at most {max_items} items",
                                  "FieldValueTooMany"))
        if min_items is not None and len(value) < min_items:
            out.append(FieldCause(path, f"Invalid value: {len(value)}: {shown} in body should have at least {min_items} items"))
    if isinstance(value, dict):
        max_p, min_p = schema.get("maxProperties"), schema.get("minProperties")
        if max_p is not None and len(value) > max_p:
            out.append(FieldCause(path, f"Too many: {len(value)}: must have at most {max_p} items", "FieldValueTooMany"))
        if min_p is not None and len(value) < min_p:
            out.append(FieldCause(path, f"Invalid value: {len(value)}: {shown} in body should have at least {min_p} properties"))


_PATTERNS: dict[str, Any] = {}


def _search(pattern: str, value: str) -> bool:
    rx = _PATTERNS.get(pattern)
    if rx is None:
        try:
            rx = re.compile(pattern)
        except re.error:
            return True  # an ECMA pattern Python cannot compile is not held against the object
        _PATTERNS[pattern] = rx
    return rx.search(value) is not None


# --- defaulting -----------------------------------------------------------------------------------


def default(schema: dict[str, Any], obj: Any) -> None:
    """Apply the schema's ``default:`` values to ``obj`` in place, recursively.

    A missing property gets a deep copy of its default; a ``null`` property (or map value) that
    is not ``nullable`` is replaced by its default, or dropped when it has none. Defaults are
    applied top-down, so a defaulted object is itself defaulted. Values of the wrong type are left
    alone (validation reports them).

    Mirrors: apiextensions-apiserver pkg/apiserver/schema/defaulting/algorithm.go Default.
    """
    _default(_Node(schema), obj)


def _default(node: _Node, obj: Any) -> None:
    if not node.ok:
        return
    if isinstance(obj, dict):
        props = node.props
        drop = node.drop_null
        nulls = [name for name, v in obj.items() if v is None] if drop or node.addl_null else ()
        for name in nulls:
            if name in drop:
                del obj[name]  # a null for a non-nullable field without default is dropped
        for name, value, nullable in node.defaults:
            if name not in obj or (obj[name] is None and not nullable):
                obj[name] = copy.deepcopy(value)
        addl_null = node.addl_null
        if addl_null is not None:
            for name in nulls:
                if name not in props:
                    if addl_null[0] == "default":
                        obj[name] = copy.deepcopy(addl_null[1])
                    else:
                        del obj[name]
        kids = node.kids() if props else None
        addl = node.addl()
        for name, v in obj.items():
            if not isinstance(v, dict | list):
                continue  # nothing below a scalar
            kid = kids.get(name) if kids is not None else None
            if kid is not None:
                _default(kid, v)
            elif addl is not None and name not in props:
                _default(addl, v)
    elif isinstance(obj, list):
        items = node.items()
        if items is not None:
            for item in obj:
                _default(items, item)


# --- pruning --------------------------------------------------------------------------------------

_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def prune(schema: dict[str, Any], obj: Any) -> list[str]:
    """Remove, in place, every field the schema does not specify; return the removed paths.

    ``x-kubernetes-preserve-unknown-fields: true`` keeps unknown fields (known ones are still
    pruned recursively); ``x-kubernetes-int-or-string`` values are never descended into;
    ``apiVersion``, ``kind`` and ``metadata`` are kept at the root and in embedded resources.

    Returns:
        Paths such as ``".spec.foo"`` or ``".spec.workerGroupSpecs[0].bar"``, in document order.
        The API server rejects with ``unknown field "spec.foo"`` under ``fieldValidation=Strict``.

    Mirrors: apiextensions-apiserver pkg/apiserver/schema/pruning/algorithm.go.
    """
    removed: list[str] = []
    _prune(_Node(schema), obj, "", removed, True)
    return removed


def _prune(node: _Node, obj: Any, path: str, removed: list[str], root: bool = False) -> None:
    if not node.ok or node.ios:
        return
    if isinstance(obj, dict):
        props = node.props
        addl = node.addl()
        preserve = node.preserve
        keep_meta = root or node.embedded
        kids = node.kids() if props else {}
        for name in list(obj):
            if keep_meta and name in _ROOT_KEEP and name not in props:
                continue
            if root and name == "metadata":
                continue
            kid = kids.get(name)
            if kid is None and name not in props:
                kid = addl
                if kid is None:
                    if not preserve:
                        del obj[name]
                        removed.append(f"{path}.{name}")
                    continue
            v = obj[name]
            if kid is not None and isinstance(v, dict | list):  # nothing to prune below a scalar
                _prune(kid, v, f"{path}.{name}", removed)
    elif isinstance(obj, list):
        items = node.items()
        if items is not None:
            for i, item in enumerate(obj):
                _prune(items, item, f"{path}[{i}]", removed)
