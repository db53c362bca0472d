"""FakeClient: the in-memory :class:`~pumice.client.base.KubeClient` for fast tests of a seam
(controllers, informers, the node agent).

It keeps objects per kind with a global resourceVersion counter, assigns uid, generation and
creationTimestamp like the API server, honours optimistic concurrency (409 Conflict on a stale
resourceVersion), finalizers (delete sets deletionTimestamp while finalizers remain; the update
that removes the last one deletes, as the registry's ShouldDeleteDuringUpdate), uid and
resourceVersion preconditions, merge / JSON / strategic patches, the status subresource
(``update`` keeps status, ``update_status`` takes only status), and streams watch events with
resourceVersion resume and bookmarks. A namespaced object created without a namespace goes to
``default``, as the real client sends it.

Selectors go through :mod:`pumice.api.selectors` (the API server's parsers; a bad one is a 400):
label selectors and field selectors over dotted paths (``spec.nodeName=n1``) filter lists and
watches; on a filtered watch an object that starts or stops matching arrives as ADDED or DELETED,
as from the API server's watch cache. Each watch has its own queue, filled as events happen (O(1)
per event and watcher, so 50,000 Pods stay cheap); ``history`` events per kind are kept for
resuming, an older resourceVersion gets 410 Gone.

With ``graceful_pod_deletion=True`` it also does the API server's part of Pod graceful deletion
for a node agent under test: deleting a bound, non-terminal Pod with a grace period > 0 sets
``deletionTimestamp`` (now + grace) and ``deletionGracePeriodSeconds`` and keeps the Pod until it
is deleted with grace 0 (a shorter grace shortens it). Off by default, as controller-runtime's
fake: controller tests have no kubelet to finish the deletion.

Test hooks:

- :attr:`FakeClient.actions`: every call as ``(verb, plural, namespace, name)``;
  :meth:`FakeClient.writes` filters the mutating ones (for "a second reconcile writes nothing");
- :attr:`FakeClient.resource_version`: the last resourceVersion (one per stored change or bookmark);
- :meth:`FakeClient.compact`: forget history so older watch resourceVersions get 410 Gone;
- :meth:`FakeClient.close_watches`: end every open watch stream (as a server restart does);
- :meth:`FakeClient.expire_watches`: send open watches an ERROR 410 event;
- :meth:`FakeClient.bookmark`: send a BOOKMARK to watches of a kind;
- :attr:`FakeClient.interceptor`: ``fn(verb, plural, namespace, name)`` called before each call;
  raise from it to inject failures (controller-runtime ``client/interceptor`` in spirit).

It is not the API server: no admission, no validation, no garbage collection. For that use
``pumice.testing.cluster.local_cluster()``.

Mirrors: controller-runtime pkg/client/fake + pkg/client/interceptor (in spirit); the delete and
update rules of k8s.io/apiserver pkg/registry/generic/registry/store.go and
pkg/registry/rest/delete.go (BeforeDelete) for Pods.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pumice._util.clock import Clock, default_clock, rfc3339
from pumice.api import Obj
from pumice.api.patch import PatchError, json_patch, merge_patch
from pumice.api.scheme import BUILTIN_KINDS, ResourceKind, Scheme
from pumice.api.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from pumice.api.strategic import strategic_merge_patch
from pumice.client.base import ApiError, ObjectList, PatchType, WatchEvent, check_canceled

Interceptor = Callable[[str, str, str, str], None]

__all__ = ["CountingClient", "FakeClient"]

_BUILTIN_GROUPS = frozenset(rk.group for rk in BUILTIN_KINDS)

WRITE_VERBS = frozenset({"create", "update", "update_status", "patch", "delete", "bind", "evict"})

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def _copy_value(v: Any) -> Any:
    """A deep copy through JSON (what a real client gets back); ``copy.deepcopy`` for a value JSON
    cannot carry."""
    try:
        return _dec.decode(_enc.encode(v))
    except (TypeError, msgspec.EncodeError):
        return copy.deepcopy(v)


def _copy(o: Obj) -> Obj:
    out: Obj = _copy_value(o)
    return out


def resolve_in(scheme: Scheme, api_version: str, kind: str) -> ResourceKind:
    """``scheme``'s kind for ``(api_version, kind)``, the answer of a fake's discovery.

    Raises:
        ApiError: 404 (as a real server's discovery) when the scheme does not have it.
    """
    rk = scheme.by_api_version_kind(api_version, kind)
    if rk is None:
        raise ApiError(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"', {})
    return rk


def _status(code: int, reason: str, message: str) -> ApiError:
    return ApiError(code, reason, message, {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
        "reason": reason, "code": code,
    })


def _selectors(label_selector: str | None, field_selector: str | None) -> tuple[LabelSelector, FieldSelector]:
    """Both query-string selectors, parsed as the API server parses them (400 on a bad one)."""
    try:
        return parse_label_selector(label_selector), parse_field_selector(field_selector)
    except SelectorError as e:
        raise _status(400, "BadRequest", str(e)) from e


# A stored change: (resourceVersion, event type, object, previous object or None). Stored objects
# are never changed in place after they are stored, so the history and the queues share them.
_Change = tuple[int, str, Obj, Obj | None]
_CLOSED = object()
_EXPIRED = object()


@dataclass(eq=False)
class _Watch:
    """One open watch: its filter and the queue its events wait in."""

    kind: ResourceKind
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    allow_bookmarks: bool
    since: int
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)

    def _matches(self, o: Obj | None) -> bool:
        if o is None:
            return False
        if self.namespace and self.kind.namespaced and o["metadata"].get("namespace") != self.namespace:
            return False
        return self.labels.matches(o["metadata"].get("labels")) and self.fields.matches(o)

    def offer(self, change: _Change) -> None:
        """Queue what this watch sees of ``change``: nothing, the event, or (for an object entering
        or leaving the selection) ADDED / DELETED."""
        rv, etype, obj, old = change
        self.since = rv
        if etype == "BOOKMARK":
            if self.allow_bookmarks:
                self.queue.put_nowait(("BOOKMARK", obj))
            return
        now_in = self._matches(obj)
        if etype == "MODIFIED" and old is not None:
            was_in = self._matches(old)
            if was_in and not now_in:
                self.queue.put_nowait(("DELETED", obj))
                return
            if now_in and not was_in:
                self.queue.put_nowait(("ADDED", obj))
                return
        if now_in:
            self.queue.put_nowait((etype, obj))

    def end(self, sentinel: object) -> None:
        """Drop what is queued and end the stream with ``sentinel``."""
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(sentinel)


class FakeClient:
    """In-memory KubeClient. See the module doc for the behaviour and the test hooks.

    Args:
        scheme: kinds served (default: the built-in kinds).
        clock: for creationTimestamp / deletionTimestamp.
        history: changes kept per kind for watches that resume from an older resourceVersion.
        graceful_pod_deletion: do the API server's part of Pod graceful deletion (module doc).
    """

    def __init__(self, scheme: Scheme | None = None, *, clock: Clock | None = None, history: int = 20000,
                 graceful_pod_deletion: bool = False) -> None:
        self.scheme = scheme or Scheme.builtin()
        self.clock = clock or default_clock()
        self.graceful_pod_deletion = graceful_pod_deletion
        self._objects: dict[tuple[str, str], dict[str, Obj]] = {}
        self._rv = 0
        self._history: dict[tuple[str, str], deque[_Change]] = {}
        self._history_len = history
        self._evicted: dict[tuple[str, str], int] = {}  # resourceVersion of the last change dropped
        self._compacted = 0
        self._watches: dict[tuple[str, str], list[_Watch]] = {}
        self._uids = itertools.count(1)
        self.actions: list[tuple[str, str, str, str]] = []
        self.interceptor: Interceptor | None = None
        self.closed = False

    # -- hooks -------------------------------------------------------------------------------

    def writes(self) -> list[tuple[str, str, str, str]]:
        """The mutating calls recorded in :attr:`actions`."""
        return [a for a in self.actions if a[0] in WRITE_VERBS]

    def compact(self) -> None:
        """Drop the event history: watches from any older resourceVersion now get 410 Gone."""
        self._compacted = self._rv
        self._history.clear()

    async def expire_watches(self) -> None:
        """Send every open watch an ERROR event with a 410 Status (then they end), as a server
        does when the watch fell behind the compaction point; also :meth:`compact`."""
        self.compact()
        for w in self._all_watches():
            w.end(_EXPIRED)

    async def close_watches(self) -> None:
        """End every open watch stream (clients must re-watch)."""
        for w in self._all_watches():
            w.end(_CLOSED)

    async def bookmark(self, kind: ResourceKind) -> None:
        """Send a BOOKMARK at the current resourceVersion to watches of ``kind``."""
        self._rv += 1
        self._emit(kind, "BOOKMARK", {"kind": kind.kind, "apiVersion": kind.api_version,
                                      "metadata": {"resourceVersion": str(self._rv)}})

    @property
    def resource_version(self) -> int:
        return self._rv

    def _all_watches(self) -> list[_Watch]:
        return [w for ws in self._watches.values() for w in ws]

    def _record(self, verb: str, rk: ResourceKind, namespace: str | None, name: str) -> None:
        if verb != "watch":  # a request from a stopping reconcile is refused, as Client.request does
            check_canceled()
        self.actions.append((verb, rk.plural, namespace or "", name))
        if self.interceptor is not None:
            self.interceptor(verb, rk.plural, namespace or "", name)

    # -- helpers -----------------------------------------------------------------------------

    def _kind_of(self, obj: Obj) -> ResourceKind:
        rk = self.scheme.by_api_version_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rk is None:
            raise _status(404, "NotFound", f"the server could not find the requested resource "
                                           f"({obj.get('apiVersion')} {obj.get('kind')})")
        return rk

    def _bucket(self, rk: ResourceKind) -> dict[str, Obj]:
        return self._objects.setdefault((rk.group, rk.plural), {})

    @staticmethod
    def _key(rk: ResourceKind, namespace: str | None, name: str) -> str:
        return f"{namespace}/{name}" if rk.namespaced and namespace else name

    def _emit(self, rk: ResourceKind, etype: str, obj: Obj, old: Obj | None = None) -> None:
        """Record a change at the current resourceVersion and queue it for the kind's watches."""
        gk = (rk.group, rk.plural)
        change: _Change = (self._rv, etype, obj, old)
        hist = self._history.get(gk)
        if hist is None:
            hist = self._history[gk] = deque(maxlen=self._history_len)
        if len(hist) == hist.maxlen:
            self._evicted[gk] = hist[0][0]
        hist.append(change)
        for w in self._watches.get(gk, ()):
            w.offer(change)

    def _bump(self, obj: Obj) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)

    def _not_found(self, rk: ResourceKind, name: str) -> ApiError:
        group = f".{rk.group}" if rk.group else ""
        return _status(404, "NotFound", f'{rk.plural}{group} "{name}" not found')

    # -- reads -------------------------------------------------------------------------------

    async def resolve(self, api_version: str, kind: str) -> ResourceKind:
        """The kind from :attr:`scheme` (the kinds this fake serves).

        Raises:
            ApiError: 404 when the scheme does not have it.
        """
        return resolve_in(self.scheme, api_version, kind)

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj:
        self._record("get", kind, namespace, name)
        obj = self._bucket(kind).get(self._key(kind, namespace, name))
        if obj is None:
            raise self._not_found(kind, name)
        return _copy(obj)

    async def list(
        self, kind: ResourceKind, namespace: str | None = None, *, label_selector: str | None = None,
        field_selector: str | None = None, limit: int | None = None, continue_: str | None = None,
        resource_version: str | None = None,
    ) -> ObjectList:
        self._record("list", kind, namespace, "")
        labels, fields = _selectors(label_selector, field_selector)
        items = [
            o for k, o in sorted(self._bucket(kind).items())
            if (not namespace or not kind.namespaced or o["metadata"].get("namespace") == namespace)
            and labels.matches(o["metadata"].get("labels")) and fields.matches(o)
        ]
        start, rv = 0, str(self._rv)
        if continue_:
            rv_s, _, start_s = continue_.partition(":")
            if int(rv_s) < self._compacted:
                raise _status(410, "Expired", "The provided continue parameter is too old")
            start, rv = int(start_s), rv_s
        end = len(items) if not limit else start + limit
        page = [_copy(o) for o in items[start:end]]
        for o in page:  # list items carry no apiVersion/kind, as the real server's
            o.pop("apiVersion", None)
            o.pop("kind", None)
        cont = f"{rv}:{end}" if end < len(items) else ""
        return ObjectList(page, rv, cont)

    async def watch(
        self, kind: ResourceKind, namespace: str | None = None, *, resource_version: str | None = None,
        label_selector: str | None = None, field_selector: str | None = None,
        timeout_seconds: int | None = None, allow_bookmarks: bool = True, read_only: bool = False,
    ) -> AsyncIterator[WatchEvent]:
        self._record("watch", kind, namespace, "")
        gk = (kind.group, kind.plural)
        since = int(resource_version) if resource_version else self._rv
        oldest = max(self._compacted, self._evicted.get(gk, 0))
        if since < oldest:
            raise _status(410, "Expired", f"too old resource version: {since} ({oldest})")
        labels, fields = _selectors(label_selector, field_selector)
        if self.closed:
            return
        w = _Watch(kind, namespace, labels, fields, allow_bookmarks, since)
        for change in self._history.get(gk, ()):
            if change[0] > since:
                w.offer(change)
        watches = self._watches.setdefault(gk, [])
        watches.append(w)
        try:
            while True:
                item = await w.queue.get()
                if item is _CLOSED:
                    return
                if item is _EXPIRED:
                    yield WatchEvent("ERROR", {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                               "reason": "Expired", "code": 410,
                                               "message": f"too old resource version: {w.since}"})
                    return
                etype, obj = item
                yield WatchEvent(etype, _copy(obj))
        finally:
            watches.remove(w)

    # -- writes ------------------------------------------------------------------------------

    async def create(self, obj: Obj, *, dry_run: bool = False, field_manager: str | None = None) -> Obj:
        """As the API server's create; ``field_manager`` is not recorded (the fake keeps no
        managedFields, as for its patches)."""
        rk = self._kind_of(obj)
        md = obj.get("metadata") or {}
        name = md.get("name") or ""
        if not name and md.get("generateName"):
            name = f"{md['generateName']}{next(self._uids):05x}"
        namespace = (md.get("namespace") or "default") if rk.namespaced else None
        self._record("create", rk, namespace, name)
        if not name:
            raise _status(422, "Invalid", "metadata.name: Required value: name or generateName is required")
        key = self._key(rk, namespace, name)
        bucket = self._bucket(rk)
        if key in bucket:
            group = f".{rk.group}" if rk.group else ""
            raise _status(409, "AlreadyExists", f'{rk.plural}{group} "{name}" already exists')
        new = _copy(obj)
        new["apiVersion"], new["kind"] = rk.api_version, rk.kind
        nmd = new.setdefault("metadata", {})
        nmd["name"] = name
        if namespace is None:
            nmd.pop("namespace", None)
        else:
            nmd["namespace"] = namespace
        nmd["uid"] = f"00000000-0000-0000-0000-{next(self._uids):012d}"
        nmd["creationTimestamp"] = rfc3339(self.clock.now())
        nmd["generation"] = 1
        if dry_run:
            return new
        self._bump(new)
        bucket[key] = new
        self._emit(rk, "ADDED", new)
        await asyncio.sleep(0)
        return _copy(new)

    async def _replace(self, rk: ResourceKind, old: Obj, new: Obj, *, deleting: bool = False) -> Obj:
        """Store ``new`` over ``old`` (identity, deletion and generation kept as the server keeps
        them; ``deleting``: the deletion fields come from ``new``); a no-op write changes nothing.
        The update that leaves no finalizer on an object being deleted with no grace period
        pending deletes it (registry ShouldDeleteDuringUpdate)."""
        md = new["metadata"]
        omd = old["metadata"]
        key = self._key(rk, md.get("namespace"), md["name"])
        for f in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if deleting and f in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                continue
            if f in omd:
                md[f] = omd[f]
            else:
                md.pop(f, None)
        spec_old = {k: v for k, v in old.items() if k not in ("metadata", "status")}
        spec_new = {k: v for k, v in new.items() if k not in ("metadata", "status")}
        if spec_old != spec_new:
            md["generation"] = int(omd.get("generation", 1)) + 1
        if new == old:
            return _copy(old)  # no-op writes keep the resourceVersion, as the server does
        if omd.get("deletionTimestamp") and not md.get("finalizers") and not omd.get("deletionGracePeriodSeconds"):
            del self._bucket(rk)[key]
            self._bump(new)
            self._emit(rk, "DELETED", new)
        else:
            self._bump(new)
            self._bucket(rk)[key] = new
            self._emit(rk, "MODIFIED", new, old)
        await asyncio.sleep(0)
        return _copy(new)

    def _current(self, rk: ResourceKind, namespace: str | None, name: str) -> Obj:
        old = self._bucket(rk).get(self._key(rk, namespace, name))
        if old is None:
            raise self._not_found(rk, name)
        return old

    async def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        rk = self._kind_of(obj)
        md = obj.get("metadata") or {}
        self._record("update", rk, md.get("namespace"), md.get("name", ""))
        old = self._current(rk, md.get("namespace"), md.get("name", ""))
        if md.get("resourceVersion") and md["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise _status(409, "Conflict", f'Operation cannot be fulfilled on {rk.plural} "{md.get("name")}": '
                                           "the object has been modified; please apply your changes to the "
                                           "latest version and try again")
        new = _copy(obj)
        new["apiVersion"], new["kind"] = rk.api_version, rk.kind
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if "status" in rk.subresources:
            if "status" in old:
                new["status"] = _copy_value(old["status"])
            else:
                new.pop("status", None)
        return await self._replace(rk, old, new)

    async def update_status(self, obj: Obj) -> Obj:
        rk = self._kind_of(obj)
        md = obj.get("metadata") or {}
        self._record("update_status", rk, md.get("namespace"), md.get("name", ""))
        old = self._current(rk, md.get("namespace"), md.get("name", ""))
        if md.get("resourceVersion") and md["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise _status(409, "Conflict", f'Operation cannot be fulfilled on {rk.plural} "{md.get("name")}": '
                                           "the object has been modified")
        new = _copy(old)
        if "status" in obj:
            new["status"] = _copy_value(obj["status"])
        else:
            new.pop("status", None)
        return await self._replace(rk, old, new)

    async def patch(
        self, kind: ResourceKind, name: str, patch: Any, namespace: str | None = None, *,
        patch_type: PatchType = "merge", subresource: str | None = None, field_manager: str | None = None,
        force: bool = False,
    ) -> Obj:
        self._record("patch", kind, namespace, name)
        old = self._current(kind, namespace, name)
        try:
            if patch_type == "merge":
                new = merge_patch(_copy(old), patch)
            elif patch_type == "json":
                new = json_patch(old, patch)
            elif patch_type == "strategic":
                if kind.group not in _BUILTIN_GROUPS:
                    raise _status(415, "UnsupportedMediaType",
                                  "strategic merge patch is not supported for custom resources")
                new = strategic_merge_patch(old, patch, kind.kind)
            else:
                raise _status(415, "UnsupportedMediaType", f"FakeClient does not support {patch_type} patches")
        except PatchError as e:
            if e.bad_request:
                raise _status(400, "BadRequest", str(e)) from e
            raise _status(422, "Invalid", str(e)) from e
        if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
            raise _status(422, "Invalid", "the patch removed the object's metadata")
        rv = ((patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch, dict) else None)
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise _status(409, "Conflict", f'Operation cannot be fulfilled on {kind.plural} "{name}"')
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if "status" in kind.subresources:
            if subresource == "status":
                new = {**_copy(old), "status": new.get("status")}
                if new["status"] is None:
                    new.pop("status")
            elif "status" in old:
                new["status"] = _copy_value(old["status"])
            else:
                new.pop("status", None)
        return await self._replace(kind, old, new)

    async def delete(
        self, kind: ResourceKind, name: str, namespace: str | None = None, *,
        propagation_policy: str | None = None, grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Obj | None:
        self._record("delete", kind, namespace, name)
        old = self._current(kind, namespace, name)
        if preconditions:
            if preconditions.get("uid") and preconditions["uid"] != old["metadata"].get("uid"):
                raise _status(409, "Conflict", "Precondition failed: UID in precondition does not match")
            if preconditions.get("resourceVersion") and \
                    preconditions["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise _status(409, "Conflict", "Precondition failed: ResourceVersion does not match")
        if self.graceful_pod_deletion and kind.plural == "pods" and not kind.group:
            graceful = await self._delete_pod_gracefully(kind, old, grace_period_seconds)
            if graceful is not None:
                return graceful
        if old["metadata"].get("finalizers"):
            # Held by finalizers: mark it deleted (once); a pending grace period ends now, so the
            # update that removes the last finalizer deletes it.
            new = _copy(old)
            nmd = new["metadata"]
            nmd.setdefault("deletionTimestamp", rfc3339(self.clock.now()))
            if nmd.get("deletionGracePeriodSeconds"):
                nmd["deletionGracePeriodSeconds"] = 0
            return await self._replace(kind, old, new, deleting=True)
        key = self._key(kind, namespace, name)
        gone = _copy(self._bucket(kind).pop(key))
        self._bump(gone)
        self._emit(kind, "DELETED", gone)
        await asyncio.sleep(0)
        return _copy(gone)

    async def _delete_pod_gracefully(self, kind: ResourceKind, old: Obj, grace: int | None) -> Obj | None:
        """The graceful part of deleting a Pod: None when it is deleted at once (unbound, terminal
        or grace 0), else the Pod with its deletion (started, shortened or unchanged).

        Mirrors: k8s.io/apiserver pkg/registry/rest/delete.go BeforeDelete with the Pod strategy's
        CheckGracefulDelete (terminationGracePeriodSeconds when no grace is given, default 30)."""
        spec = old.get("spec") or {}
        if grace is None:
            grace = int(spec.get("terminationGracePeriodSeconds", 30))
        bound = bool(spec.get("nodeName"))
        terminal = (old.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if not bound or terminal or grace <= 0:
            return None
        current = old["metadata"].get("deletionGracePeriodSeconds")
        if current is not None and grace >= int(current):
            return _copy(old)
        new = _copy(old)
        new["metadata"]["deletionTimestamp"] = rfc3339(self.clock.now() + grace)
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        return await self._replace(kind, old, new, deleting=True)

    async def bind(self, namespace: str, pod_name: str, node_name: str, *, pod_uid: str | None = None,
                   annotations: Mapping[str, str] | None = None) -> None:
        pods = self.scheme.by_api_version_kind("v1", "Pod")
        assert pods is not None
        self._record("bind", pods, namespace, pod_name)
        old = self._current(pods, namespace, pod_name)
        if old.get("spec", {}).get("nodeName"):
            raise _status(409, "Conflict", f"pod {pod_name} is already assigned to node "
                                           f"{old['spec']['nodeName']!r}")
        new = _copy(old)
        new.setdefault("spec", {})["nodeName"] = node_name
        for k, v in (annotations or {}).items():
            new.setdefault("metadata", {}).setdefault("annotations", {})[k] = v
        await self._replace(pods, old, new)

    async def evict(self, namespace: str, pod_name: str, *, grace_period_seconds: int | None = None) -> None:
        pods = self.scheme.by_api_version_kind("v1", "Pod")
        assert pods is not None
        await self.delete(pods, pod_name, namespace, grace_period_seconds=grace_period_seconds)

    async def close(self) -> None:
        self.closed = True
        for w in self._all_watches():
            w.end(_CLOSED)


class CountingClient:
    """Wrap any KubeClient and record every call in :attr:`actions` as
    ``(verb, plural, namespace, name)``; :meth:`writes` lists the mutating ones.

    Use it around the real in-process client for "a second reconcile writes nothing" tests::

        counting = CountingClient(cluster.client)
        await reconciler.reconcile(req)          # converges
        counting.reset()
        await reconciler.reconcile(req)          # no change in the world
        assert counting.writes() == []

    Attribute access not listed here passes through to the wrapped client.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.scheme: Scheme = inner.scheme
        self.actions: list[tuple[str, str, str, str]] = []

    def writes(self) -> list[tuple[str, str, str, str]]:
        return [a for a in self.actions if a[0] in WRITE_VERBS]

    def reset(self) -> None:
        self.actions.clear()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _kind(self, obj: Obj) -> str:
        rk = self.scheme.by_api_version_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        return rk.plural if rk is not None else str(obj.get("kind", ""))

    def _obj(self, verb: str, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        self.actions.append((verb, self._kind(obj), md.get("namespace") or "", md.get("name") or ""))

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj:
        self.actions.append(("get", kind.plural, namespace or "", name))
        result: Obj = await self.inner.get(kind, name, namespace)
        return result

    async def list(self, kind: ResourceKind, namespace: str | None = None, **kw: Any) -> ObjectList:
        self.actions.append(("list", kind.plural, namespace or "", ""))
        result: ObjectList = await self.inner.list(kind, namespace, **kw)
        return result

    def watch(self, kind: ResourceKind, namespace: str | None = None, **kw: Any) -> AsyncIterator[WatchEvent]:
        self.actions.append(("watch", kind.plural, namespace or "", ""))
        result: AsyncIterator[WatchEvent] = self.inner.watch(kind, namespace, **kw)
        return result

    async def create(self, obj: Obj, **kw: Any) -> Obj:
        self._obj("create", obj)
        result: Obj = await self.inner.create(obj, **kw)
        return result

    async def update(self, obj: Obj, **kw: Any) -> Obj:
        self._obj("update", obj)
        result: Obj = await self.inner.update(obj, **kw)
        return result

    async def update_status(self, obj: Obj) -> Obj:
        self._obj("update_status", obj)
        result: Obj = await self.inner.update_status(obj)
        return result

    async def patch(self, kind: ResourceKind, name: str, patch: Any, namespace: str | None = None,
                    **kw: Any) -> Obj:
        self.actions.append(("patch", kind.plural, namespace or "", name))
        result: Obj = await self.inner.patch(kind, name, patch, namespace, **kw)
        return result

    async def delete(self, kind: ResourceKind, name: str, namespace: str | None = None, **kw: Any) -> Obj | None:
        self.actions.append(("delete", kind.plural, namespace or "", name))
        result: Obj | None = await self.inner.delete(kind, name, namespace, **kw)
        return result

    async def bind(self, namespace: str, pod_name: str, node_name: str, **kw: Any) -> None:
        self.actions.append(("bind", "pods", namespace, pod_name))
        await self.inner.bind(namespace, pod_name, node_name, **kw)

    async def evict(self, namespace: str, pod_name: str, **kw: Any) -> None:
        self.actions.append(("evict", "pods", namespace, pod_name))
        await self.inner.evict(namespace, pod_name, **kw)

    async def close(self) -> None:
        await self.inner.close()
