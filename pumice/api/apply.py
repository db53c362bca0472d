"""Server-side apply (``application/apply-patch+yaml``) and field ownership (``managedFields``).

Every write records who set which fields, as kube-apiserver's field manager does:

* **Update** (create, PUT, and JSON/merge/strategic PATCH, of the object or of its ``status``,
  ``scale`` or ``finalize`` subresource): :func:`update_managed_fields` compares the stored object
  with the new one. The fields the write added or changed move to the writer's
  ``operation: Update`` entry (keyed by manager, ``apiVersion`` and ``subresource``), with
  ``time`` set to the write's time; they leave every other entry, and so do the fields the write
  removed. An entry whose set becomes empty is dropped. Past 10 Update entries the oldest are
  merged into one ``ancient-changes`` entry per ``apiVersion``. An object stored without
  managedFields (never tracked, or reset by the client sending ``managedFields: [{}]``/``[]``)
  stays untracked on update.
* **Apply** (:func:`server_side_apply`): the applied configuration is merged into the live
  object: maps key by key; lists by the object's schema markers (:class:`ListTypes`): a built-in
  kind's ``+listType``/``+listMapKey`` markers (container ``ports`` keyed by ``containerPort``
  and ``protocol``, the protocol defaulted to ``TCP``; ``tolerations`` atomic; ``finalizers`` a
  set), its strategic patch merge key where a list has no ``+listType``, atomic otherwise; a
  custom resource's ``x-kubernetes-list-type``/``x-kubernetes-list-map-keys`` (without a schema,
  only ``conditions`` merge, by ``type``). Merged lists keep upstream's order. Atomic lists, and
  atomic maps and structs (``nodeSelector``, ``LabelSelector``, ``OwnerReference``;
  ``x-kubernetes-map-type: atomic``), are one field, replaced whole. Fields this manager applied
  before and no longer applies are removed (a list or map left empty goes too) unless another
  manager (Apply or Update) owns them. A field that another
  manager owns and whose value the apply changes is a conflict: :class:`ApplyConflict`, unless
  ``force``, which takes it over. The manager's ``operation: Apply`` entry is replaced by the
  applied field set (dropped when that set is empty). An apply onto an object without
  managedFields first gives its present fields to a ``before-first-apply`` Update entry.
* **From client-side apply** (manager ``kubectl`` only): a conflict on a field that the live
  object's ``kubectl.kubernetes.io/last-applied-configuration`` annotation records with the live
  value is forgiven (the field is taken over as if forced); the other conflicts are still raised,
  alone. After the apply an existing annotation is rewritten to the applied configuration.

Entries are ordered as upstream encodes them (operation, time, manager, apiVersion,
subresource); each is ``{"manager", "operation", "apiVersion", "time", "fieldsType": "FieldsV1",
"fieldsV1", "subresource"}`` with ``fieldsV1`` in upstream's ``f:``/``k:``/``v:`` notation
(``".": {}`` marks a set member that also has members below it).

A built-in object's non-pointer structs (``spec``, ``spec.template`` and its ``metadata`` and
``spec``, ``spec.strategy``...) are never added or removed themselves, as in kube-apiserver's
typed objects, where Go's zero value always holds them: an Update owns their fields, not them
(no ``".": {}``).

Deviates (documented simplification): Apply sets count every non-empty map as a path only
(upstream also owns the entries of ``x-kubernetes-preserve-unknown-fields`` maps one by one).

Mirrors: k8s.io/apimachinery pkg/util/managedfields/internal (fieldmanager.go decodeLiveOrNew,
managedfieldsupdater.go, capmanagers.go, skipnonapplied.go, stripmeta.go, conflict.go,
lastappliedmanager.go, lastappliedupdater.go, managedfields.go sortEncodedManagedFields) and sigs.k8s.io/structured-merge-diff merge/update.go
(Updater.Update/Apply), typed/compare.go, typed/tofieldset.go, typed/merge.go and
typed/remove.go, in spirit; tests/api/test_ssa_upstream.py checks them step by step against
upstream's field manager.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from pumice._util.gostrings import is_print, quote
from pumice.api import Obj, protobuf
from pumice.api.gojson import encode_unstructured
from pumice.api.strategic import SUPPORTED_KINDS
from pumice.api.validation import annotations_too_long

_log = logging.getLogger(__name__)

#: One step of a field path: ("f", name) a map field, ("k", json-of-key) a keyed list item,
#: ("v", json-of-value) a primitive-list value.
Step = tuple[str, str]
Path = tuple[Step, ...]

#: kube-apiserver's limit on a field manager name (bytes of UTF-8).
FIELD_MANAGER_MAX_LENGTH = 128
#: upstream's cap on Update entries (DefaultMaxUpdateManagers) and the name of their merge.
MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"
BEFORE_FIRST_APPLY = "before-first-apply"
#: client-side ``kubectl apply``'s record of what it applied (k8s.io/api core/v1
#: LastAppliedConfigAnnotation)
LAST_APPLIED_CONFIG_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
#: the one field manager whose applies take over from client-side apply (kubectl's default
#: ``--field-manager`` with ``--server-side``); any other name opts out
KUBECTL_MANAGER = "kubectl"

_META: Path = (("f", "metadata"),)
#: metadata fields nobody owns (upstream's stripMetaManager set; ``metadata`` itself too)
_STRIPPED_META = frozenset({"name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
                            "generation", "managedFields", "resourceVersion"})
#: what an Apply set also leaves out (cannot be applied)
_UNTRACKED_META = _STRIPPED_META | {"deletionTimestamp", "deletionGracePeriodSeconds"}
_MISSING: Any = object()
#: a field absent from an object whose parent is there and which Go always serializes (see
#: _always_serialized): present and empty for _diff, as in kube-apiserver's typed objects
_ZERO: Any = object()
_NOTHING: frozenset[str] = frozenset()
_TYPE_FIELDS = frozenset({"apiVersion", "kind"})
#: message types whose JSON is not a struct of fields (raw JSON, an embedded object)
_UNTYPED_MESSAGES = frozenset({"k8s.io.apimachinery.pkg.runtime.RawExtension",
                               "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON"})


class ApplyConflict(Exception):
    """Applying would change fields other managers own. ``conflicts`` lists ``(manager, path)``
    pairs, the manager as upstream prints it (``"kubectl-create" using v1``,
    ``"kubectl" with subresource "scale" using apps/v1``, ``"other"`` for an Apply manager) and
    the path rendered (``.data.a``). The message is upstream's: ``Apply failed with 1 conflict:
    conflict with "kubectl-create" using v1: .data.a``, or for several ``Apply failed with 2
    conflicts: conflicts with "a":\\n- .x\\n- .y``. The API server answers 409 Conflict."""

    def __init__(self, conflicts: list[tuple[str, str]]):
        self.conflicts = conflicts
        n = len(conflicts)
        if n == 1:
            m, p = conflicts[0]
            message = f"Apply failed with 1 conflict: conflict with {m}: {p}"
        else:
            lines: list[str] = []
            last = None
            for m, p in conflicts:
                if m != last:
                    lines.append(f"conflicts with {m}:")
                    last = m
                lines.append(f"- {p}")
            message = f"Apply failed with {n} conflicts: " + "\n".join(lines)
        super().__init__(message)


class ApplyTypeError(ValueError):
    """The applied configuration does not fit its kind's schema where server-side apply needs it
    to: a keyed list's element without a key field, a set's element that is not a scalar, or two
    elements with the same key. The message is structured-merge-diff's, with the path
    (``.spec.template.spec.containers: duplicate entries for key [name="a"]``); kube-apiserver
    wraps it as ``failed to create typed patch object (<namespace>/<name>; <group>/<version>,
    Kind=<kind>): <message>`` and answers 500 with no reason (pumice's API server: 400 BadRequest
    with that text)."""


# ------------------------------------------------------------------ field manager names

def field_manager_errors(value: str) -> list[tuple[str, str]]:
    """``(reason, message)`` of what is wrong with a ``fieldManager`` option: longer than 128
    bytes (``Too long: may not be more than 128 bytes``), or a character that is not printable
    (``Invalid value: "\\x01bad": invalid character U+0001 (at position 0)``; the position is
    the byte offset, as Go's ``range`` over a string gives it).

    Mirrors: k8s.io/apimachinery pkg/apis/meta/v1/validation ValidateFieldManager.
    """
    if len(value) <= FIELD_MANAGER_MAX_LENGTH // 4 and value.isprintable():
        return []
    out: list[tuple[str, str]] = []
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) > FIELD_MANAGER_MAX_LENGTH:
        out.append(("FieldValueTooLong", f"Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"))
    pos = 0
    for ch in value:
        if not is_print(ch):
            out.append(("FieldValueInvalid", f"Invalid value: {quote(value)}: invalid character "
                                             f"U+{ord(ch):04X} (at position {pos})"))
        pos += len(ch.encode("utf-8", "surrogatepass"))
    return out


def manager_or_user_agent(manager: str, user_agent: str) -> str:
    """The field manager of a write: the ``fieldManager`` option, else the User-Agent up to its
    first ``/`` with unprintable characters left out, cut at 128 bytes (``kubectl/v1.32.3
    (linux/amd64) kubernetes/abc`` -> ``kubectl``). Empty when both are empty (the entry is then
    named ``unknown``).

    Mirrors: k8s.io/apiserver pkg/endpoints/handlers/create.go managerOrUserAgent,
    prefixFromUserAgent.
    """
    if manager:
        return manager
    out: list[str] = []
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not is_print(ch):
            continue
        n = len(ch.encode("utf-8", "surrogatepass"))
        if size + n > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += n
    return "".join(out)


# ------------------------------------------------------------------ field sets

#: How a list merges: (key fields, merges, defaults of key fields). Keyed (``map``) lists have
#: key fields; ``merges`` without them is a set of primitives merged by union; not ``merges`` is
#: atomic (the list is one leaf). The defaults stand in for a key field an item omits.
ListType = tuple[tuple[str, ...] | None, bool, dict[str, Any]]


class ListTypes(Protocol):
    """An object's schema as server-side apply reads it, by the path of map-field names (list
    items transparent: ``("spec", "template", "spec", "containers", "ports")``): how each list
    merges, and which maps are atomic (``+mapType=atomic``, ``+structType=atomic``,
    ``x-kubernetes-map-type: atomic``: one leaf, replaced whole by an apply). See
    :class:`SchemaListTypes` (a custom resource's schema) and :class:`BuiltinListTypes`."""

    def __call__(self, path: tuple[str, ...], /) -> ListType:
        """How the list at ``path`` merges: (key fields or None, merges, key-field defaults)."""
        ...

    def atomic_map(self, path: tuple[str, ...], /) -> bool:
        """Whether the map or struct at ``path`` is atomic (one leaf, replaced whole by an apply)."""
        ...


_ATOMIC: ListType = (None, False, {})
_SET: ListType = (None, True, {})
_CONDITIONS: ListType = (("type",), True, {})


_OBJECT_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@functools.lru_cache(maxsize=8192)
def _builtin_list_type(message: str, path: tuple[str, ...]) -> ListType:
    """How the list at ``path`` of a built-in object of ``message`` (a protobuf message name)
    merges, from its OpenAPI markers as k8s.io/api declares them: ``+listType=atomic`` is
    atomic, ``set`` a set, ``map`` keyed by its ``+listMapKey`` fields; a list without a
    ``+listType`` merges by its strategic patch tags (``patchStrategy=merge`` keyed by
    ``patchMergeKey``, a set without one); every other list is atomic. A key field's default is
    the one the OpenAPI publishes: its ``+default`` (``protocol: TCP``), else the zero value of
    a non-pointer field that is always serialized (``containerPort: 0``, ``name: ""``).

    Mirrors: k8s.io/kube-openapi pkg/schemaconv smd.go getListElementRelationship and
    pkg/generators openapi.go (generateDefault, mustEnforceDefault)."""
    f = protobuf.field_at(message, path)
    if f is None or not f.repeated:
        return _ATOMIC
    keys: tuple[str, ...]
    if f.list_type == "set":
        return _SET
    if f.list_type == "map" and f.list_map_keys:
        keys = f.list_map_keys
    elif not f.list_type and f.patch_strategy in ("merge", "merge,retainKeys"):
        if not f.patch_merge_key:
            return _SET
        keys = (f.patch_merge_key,)
    else:
        return _ATOMIC
    item = protobuf.flat_fields(f.type)
    defaults: dict[str, Any] = {}
    for k in keys:
        found, value = protobuf.openapi_default(item[k]) if k in item else (False, None)
        if found:
            defaults[k] = value
    return keys, True, defaults


@functools.lru_cache(maxsize=8192)
def _builtin_atomic_map(message: str, path: tuple[str, ...]) -> bool:
    """Whether the map or struct at ``path`` of a built-in object of ``message`` is atomic: the
    field's ``+mapType``/``+structType=atomic`` marker (``nodeSelector``), or its type's
    (``LabelSelector``, ``OwnerReference``); the items of a list of such structs too.

    Mirrors: k8s.io/kube-openapi pkg/schemaconv smd.go getMapElementRelationship (the
    ``x-kubernetes-map-type`` that openapi-gen writes from those markers)."""
    f = protobuf.field_at(message, path)
    if f is None:
        return False
    if f.map_type:
        return f.map_type == "atomic"
    msg = protobuf.schema().messages.get(f.type)
    return msg is not None and msg.map_type == "atomic"


@functools.lru_cache(maxsize=8192)
def _builtin_always_serialized(message: str, path: tuple[str, ...]) -> bool:
    """Whether the map or list field at ``path`` of a built-in object of ``message`` is there
    whenever the struct holding it is, as Go serializes it: a non-pointer struct (``spec``,
    ``spec.template``, ``spec.strategy``, a container's ``resources``), or a list or map field
    without ``omitempty`` (a PodSpec's ``containers``: ``null`` when unset). kube-apiserver's
    typed objects never add or remove such a node where its parent already was."""
    f = protobuf.field_at(message, path)
    if f is None or f.pointer:
        return False
    if f.repeated or f.type.startswith("map:"):
        return not f.omitempty
    return f.type in protobuf.schema().messages and f.type not in _UNTYPED_MESSAGES


class BuiltinListTypes:
    """The :class:`ListTypes` of a built-in kind, from its protobuf message's markers
    (:func:`_builtin_list_type`, :func:`_builtin_atomic_map`), and which of its fields Go
    always serializes (:func:`_builtin_always_serialized`)."""

    __slots__ = ("_lists", "_maps", "_present", "message")

    def __init__(self, message: str) -> None:
        self.message = message
        self._lists: dict[tuple[str, ...], ListType] = {}
        self._maps: dict[tuple[str, ...], bool] = {}
        self._present: dict[tuple[str, ...], bool] = {}

    def _cached(self, table: dict[tuple[str, ...], Any], path: tuple[str, ...],
                compute: Callable[[str, tuple[str, ...]], Any]) -> Any:
        """``compute(message, path)``, remembered in ``table`` (cleared at 4,096 entries)."""
        found = table.get(path)
        if found is None:
            if len(table) >= 4096:
                table.clear()
            found = table[path] = compute(self.message, path)
        return found

    def always_serialized(self, path: tuple[str, ...]) -> bool:
        """Whether Go always serializes the map or list field at ``path`` where its parent is
        (:func:`_builtin_always_serialized`), remembered."""
        return bool(self._cached(self._present, path, _builtin_always_serialized))

    def __call__(self, path: tuple[str, ...]) -> ListType:
        """:meth:`ListTypes.__call__` from the markers (:func:`_builtin_list_type`), remembered."""
        found: ListType = self._cached(self._lists, path, _builtin_list_type)
        return found

    def atomic_map(self, path: tuple[str, ...]) -> bool:
        """:meth:`ListTypes.atomic_map` from the markers (:func:`_builtin_atomic_map`), remembered."""
        return bool(self._cached(self._maps, path, _builtin_atomic_map))


@functools.cache
def _builtin_lists(message: str) -> BuiltinListTypes:
    return BuiltinListTypes(message)


def _always_serialized(w: _Walk, path: tuple[str, ...]) -> bool:
    """Whether the map or list field at ``path`` is there whenever its parent is (see
    :func:`_builtin_always_serialized`): any object's ``metadata``; for a built-in kind its
    non-pointer structs and its lists and maps without ``omitempty`` (a custom resource is
    untyped: nothing else)."""
    if path == ("metadata",):
        return True
    if not w.builtin or not isinstance(w.lists, BuiltinListTypes):
        return False
    if path and path[0] == "metadata":
        return _builtin_always_serialized(_OBJECT_META, path[1:])
    return w.lists.always_serialized(path)


def _atomic_map(w: _Walk, path: tuple[str, ...]) -> bool:
    """Whether the map at ``path`` is atomic (see :class:`ListTypes`); ``metadata`` by
    ObjectMeta's markers; without a schema no map is."""
    if path and path[0] == "metadata":
        return _builtin_atomic_map(_OBJECT_META, path[1:])
    return w.lists is not None and w.lists.atomic_map(path)


def _list_key(w: _Walk, path: tuple[str, ...]) -> ListType:
    """How the list at ``path`` (map-field names only) merges: any object's ``metadata`` by
    ObjectMeta's markers; the rest by ``w.lists``: a built-in kind's markers
    (:func:`_builtin_list_type`) or a custom resource's schema (:class:`SchemaListTypes`); a
    custom resource without a schema (or a built-in kind pumice has no schema of) keys only
    ``conditions`` (by ``type``), every other list is atomic."""
    if path and path[0] == "metadata":
        return _builtin_list_type(_OBJECT_META, path[1:])
    if w.lists is not None:
        return w.lists(path)
    if path and path[-1] == "conditions":
        return _CONDITIONS
    return _ATOMIC


class SchemaListTypes:
    """The :class:`ListTypes` of a structural schema (a served CRD version's
    ``openAPIV3Schema``): ``x-kubernetes-list-type: map`` with its
    ``x-kubernetes-list-map-keys`` (and the keys' schema defaults), ``set``, and ``atomic`` for
    every other list; ``x-kubernetes-map-type: atomic`` objects, as structured-merge-diff reads
    a CRD's schema. Answers are remembered per path (the schema must not change afterwards).

    Mirrors: k8s.io/kube-openapi pkg/schemaconv (a CRD schema's list extensions as
    structured-merge-diff list elements; a list without one is atomic) and structured-merge-diff
    fieldpath (a keyed item's key fields, from the schema default when the item omits one)."""

    __slots__ = ("_atomic", "_cache", "_root")

    def __init__(self, schema: Obj) -> None:
        self._root = schema
        self._cache: dict[tuple[str, ...], ListType] = {}
        self._atomic: dict[tuple[str, ...], bool] = {}

    def atomic_map(self, path: tuple[str, ...]) -> bool:
        """Whether the object at ``path`` (or the items of the list there) is
        ``x-kubernetes-map-type: atomic``."""
        found = self._atomic.get(path)
        if found is None:
            if len(self._atomic) >= 4096:
                self._atomic.clear()
            node = self._node(path)
            while isinstance(node, dict) and node.get("type") == "array":
                node = node.get("items")
            found = self._atomic[path] = isinstance(node, dict) and node.get("x-kubernetes-map-type") == "atomic"
        return found

    def __call__(self, path: tuple[str, ...]) -> ListType:
        found = self._cache.get(path)
        if found is None:
            if len(self._cache) >= 4096:
                self._cache.clear()
            found = self._cache[path] = self._find(path)
        return found

    def _node(self, path: tuple[str, ...]) -> Any:
        """The schema node at ``path``, None when the schema does not reach it."""
        node: Any = self._root
        for name in path:
            while isinstance(node, dict) and node.get("type") == "array":
                node = node.get("items")
            if not isinstance(node, dict):
                return None
            props = node.get("properties")
            if isinstance(props, dict) and name in props:
                node = props[name]
            elif isinstance(node.get("additionalProperties"), dict):
                node = node["additionalProperties"]
            else:
                return None
        return node

    def _find(self, path: tuple[str, ...]) -> ListType:
        node = self._node(path)
        if not isinstance(node, dict):
            return _ATOMIC
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "set":
            return _SET
        keys = node.get("x-kubernetes-list-map-keys")
        if list_type != "map" or not isinstance(keys, list) or not keys:
            return _ATOMIC
        item_props = (node.get("items") or {}).get("properties") or {}
        defaults = {k: item_props[k]["default"] for k in keys
                    if isinstance(item_props.get(k), dict) and "default" in item_props[k]}
        return tuple(str(k) for k in keys), True, defaults


def _item_key(lt: ListType, item: Any) -> dict[str, Any] | None:
    """The key fields of a keyed list's item: those it has, and the defaults of those it omits;
    a key field that is absent and has no default is left out (the item is then a different
    one from an item that has it). None when the item is not an object or has no key field at
    all.

    Mirrors: structured-merge-diff typed/helpers.go keyedAssociativeListItemToPathElement."""
    if type(item) is not dict:
        return None
    keys, _, defaults = lt
    out: dict[str, Any] = {}
    for k in keys or ():
        if k in item:
            out[k] = item[k]
        elif k in defaults:
            out[k] = defaults[k]
    return out or None


def _key_step(lt: ListType, item: Any) -> Step | None:
    """The ``k:`` step of a keyed list's item (key fields in name order, as upstream writes
    them), or None when the item has no key (see :func:`_item_key`)."""
    keys = lt[0] or ()
    if len(keys) == 1 and type(item) is dict:
        value = item.get(keys[0], _MISSING)
        if value is _MISSING:
            value = lt[2].get(keys[0], _MISSING)
            if value is _MISSING:
                return None
        if type(value) is str or type(value) is int:
            return _scalar_key_step(keys[0], value)
        return ("k", _json({keys[0]: value}))
    key = _item_key(lt, item)
    if key is None:
        return None
    return ("k", _json(dict(sorted(key.items()))))


def _keyless_item_error(lt: ListType, prefix: Path, index: int, item: Any) -> ApplyTypeError:
    """Upstream's error for an item the list at ``prefix`` cannot name: a keyed list's item that
    is not an object or has no key field, or a set's item that is an object, a list or null.

    Mirrors: structured-merge-diff typed/helpers.go keyedAssociativeListItemToPathElement,
    setItemToPathElement."""
    where = render_path(prefix)
    keys = lt[0]
    if keys is None:
        what = ("element that's a map type" if isinstance(item, dict) else
                "element that's an explicit null" if item is None else "list element")
        if isinstance(item, list):
            return ApplyTypeError(f"{where}: element {index}: not supported: associative list with lists as elements")
        return ApplyTypeError(f"{where}: element {index}: associative list without keys has an {what}")
    if not isinstance(item, dict):
        if item is None:
            return ApplyTypeError(f"{where}: element {index}: associative list with keys may not have a null element")
        return ApplyTypeError(f"{where}: element {index}: associative list with keys may not have non-map elements")
    listed = " ".join(quote(k) for k in keys)
    return ApplyTypeError(f"{where}: element {index}: associative list with keys has an element that omits all key "
                          f"fields [{listed}] (and doesn't have default values for any key fields)")


@functools.lru_cache(maxsize=4096)
def _scalar_key_step(key: str, value: str | int) -> Step:
    return ("k", _json({key: value}))


def _value_step(item: Any) -> Step:
    return ("v", _json(item))


def _json(value: Any) -> str:
    """Compact JSON, as upstream writes list keys and values in FieldsV1."""
    return msgspec.json.encode(value).decode()


def _field_set(value: Any, w: _Walk, names: tuple[str, ...], prefix: Path, out: set[Path]) -> None:
    """Collect the paths an applied value sets: scalars, atomic lists, empty maps and nulls are
    members; keyed list items and set-list values are members; a non-empty map is not.

    Raises:
        ApplyTypeError: a keyed list's item without a key, a set's item that is not a scalar
            (see :func:`_keyless_item_error`), or two items with the same key (upstream's
            ``duplicate entries for key [name="a"]``)."""
    if isinstance(value, dict):
        if not value or (prefix and _atomic_map(w, names)):
            if prefix:
                out.add(prefix)
            return
        for k, v in value.items():
            if not prefix and k in ("apiVersion", "kind"):
                continue
            if prefix == _META and k in _UNTRACKED_META:
                continue
            _field_set(v, w, (*names, k), (*prefix, ("f", k)), out)
    elif isinstance(value, list):
        lt = _list_key(w, names)
        key, merges, _ = lt
        if not merges:
            out.add(prefix)  # atomic list: the field itself is the leaf
            return
        seen: set[Step] = set()
        for i, item in enumerate(value):
            if key is not None:
                step = _key_step(lt, item)
                if step is None:
                    raise _keyless_item_error(lt, prefix, i, item)
            elif item is None or isinstance(item, dict | list):
                raise _keyless_item_error(lt, prefix, i, item)
            else:
                step = _value_step(item)
            if step in seen:
                raise ApplyTypeError(f"{render_path(prefix)}: duplicate entries for key {render_path((step,))}")
            seen.add(step)
            p = (*prefix, step)
            out.add(p)
            if key is not None:
                _field_set(item, w, names, p, out)
    elif prefix:
        out.add(prefix)


def field_set(obj: Obj, kind: str, builtin: bool = True, lists: ListTypes | None = None) -> set[Path]:
    """The set of field paths an applied configuration specifies (metadata identity fields,
    ``apiVersion`` and ``kind`` excluded). ``lists``: a custom resource's list types (see
    :func:`_list_key`).

    Mirrors: structured-merge-diff typed/tofieldset.go (TypedValue.ToFieldSet)."""
    out: set[Path] = set()
    _field_set(obj, _walk(kind, builtin, str(obj.get("apiVersion") or ""), _NOTHING, lists), (), (), out)
    return out


def fields_v1(paths: set[Path] | frozenset[Path]) -> Obj:
    """Encode a field set in FieldsV1 form: ``{"f:spec": {"f:replicas": {}}}``; a member that
    has members below it carries ``".": {}``; keys in upstream's order (``.`` first)."""
    root: dict[str, Any] = {}
    members: set[int] = set()
    for path in paths:
        node = root
        for kind, name in path:
            node = node.setdefault(f"{kind}:{name}", {})
        members.add(id(node))

    def emit(node: dict[str, Any]) -> Obj:
        out: Obj = {}
        if node and id(node) in members:
            out["."] = {}
        for key in sorted(node):
            out[key] = emit(node[key])
        return out

    return emit(root)


def parse_fields_v1(fv1: Any) -> set[Path]:
    """Decode a FieldsV1 object into its set of member paths (inverse of :func:`fields_v1`): a
    node is a member when it is empty or carries ``"."``."""
    out: set[Path] = set()

    def walk(node: Any, prefix: Path) -> None:
        for key, child in node.items():
            if key == "." or ":" not in key or not isinstance(child, dict):
                continue
            k, _, name = key.partition(":")
            p = (*prefix, (k, name))
            if not child or "." in child:
                out.add(p)
            walk(child, p)

    if isinstance(fv1, dict):
        walk(fv1, ())
    return out


def _has_member(fv1: Any, path: Path) -> bool:
    """Whether ``path`` is a member of the FieldsV1 object ``fv1`` (no full decode)."""
    node = fv1
    for kind, name in path:
        if not isinstance(node, dict):
            return False
        node = node.get(f"{kind}:{name}")
        if node is None:
            return False
    return isinstance(node, dict) and (not node or "." in node)


def _touches(fv1: Any, paths: list[Path]) -> bool:
    return any(_has_member(fv1, p) for p in paths)


def _fv1_key(name: str) -> tuple[int, str]:
    return (0, "") if name == "." else (1, name)


def _fv1_edit(fv1: Obj, remove: list[Path], add: list[Path]) -> Obj:
    """``fields_v1(parse_fields_v1(fv1) - remove | add)`` without decoding the whole set: only
    the nodes along the given paths are copied (``fv1`` is not modified)."""
    root: Obj = dict(fv1)
    mine = {id(root)}
    grown: dict[int, Obj] = {}  # by id: a node many added paths grow is sorted once, not once per path

    def own(parent: Obj, key: str) -> Obj:
        child: Obj = parent[key]
        if id(child) not in mine:
            child = dict(child)
            parent[key] = child
            mine.add(id(child))
        return child

    for path in remove:
        node, stack = root, []
        for kind, name in path:
            key = f"{kind}:{name}"
            if type(node.get(key)) is not dict:
                break
            stack.append((node, key))
            node = own(node, key)
        else:
            if any(k != "." for k in node):  # a member with members below: unmark it
                node.pop(".", None)
                continue
            parent, key = stack.pop()  # a leaf: drop it, then the prefixes it alone held up
            del parent[key]
            while not parent and stack:
                parent, key = stack.pop()
                del parent[key]
            if list(parent) == ["."]:  # a member with nothing left below it
                parent.clear()
    for path in add:
        node = root
        last = len(path) - 1
        for i, (kind, name) in enumerate(path):
            key = f"{kind}:{name}"
            if key in node:
                child = own(node, key)
                if i < last and not child:  # going below a member leaf: it stays a member
                    child["."] = {}
                elif i == last and child and "." not in child:
                    child["."] = {}
                    grown[id(child)] = child
                node = child
            else:
                child = {}
                node[key] = child
                mine.add(id(child))
                grown[id(node)] = node
                node = child
    for node in grown.values():
        items = sorted(node.items(), key=lambda kv: _fv1_key(kv[0]))
        node.clear()
        node.update(items)
    return root


def _list_value(name: str) -> tuple[bool, Any]:
    """``(True, value)`` of a ``v:`` step's JSON, ``(False, None)`` when it is not JSON."""
    try:
        return True, json.loads(name)
    except ValueError:
        return False, None


def _list_item_key(name: str) -> dict[str, Any] | None:
    """The key fields of a ``k:`` step (a JSON object), or None when it is not one.

    Steps come from stored ``managedFields``; the server writes only objects there, but a client
    may PUT any ``fieldsV1`` (kube-apiserver drops such entries when it decodes them; pumice
    keeps them), so a step that is not an object names no list item instead of failing the
    write with a 500."""
    ok, key = _list_value(name)
    return key if ok and isinstance(key, dict) else None

def render_path(path: Path) -> str:
    """``.spec.containers[name="c"].image`` style rendering used in conflict messages."""
    parts = []
    for kind, name in path:
        if kind == "f":
            parts.append(f".{name}")
        elif kind == "k":
            key = _list_item_key(name)
            if key is None:
                parts.append(f"[{name}]")
            else:
                parts.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]")
        else:
            parts.append(f"[={name}]")
    return "".join(parts)


