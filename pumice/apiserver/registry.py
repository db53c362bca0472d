"""The generic REST semantics of kube-apiserver over the :class:`~pumice.apiserver.store.Store`.

One :class:`Registry` serves every kind (built-in and custom). Per-kind behaviour lives in the
kind's strategy object (:mod:`pumice.apiserver.strategy`): prepare for create and update,
validation, graceful deletion and what holds a deleting object, POST subresources (Pod binding and
eviction), and what happens after a write or a final delete (CRDs served, Events expired).

Write pipeline (create and update alike): check the body against the endpoint, prepare (system
metadata, status handling, generation), prune + default (schema), mutating admission, validation,
validating admission, then one store commit. Nothing is written when any step fails, and nothing
is written for ``dryRun=All``. An update that changes nothing is not written (same
resourceVersion, no event).

Errors: every method raises :class:`~pumice.apiserver.errors.StatusError`.

Mirrors: k8s.io/apiserver pkg/registry/generic/registry/store.go (Create, Update, Delete,
BeforeCreate/BeforeUpdate/BeforeDelete), kubernetes pkg/registry/core/pod (strategy, BindingREST,
EvictionREST), pkg/registry/core/namespace.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import copy
import itertools
import logging
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from pumice._util import gobase64
from pumice._util.clock import Clock, parse_rfc3339, rfc3339
from pumice._util.gostrings import quote, sprint_v
from pumice.api import Obj, protobuf
from pumice.api import schema as kschema
from pumice.api.admission import AdmissionError, AdmissionRequest, FieldCause
from pumice.api.apply import (
    ApplyConflict,
    ApplyTypeError,
    SchemaListTypes,
    server_side_apply,
    update_managed_fields,
)
from pumice.api.fields import (
    REDACTED,
    TIME_PARSE,
    FixedPoints,
    bytes_error,
    field_types_ok,
    model_for,
    object_meta_tree,
    type_causes,
    types_clean,
    unknown_fields,
)
from pumice.api.godecode import go_json_value, unmarshal_error
from pumice.api.gojson import go_json
from pumice.api.meta import deep_copy
from pumice.api.params import query_bool
from pumice.api.patch import MAX_JSON_PATCH_OPERATIONS, PatchError, json_patch, merge_patch_into
from pumice.api.schema import json_type_name as json_type
from pumice.api.scheme import EVICTION, ResourceKind, Scheme
from pumice.api.selectors import FieldSelector, LabelSelector
from pumice.api.strategic import MergeError, strategic_merge_patch
from pumice.apiserver import autoscaling as _autoscaling  # noqa: F401 - registers the HPA strategies
from pumice.apiserver import errors, events
from pumice.apiserver import kinds as _kinds  # noqa: F401 - registers the strategies of the newer kinds
from pumice.apiserver import networking as _networking  # noqa: F401 - registers networking.k8s.io strategies
from pumice.apiserver import storagekinds as _storagekinds  # noqa: F401 - registers the CSI kinds' strategies
from pumice.apiserver.admission import AdmissionChain
from pumice.apiserver.crds import CustomResource, CustomVersion, crd_info
from pumice.apiserver.decode import (
    dry_run_cause,
    dry_run_refused,
    dry_run_values,
    object_resource_version,
    options_invalid,
    parse_resource_version,
)
from pumice.apiserver.errors import StatusError
from pumice.apiserver.eviction import check_disruption_budget
from pumice.apiserver.servicealloc import NODE_PORT_RANGE, SERVICE_CLUSTER_IP_RANGE, ServiceAllocators
from pumice.apiserver.store import MAX_REQUEST_BYTES, Expired, ObjectTooLarge, Store, Stored, Watcher
from pumice.apiserver.strategy import Strategy, blocking_cause, blocks_rules, strategy_for

__all__ = ["DeleteOptions", "Registry", "resource_key"]

log = logging.getLogger(__name__)
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

_META_TREE = object_meta_tree()
#: root-schema keywords under which a schema check of an object is the union of its properties'
#: the bits of a random 128-bit number a version-4 UUID keeps, and those it sets (RFC 4122 variant 10,
#: version 4: what uuid.UUID(int=..., version=4) does to them)
_UUID_KEEP = ~((0xc000 << 48) | (0xf000 << 64)) & ((1 << 128) - 1)
_UUID_V4 = (0x8000 << 48) | (4 << 76)
_SPLIT_ROOT = frozenset({"type", "properties", "description"})
#: kube-apiserver's 400 text when a body names another namespace than the URL (handlers/rest.go)
TOO_LARGE = "etcdserver: request is too large"
"""etcd's ErrRequestTooLarge text, what a write over :data:`~pumice.apiserver.store.MAX_REQUEST_BYTES` gets."""
#: the start of every refusal of a list's continue token (storage.ErrGenericInvalidKey, wrapped by
#: the store's list)
_BAD_CONTINUE = "invalid continue token: continue key is not valid"
#: how Go's decoder words a value of the wrong JSON type (pumice.api.godecode)
_TYPE_ERROR = "json: cannot unmarshal "
_NAMESPACE_MISMATCH = "the namespace of the provided object does not match the namespace sent on the request"
_GEN_CHARS = "bcdfghjklmnpqrstvwxz2456789"
#: the longest generateName base kept: a generated name has 5 random characters after it and a
#: DNS label's 63 at most (k8s.io/apiserver pkg/storage/names MaxGeneratedNameLength)
_MAX_GENERATED_NAME_LENGTH = 63 - 5
_STATUS = frozenset({"status"})
#: stored versions _clean_rests remembers at most (half the oldest go at the limit)
_CLEAN_RESTS = 65536

#: the store resource of Events (core/v1 and events.k8s.io/v1 share it)
EVENT_RESOURCES = (events.CORE_RESOURCE,)


#: the store resource of Services
SERVICES_RESOURCE = "/services"


def list_item_tails(rk: ResourceKind, datas: builtins.list[bytes]) -> builtins.list[bytes | memoryview]:
    """Each of ``datas`` (the JSON of objects of the built-in kind ``rk``) without its top-level
    ``apiVersion`` and ``kind`` and without its opening brace, as the items of a list are joined
    (``b"[{" + b",{".join(tails) + b"]"``). Where the two are the object's first members (as
    pumice stores built-in objects) or its last, a view of the bytes; else decoded, removed and
    encoded again.
    """
    av, kind = rk.api_version.encode(), rk.kind.encode()
    heads = (b'{"apiVersion":"' + av + b'","kind":"' + kind + b'",',
             b'{"kind":"' + kind + b'","apiVersion":"' + av + b'",')
    tails = (b',"apiVersion":"' + av + b'","kind":"' + kind + b'"}',
             b',"kind":"' + kind + b'","apiVersion":"' + av + b'"}')
    out: builtins.list[bytes | memoryview] = []
    for data in datas:
        for head in heads:
            if data.startswith(head):
                out.append(memoryview(data)[len(head):])
                break
        else:
            for tail in tails:
                if data.endswith(tail):
                    out.append(data[1:-len(tail)] + b"}")
                    break
            else:
                obj = msgspec.json.decode(data)
                obj.pop("apiVersion", None)
                obj.pop("kind", None)
                out.append(_encode(obj)[1:])
    return out


def keep_managed_field_times(new: Obj, old: Obj) -> None:
    """Give ``new`` (an updated object) the ``metadata.managedFields`` of ``old`` (the stored one)
    when the two differ in nothing but the managers' ``time``: a server-side apply whose values
    the body check then normalized back to the stored ones (``cpu: 1000m`` stored ``"1"``)
    changed nothing, so it writes nothing (no new resourceVersion, no watch event). In place.

    Mirrors: apiserver pkg/endpoints/handlers/fieldmanager/equality.go
    IgnoreManagedFieldsTimestampsTransformer (pumice's stored objects are normalized, so plain
    equality stands for its semantic DeepEqual).
    """
    nmd, omd = new.get("metadata"), old.get("metadata")
    if type(nmd) is not dict or type(omd) is not dict:
        return
    nmf, omf = nmd.get("managedFields"), omd.get("managedFields")
    if type(nmf) is not list or type(omf) is not list or len(nmf) != len(omf) or nmf == omf:
        return

    def untimed(entries: builtins.list[Any]) -> builtins.list[bytes]:
        return sorted(_encode({k: v for k, v in e.items() if k != "time"} if type(e) is dict else e) for e in entries)

    if untimed(nmf) == untimed(omf) and {**new, "metadata": {**nmd, "managedFields": omf}} == old:
        nmd["managedFields"] = omf


def resource_key(rk: ResourceKind) -> str:
    """The store resource of a kind: ``"<group>/<plural>"`` (all versions share it)."""
    return f"{rk.group}/{rk.plural}"


_DELETE_OPTIONS_MESSAGE = "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"
#: the scheme DELETE bodies are decoded with, as a Go error names it
_META_SCHEME = "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:27"
#: kinds the meta scheme registers unversioned (found under any apiVersion)
_META_UNVERSIONED = frozenset({"DeleteOptions", "CreateOptions", "UpdateOptions", "Status", "APIVersions",
                               "APIGroupList", "APIGroup", "APIResourceList"})
_META_TABLES = ("Table", "TableOptions", "PartialObjectMetadata", "PartialObjectMetadataList")
#: the meta scheme's other kinds by apiVersion (metainternalversion addToGroupVersion)
_META_KINDS: dict[str, tuple[str, ...]] = {
    "meta.k8s.io/v1": ("WatchEvent", "ListOptions", "GetOptions", "PatchOptions", *_META_TABLES),
    "meta.k8s.io/v1beta1": _META_TABLES,
    "meta.k8s.io/__internal": ("ListOptions", "GetOptions", *_META_TABLES),
}


@dataclass
class DeleteOptions:
    """Parsed meta/v1 DeleteOptions."""

    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    preconditions: dict[str, str] | None = None
    dry_run: bool = False
    #: the deprecated ``orphanDependents`` as given (None: not given); also read into
    #: ``propagation_policy``
    orphan_dependents: bool | None = None

    @staticmethod
    def decode(body: Any) -> Any:
        """Check a DELETE or deletecollection request body (a decoded JSON object, or None when the
        request had none) as kube-apiserver's meta codec decodes it into meta/v1 DeleteOptions,
        before anything is read from it; the body itself is returned.

        ``kind`` (default ``DeleteOptions``) must be DeleteOptions under any ``apiVersion`` (the
        meta scheme registers it unversioned, so ``v1``, ``apps/v1`` and ``meta.k8s.io/v1`` are
        all one); a kind the meta scheme knows otherwise fails its conversion, any other kind is
        not registered. Then every field must fit its Go type (:mod:`pumice.api.godecode`).

        Mirrors: apiserver pkg/endpoints/handlers/delete.go DeleteResource / DeleteCollection (the
        decode error wrapped in errors.NewBadRequest), apimachinery runtime/serializer/json
        Serializer.Decode, Scheme.New, metainternalversion addToGroupVersion.

        Raises:
            StatusError: 400 BadRequest with the decoder's text.
        """
        if not isinstance(body, dict):
            return body
        for key in ("apiVersion", "kind"):
            value = body.get(key)
            if value is not None and not isinstance(value, str):
                raise errors.bad_request(
                    f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                    f"{go_json_value(value)} into Go struct field .{key} of type string")
        kind = body.get("kind") or "DeleteOptions"
        version = body.get("apiVersion") or "meta.k8s.io/v1"
        if kind != "DeleteOptions":
            if kind in _META_UNVERSIONED or kind in _META_KINDS.get(version, ()):
                package = "internalversion" if kind == "ListOptions" and version.endswith("/__internal") else "v1"
                why = f"converting ({package}.{kind}) to (v1.DeleteOptions): unknown conversion"
            else:
                why = (f"no kind {quote(kind)} is registered for version {quote(version)} in scheme "
                       f'"{_META_SCHEME}"')
            raise errors.bad_request(why)
        type_error = unmarshal_error(_DELETE_OPTIONS_MESSAGE, body)
        if type_error is not None:
            raise errors.bad_request(type_error)
        return body

    @classmethod
    def parse(cls, body: Any, query: dict[str, str], dry_run: list[str] | None = None) -> DeleteOptions:
        """From a DELETE body (dict, or None when the request had none) or else the query string
        (``dry_run``: every ``dryRun`` value of it, :func:`pumice.apiserver.decode.dry_run_values`).
        A body is the whole of the options: the query's options are then not read at all, so a
        body with ``?dryRun=All`` deletes for real and a bad query value is not an error.

        Mirrors: k8s.io/apiserver pkg/endpoints/handlers/delete.go DeleteResource and
        DeleteCollection (the query is decoded only when the body is empty), apimachinery
        ValidateDeleteOptions.

        Raises:
            StatusError: 400 for a body that is not an object or a gracePeriodSeconds that is not an
                integer; 422 (``DeleteOptions.meta.k8s.io "" is invalid``) for a bad
                propagationPolicy or dryRun, or propagationPolicy together with orphanDependents.
        """
        opts = cls()
        if body is not None and not isinstance(body, dict):
            raise errors.bad_request("DeleteOptions must be a JSON object")
        if body is not None:
            query, dry_run = {}, None
        body = body or {}
        gps = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        if gps is not None:
            try:
                opts.grace_period_seconds = max(0, int(gps))
            except (TypeError, ValueError):  # the query parameter's conversion: strconv.ParseInt's text
                raise errors.bad_request(f"strconv.ParseInt: parsing {quote(str(gps))}: invalid syntax") from None
        pp = body.get("propagationPolicy", query.get("propagationPolicy"))
        orphan = body.get("orphanDependents", query_bool(query, "orphanDependents"))
        if pp is not None and orphan is not None:  # apimachinery ValidateDeleteOptions
            raise StatusError(422, f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
                              f'"{pp}": orphanDependents and deletionPropagation cannot be both set', "Invalid")
        if pp is None and orphan is not None:
            pp = "Orphan" if orphan is True else "Background"
        opts.orphan_dependents = orphan if isinstance(orphan, bool) else None
        causes: list[dict[str, str]] = []  # ValidateDeleteOptions, in its order
        if pp is not None and pp not in ("Orphan", "Background", "Foreground"):
            causes.append({"reason": "FieldValueNotSupported", "field": "propagationPolicy",
                           "message": f'Unsupported value: {quote(str(pp))}: supported values: "Foreground", '
                                      '"Background", "Orphan", "nil"'})
        opts.propagation_policy = pp
        pre = body.get("preconditions")
        if pre:
            opts.preconditions = {k: str(v) for k, v in pre.items() if v is not None}
        dry = [str(v) for v in body["dryRun"]] if body.get("dryRun") else dry_run_values(query, dry_run)
        if dry_run_refused(dry):
            causes.append(dry_run_cause(dry))
        opts.dry_run = bool(dry)
        if causes:
            raise options_invalid("DeleteOptions", causes)
        return opts


