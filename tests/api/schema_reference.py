"""The walkers of :mod:`pumice.api.schema` as they were before :class:`~pumice.api.schema.CompiledSchema`
(session 8), kept verbatim as the oracle of ``test_compiled_schema.py`` (but for the place of the
required causes, moved after the properties' in session 15 as kube-openapi reports them): they read every keyword of
every (sub)schema on every walk and loop over all of a schema's properties, which makes them
plainly correct and slow."""

# ruff: noqa
from __future__ import annotations

import copy
from typing import Any

from pumice.api.admission import FieldCause
from pumice.api.schema import (_INT_RANGES, _ROOT_KEEP, _join, _list_type_checks, _value_checks,
                               format_value, json_type_name)


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


def validate(schema: dict[str, Any], obj: Any, path: str = "") -> list[FieldCause]:
    """(reference) Validate a decoded object against a structural schema, as the apiextensions-apiserver does.

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
        out.append(FieldCause(path, f"Invalid value: \"null\": {shown} in body must be of type {want}: \"null\"",
                              "FieldValueTypeInvalid"))
        return
    if schema.get("x-kubernetes-int-or-string") and (isinstance(value, bool) or not isinstance(value, int | str)):
        out.append(FieldCause(
            path,
            f"Invalid value: \"{json_type_name(value)}\": {shown} in body must be of type integer,string: "
            f"\"{json_type_name(value)}\"",
            "FieldValueTypeInvalid"))
        return
    want = schema.get("type")
    if want and not _matches_type(want, value):
        out.append(FieldCause(
            path,
            f"Invalid value: \"{json_type_name(value)}\": {shown} in body must be of type {want}: "
            f"\"{json_type_name(value)}\"",
            "FieldValueTypeInvalid"))
        return

    before = len(out)
    _value_checks(schema, value, path, shown, out)

    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for name, sub in props.items():
            if name in value and not (root and name == "metadata"):
                if value[name] is None and name in (schema.get("required") or ()):
                    continue  # reported as required
                _validate(sub, value[name], _join(path, name), out)
        # session 15: the required fields after the properties' causes (kube-openapi objectValidator)
        for name in schema.get("required") or ():
            if name not in value or (value[name] is None and not (props.get(name) or {}).get("nullable")):
                out.append(FieldCause(_join(path, name), "Required value", "FieldValueRequired"))
        if schema.get("x-kubernetes-embedded-resource"):
            for name in ("apiVersion", "kind"):
                if not value.get(name):
                    out.append(FieldCause(_join(path, name), "Required value", "FieldValueRequired"))
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