def _value_order(value: Any) -> tuple[Any, ...]:
    """Sort key of a JSON value as structured-merge-diff orders values: numbers (by value),
    strings, booleans, lists, maps, null (value.Compare)."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if value is None:
        return (5,)
    return (3 if isinstance(value, list) else 4, _json(value))


def _step_order(step: Step) -> tuple[Any, ...]:
    kind, name = step
    if kind == "f":
        return (0, name)
    ok, value = _list_value(name)
    if kind == "k":
        items = sorted(value.items()) if ok and isinstance(value, dict) else []
        return (1, [(k, _value_order(v)) for k, v in items], name)
    return (2, _value_order(value) if ok else (6,), name)


def _path_order(path: Path) -> tuple[tuple[Any, ...], ...]:
    """Sort key of a path in upstream's walk of a field set: at each node its members (paths
    that end there) first, then the paths below its children, each group in path-element order
    (field names, then keys, then values).

    Mirrors: structured-merge-diff fieldpath/set.go Set.Iterate, element.go PathElement.Compare."""
    last = len(path) - 1
    return tuple((0 if i == last else 1, _step_order(step)) for i, step in enumerate(path))


def _lookup(obj: Any, path: Path, w: _Walk) -> tuple[bool, Any, tuple[str, ...]]:
    """``(found, value, names)`` of the node at ``path`` in ``obj``: a keyed item is the first
    whose key (:func:`_item_key`, defaults included) is the step's; ``names`` are the map-field
    names down to it (for :func:`_list_key`)."""
    node = obj
    names: tuple[str, ...] = ()
    for kind, name in path:
        if kind == "f":
            if not isinstance(node, dict) or name not in node:
                return False, None, names
            node = node[name]
            names = (*names, name)
        elif kind == "k":
            key = _list_item_key(name)
            if key is None or not isinstance(node, list):
                return False, None, names
            lt = _list_key(w, names)
            match = next((x for x in node if _item_key(lt, x) == key), _MISSING)
            if match is _MISSING:
                return False, None, names
            node = match
        else:
            ok, value = _list_value(name)
            if not ok or not isinstance(node, list) or value not in node:
                return False, None, names
            node = value
    return True, node, names


def _remove(obj: Any, path: Path, w: _Walk) -> None:
    """Remove the node at ``path`` from ``obj``; a list or map field below the top level that
    this leaves empty is removed too (upstream's removal leaves it null), unless it holds a
    built-in kind's non-pointer struct, which Go serializes as ``{}`` even then."""
    found, parent, names = _lookup(obj, path[:-1], w)
    if not found or not parent:
        return
    kind, name = path[-1]
    if kind == "f" and isinstance(parent, dict):
        parent.pop(name, None)
    elif kind == "k" and isinstance(parent, list):
        key = _list_item_key(name)
        if key is not None:
            lt = _list_key(w, names)
            parent[:] = [x for x in parent if _item_key(lt, x) != key]
    elif kind == "v" and isinstance(parent, list):
        ok, value = _list_value(name)
        if ok:
            parent[:] = [x for x in parent if x != value]
    if not parent and len(path) > 2 and path[-2][0] == "f" and _dropped_when_empty(w, names, parent):
        found, grand, _ = _lookup(obj, path[:-2], w)
        if found and isinstance(grand, dict) and grand.get(path[-2][1]) is parent:
            del grand[path[-2][1]]


def _dropped_when_empty(w: _Walk, names: tuple[str, ...], value: Any) -> bool:
    if isinstance(value, list) or not w.builtin:
        return True
    if names and names[0] == "metadata":
        f = protobuf.field_at(_OBJECT_META, names[1:])
    elif isinstance(w.lists, BuiltinListTypes):
        f = protobuf.field_at(w.lists.message, names)
    else:
        return True
    return f is None or f.pointer or f.type.startswith("map:")


def _merge(live: Any, applied: Any, w: _Walk, names: tuple[str, ...]) -> Any:
    if isinstance(applied, dict) and isinstance(live, dict) and not (names and _atomic_map(w, names)):
        out = dict(live)
        for k, v in applied.items():
            out[k] = _merge(live.get(k), v, w, (*names, k)) if k in live else copy.deepcopy(v)
        return out
    if isinstance(applied, list) and isinstance(live, list):
        lt = _list_key(w, names)
        keys, merges, _ = lt
        if not merges:
            return copy.deepcopy(applied)
        rkeys: list[Any] = []
        for i, item in enumerate(applied):
            if keys is None:
                if item is None or isinstance(item, dict | list):
                    raise _keyless_item_error(lt, tuple(("f", n) for n in names), i, item)
                rkeys.append(_json(item))
            else:
                step = _key_step(lt, item)
                if step is None:
                    raise _keyless_item_error(lt, tuple(("f", n) for n in names), i, item)
                rkeys.append(step)
        # a live item the list cannot name is kept as it is, matched by nothing
        lkeys: list[Any] = [(_json(x) if keys is None else _key_step(lt, x)) or object() for x in live]
        result = []
        for li, ri in _merged_order(lkeys, rkeys):
            if li < 0:
                result.append(copy.deepcopy(applied[ri]))
            elif ri < 0:
                result.append(copy.deepcopy(live[li]))
            else:
                result.append(_merge(live[li], applied[ri], w, names))
        return result
    return copy.deepcopy(applied)


def _merged_order(lkeys: list[Any], rkeys: list[Any]) -> list[tuple[int, int]]:
    """The items of a merged list, in order, as ``(live index, applied index)`` pairs (-1 for
    the side that lacks the item), given each side's item keys: the applied items in their
    order; a live item that the apply does not name stays where it was relative to the items
    around it; a live item that the apply names moves to where the apply puts it. A key seen
    twice on one side is taken at its first place.

    Mirrors: structured-merge-diff typed/merge.go mergingWalker.visitListItems."""
    lfirst: dict[Any, int] = {}
    for i, k in enumerate(lkeys):
        lfirst.setdefault(k, i)
    rfirst: dict[Any, int] = {}
    for i, k in enumerate(rkeys):
        rfirst.setdefault(k, i)
    shared = [k for k in rkeys if k in lfirst]
    shared.reverse()  # popped from the end: the next shared key in the apply's order
    nxt = shared.pop() if shared else None
    merged: set[Any] = set()
    out: list[tuple[int, int]] = []
    li = ri = 0
    nl, nr = len(lkeys), len(rkeys)
    while li < nl or ri < nr:
        if li < nl and ri < nr:
            k = lkeys[li]
            if k == rkeys[ri]:
                merged.add(k)
                out.append((lfirst[k], rfirst[k]))
                li += 1
                ri += 1
                nxt = shared.pop() if shared else None
                continue
            if k in rfirst and nxt is not None and nxt != k:
                li += 1  # the apply names it later: it goes there
                continue
        if li < nl:
            k = lkeys[li]
            if k not in rfirst:
                out.append((li, -1))
                li += 1
                continue
            if k in merged:
                li += 1
        if ri < nr:
            k = rkeys[ri]
            merged.add(k)
            out.append((lfirst.get(k, -1), rfirst[k]))
            ri += 1
            if nxt is not None and nxt == k:
                nxt = shared.pop() if shared else None
    return out


# ------------------------------------------------------------------ comparing two objects

@dataclass(frozen=True, slots=True)
class _Walk:
    kind: str
    builtin: bool
    skip_top: frozenset[str]  # apiVersion, kind and the write's reset fields (e.g. status)
    lists: ListTypes | None = None  # the object's list types (see _list_key)


def _walk(kind: str, builtin: bool, api_version: str, skip_top: frozenset[str], lists: ListTypes | None) -> _Walk:
    """The :class:`_Walk` of an object: a built-in kind's list types come from its schema
    (:func:`_builtin_list_type`) unless ``lists`` are given."""
    if lists is None and builtin:
        lists = _builtin_lists_of(api_version, kind)
    return _Walk(kind, builtin, skip_top, lists)


@functools.lru_cache(maxsize=256)
def _builtin_lists_of(api_version: str, kind: str) -> BuiltinListTypes | None:
    message = protobuf.message_for(api_version, kind)
    return _builtin_lists(message) if message is not None else None


def _diff(lhs: Any, rhs: Any, w: _Walk, names: tuple[str, ...], prefix: Path, changed: list[Path],
          removed: list[Path]) -> None:
    """Add to ``changed`` the paths ``rhs`` adds or modifies relative to ``lhs`` and to
    ``removed`` those it removes (``_MISSING`` for an absent side). A map or list node absent on
    one side is itself added/removed (besides its content); a JSON null counts as present and
    empty, as upstream's typed compare counts it.

    Mirrors: structured-merge-diff typed/compare.go (compareWalker)."""
    ldict, rdict = type(lhs) is dict, type(rhs) is dict
    llist, rlist = type(lhs) is list, type(rhs) is list
    if ldict or rdict or llist or rlist:
        lnull = lhs is None or lhs is _MISSING or lhs is _ZERO
        rnull = rhs is None or rhs is _MISSING or rhs is _ZERO
        if (ldict or lnull) and (rdict or rnull):
            if prefix and _atomic_map(w, names):  # an atomic map is a leaf
                _diff_leaf(lhs, rhs, prefix, changed, removed)
                return
            empty = not (ldict and lhs) and not (rdict and rhs)
            if not empty:
                _diff_map(lhs if ldict else {}, rhs if rdict else {}, w, names, prefix, changed, removed,
                          ldict or lhs is _ZERO, rdict or rhs is _ZERO)
        elif (llist or lnull) and (rlist or rnull):
            if not _list_key(w, names)[1]:  # an atomic list is a leaf
                if prefix:
                    _diff_leaf(lhs, rhs, prefix, changed, removed)
                return
            empty = not (llist and lhs) and not (rlist and rhs)
            if not empty:
                _diff_list(lhs if llist else [], rhs if rlist else [], w, names, prefix, changed, removed)
        else:  # the type changed: the node is modified; the old content goes, the new arrives
            changed.append(prefix)
            if ldict or llist:
                _diff(lhs, _MISSING, w, names, prefix, [], removed)
            if rdict or rlist:
                _diff(_MISSING, rhs, w, names, prefix, changed, [])
            return
        if not prefix or prefix == _META:
            return
        if empty:  # both sides empty, null or absent: a leaf (a Go zero value against {} is none)
            if lhs is not _ZERO and rhs is not _ZERO:
                _diff_leaf(lhs, rhs, prefix, changed, removed)
        elif lhs is _MISSING:
            changed.append(prefix)
        elif rhs is _MISSING:
            removed.append(prefix)
        return
    _diff_leaf(lhs, rhs, prefix, changed, removed)


def _diff_leaf(lhs: Any, rhs: Any, prefix: Path, changed: list[Path], removed: list[Path]) -> None:
    if lhs is _MISSING:
        changed.append(prefix)
    elif rhs is _MISSING:
        removed.append(prefix)
    elif type(lhs) is not type(rhs) or lhs != rhs:
        changed.append(prefix)


def _diff_map(lhs: dict[str, Any], rhs: dict[str, Any], w: _Walk, names: tuple[str, ...], prefix: Path,
              changed: list[Path], removed: list[Path], lpresent: bool = True, rpresent: bool = True) -> None:
    """The map step of :func:`_diff`; ``lpresent``/``rpresent``: whether the map itself is there
    on that side (its always-serialized fields then count as there too: :data:`_ZERO`)."""
    skip = (w.skip_top if not prefix else _STRIPPED_META if prefix == _META else _NOTHING)
    for k, lv in lhs.items():
        if k in skip:
            continue
        rv = rhs.get(k, _MISSING)
        lt = type(lv)
        if rv is _MISSING:
            if lt is not dict and lt is not list:
                removed.append((*prefix, ("f", k)))
                continue
            if rpresent and _always_serialized(w, (*names, k)):
                rv = _ZERO
        elif lt is type(rv):
            if lv == rv:
                continue
            if lt is not dict and lt is not list:
                changed.append((*prefix, ("f", k)))
                continue
        _diff(lv, rv, w, (*names, k), (*prefix, ("f", k)), changed, removed)
    for k, rv in rhs.items():
        if k not in lhs and k not in skip:
            rt = type(rv)
            if rt is not dict and rt is not list:
                changed.append((*prefix, ("f", k)))
            else:
                lv = _ZERO if lpresent and _always_serialized(w, (*names, k)) else _MISSING
                _diff(lv, rv, w, (*names, k), (*prefix, ("f", k)), changed, removed)


def _diff_list(lhs: list[Any], rhs: list[Any], w: _Walk, names: tuple[str, ...], prefix: Path,
               changed: list[Path], removed: list[Path]) -> None:
    lt = _list_key(w, names)
    if lt[0] is None:
        for v in lhs:
            if not isinstance(v, dict | list) and v not in rhs:
                removed.append((*prefix, _value_step(v)))
        for v in rhs:
            if not isinstance(v, dict | list) and v not in lhs:
                changed.append((*prefix, _value_step(v)))
        return
    lm: dict[Step, Any] = {}
    for item in lhs:
        step = _key_step(lt, item)
        if step is not None:
            lm.setdefault(step, item)
    rm: dict[Step, Any] = {}
    for item in rhs:
        step = _key_step(lt, item)
        if step is not None:
            rm.setdefault(step, item)
    for step, lv in lm.items():
        rv = rm.get(step, _MISSING)
        if rv is not _MISSING and lv == rv:
            continue
        _diff(lv, rv, w, names, (*prefix, step), changed, removed)
    for step, rv in rm.items():
        if step not in lm:
            _diff(_MISSING, rv, w, names, (*prefix, step), changed, removed)


def _created(value: dict[str, Any], w: _Walk, names: tuple[str, ...], top: bool, present: bool = True) -> Obj:
    """The FieldsV1 of every path of a new object (what :func:`_compare` from ``{}`` finds,
    encoded as :func:`fields_v1` encodes it), built in one pass: the create's fast path.
    ``present``: ``value`` is a struct an empty object of the kind already has (the object,
    and its always-serialized structs below it), whose always-serialized fields are not added."""
    out: Obj = {}
    skip = w.skip_top if top else _STRIPPED_META if names == ("metadata",) else _NOTHING
    for k in sorted(value):
        if k in skip:
            continue
        v = value[k]
        t = type(v)
        if t is dict or t is list:
            path = (*names, k)
            there = present and _always_serialized(w, path)
            if t is dict and v:
                if _atomic_map(w, path):
                    out["f:" + k] = {}
                    continue
                child = _created(v, w, path, False, there)
                if there:
                    if child:
                        out["f:" + k] = child
                    continue
                out["f:" + k] = {".": {}, **child}
                continue
            if t is list and v:
                lt = _list_key(w, path)
                key, merges, _ = lt
                if merges:
                    atomic_items = key is not None and _atomic_map(w, path)
                    items: Obj = {}
                    for item in v:
                        step = _key_step(lt, item) if key is not None else None
                        if step is not None:
                            kind, name = step
                            items.setdefault(f"{kind}:{name}", {} if atomic_items else
                                             {".": {}, **_created(item, w, path, False, False)})
                        elif key is None and not isinstance(item, dict | list):
                            kind, name = _value_step(item)
                            items[f"{kind}:{name}"] = {}
                    ordered = {i: items[i] for i in sorted(items)}
                    out["f:" + k] = ordered if there else {".": {}, **ordered}
                    continue
            if there and not v:
                continue  # an empty always-serialized struct, list or map: the zero value
        out["f:" + k] = {}
    return out


def _compare(old: Obj, new: Obj, w: _Walk) -> tuple[list[Path], list[Path]]:
    """(added or modified, removed) paths from ``old`` to ``new`` (whole objects)."""
    changed: list[Path] = []
    removed: list[Path] = []
    _diff_map(old, new, w, (), (), changed, removed)
    return changed, removed


# ------------------------------------------------------------------ managedFields entries

def _entry_id(e: Obj) -> tuple[str, str, str, str]:
    """Upstream's manager identifier: manager, operation, apiVersion (Update only), subresource."""
    op = str(e.get("operation") or "")
    return (str(e.get("manager") or ""), op, "" if op == "Apply" else str(e.get("apiVersion") or ""),
            str(e.get("subresource") or ""))


def _id_json(ident: tuple[str, str, str, str]) -> str:
    """The identifier as upstream's JSON (the order conflicts are grouped in)."""
    d = {"manager": ident[0], "operation": ident[1]}
    if ident[2]:
        d["apiVersion"] = ident[2]
    if ident[3]:
        d["subresource"] = ident[3]
    return json.dumps(d, separators=(",", ":"))


def describe_manager(e: Obj) -> str:
    """A manager as conflict messages print it: ``"m"``, ``"m" with subresource "status"``, and
    for Update managers `` using <apiVersion>``.

    Mirrors: k8s.io/apimachinery pkg/util/managedfields/internal/conflict.go printManager."""
    out = json.dumps(str(e.get("manager") or ""), ensure_ascii=False)
    if e.get("subresource"):
        out += f" with subresource {json.dumps(str(e['subresource']), ensure_ascii=False)}"
    if e.get("operation") == "Update":
        out += f" using {e.get('apiVersion') or ''}"
    return out


def _valid_entries(entries: Any) -> list[Obj] | None:
    """The entries when every one decodes as upstream's DecodeManagedFields accepts it
    (operation Apply or Update, an apiVersion, fieldsType FieldsV1, fieldsV1 an object or
    absent), else None."""
    if not isinstance(entries, list):
        return None
    for e in entries:
        if not isinstance(e, dict) or e.get("operation") not in ("Apply", "Update") or not e.get("apiVersion") \
                or e.get("fieldsType") != "FieldsV1" or not isinstance(e.get("fieldsV1", {}), dict):
            return None
    return entries


def _is_reset(entries: Any) -> bool:
    """``managedFields: []`` or ``[{}]``: the client asks to drop all ownership."""
    return isinstance(entries, list) and (not entries or (len(entries) == 1 and entries[0] == {}))


def _entry(manager: str, operation: str, api_version: str, time: str | None, paths: set[Path] | Obj,
           subresource: str) -> Obj:
    e: Obj = {"manager": manager or "unknown", "operation": operation, "apiVersion": api_version}
    if time:
        e["time"] = time
    e["fieldsType"] = "FieldsV1"
    e["fieldsV1"] = paths if isinstance(paths, dict) else fields_v1(paths)
    if subresource:
        e["subresource"] = subresource
    return e


def _ordered(entries: list[Obj]) -> list[Obj]:
    """Upstream's order: operation (Apply first), time, manager, apiVersion, subresource."""
    return sorted(entries, key=lambda e: (str(e.get("operation") or ""), str(e.get("time") or ""),
                                          str(e.get("manager") or ""), str(e.get("apiVersion") or ""),
                                          str(e.get("subresource") or "")))


def _cap(entries: list[Obj], limit: int = MAX_UPDATE_MANAGERS) -> list[Obj]:
    """Merge the oldest Update entries, per apiVersion, into one ``ancient-changes`` entry
    until at most ``limit`` are left (the bucket takes the time of the newest merged one).

    Mirrors: k8s.io/apimachinery pkg/util/managedfields/internal/capmanagers.go."""
    updaters = [e for e in entries if e.get("operation") == "Update"]
    if len(updaters) <= limit:
        return entries
    updaters.sort(key=lambda e: (str(e.get("time") or ""), _id_json(_entry_id(e))))
    by_id = {_entry_id(e): e for e in entries}
    first: dict[str, Obj] = {}
    length = len(updaters)
    for e in updaters:
        if length <= limit:
            break
        version = str(e.get("apiVersion") or "")
        if version not in first:
            first[version] = e
            continue
        bucket_id = (ANCIENT_CHANGES, "Update", version, "")
        if bucket_id not in by_id:
            head = by_id.pop(_entry_id(first[version]))
            by_id[bucket_id] = head
        merged = parse_fields_v1(by_id[bucket_id].get("fieldsV1")) | parse_fields_v1(e.get("fieldsV1"))
        by_id[bucket_id] = _entry(ANCIENT_CHANGES, "Update", version, e.get("time"), merged, "")
        del by_id[_entry_id(e)]
        length -= 1
    return list(by_id.values())


def _set_entries(obj: Obj, entries: list[Obj]) -> None:
    md = obj.setdefault("metadata", {})
    if entries:
        md["managedFields"] = _ordered(entries)
    else:
        md.pop("managedFields", None)


def update_managed_fields(old: Obj | None, new: Obj, *, manager: str, api_version: str, kind: str, builtin: bool,
                          time: str | None, subresource: str = "", ignore: frozenset[str] = frozenset(),
                          lists: ListTypes | None = None) -> None:
    """Record a non-apply write of ``new`` (over ``old``; None for a create) in
    ``new.metadata.managedFields``, in place.

    Args:
        old: the stored object (not modified), or None for a create.
        new: the object about to be stored; its ``metadata.managedFields`` is replaced.
        manager: the field manager (see :func:`manager_or_user_agent`); ``""`` records ``unknown``.
        api_version: the endpoint's ``group/version`` (``v1``, ``apps/v1``).
        kind, builtin, lists: how lists merge (see :func:`server_side_apply`).
        time: the write's time (RFC 3339, seconds), or None to leave the entry without one
            (upstream's scale subresource writes carry none).
        subresource: ``""``, ``status``, ``scale`` or ``finalize``: a subresource write ignores
            managedFields sent in the body.
        ignore: top-level fields the write does not own (the reset fields: ``status`` for a
            write of the main resource of a kind with a status subresource).

    Mirrors: k8s.io/apimachinery pkg/util/managedfields/internal (FieldManager.Update and the
    managers it chains) and structured-merge-diff merge/update.go Updater.Update.
    """
    md = new.get("metadata")
    if not isinstance(md, dict):
        return
    stored = ((old or {}).get("metadata") or {}).get("managedFields")
    old_entries: list[Obj] = stored if type(stored) is list else []
    sent = md.get("managedFields")
    if subresource or sent is None or sent is stored or sent == stored:
        entries = old_entries
    elif _is_reset(sent):
        entries = []
    else:
        entries = _valid_entries(sent) or old_entries
    if not entries and old is not None:  # never tracked, or reset: stays untracked
        md.pop("managedFields", None)
        return
    w = _walk(kind, builtin, api_version, _TYPE_FIELDS | ignore, lists)
    if old is None and not entries:  # a create: every field is the creator's
        fv1 = _created(new, w, (), True)
        _set_entries(new, [_entry(manager, "Update", api_version, time, fv1, subresource)] if fv1 else [])
        return
    changed, removed = _compare(old or {}, new, w)
    if not changed and not removed:
        if entries is not old_entries or old is None:
            _set_entries(new, list(entries))
        elif old is not None and "managedFields" in old.get("metadata", {}):
            md["managedFields"] = old["metadata"]["managedFields"]
        return
    me = (manager or "unknown", "Update", api_version, subresource)
    gone = changed + removed
    out: list[Obj] = []
    mine: Obj | None = None
    for e in entries:
        if _entry_id(e) == me:
            mine = e
            continue
        owned = e.get("fieldsV1")
        if isinstance(owned, dict) and _touches(owned, gone):
            owned = _fv1_edit(owned, gone, [])
            if not owned:
                continue
            e = {**e, "fieldsV1": owned}
        out.append(e)
    if mine is not None and not changed and not _touches(mine.get("fieldsV1"), removed):
        out.append(mine)
    elif mine is not None or changed:
        fv1 = (mine or {}).get("fieldsV1") or {}
        if mine is not None and all(_has_member(fv1, p) for p in changed) and not _touches(fv1, removed):
            paths: Obj = fv1
        else:
            paths = _fv1_edit(fv1, removed, changed)
        stamp = time if changed else (mine or {}).get("time")
        if paths:
            out.append(_entry(manager, "Update", api_version, stamp, paths, subresource))
    _set_entries(new, _cap(out))


# ------------------------------------------------------------------ apply

def server_side_apply(live: Obj | None, applied: Obj, *, manager: str, kind: str, force: bool,
                      builtin: bool | None = None, time: str | None = None, api_version: str | None = None,
                      subresource: str = "", ignore: frozenset[str] = frozenset(),
                      lists: ListTypes | None = None) -> Obj:
    """Apply ``applied`` for ``manager`` onto ``live`` (None to create).

    Args:
        live: the stored object, or None when it does not exist; not modified.
        applied: the applied configuration (decoded YAML/JSON object); not modified.
        manager: the field manager (``fieldManager`` query parameter, e.g. ``kubectl``).
        kind: the object's kind; with ``api_version`` it names a built-in kind's schema.
        force: take over fields other managers own instead of failing.
        builtin: whether the object is of a built-in kind; by default decided from its
            ``apiVersion`` (core, ``apps``, ``batch``, ``policy``, ``autoscaling`` and ``*.k8s.io``
            groups are built in; ``ray.io`` or ``batch.volcano.sh`` are not).
        time: the write's time (RFC 3339) for the entries it changes; None records none.
        api_version: the endpoint's ``group/version``; by default the applied ``apiVersion``.
        subresource: ``""``, or ``status`` for an apply to the status subresource (its entry is
            a different manager from the same name's apply to the object).
        ignore: top-level fields the apply does not own (``status`` on the main resource of a
            kind with a status subresource).
        lists: a custom resource's list types (:class:`SchemaListTypes` of its served
            version's schema); without them a built-in kind's come from its schema
            (:class:`BuiltinListTypes`) and a custom resource's lists are atomic except
            ``conditions`` (keyed by ``type``).

    Returns:
        The new object with ``metadata.managedFields`` updated.

    Raises:
        ApplyConflict: a field another manager (Apply or Update) owns would change and
            ``force`` is False; every clash is listed, grouped by manager (for ``kubectl``, less
            those the last-applied annotation forgives).
        ValueError: the applied configuration is not an object, a keyed list's element has no
            key field (nor a default for one), or a set's element is not a scalar (upstream's
            messages, e.g. ``.spec.ports: element 0: associative list with keys may not have
            non-map elements``).
    """
    if not isinstance(applied, dict):
        raise ValueError("the applied configuration must be an object")
    is_builtin = _is_builtin(applied, live, kind) if builtin is None else builtin
    sent = applied
    applied = copy.deepcopy(applied)
    applied_meta = applied.get("metadata") or {}
    applied_meta.pop("managedFields", None)
    version = api_version or str(applied.get("apiVersion") or (live or {}).get("apiVersion") or "")
    w = _walk(kind, is_builtin, version, _TYPE_FIELDS | ignore, lists)
    new_set: set[Path] = set()
    _field_set(applied, w, (), (), new_set)
    new_set = {p for p in new_set if p[0][1] not in ignore}
    me = (manager, "Apply", "", subresource)
    out: list[Obj] = []
    previous: Obj | None = None
    if live is None:
        result = applied
        changed_obj = True
    else:
        base = copy.deepcopy(live)
        base.get("metadata", {}).pop("managedFields", None)
        entries = _valid_entries((live.get("metadata") or {}).get("managedFields") or []) or []
        if not entries:  # never tracked: what is there belongs to before-first-apply
            present, _ = _compare({}, base, w)
            if present:
                entries = [_entry(BEFORE_FIRST_APPLY, "Update", version, time, set(present), "")]
        previous = next((e for e in entries if _entry_id(e) == me), None)
        others = [e for e in entries if e is not previous]
        result = _merge(base, applied, w, ())
        _remove_released_fields(result, previous, others, new_set, w)
        changed, removed = _compare(base, result, w)
        changed_obj = result != base
        changed_set, removed_set = set(changed), set(removed)
        clashes: list[tuple[Obj, set[Path]]] = []
        for e in others:
            owned = parse_fields_v1(e.get("fieldsV1"))
            clash = owned & changed_set
            if clash:
                clashes.append((e, clash))
            if clash or owned & removed_set:
                owned = owned - clash - removed_set
                if owned:
                    out.append({**e, "fieldsV1": fields_v1(owned)})
            else:
                out.append(e)
        if clashes and not force and manager == KUBECTL_MANAGER:
            allowed = _last_applied_fields(base, version, w)
            clashes = [(e, clash - allowed) for e, clash in clashes if clash - allowed]
        if clashes and not force:
            clashes.sort(key=lambda c: _id_json(_entry_id(c[0])))
            raise ApplyConflict([(describe_manager(e), render_path(p)) for e, clash in clashes
                                 for p in sorted(clash, key=_path_order)])
    if new_set:
        stamp = time if changed_obj else (previous or {}).get("time")
        out.append(_entry(manager, "Apply", version, stamp, new_set, subresource))
    _set_entries(result, out)
    if manager == KUBECTL_MANAGER:
        _sync_last_applied(result, sent)
    return result


def _last_applied_fields(live: Obj, version: str, w: _Walk) -> set[Path]:
    """The fields of ``live``'s last-applied annotation that still hold the value it records:
    conflicts on these are forgiven for an apply by ``kubectl`` (client-side apply owned them and
    nobody changed them since). Empty when there is no annotation, it is not a JSON object, or
    its ``apiVersion`` is not the endpoint's ``version``.

    Mirrors: apimachinery pkg/util/managedfields/internal/lastappliedmanager.go
    (allowedConflictsFromLastApplied)."""
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED_CONFIG_ANNOTATION)
    if not isinstance(text, str) or not text:
        return set()
    try:
        last = json.loads(text)
        if not isinstance(last, dict) or last.get("apiVersion") != version:
            return set()
        changed, removed = _compare(last, live, w)
        owned: set[Path] = set()
        _field_set(last, w, (), (), owned)
        return owned - set(changed) - set(removed)
    except ValueError:
        return set()
    except RecursionError:  # a record nested deeper than any object the API server accepts
        md = live.get("metadata") or {}
        _log.warning("%s %s/%s: %s is nested too deeply to compare; no conflict is forgiven", w.kind,
                     md.get("namespace", ""), md.get("name", ""), LAST_APPLIED_CONFIG_ANNOTATION)
        return set()


