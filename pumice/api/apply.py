"""Server-side apply (``application/apply-patch+yaml``), simplified.

What it does:

* ``live is None``: the applied configuration becomes the object (create).
* Otherwise the applied configuration is merged into the live object: maps key by key; lists of
  built-in kinds by their strategic patch merge keys (containers by ``name``...), merge-strategy
  primitive lists (``finalizers``) by union, every other list replaced; for custom resources lists
  merge by key only for ``conditions`` (by ``type``) and are otherwise replaced (atomic).
* Fields this manager applied before and no longer applies are removed, unless another apply
  manager also owns them.
* ``metadata.managedFields`` gets one entry per manager (``operation: Apply``,
  ``fieldsType: FieldsV1``, ``fieldsV1`` the applied field set in upstream's ``f:``/``k:``/``v:``
  notation), replacing that manager's previous Apply entry.
* A field owned by another Apply manager whose value would change is a conflict: raise
  :class:`ApplyConflict`, unless ``force`` is set, which takes the field over.

Deviates (documented simplification): ownership is tracked for Apply managers only (updates
through PUT/PATCH record no managedFields and never conflict); the entries carry no ``time``
(the server may set it); keyed list items are identified by their single merge key.

Mirrors: k8s.io/apiserver pkg/endpoints/handlers/fieldmanager and sigs.k8s.io/structured-merge-diff
(merge, field sets, conflicts), in spirit only.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from pumice.api import Obj
from pumice.api.strategic import SUPPORTED_KINDS, merge_info

#: One step of a field path: ("f", name) a map field, ("k", json-of-key) a keyed list item,
#: ("v", json-of-value) a primitive-list value.
Step = tuple[str, str]
Path = tuple[Step, ...]

_UNTRACKED_META = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"}


class ApplyConflict(Exception):
    """Applying would change fields another manager applied. ``conflicts`` lists
    ``(manager, path)`` pairs; the message is upstream's: ``Apply failed with 1 conflict:
    conflict with "other": .spec.replicas``. The API server answers 409 Conflict."""

    def __init__(self, conflicts: list[tuple[str, str]]):
        self.conflicts = conflicts
        n = len(conflicts)
        if n == 1:
            m, p = conflicts[0]
            message = f'Apply failed with 1 conflict: conflict with "{m}": {p}'
        else:
            details = "\n".join(f'- conflict with "{m}": {p}' for m, p in conflicts)
            message = f"Apply failed with {n} conflicts:\n{details}"
        super().__init__(message)


def _list_key(kind: str, builtin: bool, path: tuple[str, ...]) -> tuple[str | None, bool]:
    """(merge key, merges) of the list at ``path`` (map-field names only)."""
    if builtin or (path and path[0] == "metadata"):
        _, strategy, key = merge_info(kind if builtin else "", path)
        return key, bool(strategy and "merge" in strategy.split(","))
    if path and path[-1] == "conditions":
        return "type", True
    return None, False


def _field_set(value: Any, kind: str, builtin: bool, names: tuple[str, ...], prefix: Path,
               out: set[Path]) -> None:
    """Collect the leaf and intermediate paths ``value`` sets."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not prefix and k in ("apiVersion", "kind"):
                continue
            if prefix == (("f", "metadata"),) and k in _UNTRACKED_META:
                continue
            p = (*prefix, ("f", k))
            out.add(p)
            _field_set(v, kind, builtin, (*names, k), p, out)
    elif isinstance(value, list):
        key, merges = _list_key(kind, builtin, names)
        if not merges:
            return  # atomic list: the field itself is the leaf
        for item in value:
            if key is not None and isinstance(item, dict) and key in item:
                p = (*prefix, ("k", json.dumps({key: item[key]}, separators=(",", ":"))))
                out.add(p)
                _field_set(item, kind, builtin, names, p, out)
            elif key is None and not isinstance(item, dict | list):
                out.add((*prefix, ("v", json.dumps(item))))


def field_set(obj: Obj, kind: str, builtin: bool = True) -> set[Path]:
    """The set of field paths an applied configuration specifies (metadata identity fields,
    ``apiVersion`` and ``kind`` excluded)."""
    out: set[Path] = set()
    _field_set(obj, kind, builtin, (), (), out)
    meta: Path = (("f", "metadata"),)
    if meta in out and not any(len(p) > 1 and p[0] == meta[0] for p in out):
        out.discard(meta)  # only identity fields (name, namespace) were given
    return out