class _Reader:
    """The ObjectReader given to admission plugins."""

    def __init__(self, registry: Registry) -> None:
        self._r = registry
        self._kinds: dict[tuple[str, str], ResourceKind | None] = {}

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj | None:
        """The stored object itself (read-only: plugins must not change it), or None."""
        s = self._r._view(kind).get(self._r.storage_resource(kind), namespace or "" if kind.namespaced else "",
                                    name)
        return None if s is None else s.obj

    async def list(self, kind: ResourceKind, namespace: str | None = None) -> list[Obj]:
        """The stored objects themselves (read-only), in key order."""
        view = self._r._view(kind)
        return [s.obj for s in view.list(self._r.storage_resource(kind), namespace if kind.namespaced else None)]

    async def list_by_field(self, kind: ResourceKind, path: str, value: str,
                            namespace: str | None = None) -> builtins.list[Obj]:
        """The stored objects (read-only) whose field ``path`` equals ``value``, in key order,
        from an index the store keeps by that field from the first such call on."""
        res = self._r.storage_resource(kind)
        self._r.store.index_field(res, path)
        view = self._r._view(kind)
        return [s.obj for s in view.list_by_field(res, path, value, namespace if kind.namespaced else None)]

    @property
    def scheme(self) -> Scheme:
        """The served kinds (the ResourceQuota plugin resolves ``count/<resource>`` names here)."""
        return self._r.scheme

    def kind(self, api_version: str, kind: str) -> ResourceKind | None:
        key = (api_version, kind)
        try:
            return self._kinds[key]
        except KeyError:
            rk = self._kinds[key] = self._r.scheme.by_api_version_kind(api_version, kind)
            return rk

    def forget_kinds(self) -> None:
        self._kinds.clear()


class _ConvertingStore:
    """The store as a kind whose stored form differs from its served form sees it (an
    events.k8s.io/v1 Event is stored as a core/v1 Event): objects are converted on the way in
    and out, field selectors translated."""

    def __init__(self, store: Store, strategy: Strategy) -> None:
        self._store = store
        self._s = strategy

    @property
    def revision(self) -> int:
        return self._store.revision

    def _out(self, stored: Stored | None) -> Stored | None:
        if stored is None:
            return None
        obj = self._s.from_storage(stored.obj)
        return Stored(obj, _encode(obj), stored.rv)

    def get(self, res: str, ns: str, name: str) -> Stored | None:
        return self._out(self._store.get(res, ns, name))

    def list(self, res: str, ns: str | None = None) -> builtins.list[Stored]:
        return [s for s in map(self._out, self._store.list(res, ns)) if s is not None]

    def list_by_field(self, res: str, path: str, value: str, ns: str | None) -> builtins.list[Stored]:
        return [s for s in map(self._out, self._store.list_by_field(res, path, value, ns)) if s is not None]

    def put(self, res: str, obj: Obj, *, max_bytes: int | None = None) -> Stored:
        stored = self._out(self._store.put(res, self._s.to_storage(obj), max_bytes=max_bytes))
        assert stored is not None
        return stored

    def delete(self, res: str, ns: str, name: str) -> Stored | None:
        return self._out(self._store.delete(res, ns, name))


def _check_named_body(body: Any, kind: str, api_versions: tuple[str, ...], namespace: str, name: str) -> None:
    """Refuse a subresource body (Pod ``binding``, ``eviction``) that is not a ``kind`` object of
    one of ``api_versions`` for the object of the URL, with kube-apiserver's 400 BadRequest texts.

    Missing ``apiVersion``/``kind`` default to the subresource's own; the body's
    ``metadata.name`` must equal the URL's name (an empty one too), and a namespace it sets must
    equal the URL's.

    Mirrors: kubernetes pkg/registry/core/pod/storage (EvictionREST.Create, BindingREST.Create),
    k8s.io/apiserver pkg/endpoints/handlers/create.go (AcceptsGroupVersion, the namespace check).

    Raises:
        StatusError: 400 BadRequest.
    """
    if not isinstance(body, dict):
        raise errors.bad_request(f"not a {kind} object: {json_type(body)}")
    av, bkind = body.get("apiVersion") or api_versions[0], body.get("kind") or kind
    if not isinstance(av, str) or not isinstance(bkind, str):
        raise errors.bad_request(f"Object 'apiVersion' and 'kind' must be strings in a {kind}")
    if av not in api_versions:
        raise errors.bad_request(f"the API version in the data ({av}) does not match the expected API version "
                                 f"({api_versions[0]})")
    if bkind != kind:
        raise errors.bad_request(f"not a {kind} object: {bkind} ({av})")
    md = body.get("metadata") or {}
    if not isinstance(md, dict):
        raise errors.bad_request("metadata must be an object")
    if md.get("namespace") and md["namespace"] != namespace:
        raise errors.bad_request(_NAMESPACE_MISMATCH)
    if md.get("name") != name:
        raise errors.bad_request(f"name in URL does not match name in {kind} object")


