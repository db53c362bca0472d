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

Deviates: ``format`` is checked only for ``int32``/``int64`` ranges; ``not`` is ignored.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Annotated, Any

import msgspec

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
        return _quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _num(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _num(v: float | int) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _matches_type(want: str, value: Any) -> bool:
    if want == "object":
        return isinstance(value, dict)
    if want == "array":
        return isinstance(value, list)
    if want == "string":
        return isinstance(value, str)
    if want == "boolean":
        return isinstance(value, bool)
    if want == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if want == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


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
    """
    causes: list[FieldCause] = []
    _validate(schema, obj, path, causes, root=(path == ""))
    return causes


def has_type_errors(schema: dict[str, Any], value: Any, root: bool = True) -> bool:
    """Whether :func:`validate` could report any ``FieldValueTypeInvalid`` cause for ``value``: a
    fast walk over the same (sub)schema/value pairs that builds no message (every ``anyOf`` /
    ``oneOf`` branch is walked, so it errs on the side of True). False means ``validate``'s type
    causes are ``[]``; the API server's type check runs ``validate`` only when this is True."""
    if not isinstance(schema, dict):
        return False
    if value is None:
        return not (schema.get("nullable") or (not schema.get("type") and not schema.get("x-kubernetes-int-or-string")))
    if schema.get("x-kubernetes-int-or-string") and (isinstance(value, bool) or not isinstance(value, int | str)):
        return True
    want = schema.get("type")
    if want and not _matches_type(want, value):
        return True
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for name, sub in props.items():
            if name in value and not (root and name == "metadata") and value[name] is not None \
                    and has_type_errors(sub, value[name], False):
                return True
            if name in value and value[name] is None and not (root and name == "metadata") \
                    and has_type_errors(sub, None, False):
                return True
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            for name in value:
                if name not in props and has_type_errors(addl, value[name], False):
                    return True
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                if has_type_errors(items, item, False):
                    return True
    for sub in schema.get("allOf") or ():
        if has_type_errors(sub, value, False):
            return True
    branches = (schema.get("anyOf") or []) + (schema.get("oneOf") or [])
    if branches and not schema.get("x-kubernetes-int-or-string"):
        # validate reports a failing branch's causes only when no branch passes cleanly
        for sub in branches:
            errs: list[FieldCause] = []
            _validate(sub, value, "", errs)
            if not errs:
                return False
        return any(has_type_errors(sub, value, False) for sub in branches)
    return False


def _validate(schema: dict[str, Any], value: Any, path: str, out: list[FieldCause], root: bool = False) -> None:
    if not isinstance(schema, dict):
        return
    shown = path or "<root>"
    if value is None:
        if schema.get("nullable") or (not schema.get("type") and not schema.get("x-kubernetes-int-or-string")):
            return
        want = schema.get("type") or "integer"
        out.append(FieldCause(path, f"Invalid value: null: {shown} in body must be of type {want}: \"null\"",
                              "FieldValueTypeInvalid"))
        return
    if schema.get("x-kubernetes-int-or-string") and (isinstance(value, bool) or not isinstance(value, int | str)):
        out.append(FieldCause(
            path,
            f"Invalid value: {format_value(value)}: {shown} in body must be of type integer,string: "
            f"\"{json_type_name(value)}\"",
            "FieldValueTypeInvalid"))
        return
    want = schema.get("type")
    if want and not _matches_type(want, value):
        out.append(FieldCause(
            path,
            f"Invalid value: {format_value(value)}: {shown} in body must be of type {want}: "
            f"\"{json_type_name(value)}\"",
            "FieldValueTypeInvalid"))
        return

    before = len(out)
    _value_checks(schema, value, path, shown, out)

    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for name in schema.get("required") or ():
            if name not in value or (value[name] is None and not (props.get(name) or {}).get("nullable")):
                out.append(FieldCause(_join(path, name), "Required value", "FieldValueRequired"))
        if schema.get("x-kubernetes-embedded-resource"):
            for name in ("apiVersion", "kind"):
                if not value.get(name):
                    out.append(FieldCause(_join(path, name), "Required value", "FieldValueRequired"))
        for name, sub in props.items():
            if name in value and not (root and name == "metadata"):
                if value[name] is None and name in (schema.get("required") or ()):
                    continue  # already reported as required
                _validate(sub, value[name], _join(path, name), out)
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            for name in value:
                if name not in props:
                    _validate(addl, value[name], _join(path, name), out)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _validate(items, item, f"{path}[{i}]", out)
        _list_type_checks(schema, value, path, out)

    for sub in schema.get("allOf") or ():
        _validate(sub, value, path, out)
    branches = (schema.get("anyOf") or []) + (schema.get("oneOf") or [])
    if branches and len(out) == before and not schema.get("x-kubernetes-int-or-string"):
        trials = []
        for sub in branches:
            errs: list[FieldCause] = []
            _validate(sub, value, path, errs)
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
        if rng and isinstance(value, int) and not rng[0] <= value <= rng[1]:
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
    if not isinstance(schema, dict):
        return
    if isinstance(obj, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for name, sub in props.items():
            if not isinstance(sub, dict):
                continue
            if name in obj and obj[name] is None and not sub.get("nullable") and "default" not in sub:
                del obj[name]  # a null for a non-nullable field without default is dropped
            elif "default" in sub and (name not in obj or (obj[name] is None and not sub.get("nullable"))):
                obj[name] = copy.deepcopy(sub["default"])
        addl_schema = schema.get("additionalProperties")
        if isinstance(addl_schema, dict) and not addl_schema.get("nullable"):
            for name in [k for k, v in obj.items() if v is None and k not in props]:
                if "default" in addl_schema:
                    obj[name] = copy.deepcopy(addl_schema["default"])
                else:
                    del obj[name]
        for name, sub in props.items():
            if name in obj:
                default(sub, obj[name])
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            for name, val in obj.items():
                if name not in props:
                    default(addl, val)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in obj:
                default(items, item)


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
    _prune(schema, obj, "", removed, root=True)
    return removed


def _prune(schema: dict[str, Any], obj: Any, path: str, removed: list[str], root: bool = False) -> None:
    if not isinstance(schema, dict) or schema.get("x-kubernetes-int-or-string"):
        return
    if isinstance(obj, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or addl is True
        keep_meta = root or bool(schema.get("x-kubernetes-embedded-resource"))
        for name in list(obj):
            child = f"{path}.{name}"
            if keep_meta and name in _ROOT_KEEP and name not in props:
                continue
            if root and name == "metadata":
                continue
            if name in props:
                _prune(props[name], obj[name], child, removed)
            elif isinstance(addl, dict):
                _prune(addl, obj[name], child, removed)
            elif not preserve:
                del obj[name]
                removed.append(child)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(obj):
                _prune(items, item, f"{path}[{i}]", removed)
