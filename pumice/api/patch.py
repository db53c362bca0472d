"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) over plain JSON values.

Both functions are pure: they return a new value and never change their arguments
(:func:`merge_patch_into` is the in-place form of :func:`merge_patch`, for a caller that owns both
arguments).

Errors: :class:`PatchError` (a ValueError) for a JSON patch that does not decode (400 in the API
server) or does not apply (422), with evanphx/json-patch v4's texts (see :func:`json_patch`).

Mirrors: k8s.io/apiserver pkg/endpoints/handlers/patch.go (jsonPatcher, applyJSPatch) which uses
evanphx/json-patch v4 (patch.go).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pumice._util.gostrings import atoi
from pumice.api.godecode import go_json_value

__all__ = ["MAX_JSON_PATCH_OPERATIONS", "PatchError", "json_patch", "merge_patch", "merge_patch_into"]


class PatchError(ValueError):
    """A patch that cannot be applied.

    Attributes:
        bad_request: the patch document itself does not decode (kube-apiserver: 400), rather
            than failing to apply to the object (422).
    """

    def __init__(self, message: str, *, bad_request: bool = False) -> None:
        super().__init__(message)
        self.bad_request = bad_request


def merge_patch(original: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch: objects merge recursively, ``null`` deletes a key,
    anything else (lists included) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(original) if isinstance(original, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        elif isinstance(v, dict):
            result[k] = merge_patch(result.get(k), v)
        else:
            result[k] = copy.deepcopy(v)
    return result


def merge_patch_into(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """:func:`merge_patch` of a JSON object into a JSON object, in place: ``target`` is changed
    and returned, and it takes ``patch``'s values themselves (no copies), so the caller must own
    both and not use ``patch`` afterwards. The result equals ``merge_patch(target, patch)``, keys
    in the same order (a replaced key keeps its place, a new key comes last)."""
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict):
            cur = target.get(k)
            target[k] = merge_patch_into(cur if isinstance(cur, dict) else {}, v)
        else:
            target[k] = v
    return target


#: the most operations kube-apiserver applies from one JSON patch (patch.go maxJSONPatchOperations)
MAX_JSON_PATCH_OPERATIONS = 10000

_MISSING = "missing value"
_INVALID_INDEX = "invalid index referenced"
_KEY_ESCAPE = re.compile(r"~[01]")


def _unmarshal_error(value: Any, go_type: str) -> str:
    return f"json: cannot unmarshal {go_json_value(value)} into Go value of type {go_type}"


def _decode_key(token: str) -> str:
    """One reference token, ``~1`` -> ``/`` and ``~0`` -> ``~`` in one pass (strings.Replacer)."""
    return _KEY_ESCAPE.sub(lambda m: "/" if m.group() == "~1" else "~", token)


def _op_string(op: dict[str, Any], field: str, missing: str) -> str:
    """``Operation.Path()`` / ``From()``: the member as a string; an absent (or null) member is
    ``missing`` wrapping ErrMissing, another JSON kind Go's unmarshal error."""
    value = op.get(field)
    if value is None:
        raise PatchError(f"{missing}: {_MISSING}")
    if not isinstance(value, str):
        raise PatchError(_unmarshal_error(value, "string"))
    return value


def _bad_index(idx: int) -> PatchError:
    return PatchError(f"Unable to access invalid index: {idx}: {_INVALID_INDEX}")


def _find(doc: Any, path: str) -> tuple[Any, str] | None:
    """``findObject``: the container (dict or list) that holds the last token of ``path`` and
    that token, or None when ``path`` has no ``/`` or an intermediate member is missing, null,
    a scalar or an array index that does not resolve. The part before the first ``/`` is
    ignored, as evanphx/json-patch v4 splits on ``/``."""
    split = path.split("/")
    if len(split) < 2:
        return None
    cur = doc
    for part in split[1:-1]:
        try:
            nxt = _get_in(cur, _decode_key(part))
        except PatchError:
            return None
        if not isinstance(nxt, (dict, list)):
            return None
        cur = nxt
    return cur, _decode_key(split[-1])


def _array_index(container: list[Any], key: str, size: int) -> int:
    """A ``partialArray`` index: Go's Atoi, negative counting from the end of ``size``."""
    idx = atoi(key)
    if idx < 0:
        if idx < -size:
            raise _bad_index(idx)
        idx += size
    return idx


def _get_in(container: Any, key: str) -> Any:
    """``container.get(key)``: a member (None when missing, no error) or an element (Atoi
    errors and an index out of range are errors)."""
    if isinstance(container, dict):
        return container.get(key)
    try:
        idx = _array_index(container, key, len(container))
    except ValueError as e:
        raise PatchError(str(e)) from None
    if idx >= len(container):
        raise _bad_index(idx)
    return container[idx]


def _add_in(container: Any, key: str, value: Any) -> None:
    """``container.add(key, value)``: a member is set; an element is inserted (``-`` appends)."""
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    try:
        idx = atoi(key)
    except ValueError as e:
        raise PatchError(f"value was not a proper array index: '{key}': {e}") from None
    size = len(container) + 1
    if idx >= size:
        raise _bad_index(idx)
    if idx < 0:
        if idx < -size:
            raise _bad_index(idx)
        idx += size
    container.insert(idx, value)


def _remove_in(container: Any, key: str) -> Any:
    """``container.remove(key)``: the removed value."""
    if isinstance(container, dict):
        if key not in container:
            raise PatchError(f"Unable to remove nonexistent key: {key}: {_MISSING}")
        return container.pop(key)
    try:
        idx = atoi(key)
    except ValueError as e:
        raise PatchError(str(e)) from None
    if idx >= len(container):
        raise _bad_index(idx)
    if idx < 0:
        if idx < -len(container):
            raise _bad_index(idx)
        idx += len(container)
    return container.pop(idx)


def _json_equal(a: Any, b: Any) -> bool:
    """Structural JSON equality as lazyNode.equal compares: objects and arrays member by member,
    scalars by their JSON text (``1`` is not ``1.0`` nor ``true``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _apply_op(doc: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    if kind == "add":
        try:
            path = _op_string(op, "path", "operation missing path field")
        except PatchError:
            raise PatchError(f"add operation failed to decode path: {_MISSING}") from None
        found = _find(doc, path)
        if found is None:
            raise PatchError(f'add operation does not apply: doc is missing path: "{path}": {_MISSING}')
        try:
            _add_in(*found, copy.deepcopy(op.get("value")))
        except PatchError as e:
            raise PatchError(f"error in add for path: '{path}': {e}") from None
    elif kind == "remove":
        try:
            path = _op_string(op, "path", "operation missing path field")
        except PatchError:
            raise PatchError(f"remove operation failed to decode path: {_MISSING}") from None
        found = _find(doc, path)
        if found is None:
            raise PatchError(f'remove operation does not apply: doc is missing path: "{path}": {_MISSING}')
        try:
            _remove_in(*found)
        except PatchError as e:
            raise PatchError(f"error in remove for path: '{path}': {e}") from None
    elif kind == "replace":
        try:
            path = _op_string(op, "path", "operation missing path field")
        except PatchError as e:
            raise PatchError(f"replace operation failed to decode path: {e}") from None
        if path == "":
            # the whole document; a value that is not an object or array leaves it as it is
            value = op.get("value")
            return copy.deepcopy(value) if isinstance(value, (dict, list)) else doc
        found = _find(doc, path)
        if found is None:
            raise PatchError(f"replace operation does not apply: doc is missing path: {path}: {_MISSING}")
        container, key = found
        try:
            _get_in(container, key)
        except PatchError:
            raise PatchError(f"replace operation does not apply: doc is missing key: {path}: {_MISSING}") from None
        if isinstance(container, dict):
            container[key] = copy.deepcopy(op.get("value"))
        else:
            container[_array_index(container, key, len(container))] = copy.deepcopy(op.get("value"))
    elif kind == "move":
        try:
            src = _op_string(op, "from", "operation, missing from field")
        except PatchError as e:
            raise PatchError(f"move operation failed to decode from: {e}") from None
        found = _find(doc, src)
        if found is None:
            raise PatchError(f"move operation does not apply: doc is missing from path: {src}: {_MISSING}")
        container, key = found
        try:
            value = _get_in(container, key)
            _remove_in(container, key)
        except PatchError as e:
            raise PatchError(f"error in move for path: '{key}': {e}") from None
        try:
            path = _op_string(op, "path", "operation missing path field")
        except PatchError as e:
            raise PatchError(f"move operation failed to decode path: {e}") from None
        found = _find(doc, path)
        if found is None:
            raise PatchError(f"move operation does not apply: doc is missing destination path: {path}: {_MISSING}")
        try:
            _add_in(*found, value)
        except PatchError as e:
            raise PatchError(f"error in move for path: '{path}': {e}") from None
    elif kind == "test":
        try:
            path = _op_string(op, "path", "operation missing path field")
        except PatchError as e:
            raise PatchError(f"test operation failed to decode path: {e}") from None
        if path == "":
            if not _json_equal(doc, op.get("value")):
                raise PatchError(f"testing value {path} failed: test failed")
            return doc
        found = _find(doc, path)
        if found is None:
            raise PatchError(f"test operation does not apply: is missing path: {path}: {_MISSING}")
        try:
            value = _get_in(*found)
        except PatchError as e:
            raise PatchError(f"error in test for path: '{path}': {e}") from None
        if value is None:
            # a missing member and a null one are alike; both pass only a test for null
            if "value" in op and op["value"] is None:
                return doc
            raise PatchError(f"testing value {path} failed: test failed")
        if "value" not in op or not _json_equal(value, op["value"]):
            raise PatchError(f"testing value {path} failed: test failed")
    elif kind == "copy":
        try:
            src = _op_string(op, "from", "operation, missing from field")
        except PatchError as e:
            raise PatchError(f"copy operation failed to decode from: {e}") from None
        found = _find(doc, src)
        if found is None:
            raise PatchError(f"copy operation does not apply: doc is missing from path: {src}: {_MISSING}")
        try:
            value = _get_in(*found)
        except PatchError as e:
            raise PatchError(f"error in copy for from: '{src}': {e}") from None
        try:
            path = _op_string(op, "path", "operation missing path field")
        except PatchError:
            raise PatchError(f"copy operation failed to decode path: {_MISSING}") from None
        found = _find(doc, path)
        if found is None:
            raise PatchError(f"copy operation does not apply: doc is missing destination path: {path}: {_MISSING}")
        try:
            _add_in(*found, copy.deepcopy(value))
        except PatchError as e:
            raise PatchError(f"error while adding value during copy: {e}") from None
    else:
        raise PatchError(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
    return doc


def json_patch(original: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch (``add``, ``remove``, ``replace``, ``move``, ``copy``,
    ``test``) as evanphx/json-patch v4 (kube-apiserver's) applies it, and return the result.

    As v4 does, and RFC 6902 does not: an ``add``/``replace`` without ``value`` writes null;
    ``replace`` of a missing member of an existing object sets it (Ray's autoscaler relies on
    this when it replaces ``/spec/workerGroupSpecs/<i>/scaleStrategy`` of a group that has
    none); array indices are Go Atoi numbers (``01``, ``+1``), negative ones count from the end;
    ``replace`` of the whole document (``""``) with a value that is not an object or array
    changes nothing; ``add``/``remove`` of ``""`` is a missing path.

    Raises:
        PatchError: the patch does not decode as a list of operation objects (``bad_request``:
            kube-apiserver answers 400 with Go's unmarshal text), or an operation does not
            apply (v4's text, such as ``add operation does not apply: doc is missing path:
            "/a/b": missing value`` or ``testing value /x failed: test failed``; kube-apiserver
            answers 422 with a generic message).

    Deviates: a ``replace`` of ``""`` without a value and a ``test`` of a missing member
    without a value panic in v4 (500); here the first changes nothing and the second fails.
    """
    if ops is None:
        return copy.deepcopy(original)  # null decodes as an empty patch
    if not isinstance(ops, list):
        raise PatchError(_unmarshal_error(ops, "jsonpatch.Patch"), bad_request=True)
    for op in ops:
        if op is not None and not isinstance(op, dict):
            raise PatchError(_unmarshal_error(op, "jsonpatch.Operation"), bad_request=True)
    doc = copy.deepcopy(original)
    for op in ops:
        doc = _apply_op(doc, op or {})
    return doc