class Registry:
    """kube-apiserver's REST semantics for every served kind.

    Args:
        store: the object cache.
        scheme: the served kinds (CRD kinds are added and removed here).
        clock: time source for timestamps.
        admission: the admission chain.
        seed: seeds the generator of uids and generateName suffixes (deterministic runs:
            ``pumice simulate``, tests); None (a cluster's default): the OS's randomness, so uids
            are random RFC 4122 version 4 UUIDs, unique across clusters and restarts as
            kube-apiserver's (apimachinery util/uuid.NewUUID).
        event_ttl: seconds an Event lives after its last write (kube-apiserver's --event-ttl).
        service_cluster_ip_range: the IPv4 CIDR Services' cluster IPs come from
            (``--service-cluster-ip-range``).
        service_node_port_range: ``(first, last)`` node port (``--service-node-port-range``).

    Attributes:
        track_update_managers: record every create/update/patch in ``managedFields`` as an
            ``operation: Update`` entry (kube-apiserver's behaviour, the default). ``pumice
            simulate`` turns it off: no client applies there, and objects then carry only
            Apply entries (an apply onto such an object gives its present fields to
            ``before-first-apply``, as upstream does for an untracked object).
    """

    def __init__(self, store: Store, scheme: Scheme, clock: Clock, admission: AdmissionChain, *, seed: int | None = None,
                 event_ttl: float = 3600.0, service_cluster_ip_range: str = SERVICE_CLUSTER_IP_RANGE,
                 service_node_port_range: tuple[int, int] = NODE_PORT_RANGE) -> None:
        self.store = store
        self.scheme = scheme
        self.clock = clock
        self.admission = admission
        self.reader = _Reader(self)
        self.crds: dict[str, CustomResource] = {}
        self._rng = random.Random(seed ^ store.revision) if seed is not None else random.SystemRandom()
        self.crd_listeners: list[Callable[[], None]] = [self.reader.forget_kinds]
        self.track_update_managers = True
        # Events expire event_ttl seconds after their last write (kube-apiserver --event-ttl, 1 h)
        self.event_ttl = event_ttl
        self._event_expiry: dict[tuple[str, str, str], float] = {}
        self._event_queue: deque[tuple[float, tuple[str, str, str]]] = deque()
        self._migrate_events_v1()
        for res in EVENT_RESOURCES:
            for ev in store.list(res):
                self.track_event(res, ev)
        self._now_cache: tuple[int, str] = (-1, "")
        # specs (by kind and JSON) that the zero-value drop and the type check left unchanged: a
        # status or metadata write sends the same spec again, and it needs neither once more
        self._zero_free_specs = FixedPoints()
        self._typed_specs = FixedPoints()
        # custom resources' metadata (by JSON, resourceVersion left out) that passed the type check
        self._typed_metas = FixedPoints()
        # top-level values of custom resources (by check, schema identity, property and JSON) that
        # passed a schema check; emptied whenever the served CRDs change
        self._clean_cr_parts = FixedPoints()
        # top-level values of built-in kinds (by model, field and JSON) with no unknown field
        self._known_parts = FixedPoints()
        # status writes: everything but the status (by kind, URL and JSON) of bodies that passed
        # the body check; emptied whenever the served CRDs change
        self._clean_status_rests = FixedPoints()
        # status-only merge patches of custom resources without a status subresource: the stored
        # version (by kind, namespace and name: its resourceVersion and served version) whose
        # everything-but-status is known to pass the body checks unchanged (see _clean_rest)
        self._clean_rests: dict[tuple[str, str, str, str], tuple[int, CustomVersion]] = {}
        self.service_cluster_ip_range = service_cluster_ip_range
        self.service_node_port_range = service_node_port_range
        self._service_allocators: ServiceAllocators | None = None

    # ---------------------------------------------------------------- helpers

    def now(self) -> str:
        """The clock's time as metav1.Time (second precision; formatted once per second)."""
        t = int(self.clock.now())
        if t != self._now_cache[0]:
            self._now_cache = (t, rfc3339(t))
        return self._now_cache[1]

    def service_allocators(self) -> ServiceAllocators:
        """The Services' cluster IP and node port ranges, rebuilt from the stored Services on
        first use (see :mod:`pumice.apiserver.servicealloc`)."""
        if self._service_allocators is None:
            alloc = ServiceAllocators(self.service_cluster_ip_range, self.service_node_port_range)
            alloc.restore(s.obj for s in self.store.list(SERVICES_RESOURCE))
            self._service_allocators = alloc
        return self._service_allocators

    def _uid(self) -> str:
        """A random (version 4) UUID from the seeded generator: ``str(uuid.UUID(int=bits,
        version=4))`` for the next 128 bits, with its variant and version bits set here (one
        per create)."""
        n = (self._rng.getrandbits(128) & _UUID_KEEP) | _UUID_V4
        h = f"{n:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def _ns(self, rk: ResourceKind, namespace: str | None) -> str:
        return (namespace or "") if rk.namespaced else ""

    def custom(self, rk: ResourceKind) -> CustomResource | None:
        return self.crds.get(resource_key(rk))

    def strategy(self, rk: ResourceKind) -> Strategy:
        """The per-kind behaviour serving ``rk`` (see :mod:`pumice.apiserver.strategy`)."""
        return strategy_for(rk, custom=resource_key(rk) in self.crds)

    def storage_resource(self, rk: ResourceKind) -> str:
        """The store resource holding ``rk``'s objects (``"/events"`` for both Event APIs)."""
        return self.strategy(rk).storage_resource or resource_key(rk)

    def _view(self, rk: ResourceKind) -> Any:
        """The store as ``rk`` sees it (converting when its stored form differs)."""
        strategy = self.strategy(rk)
        return _ConvertingStore(self.store, strategy) if strategy.converts else self.store

    def present(self, rk: ResourceKind, s: Stored) -> Stored:
        """A stored object (as a watch delivers it) in ``rk``'s served form."""
        strategy = self.strategy(rk)
        if not strategy.converts:
            return s
        obj = strategy.from_storage(s.obj)
        return Stored(obj, _encode(obj), s.rv)

    def has_status(self, rk: ResourceKind) -> bool:
        return "status" in rk.subresources

    def list_json(self, rk: ResourceKind, head: bytes, items: builtins.list[Stored]) -> bytes:
        """The JSON of a list: ``head`` (its start, up to and with ``"items":``), the array of
        ``items`` as a list served at ``rk``'s version holds them, and the closing brace.

        A built-in kind's items carry no ``apiVersion`` and ``kind``: kube-apiserver converts its
        internal list into the versioned one item by item, and conversion leaves each item's
        TypeMeta empty (omitted from the JSON). A custom resource's items keep theirs, as
        unstructured objects do. Fast when no conversion is needed: stored built-in objects
        start with the two keys (:meth:`_check_body` puts them first), which are cut off by
        joining views of the rest (:func:`list_item_tails`), nothing decoded, and the whole is
        one join (one copy of the items' bytes).
        """
        if not items:
            return head + b"[]}"
        cr = self.custom(rk)
        parts: builtins.list[bytes | memoryview]
        if cr is None:
            parts = list_item_tails(rk, [s.data for s in items])
            sep, first = b",{", b"[{"
        else:
            parts = [s.data for s in items] if len(cr.versions) == 1 else [self.output(rk, s) for s in items]
            sep, first = b",", b"["
        parts[0] = head + first + parts[0]
        parts[-1] = b"".join((parts[-1], b"]}"))
        return sep.join(parts)

    def output(self, rk: ResourceKind, s: Stored) -> bytes:
        """The JSON of ``s`` as served at ``rk``'s version."""
        if s.obj.get("apiVersion") == rk.api_version:
            return s.data
        obj = s.copy()
        obj["apiVersion"] = rk.api_version
        return _encode(obj)

    def get(self, rk: ResourceKind, namespace: str | None, name: str) -> Stored:
        s = self._view(rk).get(self.storage_resource(rk), self._ns(rk, namespace), name)
        if s is None:
            raise errors.not_found(rk, name)
        return s

    # ---------------------------------------------------------------- list / watch

    def check_field_selector(self, rk: ResourceKind, fs: FieldSelector) -> None:
        allowed = self.strategy(rk).field_labels
        cr = self.custom(rk) if fs.requirements else None
        if cr is not None and rk.version in cr.versions:  # CRD selectableFields (GA in 1.32)
            allowed = allowed | cr.versions[rk.version].selectable_fields
        for path in fs.paths():
            if path not in ("metadata.name", "metadata.namespace") and path not in allowed:
                if not allowed and self.custom(rk) is None:
                    # a built-in kind without field label conversion of its own:
                    # runtime.DefaultMetaV1FieldSelectorConversion's text
                    raise errors.bad_request(f'{quote(path)} is not a known field selector: only "metadata.name", '
                                             '"metadata.namespace"')
                raise errors.bad_request(f'field label not supported: {path}')

    def list(
        self,
        rk: ResourceKind,
        namespace: str | None,
        *,
        labels: LabelSelector,
        fields: FieldSelector,
        limit: int = 0,
        continue_: str = "",
    ) -> tuple[builtins.list[Stored], int, str, int]:
        """Returns ``(items, list revision, continue token, remaining count)``.

        Deviates: a continued list reads the current state after the last key (not a snapshot at
        the first page's revision) and never answers 410 for an old token.
        """
        self.check_field_selector(rk, fields)
        res = self.storage_resource(rk)
        st = self._view(rk)
        ns = namespace if rk.namespaced else None
        revision = self.store.revision
        start: tuple[str, str] | None = None
        if continue_:
            # as storage.DecodeContinue + the store's list: a token's rv 0 is refused, a negative
            # one asks for the latest revision (the token of a continuation whose revision expired)
            try:
                tok = msgspec.json.decode(base64.urlsafe_b64decode(continue_.encode()))
                start = (str(tok["start"][0]), str(tok["start"][1]))
                token_rv = int(tok["rv"])
            except (binascii.Error, msgspec.DecodeError, KeyError, TypeError, ValueError, IndexError):
                # storage.DecodeContinue: base64.RawURLEncoding's own error first (pumice's tokens
                # may also carry padding, which is accepted)
                bad = gobase64.raw_url_error(continue_.rstrip("="))
                why = str(bad) if bad is not None else "malformed continue token"
                raise errors.bad_request(f"{_BAD_CONTINUE}: {why}") from None
            if token_rv == 0:
                raise errors.bad_request(f"{_BAD_CONTINUE}: incorrect encoded start resourceVersion (version "
                                         "meta.k8s.io/v1)")
            if token_rv > 0:
                revision = token_rv
        name = fields.exact("metadata.name")
        node = fields.exact("spec.nodeName")
        if name is not None and (ns is not None or not rk.namespaced):
            one = st.get(res, ns or "", name)
            candidates = [one] if one is not None else []
        elif node is not None:
            candidates = st.list_by_field(res, "spec.nodeName", node, ns)
        else:
            candidates = st.list(res, ns)
        if start is None and labels.empty and fields.empty and not limit:
            return candidates, revision, "", 0
        out: builtins.list[Stored] = []
        last: tuple[str, str] | None = None
        remaining = 0
        check_labels = not labels.empty
        check_fields = not fields.empty
        for s in candidates:
            md = s.obj["metadata"]
            if start is not None and (md.get("namespace", ""), md["name"]) <= start:
                continue
            if check_labels and not labels.matches(md.get("labels")):
                continue
            if check_fields and not fields.matches(s.obj):
                continue
            if limit and len(out) >= limit:
                remaining += 1
                continue
            out.append(s)
            last = (md.get("namespace", ""), md["name"])
        token = ""
        if remaining and last is not None:
            token = base64.urlsafe_b64encode(msgspec.json.encode({"rv": revision, "start": list(last)})).decode()
        return out, revision, token, remaining

    def watch(
        self,
        rk: ResourceKind,
        namespace: str | None,
        *,
        resource_version: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> Watcher:
        self.check_field_selector(rk, fields)
        try:
            rv = parse_resource_version(resource_version) or None
        except ValueError as e:  # Deviates: kube-apiserver answers 500 with this text
            raise errors.bad_request(str(e)) from None
        try:
            return self.store.watch(self.storage_resource(rk), namespace if rk.namespaced else None,
                                    resource_version=rv, labels=labels,
                                    fields=self.strategy(rk).storage_field_selector(fields))
        except Expired as e:
            raise errors.expired(str(e)) from None

    # ---------------------------------------------------------------- body checks

    def _check_body(self, rk: ResourceKind, namespace: str | None, body: Any, name: str | None, *,
                    cr_status: bool = False) -> Obj:
        """The body checks of kube-apiserver's decode step: apiVersion, kind, namespace and name
        against the URL (400), the types (422, see :meth:`_check_types`; ``cr_status``: a custom
        resource's status PUT, whose status :meth:`update` checks after the lookup)."""
        if not isinstance(body, dict):
            raise errors.bad_request(f"the body of the request must be a JSON object of kind {rk.kind}")
        av, kind = body.get("apiVersion"), body.get("kind")
        for key, v in (("apiVersion", av), ("kind", kind)):
            if v is not None and not isinstance(v, str):
                raise errors.bad_request(f"Object '{key}' is not a string in the request body "
                                         f"({json_type(v)} given)")
        cr = self.custom(rk)
        if cr is not None and av is None:
            # an unstructured body keeps its empty apiVersion, which the handler's
            # AcceptsGroupVersion then refuses (built-in bodies take the URL's)
            av = ""
        if av is not None and av != rk.api_version:
            other = av.rpartition("/")
            if cr is None or other[0] != rk.group or other[2] not in cr.versions:
                raise errors.bad_request(
                    f"the API version in the data ({av}) does not match the expected API version ({rk.api_version})")
        if kind is not None and kind != rk.kind:
            if cr is not None:  # customResourceValidator.ValidateTypeMeta, named by the body's kind
                message = f"Invalid value: {quote(kind)}: must be {rk.kind}"
                md0 = body.get("metadata")
                name0 = str(md0.get("name", "")) if isinstance(md0, dict) else ""
                raise StatusError(422, f'{kind}.{rk.group} "{name0}" is invalid: kind: {message}', "Invalid",
                                  {"name": name0, "group": rk.group, "kind": kind,
                                   "causes": [{"reason": "FieldValueInvalid", "message": message, "field": "kind"}]})
            if self.scheme.by_api_version_kind(rk.api_version, kind) is not None:
                raise errors.wrong_kind(rk, kind)
            raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rk.kind})")
        if cr is None and list(itertools.islice(body, 2)) != ["apiVersion", "kind"]:
            # a built-in kind is stored with apiVersion and kind first, so a list cuts them off
            # its items' JSON without decoding it (list_item_json)
            rest = [(k, v) for k, v in body.items() if k != "apiVersion" and k != "kind"]
            body.clear()
            body["apiVersion"] = rk.api_version
            body["kind"] = rk.kind
            body.update(rest)
        else:
            body["apiVersion"] = rk.api_version
            body["kind"] = rk.kind
        if cr is None:
            bad = bytes_error(rk, body)  # a []byte field that is not base64 fails Go's JSON decoding
            if bad is not None:
                raise errors.cannot_handle(rk, bad[1])
            # "", 0 and false written explicitly mean unset, as Go's decoding makes them
            self._drop_zero_values(body)
        md = body.get("metadata")
        if md is None:
            md = body["metadata"] = {}
        if not isinstance(md, dict):
            why = unmarshal_error(protobuf.message_for(rk.api_version, rk.kind), body) if self.custom(rk) is None \
                else None
            if why is not None:  # Go's decoding of the built-in kind's struct
                raise errors.cannot_handle(rk, why)
            raise errors.bad_request("metadata must be an object")
        if rk.namespaced:
            bns = md.get("namespace")
            if bns and namespace and bns != namespace:
                    raise errors.bad_request(_NAMESPACE_MISMATCH)
            if not (bns or namespace):
                raise errors.bad_request("the namespace of the object must be set (no namespace in URL or body)")
            md["namespace"] = bns or namespace
        else:
            md.pop("namespace", None)
        if name is not None:
            errors.check_name(md.get("name"), name)
        self._check_types(rk, body, cr_status="before" if cr_status else "")
        return body

    def _check_status_body(self, rk: ResourceKind, namespace: str | None, body: Obj, name: str,
                           old: Stored) -> tuple[Obj, bool]:
        """:meth:`_check_body` of a status write whose body is the stored object ``old`` with only
        its ``status`` changed by a merge patch (see :meth:`_status_patch_base`: its other values
        are ``old``'s own, which :meth:`_own` copies before the whole check, as it changes values
        in place); returns ``(body, untouched)``, where ``untouched`` says that everything but
        the status is still exactly the stored object's.

        Everything but the status of such a body comes back unchanged on every status write of
        one object version, and a status write keeps the stored values of those parts anyway,
        so only whether the body check refuses them matters. That is a function of the kind (and
        the served CRDs), the URL's namespace and name and their JSON: once a body with the same
        JSON passed, only the status is checked (its types; the zero-value drop of a built-in
        kind with an object ``spec`` does not touch the status). Any finding, and any body
        not seen before, takes the whole :meth:`_check_body`, so the refusals (400, and 422 with
        every cause in document order) are exactly its own.
        """
        status = body.get("status")
        cr = self.custom(rk)
        schema: Obj | None = None
        if cr is None:
            tree = model_for(rk)
            if tree is None or type(body.get("spec")) is not dict or (rk.group, rk.kind) == ("", "Secret"):
                return self._check_body(rk, namespace, self._own(body, old), name), False
        else:
            version = cr.versions.get(rk.version)
            schema = version.schema if version is not None else None
            if schema and not self._splits(schema):
                return self._check_body(rk, namespace, self._own(body, old), name), False
            compiled = version.compiled if version is not None else None
        rest = {k: v for k, v in body.items() if k != "status"}
        key = (("status", rk, namespace or "", name), _encode(rest))
        memo = self._clean_status_rests
        if key not in memo:
            obj = self._check_body(rk, namespace, self._own(body, old), name)
            if memo.usable(key[1]):
                memo.add(key)
            return obj, False
        if type(status) is dict:
            if cr is None:
                if not field_types_ok(tree, "status", status):
                    return self._check_body(rk, namespace, self._own(body, old), name), False
                protobuf.drop_zero_values(body, keys=(), quantity_keys=("status",))  # quantity numbers
            elif schema and compiled is not None:
                unchecked, fresh = self._schema_parts("types", schema, {"status": status})
                if compiled.has_type_errors(unchecked):
                    return self._check_body(rk, namespace, self._own(body, old), name), False
                for part in fresh:
                    self._clean_cr_parts.add(part)
        elif status is not None:
            return self._check_body(rk, namespace, self._own(body, old), name), False
        return body, True

    @staticmethod
    def _own(body: Obj, old: Stored) -> Obj:
        """``body`` (a status write's, see :meth:`_status_patch_base`) with fresh copies of the
        values it shares with the stored ``old`` (its metadata's too), in place, so that a check
        or plugin may change them; the same JSON. Returns ``body``."""
        stored = old.obj
        for k, v in body.items():
            if k == "metadata" or (k != "status" and v is stored.get(k) and type(v) in (dict, list)):
                body[k] = _decode(_encode(v))
        return body

    def _drop_zero_values(self, body: Obj) -> None:
        """:func:`pumice.api.protobuf.drop_zero_values` of ``body``; a spec it left unchanged
        before (same kind, same JSON) is not walked again."""
        spec = body.get("spec")
        if type(spec) is not dict:
            protobuf.drop_zero_values(body)
            return
        protobuf.drop_zero_values(body, keys=("metadata",))
        key = ((body["apiVersion"], body["kind"]), _encode(spec))
        if key in self._zero_free_specs:
            return
        protobuf.drop_zero_values(body, keys=("spec",), quantity_keys=())
        if self._zero_free_specs.usable(key[1]) and _encode(spec) == key[1]:
            self._zero_free_specs.add(key)

    def _check_types(self, rk: ResourceKind, obj: Obj, *, cr_status: str = "") -> bool:
        """The typed-schema check of every kind, before defaulting and admission: built-in kinds
        against their lightkube model, custom resources against the served version's structural
        schema (types only here; the rest of the schema is validated after admission).

        ``cr_status`` (a custom resource's status PUT, ``""`` otherwise): the body's top-level
        values other than ``status`` are not checked (kube-apiserver's status strategy replaces
        them with the stored ones before it validates). ``"before"`` (the decode step): metadata,
        and the status too when metadata has causes (so the 422 names them all); ``"after"``
        (:meth:`update`, once the stored object is found and its resourceVersion matched, as
        kube-apiserver validates a custom resource: a missing one is 404 first, a stale version
        409): the status alone.

        Returns:
            For a custom resource whose served version has a schema: True when the values
            checked against it (the status alone under ``"after"``) have no type error at all
            (:meth:`~pumice.api.schema.CompiledSchema.has_type_errors` False, or remembered so);
            False otherwise, and for built-in kinds.

        Raises:
            StatusError: 422 Invalid with one cause per value of the wrong JSON type.
        """
        typed = False
        cr = self.custom(rk)
        if cr is None:
            tree = model_for(rk)
            secret = ("data", "stringData") if (rk.group, rk.kind) == ("", "Secret") else ()
            if tree is None:
                causes = type_causes(_META_TREE, obj["metadata"], "metadata")
            elif types_clean(tree, obj, self._typed_specs):
                causes = []
            else:
                causes = type_causes(tree, obj, redact=secret)
            for part in secret:
                values = obj.get(part)
                for k, v in (values.items() if isinstance(values, dict) else ()):
                    if not isinstance(v, str):
                        causes.append(FieldCause(f"{part}[{k}]", f'Invalid value: "{REDACTED}": {part}[{k}] in body '
                                                 f'must be of type string: "{json_type(v)}"', "FieldValueTypeInvalid"))
        else:
            causes = self._meta_type_causes(obj["metadata"]) if cr_status != "after" else []
            version = cr.versions.get(rk.version)
            if version is not None and version.schema and version.compiled is not None and not (
                    cr_status == "before" and not causes):
                if cr_status:
                    body = {"status": obj["status"]} if "status" in obj else {}
                else:
                    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
                unchecked, fresh = self._schema_parts("types", version.schema, body)
                if version.compiled.has_type_errors(unchecked):
                    # a create or update is refused with every cause of the schema, as apiextensions
                    # validates the object in one pass (a Required beside a type error); a status
                    # write with its type errors alone. That pass sees the object defaulted (the
                    # structural defaults are applied as the body is decoded, before admission and
                    # validation), so a required field with a default is no Required here.
                    if not cr_status:
                        body = copy.deepcopy(body)
                        version.compiled.default(body)
                    causes += [c for c in version.compiled.validate(body)
                               if (c.reason == "FieldValueTypeInvalid" or not cr_status)
                               and not (c.reason == "FieldValueTypeInvalid"
                                        and c.message.startswith("Invalid value: null"))]
                    if not cr_status and version.rules is not None and blocks_rules(causes):
                        causes.append(blocking_cause())
                else:
                    typed = True
                    for key in fresh:
                        self._clean_cr_parts.add(key)
        if causes:
            for c in causes:
                if c.reason == TIME_PARSE:  # Go's decoder stops at a time it cannot parse: no field causes
                    raise errors.cannot_handle(rk, c.message)
            if cr is None:  # a built-in kind is decoded into its Go struct: a type error is a 400
                why = unmarshal_error(protobuf.message_for(rk.api_version, rk.kind), obj)
                if why is not None:
                    raise errors.cannot_handle(rk, why)
            name = obj["metadata"].get("name")
            raise errors.invalid(rk, name if isinstance(name, str) else "", causes)
        return typed

    def _meta_type_causes(self, md: Obj) -> builtins.list[FieldCause]:
        """:func:`~pumice.api.fields.type_causes` of a custom resource's metadata. Metadata
        that passed before with the same JSON but for a string resourceVersion (a string is what
        that field takes, whatever it says) is not walked again: the check is a function of the
        JSON, and one with no ``null`` in it has nothing for the check to remove (a status PUT
        sends the same metadata again with only the resourceVersion moved on)."""
        if type(md.get("resourceVersion", "")) is not str:
            return type_causes(_META_TREE, md, "metadata")
        key = (_META_TREE, _encode({k: v for k, v in md.items() if k != "resourceVersion"}))
        memo = self._typed_metas
        if key in memo:
            return []
        causes = type_causes(_META_TREE, md, "metadata")
        if not causes and memo.usable(key[1]):
            memo.add(key)
        return causes

    def _schema_parts(self, check: str, schema: Obj, body: Obj) -> tuple[Obj, builtins.list[tuple[Any, bytes]]]:
        """``body`` (a custom resource without apiVersion, kind and metadata) less the top-level
        object values that passed ``check`` (``"types"``: :func:`pumice.api.schema.has_type_errors`
        found nothing; ``"valid"``: :func:`pumice.api.schema.validate` found nothing) before, under
        the same schema with the same JSON; and the memo keys of the object values left in, to
        remember if they pass now.

        Exact only where the root schema looks at nothing but each property's own value (its keys
        are among type ``object``, properties and description, as in every CRD pumice serves):
        then either check of ``body`` finds what it finds in the values left in, and a value's
        result depends on its schema and its JSON only (both checks are pure functions). For any
        other root schema ``body`` comes back whole. Encodings with ``null`` are never remembered
        (a NaN encodes as null too; see :class:`~pumice.api.fields.FixedPoints`)."""
        if not self._splits(schema):
            return body, []
        props = schema["properties"]
        memo = self._clean_cr_parts
        left: Obj = {}
        fresh: builtins.list[tuple[Any, bytes]] = []
        for k, v in body.items():
            if type(v) is dict and k in props:
                key = ((check, id(schema), k), _encode(v))
                if key in memo:
                    continue
                if memo.usable(key[1]):
                    fresh.append(key)
            left[k] = v
        return left, fresh

    def _unchanged_parts(self, check: str, schema: Obj, body: Obj) -> tuple[Obj, builtins.list[tuple[Any, bytes]]]:
        """For ``check`` ``"prune"``: the top-level object values of ``body`` (a custom resource
        without apiVersion, kind and metadata) that :func:`pumice.api.schema.prune` and
        :func:`~pumice.api.schema.default` left unchanged with nothing pruned before, under the
        same schema with the same JSON, each replaced in ``body`` by ``{}`` (put them back
        afterwards); and the memo keys of the object values left in. Both steps are pure
        functions of a value's schema and JSON, and under a split root (see :meth:`_splits`) the
        root's own step only sees whether a property is present. Nothing for any other root."""
        if not self._splits(schema):
            return {}, []
        props = schema["properties"]
        memo = self._clean_cr_parts
        aside: Obj = {}
        fresh: builtins.list[tuple[Any, bytes]] = []
        for k, v in body.items():
            if type(v) is dict and k in props:
                key = ((check, id(schema), k), _encode(v))
                if key in memo:
                    aside[k] = v
                elif memo.usable(key[1]):
                    fresh.append(key)
        for k in aside:
            body[k] = {}
        return aside, fresh

    @staticmethod
    def _splits(schema: Obj) -> bool:
        """Whether a check of a body under this root schema is the union of the checks of its
        top-level values (root keys among type ``object``, properties and description)."""
        return schema.keys() <= _SPLIT_ROOT and schema.get("type", "object") == "object" and \
            type(schema.get("properties")) is dict

    def schema_causes(self, schema: Obj | kschema.CompiledSchema, body: Obj) -> builtins.list[FieldCause]:
        """:func:`pumice.api.schema.validate` of ``body`` (a custom resource without apiVersion,
        kind and metadata), skipping the top-level values that validated clean before with the
        same schema and JSON (see :meth:`_schema_parts`); with causes, the whole body is validated
        again, so the causes and their order are validate's own. ``schema``: a served version's
        :class:`~pumice.api.schema.CompiledSchema`, or a schema to compile for this call."""
        compiled = schema if isinstance(schema, kschema.CompiledSchema) else kschema.CompiledSchema(schema)
        unchecked, fresh = self._schema_parts("valid", compiled.schema, body)
        if compiled.validate(unchecked):
            return compiled.validate(body)
        for key in fresh:
            self._clean_cr_parts.add(key)
        return []

    def _prune_default(self, rk: ResourceKind, obj: Obj, strict: str) -> builtins.list[str]:
        """Prune unknown fields and apply schema defaults (custom resources); returns warnings
        (``unknown field "<path>"``) under fieldValidation Warn or unset (kube-apiserver's default).

        Raises:
            StatusError: 400 under fieldValidation=Strict when unknown fields were sent.
        """
        cr = self.custom(rk)
        if cr is None:
            tree = model_for(rk)
            if tree is None:
                return []
            unknown = unknown_fields(tree, obj, remove=True, known=self._known_parts)
        else:
            version = cr.versions.get(rk.version)
            schema = version.schema if version else None
            compiled = version.compiled if version else None
            if not schema or compiled is None:
                return []
            keep: Obj = {k: obj.pop(k) for k in ("apiVersion", "kind", "metadata") if k in obj}
            # top-level values that pruning and defaulting left as they were before (same schema,
            # same JSON) stand aside under an empty placeholder, which keeps their place and
            # their presence for the root's own steps (a split root looks at nothing else)
            aside, fresh = self._unchanged_parts("prune", schema, obj)
            try:
                unknown = compiled.prune(obj)
                compiled.default(obj)
            finally:
                obj.update(aside)
                obj.update(keep)
            if not unknown:
                for key in fresh:
                    if _encode(obj.get(key[0][2])) == key[1]:
                        self._clean_cr_parts.add(key)
            if isinstance(obj.get("metadata"), dict):
                unknown += ["metadata." + u for u in unknown_fields(_META_TREE, obj["metadata"], remove=True)]
        return self._unknown_answer(rk, unknown, strict)

    @staticmethod
    def _unknown_answer(rk: ResourceKind, unknown: builtins.list[str], strict: str) -> builtins.list[str]:
        """The answer to the unknown fields pruning found (paths, maybe with a leading dot)."""
        unknown = [u.lstrip(".") for u in unknown]
        if unknown and strict == "Strict":
            listed = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise errors.strict_decoding(rk, listed)
        if unknown and strict != "Ignore":  # Warn, or unset: kube-apiserver's default
            return [f'unknown field "{u}"' for u in unknown]
        return []

    def _validate_cr_status_formats(self, rk: ResourceKind, obj: Obj, *, typed: bool = False) -> None:
        """The ``format: date-time`` check of a custom resource's status write (kube-apiserver's
        status strategy validates the status against the schema; pumice checks its types on every
        status write and, of the values, only this format, so that no typed client meets a time
        it cannot parse).

        ``typed``: ``obj``'s status is the very value :meth:`_check_types` found free of type
        errors under this version's schema, unchanged since. Then the causes wanted are exactly
        the date-time format ones (every other ``FieldValueTypeInvalid`` cause is a type error),
        which :meth:`~pumice.api.schema.CompiledSchema.date_time_causes` finds visiting only
        the values under a date-time format (a vcjob status's transition times) instead of
        validating the whole status; where it cannot tell, the whole check answers.

        Raises:
            StatusError: 422 Invalid, one ``FieldValueTypeInvalid`` cause per bad date-time.
        """
        cr = self.custom(rk)
        version = cr.versions.get(rk.version) if cr is not None else None
        if version is None or version.compiled is None:
            return
        body = {"status": obj["status"]}
        causes = version.compiled.date_time_causes(body) if typed else None
        if causes is None:
            causes = [c for c in self.schema_causes(version.compiled, body)
                      if c.reason == "FieldValueTypeInvalid" and kschema.DATE_TIME_TYPE in c.message]
        if causes:
            raise errors.invalid(rk, str(obj["metadata"].get("name", "")), causes)

    def _validate(self, rk: ResourceKind, obj: Obj, old: Obj | None) -> None:
        causes = self.strategy(rk).validate(self, rk, obj, old)
        if causes:
            if self.custom(rk) is None:
                # a value the type walk leaves to validation (a map[string]string's values: lightkube
                # types the map as a bare dict) that Go's decoder could not hold: its 400 first
                why = unmarshal_error(protobuf.message_for(rk.api_version, rk.kind), obj)
                if why is not None:
                    raise errors.cannot_handle(rk, why)
            raise errors.invalid(rk, str(obj["metadata"].get("name", "")), causes)

    async def _run_admission(self, req: AdmissionRequest, *, mutate: bool) -> None:
        try:
            if mutate:
                await self.admission.admit(req, self.reader)
            else:
                await self.admission.validate(req, self.reader)
        except AdmissionError as e:
            if e.causes and e.code == 422:
                raise errors.invalid(req.kind, req.name, e.causes) from None
            details: dict[str, Any] = {"name": req.name, "kind": req.kind.plural}
            if e.code == 403 and req.kind.group:  # NewForbidden(a.GetResource().GroupResource(), ...)
                details["group"] = req.kind.group
            if e.causes:  # a denial's own causes (NamespaceLifecycle's NamespaceTerminating)
                details["causes"] = [{"reason": c.reason, "message": c.message, "field": c.field} for c in e.causes]
            raise StatusError(e.code, e.message, e.reason, details) from None

    # ---------------------------------------------------------------- create

    async def create(
        self,
        rk: ResourceKind,
        namespace: str | None,
        body: Any,
        *,
        dry_run: bool = False,
        field_validation: str = "",
        field_manager: str = "",
        _applied: bool = False,
    ) -> tuple[Stored, builtins.list[str]]:
        """POST to a collection. Returns the stored object (not stored for dry run) and warnings.
        ``field_manager`` gets the created fields (see :meth:`_track`); ``_applied``: the body
        carries the managedFields of a server-side apply already.

        Raises:
            StatusError: 400 bad body (also when it sets a non-zero metadata.resourceVersion, where
                kube-apiserver answers 500), 409 AlreadyExists, 422 Invalid, 404/403 from admission.
        """
        obj = self._check_body(rk, namespace, body, None)
        md = obj["metadata"]
        try:  # the etcd3 store refuses a version it can read and is not 0, and clears any other
            rv_set = object_resource_version(md.get("resourceVersion")) != 0
        except ValueError:
            rv_set = False
        ns = self._ns(rk, namespace or md.get("namespace"))
        res = self.storage_resource(rk)
        st = self._view(rk)
        gen_name = not md.get("name") and md.get("generateName")
        if not md.get("name") and not gen_name:
            raise errors.invalid(rk, "", [FieldCause("metadata.name", "Required value: name or generateName is "
                                                                       "required", "FieldValueRequired")])
        warnings = self._prune_default(rk, obj, field_validation)
        if gen_name:
            # the base is cut to 63 - 5 characters, so a generated name is never over 63 (k8s.io/apiserver
            # storage/names SimpleNameGenerator, MaxGeneratedNameLength)
            base = str(md["generateName"])[:_MAX_GENERATED_NAME_LENGTH]
            for _ in range(16):
                md["name"] = base + "".join(self._rng.choice(_GEN_CHARS) for _ in range(5))
                if st.get(res, ns, md["name"]) is None:
                    break
        # the decoder's defaulting, then the field manager, then PrepareForCreate (which owns
        # nothing it sets: a Job's generated selector and labels, a Namespace's finalizer)
        self.strategy(rk).default(obj)
        if not _applied:
            self._track(None, obj, rk, field_manager, "")
        self._prepare_create(rk, obj)
        name = md["name"]
        req = AdmissionRequest("CREATE", rk, ns or None, name, obj, None, dry_run=dry_run)
        await self._run_admission(req, mutate=True)
        finish = self.strategy(rk).begin_create(self, rk, obj, dry_run)
        done = False
        try:
            self._validate(rk, obj, None)
            warnings = [*warnings, *self.strategy(rk).warnings_on_create(obj)]
            await self._run_admission(req, mutate=False)
            if rv_set:  # the storage layer's refusal (etcd3 store.Create), after validation and admission
                raise errors.resource_version_set_on_create()
            if st.get(res, ns, name) is not None:
                raise errors.already_exists(rk, name)
            if dry_run:
                return Stored(obj, _encode(obj), 0), warnings
            stored = self._put(rk, st, res, obj)
            done = True
        finally:
            if finish is not None:
                finish(done)
        self.strategy(rk).after_write(self, rk, stored)
        return stored, warnings

    def _put(self, rk: ResourceKind, st: Any, res: str, obj: Obj) -> Stored:
        """Store a created or updated object, refused as etcd refuses a request over its
        ``--max-request-bytes`` (1.5 MiB, :data:`~pumice.apiserver.store.MAX_REQUEST_BYTES`):
        measured on what etcd would hold, the protobuf encoding for a built-in kind (tried only
        when the JSON one is over the limit: protobuf is the smaller) and JSON for a custom
        resource. A dry run never gets here, as it never reaches etcd.

        Raises:
            StatusError: 413 RequestEntityTooLarge ``etcdserver: request is too large``.

        Mirrors: etcd server (ErrRequestTooLarge), apiserver pkg/storage/etcd3/store.go.
        Deviates: kube-apiserver passes etcd's error through as a 500 with no reason
        (kubernetes#112152); pumice answers the same message with 413, the client's fault.
        """
        try:
            return st.put(res, obj, max_bytes=MAX_REQUEST_BYTES)  # type: ignore[no-any-return]
        except ObjectTooLarge as e:
            size = e.size
        if self.custom(rk) is None:
            message = protobuf.message_for(rk.api_version, rk.kind)
            if message is not None:
                try:
                    size = len(protobuf.envelope(rk.api_version, rk.kind, protobuf.encode(message, obj))) + len(res)
                except protobuf.ProtobufError as e:
                    log.warning("%s %s: measured by its JSON size (%d bytes), its protobuf encoding failed: %s",
                                rk.kind, res, size, e)
                if size <= MAX_REQUEST_BYTES:
                    return st.put(res, obj)  # type: ignore[no-any-return]
        raise StatusError(413, TOO_LARGE, "RequestEntityTooLarge")

    def _prepare_create(self, rk: ResourceKind, obj: Obj) -> None:
        md = obj["metadata"]
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"):
            md.pop(k, None)
        md["uid"] = self._uid()
        md["creationTimestamp"] = self.now()
        strategy = self.strategy(rk)
        if strategy.generation:
            md["generation"] = 1
        else:
            md.pop("generation", None)
        strategy.prepare_create(self, rk, obj)

    # ---------------------------------------------------------------- update

    @staticmethod
    def _precondition_rv(rv: Any) -> int:
        """The ``metadata.resourceVersion`` an update or patch result carries, as the storage reads
        it: 0 (unset, ``""``: an unconditional update) or the version the stored object must have.

        Raises:
            StatusError: 400 BadRequest with Go's text (``strconv.ParseUint: parsing "abc": invalid
                syntax``) for one it cannot read, before admission and validation. Deviates:
                kube-apiserver passes that error on as it is (500, no reason); pumice answers bad
                input with a 4xx.

        Mirrors: apiserver pkg/registry/generic/registry/store.go Update (ObjectResourceVersion of
        the updated object inside GuaranteedUpdate).
        """
        try:
            return object_resource_version(rv)
        except ValueError as e:
            raise errors.bad_request(str(e)) from None

    async def update(
        self,
        rk: ResourceKind,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        sub: str = "",
        dry_run: bool = False,
        field_validation: str = "",
        field_manager: str = "",
        _expect: Stored | None = None,
        _status_patch: bool = False,
        _status_only: bool = False,
        _applied: bool = False,
        _manager_sub: str | None = None,
        _drop_managed_fields: bool = False,
    ) -> tuple[Stored, builtins.list[str]]:
        """PUT an object (``sub`` ``""``, ``"status"`` or ``"finalize"`` for namespaces).
        ``field_manager`` gets the fields the write changes (see :meth:`_track`), recorded under
        ``_manager_sub`` (default ``sub``; ``"scale"`` for the scale subresource); ``_applied``:
        ``body`` carries the managedFields of a server-side apply already;
        ``_drop_managed_fields`` (from :meth:`patch`'s retry of a too-large patch): the object is
        stored without managedFields, taken out after mutating admission, before validation.

        ``_status_patch`` (from :meth:`patch`): ``body`` is a fresh decode of ``_expect`` with
        only its status changed (see :meth:`_check_status_body`); ``_status_only`` the same for
        a write of the main resource (see :meth:`_clean_rest`).

        Raises:
            StatusError: 404, 409 Conflict on a stale resourceVersion, 400, 422.
        """
        cr_status = False
        version = self._status_only_version(rk) if _status_only and sub == "" and _expect is not None \
            and not _drop_managed_fields else None
        clean = version is not None and self._clean_rest(rk, namespace, name, _expect, version, body)
        rest_before = b""
        if clean:
            obj, untouched = body, False
        elif _status_patch and sub == "status" and _expect is not None:
            obj, untouched = self._check_status_body(rk, namespace, body, name, _expect)
        else:
            cr_status = sub == "status" and self.custom(rk) is not None
            obj, untouched = self._check_body(rk, namespace, body, name, cr_status=cr_status), False
        ns = self._ns(rk, namespace)
        res = self.storage_resource(rk)
        st = self._view(rk)
        old = st.get(res, ns, name) if _expect is None else _expect
        if old is None:
            raise errors.not_found(rk, name)
        if clean:
            assert version is not None
            warnings = self._prune_default_status(rk, version, obj, field_validation)
        elif sub == "":
            if version is not None:
                rest_before = _encode({k: obj[k] for k in sorted(obj) if k != "status"})
            warnings = self._prune_default(rk, obj, field_validation)
            if rest_before and _encode({k: obj[k] for k in sorted(obj) if k != "status"}) != rest_before:
                rest_before = b""  # pruning or defaulting changed more than the status
        elif sub == "status" and (cv := self._schema_version(rk)) is not None and "status" in obj:
            # a custom resource's status write is pruned and defaulted as any body is decoded, before
            # it is validated: a required status field with a default is no Required (the rest of
            # the body is the stored object's after PrepareForUpdate, so only the status is taken
            # back; in place, the body's keys keep their order)
            part = dict(obj)
            warnings = self._prune_default_status(rk, cv, part, field_validation)
            if "status" in part:
                obj["status"] = part["status"]
            else:
                del obj["status"]
        else:
            warnings = []
        new_rv = self._precondition_rv(obj["metadata"].get("resourceVersion"))
        if new_rv == 0 and _expect is None and not self.strategy(rk).allow_unconditional_update:
            raise errors.resource_version_unset(rk, name)  # a PUT (a patch's comes with _expect)
        if new_rv not in (0, old.rv):
            raise errors.conflict(rk, name, errors.STALE)
        typed_status: Any = None  # the status value found free of type errors, if any
        # as kube-apiserver validates: after the lookup (404) and the version check (409)
        if cr_status and self._check_types(rk, obj, cr_status="after"):
            typed_status = obj.get("status")
        req = AdmissionRequest("UPDATE", rk, ns or None, name, None, old.obj, subresource=sub, dry_run=dry_run)
        # a status write shares the stored object's values unless a mutating plugin may change them
        share = not self.admission.handling(req, mutating=True)
        as_stored = untouched and old is _expect
        if as_stored:  # a status patch that left everything else as stored is already the new object
            new = obj if share else self._own(obj, old)
        else:
            new = self._prepare_update(rk, obj, old, sub, share=share, applied=_applied)
        if not _applied:
            self._track(old.obj, new, rk, field_manager, sub if _manager_sub is None else _manager_sub)
        req.obj = new
        mutated = bool(version is not None and self.admission.handling(req, mutating=True))
        await self._run_admission(req, mutate=True)
        if _drop_managed_fields:
            new["metadata"].pop("managedFields", None)
        # BeginUpdate (the Service allocator): after mutating admission, before validation
        finish = self.strategy(rk).begin_update(self, rk, new, old.obj, dry_run) if sub == "" else None
        done = False
        try:
            if clean and not mutated:
                assert version is not None
                self._validate_status(rk, version, new, old.obj)
            elif sub in ("", "finalize"):  # finalize: ValidateNamespaceFinalizeUpdate (the finalizer names)
                self._validate(rk, new, old.obj)
            elif sub == "status" and self.custom(rk) is None:
                causes = self.strategy(rk).validate_status(self, rk, new, old.obj)
                if causes:
                    raise errors.invalid(rk, name, causes)
            elif sub == "status" and type(new.get("status")) is dict:
                self._validate_cr_status_formats(rk, new, typed=new["status"] is typed_status and not self.admission.handling(
                    req, mutating=True))
            await self._run_admission(req, mutate=False)
            current = st.get(res, ns, name)
            if current is None:
                raise errors.not_found(rk, name)
            if current.rv != old.rv:
                raise errors.conflict(rk, name, errors.STALE)
            new["metadata"]["resourceVersion"] = old.obj["metadata"].get("resourceVersion")
            if _applied and new != old.obj:
                keep_managed_field_times(new, old.obj)
            if new == old.obj:
                done = True
                return old, warnings
            if dry_run:
                return Stored(new, _encode(new), old.rv), warnings
            if self._finished(rk, new):
                gone = st.delete(res, ns, name)
                assert gone is not None
                done = True
                self.strategy(rk).after_delete(self, rk, gone)
                return gone, warnings
            stored = self._put(rk, st, res, new)
            done = True
            if version is not None and (clean or rest_before) and not mutated:
                self._remember_clean_rest(rk, ns, name, stored.rv, version)
            self.strategy(rk).after_write(self, rk, stored)
            return stored, warnings
        finally:
            if finish is not None:
                finish(done)

    # -------------------------------------------- status-only writes of the main resource

    def _status_only_version(self, rk: ResourceKind) -> CustomVersion | None:
        """The served version of ``rk`` when its status-only merge patches of the main
        resource may take the checks of :meth:`_clean_rest`: a custom resource without a status
        subresource, whose version has a schema whose root splits (see :meth:`_splits`), no
        ``x-kubernetes-validations`` rules (they may compare the whole object with the old one),
        and no managedFields tracking of updates (it changes metadata after the checks)."""
        if self.track_update_managers or "status" in rk.subresources:
            return None
        version = self._schema_version(rk)
        if version is None or version.rules is not None:
            return None
        assert version.schema is not None
        return version if self._splits(version.schema) else None

    def _clean_rest(self, rk: ResourceKind, namespace: str | None, name: str, old: Stored | None,
                    version: CustomVersion, body: Obj) -> bool:
        """Whether the body of a status-only merge patch of the main resource (a fresh decode
        of the stored ``old`` with its status merged, resourceVersion dropped) needs the body
        checks on its status alone; then ``body`` has its apiVersion and kind set and its status
        passed the type check.

        So when ``old`` is a version this path stored (:meth:`_remember_clean_rest`) under the
        same served ``version``, after a write whose body had everything but the status pass
        the type check, come out of pruning and defaulting unchanged with nothing unknown, and
        validate with no cause, without a mutating admission plugin. ``body`` has that same
        everything-but-status but for the ``metadata.generation`` the write raised: no check
        reads generation beyond its type (an integer), and the update rules of metadata compare
        name, namespace and finalizers, equal in ``body`` and ``old``. Under a split root every
        schema check of a body is the union of its checks of each top-level value, so the
        status decides them all; any finding takes the whole check, so every refusal is exactly
        the full path's."""
        if old is None:
            return False
        rec = self._clean_rests.get((rk.group, rk.plural, namespace or "", name))
        if rec is None or rec[0] != old.rv or rec[1] is not version:
            return False
        generation = body["metadata"].get("generation")
        if type(generation) is not int or not 0 <= generation < 2**62:
            return False
        assert version.schema is not None and version.compiled is not None
        part = {"status": body["status"]} if "status" in body else {}
        unchecked, fresh = self._schema_parts("types", version.schema, part)
        if version.compiled.has_type_errors(unchecked):
            return False
        for key in fresh:
            self._clean_cr_parts.add(key)
        body["apiVersion"] = rk.api_version
        body["kind"] = rk.kind
        return True

    def _remember_clean_rest(self, rk: ResourceKind, namespace: str, name: str, rv: int,
                             version: CustomVersion) -> None:
        key = (rk.group, rk.plural, namespace, name)
        memo = self._clean_rests
        memo.pop(key, None)
        if len(memo) >= _CLEAN_RESTS:
            for stale in list(itertools.islice(memo, _CLEAN_RESTS // 2)):
                del memo[stale]
        memo[key] = (rv, version)

    def _schema_version(self, rk: ResourceKind) -> CustomVersion | None:
        """The served version of custom resource kind ``rk`` when it has a compiled schema."""
        cr = self.custom(rk)
        version = cr.versions.get(rk.version) if cr is not None else None
        return version if version is not None and version.schema and version.compiled is not None else None

    def _prune_default_status(self, rk: ResourceKind, version: CustomVersion, obj: Obj,
                              strict: str) -> builtins.list[str]:
        """Prune unknown fields from, and apply the schema's defaults to, ``obj`` (a custom
        resource's body) walking only its status, in place; returns the warnings (see
        :meth:`_prune_default`). The one status prune/default of both status writes: a body
        written to the ``status`` subresource (whose caller keeps only the status, as the status
        strategy does) and a body :meth:`_clean_rest` accepted (for which this is
        :meth:`_prune_default`: pruning and defaulting leave all but its status unchanged with
        nothing unknown).

        The object values but the status stand by under empty placeholders, which keep their
        presence for the root's own steps (as in :meth:`_unchanged_parts`; the top-level keys end
        in the same order as there). Deviates: kube-apiserver prunes the whole body of a status
        write, so it also reports unknown fields inside its other object values (which the status
        strategy then drops).

        Raises:
            StatusError: 400 under fieldValidation=Strict when unknown fields were sent.

        Mirrors: apiextensions-apiserver pkg/apiserver/schema/pruning (Prune) and
        schema/defaulting (Default), run by the custom resource codec on every body decoded.
        """
        assert version.compiled is not None
        keep: Obj = {k: obj.pop(k) for k in ("apiVersion", "kind", "metadata") if k in obj}
        aside = {k: v for k, v in obj.items() if k != "status" and type(v) is dict}
        for k in aside:
            obj[k] = {}
        try:
            unknown = version.compiled.prune(obj)
            version.compiled.default(obj)
        finally:
            obj.update(aside)
            obj.update(keep)
        return self._unknown_answer(rk, unknown, strict)

    def _validate_status(self, rk: ResourceKind, version: CustomVersion, new: Obj, old: Obj) -> None:
        """:meth:`_validate` of an object whose body :meth:`_clean_rest` accepted, with no
        mutating admission since: the metadata rules and every top-level value but the status
        find nothing, so the status's schema check decides; with a cause, the whole
        :meth:`_validate` gives the answer."""
        assert version.schema is not None and version.compiled is not None
        part = {"status": new["status"]} if "status" in new else {}
        unchecked, fresh = self._schema_parts("valid", version.schema, part)
        if version.compiled.validate(unchecked):
            self._validate(rk, new, old)
            raise AssertionError(f"{rk.kind} {new['metadata'].get('name')}: status invalid alone, valid whole")
        for key in fresh:
            self._clean_cr_parts.add(key)

    def _prepare_update(self, rk: ResourceKind, obj: Obj, old: Stored, sub: str, *, share: bool = False,
                        applied: bool = False) -> Obj:
        """The object an update of ``obj`` stores over ``old`` (``share``, ``applied``: see :meth:`_prepare_status`)."""
        if sub == "status":
            new = self._prepare_status(obj, old, share=share, applied=applied)
            if self.custom(rk) is None:
                self.strategy(rk).prepare_status_update(new, old.obj)
            return new
        return self._prepare_other(rk, obj, old, sub)

    def _prepare_status(self, obj: Obj, old: Stored, *, share: bool, applied: bool = False) -> Obj:
        """The object a status write of ``obj`` stores over ``old``: its status, the rest as stored
        but, for a server-side apply (``applied``), ``obj``'s managedFields (the apply computed the
        applier's ownership into them; none when ``obj`` has none). Other writes' managedFields
        are recorded afterwards from ``old``'s (:meth:`_track`).

        ``share``: nothing changes the result below its top level and its metadata's before it is
        stored (no mutating admission plugin runs for the write), so it takes ``old``'s own values
        (a stored object is never changed) but for a copy of the metadata's top level, which the
        write changes (resourceVersion, managedFields): the same JSON as a fresh copy of ``old``,
        made without a copy. Else a fresh copy of ``old`` with the status set.

        Mirrors: apiextensions-apiserver pkg/registry/customresource status_strategy.go
        statusStrategy.PrepareForUpdate (a deep copy of the old object, the new status and
        managedFields set) and apimachinery meta/v1 ResetObjectMetaForStatus (managedFields kept)."""
        stored = old.obj
        if share:
            new = {}
            for k, v in stored.items():
                if k == "metadata":
                    new[k] = dict(v)
                elif k != "status":
                    new[k] = v
                elif "status" in obj:
                    new[k] = obj["status"]
            if "status" in obj and "status" not in stored:
                new["status"] = obj["status"]
        else:
            new = old.copy()
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        if applied:
            md = new["metadata"]
            if "managedFields" in obj["metadata"]:
                md["managedFields"] = obj["metadata"]["managedFields"]
            else:
                md.pop("managedFields", None)
        return new

    def _prepare_other(self, rk: ResourceKind, obj: Obj, old: Stored, sub: str) -> Obj:
        if sub == "finalize":
            new = old.copy()
            new.setdefault("spec", {})["finalizers"] = list((obj.get("spec") or {}).get("finalizers") or [])
            return new
        if sub:
            return self.strategy(rk).prepare_subresource_update(self, rk, sub, obj, old.copy())
        new = obj
        md, omd = new["metadata"], old.obj["metadata"]
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if k in omd:
                if k == "uid" and md.get("uid") and md["uid"] != omd["uid"]:
                    raise errors.conflict(rk, omd["name"], f"Precondition failed: UID in precondition: {md['uid']}, "
                                                          f"UID in object meta: {omd['uid']}")
                md[k] = omd[k]
            else:
                md.pop(k, None)
        md.pop("selfLink", None)
        if "managedFields" not in md and "managedFields" in omd:
            md["managedFields"] = omd["managedFields"]
        self.strategy(rk).prepare_update(self, rk, new, old.obj)
        skip = ("metadata", "status") if self.has_status(rk) else ("metadata",)
        if self.strategy(rk).generation and any(
                new.get(k) != old.obj.get(k) for k in set(new) | set(old.obj) if k not in skip):
            md["generation"] = int(omd.get("generation", 1) or 1) + 1
        return new

    def _track(self, old: Obj | None, new: Obj, rk: ResourceKind, manager: str, sub: str) -> None:
        """Record a create (``old`` None) or non-apply update in ``new``'s managedFields, unless
        :attr:`track_update_managers` is off. A write of the main resource of a kind with a status
        subresource owns no status field; a scale write records no time, and one of a custom
        resource records nothing (kube-apiserver 1.32 tracks no ownership there, kubernetes#131892).

        Mirrors: k8s.io/apiserver pkg/endpoints/handlers (create.go, update.go, patch.go:
        FieldManager.UpdateNoErrors) and pumice.api.apply.update_managed_fields."""
        if not self.track_update_managers:
            return
        cr = self.custom(rk)
        if sub == "scale" and cr is not None:
            return
        update_managed_fields(old, new, manager=manager, api_version=rk.api_version, kind=rk.kind, builtin=cr is None,
                              time=None if sub == "scale" else self.now(), subresource=sub,
                              ignore=_STATUS if not sub and "status" in rk.subresources else frozenset(),
                              lists=self._list_types(cr, rk))

    @staticmethod
    def _list_types(cr: CustomResource | None, rk: ResourceKind) -> SchemaListTypes | None:
        """How a custom resource's lists merge (its served version's schema markers)."""
        version = cr.versions.get(rk.version) if cr is not None else None
        return version.list_types if version is not None else None

    def _finished(self, rk: ResourceKind, obj: Obj) -> bool:
        """A deleting object whose finalizers (and grace period) are done is removed."""
        md = obj["metadata"]
        if not md.get("deletionTimestamp") or md.get("finalizers"):
            return False
        if self.strategy(rk).holds_deletion(obj):
            return False
        return not md.get("deletionGracePeriodSeconds")

    # ---------------------------------------------------------------- patch

    async def patch(
        self,
        rk: ResourceKind,
        namespace: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        sub: str = "",
        dry_run: bool = False,
        field_validation: str = "",
        field_manager: str = "",
        force: bool = False,
        _manager_sub: str | None = None,
    ) -> tuple[Stored, bool, builtins.list[str]]:
        """PATCH: ``patch_type`` is ``merge``, ``json``, ``strategic`` or ``apply``. Returns
        ``(object, created, warnings)``; ``apply`` creates a missing object.

        A patch other than ``apply`` whose result is refused as too large for etcd (413
        ``etcdserver: request is too large``, see :meth:`_put`) is tried once more against the
        object read again, this time stored without ``metadata.managedFields`` (they can be
        large, and dropping them is safe); a second refusal is answered.

        Raises:
            StatusError: 404, 409, 413 (too large even without managedFields, or an ``apply``),
            415 (strategic on a custom resource), 422 (patch does not apply).

        Mirrors: apiserver pkg/endpoints/handlers/patch.go patchResource (the isTooLargeError
        retry with managedFields set to nil).
        """
        if patch_type == "strategic" and self.custom(rk) is not None:
            raise errors.unsupported_media_type(custom=True)
        if patch_type == "apply" and not field_manager:
            message = "Required value: is required for apply patch"
            raise StatusError(422, f'PatchOptions.meta.k8s.io "" is invalid: fieldManager: {message}', "Invalid",
                              {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
                                  {"reason": "FieldValueRequired", "message": message, "field": "fieldManager"}]})
        if patch_type in ("merge", "strategic", "apply") and not isinstance(patch, dict):
            raise errors.bad_request("the patch must be a JSON object")
        if patch_type == "apply":
            pmd = patch.get("metadata", {})
            if not isinstance(pmd, dict):
                raise errors.bad_request("metadata must be an object")
            if pmd.get("name") not in (None, name):
                raise errors.bad_request(f"the name of the object ({pmd.get('name')}) does not match the name on "
                                         f"the URL ({name})")
        ns = self._ns(rk, namespace)
        res = self.storage_resource(rk)
        st = self._view(rk)
        status_patch = sub == "status" and patch_type == "merge" and patch.keys() <= {"status"}
        status_only = sub == "" and patch_type == "merge" and patch.keys() <= {"status"}
        drop_managed_fields = False
        conflicts = 0
        while True:
            old = st.get(res, ns, name)
            if old is None:
                if patch_type == "apply" and sub == "":
                    body = copy.deepcopy(patch)
                    body.setdefault("metadata", {}).setdefault("name", name)
                    applied = self._apply(None, body, rk, field_manager, force)
                    self._check_patched_bytes(rk, patch_type, patch, applied)
                    try:
                        stored, warnings = await self.create(rk, namespace, applied, dry_run=dry_run,
                                                             field_validation=field_validation,
                                                             field_manager=field_manager, _applied=True)
                    except errors.DecodeError as e:
                        if not e.why.startswith("parsing time "):
                            raise
                        raise self._patch_decode_error(rk, patch_type, patch, applied, e.why) from None
                    return stored, True, warnings
                raise errors.not_found(rk, name)
            patched = self._apply_patch(rk, old, patch_type, patch, field_manager, force, sub)
            if not isinstance(patched, dict):
                raise StatusError(422, "the patch result is not a JSON object", "Invalid")
            self._check_patched_bytes(rk, patch_type, patch, patched)
            md = patched.setdefault("metadata", {})
            if not isinstance(md, dict):
                raise StatusError(422, "metadata must be an object", "Invalid")
            errors.check_name(md.get("name"), name)  # patch.go applyPatch: a patch may not rename or unname
            if self._precondition_rv(md.get("resourceVersion", old.rv)) not in (0, old.rv):
                raise errors.conflict(rk, name, errors.STALE)
            md.pop("resourceVersion", None)
            try:
                stored, warnings = await self.update(rk, namespace, name, patched, sub=sub, dry_run=dry_run,
                                                     field_validation=field_validation,
                                                     field_manager=field_manager, _expect=old,
                                                     _status_patch=status_patch, _status_only=status_only,
                                                     _applied=patch_type == "apply",
                                                     _manager_sub=_manager_sub,
                                                     _drop_managed_fields=drop_managed_fields)
            except errors.DecodeError as e:
                # a time Go cannot parse (metav1.Time UnmarshalJSON), and for a merge or JSON patch a
                # value of the wrong type: the patch handler's decoding of the patched object fails,
                # before any update; strict decoding errors stay as they are
                if not (e.why.startswith("parsing time ")
                        or (patch_type in ("merge", "json") and e.why.startswith(_TYPE_ERROR))):
                    raise
                raise self._patch_decode_error(rk, patch_type, patch, patched, e.why) from None
            except StatusError as e:
                if e.code == 409 and e.reason == "Conflict" and conflicts < 7 and "Precondition" not in e.message:
                    conflicts += 1
                    continue
                if e.code == 413 and e.message == TOO_LARGE and patch_type != "apply" and not drop_managed_fields:
                    drop_managed_fields = True
                    continue
                raise
            return stored, False, warnings

    def _apply_patch(self, rk: ResourceKind, old: Stored, patch_type: str, patch: Any, manager: str,
                     force: bool, sub: str = "") -> Any:
        base = self._status_patch_base(old) if patch_type == "merge" and sub == "status" and \
            patch.keys() <= {"status"} else old.copy()
        try:
            if patch_type == "merge":
                # the patch's own values go into the fresh copy of the stored object, so they are
                # copied first (a conflict retries with the same patch)
                return merge_patch_into(base, deep_copy(patch))
            if patch_type == "json":
                if isinstance(patch, list) and len(patch) > MAX_JSON_PATCH_OPERATIONS:
                    raise errors.json_patch_too_long(len(patch))
                try:
                    return json_patch(base, patch)
                except PatchError as e:
                    # upstream's 422 does not carry the reason: it goes to the log
                    md = old.obj.get("metadata") or {}
                    log.info("JSON patch of %s %s/%s refused: %s", rk.kind, md.get("namespace", ""), md.get("name"), e)
                    raise errors.json_patch_error(e) from None
            if patch_type == "strategic":
                return strategic_merge_patch(base, patch, rk.kind)
            if patch_type == "apply":
                return self._apply(base, copy.deepcopy(patch), rk, manager, force, sub)
        except PatchError as e:
            raise StatusError(422, str(e), "Invalid") from None
        except MergeError as e:
            raise errors.merge_error(str(e)) from None
        except ValueError as e:
            raise StatusError(422, str(e), "Invalid") from None
        raise errors.unsupported_media_type(custom=self.custom(rk) is not None)

    @staticmethod
    def _status_patch_base(old: Stored) -> Obj:
        """What a merge patch of the status subresource that names nothing but ``status`` is
        applied to: the stored object ``old`` with its own values (a stored object is never
        changed; :meth:`_own` copies them where a step changes values in place), but for copies
        of its metadata's top level (the patch handler and the write set resourceVersion there)
        and of its status (the patch changes it in place). The same JSON as a fresh copy of
        ``old``, without the copy of the rest."""
        base: Obj = {}
        for k, v in old.obj.items():
            if k == "metadata":
                base[k] = dict(v)
            elif k == "status":
                base[k] = _decode(_encode(v))
            else:
                base[k] = v
        return base

    def _check_patched_bytes(self, rk: ResourceKind, patch_type: str, patch: Any, patched: Obj) -> None:
        """The ``[]byte`` fields of a patched built-in object (see
        :func:`pumice.api.fields.bytes_error`), refused as kube-apiserver's patch handler
        refuses a result its decoding into the Go struct fails on:

        - merge and JSON patches: 422 `` "" is invalid: patch: Invalid value: "<patched object
          JSON>": illegal base64 data at input byte <n>`` (jsonPatcher: DecodeInto fails);
        - strategic merge patches: 422, the value Go's ``%+v`` of the patch
          (``map[binaryData:map[a:***]]``), the error ``error decoding from json: ...``
          (applyPatchToObject: the unstructured converter fails);
        - server-side apply: ``failed to convert new object (<ns>/<name>; /v1, Kind=ConfigMap) to
          proper version: unable to convert unstructured object to /v1, Kind=ConfigMap: error
          decoding from json: ...`` (structuredMergeManager.Apply: toVersioned fails).

        Mirrors: apiserver pkg/endpoints/handlers/patch.go, apimachinery
        pkg/runtime/converter.go sliceFromUnstructured, pkg/runtime/scheme.go unstructuredToTyped,
        pkg/util/managedfields/internal/structuredmerge.go. Deviates: the apply error is a plain
        Go error upstream, answered 500 (reason unknown); pumice answers the same message as 400
        BadRequest (bad input is never a 500 here). The patched object's JSON in the merge/JSON
        patch message has its keys sorted at every level (upstream: sorted at the top level by
        json-patch, Go struct order below). A Secret's patch or patched object is not echoed
        (``<secret contents redacted>``, the placeholder of ValidateSecret): upstream echoes it,
        secret values included; pumice never echoes a Secret's values (tests/reliability/
        test_security.py).
        """
        if self.custom(rk) is not None:
            return
        bad = bytes_error(rk, patched)
        if bad is not None:
            raise self._patch_decode_error(rk, patch_type, patch, patched, f"error decoding from json: {bad[1]}")

    @staticmethod
    def _patch_decode_error(rk: ResourceKind, patch_type: str, patch: Any, patched: Obj, why: str) -> StatusError:
        """The patch handler's refusal of a patched built-in object its Go struct cannot hold
        (``why``: the converter's error; a []byte field's is ``error decoding from json: ...``, a
        metav1.Time's the bare ``parsing time ...``), worded per patch type as
        :meth:`_check_patched_bytes` describes (merge and JSON patches show ``why`` without the
        ``error decoding from json: `` prefix: their decoder is the JSON one)."""
        if patch_type == "apply":
            pmd = patch.get("metadata") if isinstance(patch.get("metadata"), dict) else {}
            gvk = f"{rk.group}/{rk.version}, Kind={rk.kind}"
            return errors.bad_request(
                f"failed to convert new object ({pmd.get('namespace') or ''}/{pmd.get('name') or ''}; {gvk}) to "
                f"proper version: unable to convert unstructured object to {gvk}: {why}")
        if patch_type == "strategic":
            value = sprint_v(patch)
        else:
            value, why = go_json(patched), why.removeprefix("error decoding from json: ")
        if rk.group == "" and rk.kind == "Secret":
            value = REDACTED
        message = f"Invalid value: {quote(value)}: {why}"
        return StatusError(422, f' "" is invalid: patch: {message}', "Invalid",
                           {"causes": [{"reason": "FieldValueInvalid", "message": message, "field": "patch"}]})

    def _apply(self, live: Obj | None, applied: Obj, rk: ResourceKind, manager: str, force: bool,
               sub: str = "") -> Obj:
        if applied.get("apiVersion") != rk.api_version or applied.get("kind") != rk.kind:
            raise errors.bad_request(f"invalid object type: {_applied_gvk(applied)}")
        if isinstance(applied.get("metadata"), dict) and applied["metadata"].get("managedFields") is not None:
            raise errors.bad_request("metadata.managedFields must be nil")
        cr = self.custom(rk)
        try:
            result: Obj = server_side_apply(live, applied, manager=manager, kind=rk.kind, force=force,
                                            builtin=cr is None, time=self.now(),
                                            api_version=rk.api_version, subresource=sub,
                                            ignore=_STATUS if not sub and "status" in rk.subresources
                                            else frozenset(), lists=self._list_types(cr, rk))
        except ApplyTypeError as e:
            # kube-apiserver's fieldmanager wraps it in this text. Deviates: its handler answers
            # 500 without a reason (the error is not an API status); bad input is a 400 here, as
            # for the other inputs kube-apiserver answers 500 (an unparsable resourceVersion).
            # The object is named as the applied configuration names it (objectGVKNN of the
            # patch object: "<namespace>/<name>", the namespace empty when the body has none)
            md = applied.get("metadata") or {}
            who = f"{md.get('namespace') or ''}/{md.get('name') or ''}"
            raise errors.bad_request(f"failed to create typed patch object ({who}; {rk.group}/{rk.version}, "
                                     f"Kind={rk.kind}): {e}") from None
        except ApplyConflict as e:
            raise StatusError(409, str(e), "Conflict", {"name": applied.get("metadata", {}).get("name", ""),
                                                        "group": rk.group, "kind": rk.plural,
                                                        "causes": [{"reason": "FieldManagerConflict",
                                                                    "message": f"conflict with {m}",
                                                                    "field": p} for m, p in e.conflicts]}) from None
        return result

    # ---------------------------------------------------------------- delete

    async def delete(self, rk: ResourceKind, namespace: str | None, name: str,
                     opts: DeleteOptions, *, collection: bool = False) -> tuple[Stored, bool]:
        """DELETE. Returns ``(object, removed)``: the object as removed (``removed`` True; a kind
        whose strategy :attr:`~Strategy.marks_before_delete` with its deletionTimestamp, grace
        period and generation as the delete set them, others as they were stored), or as it stays
        (with deletionTimestamp) while finalizers or the Pod grace period hold it (False). A dry
        run answers what the delete would do. ``collection``: one item of a DELETE of the
        collection, which skips the kind's own refusals (:meth:`Strategy.check_delete`), as
        kube-apiserver's DeleteCollection does.

        Raises:
            StatusError: 404, 409 on a failed precondition, 403 from admission or the kind (a
                system PriorityClass).
        """
        if not collection:
            self.strategy(rk).check_delete(rk, name)
        ns = self._ns(rk, namespace)
        res = self.storage_resource(rk)
        st = self._view(rk)
        old = st.get(res, ns, name)
        if old is None:
            raise errors.not_found(rk, name)
        pre = opts.preconditions or {}
        omd = old.obj["metadata"]
        # rest.BeforeDelete checks the preconditions against the object read, with its own texts
        if pre.get("uid") and pre["uid"] != omd.get("uid"):
            raise errors.precondition_conflict(rk, name, f"the UID in the precondition ({pre['uid']}) does not match "
                                                         f"the UID in record ({omd.get('uid', '')}). The object might "
                                                         "have been deleted and then recreated")
        if pre.get("resourceVersion") and pre["resourceVersion"] != str(old.rv):
            raise errors.precondition_conflict(rk, name, f"the ResourceVersion in the precondition "
                                                         f"({pre['resourceVersion']}) does not match the "
                                                         f"ResourceVersion in record ({old.rv}). The object might "
                                                         "have been modified")
        req = AdmissionRequest("DELETE", rk, ns or None, name, None, old.obj, dry_run=opts.dry_run)
        await self._run_admission(req, mutate=False)
        old = st.get(res, ns, name)
        if old is None:
            raise errors.not_found(rk, name)
        # the deleting object: the stored one with a metadata of its own; the rest is shared
        # with it, which nobody changes (a Stored object is never mutated, and a strategy's
        # begin_delete replaces what it changes), so no deep copy, though most deletes are final
        # and only read it
        new = {**old.obj, "metadata": dict(old.obj["metadata"])}
        md = new["metadata"]
        was = list(md.get("finalizers") or [])
        # store.go deletionFinalizersForGarbageCollection: the policy is the explicit option, else
        # the first GC finalizer the object has, else the kind's default (rcStrategy: core/v1
        # ReplicationControllers keep OrphanDependents); the GC finalizers are then replaced by the
        # policy's own (a Background delete takes an orphan finalizer away)
        policy = opts.propagation_policy
        if policy is None:
            gc = next((f for f in was if f in ("orphan", "foregroundDeletion")), None)
            if gc is not None:
                policy = "Orphan" if gc == "orphan" else "Foreground"
            elif (rk.group, rk.version, rk.plural) == ("", "v1", "replicationcontrollers"):
                policy = "Orphan"
        finalizers = [f for f in was if f not in ("orphan", "foregroundDeletion")]
        if policy == "Orphan":
            finalizers.append("orphan")
        elif policy == "Foreground":
            finalizers.append("foregroundDeletion")
        if set(finalizers) != set(was):
            if finalizers:
                md["finalizers"] = finalizers
            else:
                md.pop("finalizers", None)
        strategy = self.strategy(rk)
        grace = strategy.deletion_grace(new, opts)
        strategy.begin_delete(new)
        if md.get("deletionTimestamp"):
            # already deleting: only a shorter grace period or new finalizers change anything
            old_grace = md.get("deletionGracePeriodSeconds")
            if grace is not None and old_grace is not None and grace < int(old_grace):
                # rest.BeforeDelete counts the shorter period from when the first one started
                started = parse_rfc3339(md["deletionTimestamp"]) - int(old_grace)
                md["deletionGracePeriodSeconds"] = grace
                md["deletionTimestamp"] = rfc3339(started + grace)
        else:
            md["deletionTimestamp"] = rfc3339(self.clock.now() + (grace or 0))
            if strategy.deletion_grace_period:
                md["deletionGracePeriodSeconds"] = grace or 0
            # BeforeDelete / markAsDeleting bump only a generation the kind keeps (> 0)
            if isinstance(md.get("generation"), int) and md["generation"] > 0:
                md["generation"] += 1
        holds = bool(md.get("finalizers")) or bool(md.get("deletionGracePeriodSeconds")) or \
            strategy.holds_deletion(new)
        if opts.dry_run:
            if holds or strategy.marks_before_delete:
                return Stored(new, _encode(new), old.rv), not holds
            return old, True
        if holds:
            new["metadata"]["resourceVersion"] = omd.get("resourceVersion")
            if new == old.obj:
                return old, False
            stored = st.put(res, new)
            return stored, False
        strategy.before_final_delete(self, old.obj)
        if strategy.marks_before_delete:
            # upstream stores the deleting object first (updateForGracefulDeletionAndFinalizers,
            # the Namespace REST's phase update): a MODIFIED event at a revision of its own; the
            # removal's DELETED event, and the answer, then carry that form at the removal's
            md["resourceVersion"] = omd.get("resourceVersion")
            if new != old.obj:
                st.put(res, new)
        gone = st.delete(res, ns, name)
        assert gone is not None
        strategy.after_delete(self, rk, gone)
        return gone, True

    # ---------------------------------------------------------------- pods/binding, pods/eviction

    async def bind(self, namespace: str, name: str, binding: Any, *, dry_run: bool = False) -> None:
        """POST pods/<name>/binding: set spec.nodeName and PodScheduled=True.

        Raises:
            StatusError: 400 (not a v1 Binding, or its name/namespace differ from the URL's),
                404, 409 (already bound, being deleted, uid mismatch), 422 (no target).
        """
        pods = self.scheme.by_api_version_kind("v1", "Pod")
        assert pods is not None
        _check_named_body(binding, "Binding", ("v1",), namespace, name)
        target = binding.get("target") or {}
        node = target.get("name")
        if not node:
            raise StatusError(422, f'Binding "{name}" is invalid: target.name: Required value', "Invalid",
                              {"name": name, "kind": "Binding",
                               "causes": [{"reason": "FieldValueRequired", "message": "Required value",
                                           "field": "target.name"}]})
        if target.get("kind") not in (None, "", "Node"):
            raise StatusError(422, f'Binding "{name}" is invalid: target.kind: Unsupported value: '
                              f'"{target.get("kind")}": supported values: "Node"', "Invalid")
        old = self.store.get("/pods", namespace, name)
        if old is None:
            raise errors.not_found(pods, name)
        bmd = binding.get("metadata") or {}
        if bmd.get("uid") and bmd["uid"] != old.obj["metadata"].get("uid"):
            raise errors.conflict(pods, name, f"Precondition failed: UID in precondition: {bmd['uid']}, UID in object "
                                              f"meta: {old.obj['metadata'].get('uid')}", sub="binding")
        if old.obj["metadata"].get("deletionTimestamp"):
            raise errors.conflict(pods, name, f"pod {name} is being deleted, cannot be assigned to a host",
                                  sub="binding")
        current = (old.obj.get("spec") or {}).get("nodeName")
        if current:
            raise errors.conflict(pods, name, f'pod {name} is already assigned to node "{current}"', sub="binding")
        new = old.copy()
        new.setdefault("spec", {})["nodeName"] = node
        for k, v in (bmd.get("annotations") or {}).items():
            new["metadata"].setdefault("annotations", {})[k] = v
        status = new.setdefault("status", {})
        conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                      "lastTransitionTime": self.now()})
        status["conditions"] = conds
        if dry_run:
            return
        self.store.put("/pods", new)

    async def evict(self, namespace: str, name: str, eviction: Any) -> None:
        """POST pods/<name>/eviction: delete the Pod with the Eviction's deleteOptions.

        The body must be a policy/v1 (or v1beta1) Eviction naming the Pod of the URL (400
        otherwise, see :func:`_check_named_body`).

        A Pod selected by a PodDisruptionBudget whose ``disruptionsAllowed`` is 0 is not
        evicted: 429 TooManyRequests (see :func:`pumice.apiserver.eviction.check_disruption_budget`).
        Before the delete the Pod gets the condition ``DisruptionTarget=True`` (reason
        ``EvictionByEvictionAPI``, message ``Eviction API: evicting``), unless a dry run, as
        kube-apiserver 1.31+ does (PodDisruptionConditions, pkg/registry/core/pod/storage/eviction.go
        addConditionAndDeletePod).
        """
        pods = self.scheme.by_api_version_kind("v1", "Pod")
        assert pods is not None
        if isinstance(eviction, dict):  # decoded into the Go struct first (policy v1beta1's is the same)
            why = unmarshal_error(protobuf.message_for("policy/v1", "Eviction"), eviction)
            if why is not None:
                version = "v1beta1" if eviction.get("apiVersion") == "policy/v1beta1" else "v1"
                raise errors.cannot_handle(replace(EVICTION, version=version), why)
        _check_named_body(eviction, "Eviction", ("policy/v1", "policy/v1beta1"), namespace, name)
        opts = DeleteOptions.parse(eviction.get("deleteOptions"), {})
        pod = self.store.get("/pods", namespace, name)
        if pod is None:
            raise errors.not_found(pods, name)
        if not opts.dry_run:
            check_disruption_budget(self, pod.obj)
            stored = self._add_disruption_target(pod, opts)
            pre = opts.preconditions
            if stored is not None and pre and pre.get("resourceVersion"):
                # we changed the Pod: the delete's precondition follows our own write
                opts = replace(opts, preconditions={**pre, "resourceVersion": str(stored.rv)})
        await self.delete(pods, namespace, name, opts)

    def _add_disruption_target(self, pod: Stored, opts: DeleteOptions) -> Stored | None:
        """Write ``DisruptionTarget=True`` (EvictionByEvictionAPI) into the Pod's status, once the
        eviction's preconditions hold for it; the transition time moves only when the condition
        changes (podutil.UpdatePodCondition). Returns the stored Pod, None when nothing changed.
        No managedFields entry is recorded, as upstream: eviction.go writes through the Pod
        status store's Update (genericregistry.Store), and the field manager runs only in the
        HTTP handlers above it.

        Raises:
            StatusError: 409 Conflict (eviction.go's texts) when the preconditions' uid or
                resourceVersion is not the Pod's.
        """
        pre = opts.preconditions or {}
        md = pod.obj["metadata"]
        why = None
        if pre.get("uid") and pre["uid"] != md.get("uid"):
            why = (f"the UID in the precondition ({pre['uid']}) does not match the UID in record ({md.get('uid')}). "
                   "The object might have been deleted and then recreated")
        elif pre.get("resourceVersion") and pre["resourceVersion"] != str(pod.rv):
            why = (f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not match the "
                   f"ResourceVersion in record ({pod.rv}). The object might have been modified")
        if why is not None:
            raise StatusError(409, f'Operation cannot be fulfilled on Pod "{md.get("name")}": {why}', "Conflict",
                              {"name": md.get("name"), "kind": "Pod"})
        want = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting"}
        new = pod.copy()
        status = new.setdefault("status", {})
        conds = list(status.get("conditions") or [])
        for i, c in enumerate(conds):
            if c.get("type") == "DisruptionTarget":
                if all(c.get(k) == v for k, v in want.items()):
                    return None
                moved = c.get("status") != "True"
                conds[i] = {**c, **want, "lastProbeTime": None,
                            "lastTransitionTime": self.now() if moved else c.get("lastTransitionTime")}
                break
        else:
            conds.append({**want, "lastProbeTime": None, "lastTransitionTime": self.now()})
        status["conditions"] = conds
        return self.store.put("/pods", new)

    # ---------------------------------------------------------------- CRDs

    def _migrate_events_v1(self) -> None:
        """Move events.k8s.io Events that an older pumice stored on their own into the one Event
        store (as core/v1 Events)."""
        for old in self.store.list(events.EVENTS_V1_RESOURCE):
            md = old.obj["metadata"]
            if self.store.get(events.CORE_RESOURCE, md.get("namespace", ""), md["name"]) is None:
                obj = events.to_core(old.copy())
                obj["metadata"].pop("resourceVersion", None)
                self.store.put(events.CORE_RESOURCE, obj)
            self.store.delete(events.EVENTS_V1_RESOURCE, md.get("namespace", ""), md["name"])

    def track_event(self, res: str, stored: Stored) -> None:
        """Schedule the expiry of an Event ``event_ttl`` seconds after this write."""
        now = self.clock.now()
        md = stored.obj["metadata"]
        key = (res, md.get("namespace", ""), md["name"])
        expiry = now + self.event_ttl
        self._event_expiry[key] = expiry
        self._event_queue.append((expiry, key))
        self.expire_events(now)

    def expire_events(self, now: float | None = None) -> int:
        """Delete Events whose TTL has passed (called on every Event write); returns how many."""
        now = self.clock.now() if now is None else now
        queue, expiry, n = self._event_queue, self._event_expiry, 0
        while queue and queue[0][0] <= now:
            when, key = queue.popleft()
            if expiry.get(key) != when:
                continue
            del expiry[key]
            if self.store.delete(*key) is not None:
                n += 1
        return n

    def install_crd(self, crd: Obj) -> None:
        """Serve the kinds of ``crd`` (replacing an earlier version of the same CRD)."""
        cr = crd_info(crd)
        prev = self.crds.get(cr.resource)
        if prev is not None:
            for v in prev.versions:
                self.scheme.remove(prev.group, v, prev.plural)
        self.crds[cr.resource] = cr
        self._clean_cr_parts.clear()  # its keys name schemas by identity
        self._clean_status_rests.clear()
        self._clean_rests.clear()
        for rk in cr.kinds():
            self.scheme.add(rk)
        for fn in self.crd_listeners:
            fn()

    def uninstall_crd(self, crd: Obj) -> None:
        cr = crd_info(crd)
        prev = self.crds.pop(cr.resource, None)
        self._clean_cr_parts.clear()
        self._clean_status_rests.clear()
        self._clean_rests.clear()
        if prev is not None:
            for v in prev.versions:
                self.scheme.remove(prev.group, v, prev.plural)
        for fn in self.crd_listeners:
            fn()

    def drop_instances(self, crd: Obj) -> None:
        """Delete every stored instance of ``crd``'s kind."""
        cr = crd_info(crd)
        for s in self.store.list(cr.resource):
            md = s.obj["metadata"]
            self.store.delete(cr.resource, md.get("namespace", ""), md["name"])

    def load_crds(self) -> None:
        """Serve every CRD found in the store (at start)."""
        for s in self.store.list("apiextensions.k8s.io/customresourcedefinitions"):
            try:
                self.install_crd(s.obj)
            except (KeyError, TypeError, ValueError):
                continue


def _applied_gvk(applied: Obj) -> str:
    """An apply patch's group, version and kind as apimachinery prints a ``GroupVersionKind``
    (``/v1, Kind=ConfigMap``; ``/, Kind=`` for none): the text of fieldmanager's version check,
    which refuses any patch whose apiVersion or kind is not the endpoint's, a missing one included.
    A non-string value reads as empty, and so does an apiVersion with more than one ``/`` (upstream's
    ParseGroupVersion fails and the unstructured object reports no GroupVersionKind)."""
    api_version, kind = applied.get("apiVersion"), applied.get("kind")
    api_version = api_version if isinstance(api_version, str) else ""
    kind = kind if isinstance(kind, str) else ""
    if api_version.count("/") > 1:
        return "/, Kind="
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"