def _sync_last_applied(result: Obj, sent: Obj) -> None:
    """After a successful apply by ``kubectl``: an object that carries the last-applied
    annotation gets it rewritten to the configuration just applied (without that annotation), so
    a later client-side ``kubectl apply`` diffs against it; an annotation that would push the
    object's annotations over their size limit is dropped instead.

    Mirrors: apimachinery pkg/util/managedfields/internal/lastappliedupdater.go and
    lastapplied.go (SetLastApplied)."""
    annotations = (result.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, dict) or not annotations.get(LAST_APPLIED_CONFIG_ANNOTATION):
        return
    config = copy.deepcopy(sent)
    sent_annotations = (config.get("metadata") or {}).get("annotations")
    if isinstance(sent_annotations, dict):
        sent_annotations.pop(LAST_APPLIED_CONFIG_ANNOTATION, None)
    annotations[LAST_APPLIED_CONFIG_ANNOTATION] = encode_unstructured(config)
    if annotations_too_long(annotations):
        del annotations[LAST_APPLIED_CONFIG_ANNOTATION]


def _remove_released_fields(result: Obj, previous: Obj | None, others: list[Obj], new_set: set[Path],
                            w: _Walk) -> None:
    """Remove from ``result`` the fields the applier applied before (``previous``), no longer
    applies and no other manager owns: whole subtrees, shallowest first; a subtree another
    manager still owns part of stays, and then only its parts nobody owns go."""
    if previous is None:
        return
    before = parse_fields_v1(previous.get("fieldsV1"))
    owned: set[Path] = set()
    for e in others:
        owned |= parse_fields_v1(e.get("fieldsV1"))
    removed: list[Path] = []
    kept = owned | new_set
    for path in sorted(before - new_set - owned, key=len):
        if any(path[:len(r)] == r for r in removed):
            continue
        if any(o[:len(path)] == path for o in kept):
            continue
        _remove(result, path, w)
        removed.append(path)


_BUILTIN_GROUPS = frozenset({"", "apps", "batch", "policy", "autoscaling"})


def _is_builtin(applied: Obj, live: Obj | None, kind: str) -> bool:
    api_version = applied.get("apiVersion") or (live or {}).get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        return kind in SUPPORTED_KINDS
    group = api_version.rpartition("/")[0]
    return group in _BUILTIN_GROUPS or group.endswith(".k8s.io")