def fields_v1(paths: set[Path]) -> Obj:
    """Encode a field set in FieldsV1 form: ``{"f:spec": {"f:replicas": {}}}``; keyed items carry
    ``".": {}``."""
    root: Obj = {}
    for path in sorted(paths):
        node = root
        for kind, name in path:
            node = node.setdefault(f"{kind}:{name}", {})
            if kind == "k":
                node.setdefault(".", {})
    return root


def parse_fields_v1(fv1: Any) -> set[Path]:
    """Decode a FieldsV1 object into a set of paths (inverse of :func:`fields_v1`)."""
    out: set[Path] = set()

    def walk(node: Any, prefix: Path) -> None:
        if not isinstance(node, dict):
            return
        for key, child in node.items():
            if key == "." or ":" not in key:
                continue
            k, _, name = key.partition(":")
            p = (*prefix, (k, name))
            out.add(p)
            walk(child, p)

    walk(fv1, ())
    return out


def render_path(path: Path) -> str:
    """``.spec.containers[name="c"].image`` style rendering used in conflict messages."""
    parts = []
    for kind, name in path:
        if kind == "f":
            parts.append(f".{name}")
        elif kind == "k":
            try:
                key = json.loads(name)
                parts.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]")
            except ValueError:
                parts.append(f"[{name}]")
        else:
            parts.append(f"[={name}]")
    return "".join(parts)


def _lookup(obj: Any, path: Path) -> tuple[bool, Any]:
    node = obj
    for kind, name in path:
        if kind == "f":
            if not isinstance(node, dict) or name not in node:
                return False, None
            node = node[name]
        elif kind == "k":
            if not isinstance(node, list):
                return False, None
            key = json.loads(name)
            match = [x for x in node if isinstance(x, dict) and all(x.get(k) == v for k, v in key.items())]
            if not match:
                return False, None
            node = match[0]
        else:
            if not isinstance(node, list) or json.loads(name) not in node:
                return False, None
            node = json.loads(name)
    return True, node


def _remove(obj: Any, path: Path) -> None:
    found, parent = _lookup(obj, path[:-1])
    if not found:
        return
    kind, name = path[-1]
    if kind == "f" and isinstance(parent, dict):
        parent.pop(name, None)
    elif kind == "k" and isinstance(parent, list):
        key = json.loads(name)
        parent[:] = [x for x in parent if not (isinstance(x, dict) and all(x.get(k) == v for k, v in key.items()))]
    elif kind == "v" and isinstance(parent, list):
        value = json.loads(name)
        parent[:] = [x for x in parent if x != value]


def _merge(live: Any, applied: Any, kind: str, builtin: bool, names: tuple[str, ...]) -> Any:
    if isinstance(applied, dict) and isinstance(live, dict):
        out = dict(live)
        for k, v in applied.items():
            out[k] = _merge(live.get(k), v, kind, builtin, (*names, k)) if k in live else copy.deepcopy(v)
        return out
    if isinstance(applied, list) and isinstance(live, list):
        key, merges = _list_key(kind, builtin, names)
        if not merges:
            return copy.deepcopy(applied)
        if key is None:
            return list(live) + [x for x in applied if x not in live]
        result = [copy.deepcopy(x) for x in live]
        for item in applied:
            if not isinstance(item, dict) or key not in item:
                raise ValueError(f"{'.'.join(names)}: element {item!r} lacks the list key {key!r}")
            idx = next((i for i, x in enumerate(result) if isinstance(x, dict) and x.get(key) == item[key]), None)
            if idx is None:
                result.append(copy.deepcopy(item))
            else:
                result[idx] = _merge(result[idx], item, kind, builtin, names)
        return result
    return copy.deepcopy(applied)


def _managers(live: Obj) -> list[Obj]:
    entries = (live.get("metadata") or {}).get("managedFields") or []
    return [e for e in entries if isinstance(e, dict)]


def _iter_other_apply(entries: list[Obj], manager: str) -> Iterator[tuple[Obj, set[Path]]]:
    for e in entries:
        if e.get("operation") == "Apply" and e.get("manager") != manager:
            yield e, parse_fields_v1(e.get("fieldsV1"))


