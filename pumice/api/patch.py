"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) over plain JSON values.

Both functions are pure: they return a new value and never change their arguments
(:func:`merge_patch_into` is the in-place form of :func:`merge_patch`, for a caller that owns both
arguments).

Errors: :class:`PatchError` (a ValueError) for a malformed patch, a path that does not exist, or
a failed ``test`` operation; the API server answers it with 422 (JSON patch) or 400. As in
kube-apiserver, ``replace`` of a missing member of an existing object sets it (evanphx/json-patch
v4 does not check the key); a missing parent or an array index out of range is an error.

Mirrors: k8s.io/apiserver pkg/endpoints/handlers/patch.go (jsonPatcher, applyJSPatch) which uses
evanphx/json-patch.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PatchError", "json_patch", "merge_patch", "merge_patch_into"]


class PatchError(ValueError):
    """A patch that cannot be applied."""


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


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}: must start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, path: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"invalid array index {token!r} in {path!r}")
    i = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if i > limit:
        raise PatchError(f"array index {i} out of range in {path!r}")
    return i


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    cur = doc
    for t in tokens[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError(f"path {path!r} does not exist")
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, path, allow_end=False)]
        else:
            raise PatchError(f"path {path!r} does not exist")
    return cur


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {path!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, path, allow_end=False)]
    raise PatchError(f"path {path!r} does not exist")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, allow_end=True), value)
    else:
        raise PatchError(f"path {path!r} does not exist")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"unable to remove nonexistent key {last!r}: path {path!r} does not exist")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, path, allow_end=False))
    raise PatchError(f"path {path!r} does not exist")


def _replace(doc: Any, path: str, value: Any) -> Any:
    """``replace`` as kube-apiserver applies it (evanphx/json-patch v4): the parent must exist and
    an array index must be in range, but a missing member of an object is set, as ``add`` would.
    Ray's autoscaler relies on this when it replaces ``/spec/workerGroupSpecs/<i>/scaleStrategy``
    of a RayCluster whose group has none."""
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent[_index(parent, last, path, allow_end=False)] = value
    else:
        raise PatchError(f"path {path!r} does not exist")
    return doc


def json_patch(original: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch (``add``, ``remove``, ``replace``, ``move``, ``copy``,
    ``test``) and return the result.

    Raises:
        PatchError: when ``ops`` is not a list of operation objects, an operation is unknown, a
            path is missing, or a ``test`` fails.
    """
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(original)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid JSON patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        if not isinstance(path, str):
            raise PatchError(f"invalid path {path!r}")
        if kind == "add":
            if "value" not in op:
                raise PatchError("add operation does not have a value")
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            if "value" not in op:
                raise PatchError("replace operation does not have a value")
            doc = _replace(doc, path, copy.deepcopy(op["value"]))
        elif kind == "move":
            src = op.get("from")
            if not isinstance(src, str):
                raise PatchError("move operation does not have a 'from'")
            doc, value = _remove(doc, src)
            doc = _add(doc, path, value)
        elif kind == "copy":
            src = op.get("from")
            if not isinstance(src, str):
                raise PatchError("copy operation does not have a 'from'")
            doc = _add(doc, path, copy.deepcopy(_get(doc, src)))
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"unexpected operation {kind!r}")
    return doc