def server_side_apply(live: Obj | None, applied: Obj, *, manager: str, kind: str, force: bool,
                      builtin: bool | None = None) -> Obj:
    """Apply ``applied`` for ``manager`` onto ``live`` (None to create).

    Args:
        live: the stored object, or None when it does not exist; not modified.
        applied: the applied configuration (decoded YAML/JSON object); not modified.
        manager: the field manager (``fieldManager`` query parameter, e.g. ``kubectl``).
        kind: the object's kind; built-in kinds merge lists by their strategic merge keys.
        force: take over fields other managers own instead of failing.
        builtin: whether the object is of a built-in kind; by default decided from its
            ``apiVersion`` (core, ``apps``, ``batch``, ``policy``, ``autoscaling`` and ``*.k8s.io``
            groups are built in; ``ray.io`` or ``batch.volcano.sh`` are not).

    Returns:
        The new object with ``metadata.managedFields`` updated.

    Raises:
        ApplyConflict: a field another Apply manager owns would change and ``force`` is False.
        ValueError: the applied configuration is not an object, or a keyed list element lacks
            its key.
    """
    if not isinstance(applied, dict):
        raise ValueError("the applied configuration must be an object")
    is_builtin = _is_builtin(applied, live, kind) if builtin is None else builtin
    applied = copy.deepcopy(applied)
    applied_meta = applied.get("metadata") or {}
    applied_meta.pop("managedFields", None)
    new_set = field_set(applied, kind, is_builtin)
    api_version = applied.get("apiVersion", "")

    if live is None:
        result = applied
        entries: list[Obj] = []
    else:
        entries = copy.deepcopy(_managers(live))
        _take_or_refuse_conflicts(live, applied, entries, new_set, manager=manager, kind=kind,
                                  builtin=is_builtin, force=force)
        base = copy.deepcopy(live)
        base.get("metadata", {}).pop("managedFields", None)
        result = _merge(base, applied, kind, is_builtin, ())
        _remove_released_fields(result, entries, new_set, manager)

    entries = [e for e in entries if not (e.get("manager") == manager and e.get("operation") == "Apply")]
    entries = [e for e in entries if e.get("fieldsV1")]
    entries.append({
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(new_set),
    })
    result.setdefault("metadata", {})["managedFields"] = entries
    return result


def _take_or_refuse_conflicts(live: Obj, applied: Obj, entries: list[Obj], new_set: set[Path], *, manager: str,
                              kind: str, builtin: bool, force: bool) -> None:
    """Compare the fields other Apply managers own with the values ``applied`` sets.

    With ``force`` the clashing fields move to ``manager`` (removed from the other entries'
    ``fieldsV1`` in place); without it they are refused.

    Raises:
        ApplyConflict: a clashing field and ``force`` is False (every clash, with its manager).
    """
    conflicts: list[tuple[str, str]] = []
    for entry, owned in _iter_other_apply(entries, manager):
        clashing = []
        for path in sorted(new_set & owned):
            _, live_value = _lookup(live, path)
            _, new_value = _lookup(applied, path)
            if isinstance(new_value, dict | list) and not _is_atomic_leaf(path, applied, kind, builtin):
                continue
            if live_value != new_value:
                clashing.append(path)
        if clashing and not force:
            conflicts += [(str(entry.get("manager")), render_path(p)) for p in clashing]
        elif clashing:
            entry["fieldsV1"] = fields_v1(owned - set(clashing))
    if conflicts:
        raise ApplyConflict(conflicts)


def _remove_released_fields(result: Obj, entries: list[Obj], new_set: set[Path], manager: str) -> None:
    """Remove from ``result`` the fields ``manager`` applied before, no longer applies and no
    other Apply manager owns: whole subtrees, shallowest first; a subtree another manager still
    owns part of stays, and then only its parts nobody owns go."""
    previous = next((parse_fields_v1(e.get("fieldsV1")) for e in entries
                     if e.get("manager") == manager and e.get("operation") == "Apply"), set())
    others: set[Path] = set()
    for _, owned in _iter_other_apply(entries, manager):
        others |= owned
    removed: list[Path] = []
    for path in sorted(previous - new_set - others, key=len):
        if any(path[:len(r)] == r for r in removed):
            continue
        if any(o[:len(path)] == path for o in others | new_set):
            continue
        _remove(result, path)
        removed.append(path)


_BUILTIN_GROUPS = frozenset({"", "apps", "batch", "policy", "autoscaling"})


def _is_builtin(applied: Obj, live: Obj | None, kind: str) -> bool:
    api_version = applied.get("apiVersion") or (live or {}).get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        return kind in SUPPORTED_KINDS
    group = api_version.rpartition("/")[0]
    return group in _BUILTIN_GROUPS or group.endswith(".k8s.io")


def _is_atomic_leaf(path: Path, applied: Obj, kind: str, builtin: bool) -> bool:
    names = tuple(n for k, n in path if k == "f")
    found, value = _lookup(applied, path)
    if found and isinstance(value, list):
        return not _list_key(kind, builtin, names)[1]
    return False
