"""The object cache, the global resourceVersion, the event history and watch fan-out.

Every current object lives in memory as a :class:`Stored` (the decoded dict, never mutated after
it is stored, plus its encoded JSON bytes), grouped by resource (``"<group>/<plural>"``). A write
assigns the next revision, commits it to the :class:`~pumice.apiserver.storage.Storage` backend
(one transaction) and updates the cache, synchronously on the event loop. Its event is published
(appended to the resource's bounded history and pushed into each matching watcher's queue) once the
backend says the revision is durable: at once for in-memory and relaxed storage, after the next
group fsync for strict storage. So watchers only ever see durable writes, in revision order, while
reads (get, list) see every committed write at once and never wait for a fsync.

Watch semantics (as kube-apiserver's watch cache):
- start at revision R: replay the history after R, then live events; R older than the oldest
  event kept raises :class:`Expired` (410 Gone, reason Expired);
- no R (or ``"0"``): synthetic ADDED events for the current objects, then live events;
- label/field selectors: a MODIFIED event of an object that stops matching is sent as DELETED,
  one that starts matching as ADDED;
- a watcher never gets an event at or below the revision it started from (``start_rv``: R, or the
  revision of the snapshot it was given), even when that event is published after it registered.

Mirrors: k8s.io/apiserver pkg/storage/cacher (watch cache, dispatchEvent), pkg/storage/etcd3.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from pumice._util.waiters import WaiterLine
from pumice.api.selectors import FieldSelector, LabelSelector, field_value, field_value_at
from pumice.apiserver.storage import Storage, StorageError

__all__ = ["INDEXED_FIELDS", "LIST_INDEXED_FIELDS", "MAX_REQUEST_BYTES", "Event", "Expired", "ObjectTooLarge", "Store",
           "Stored", "WatchQueue", "Watcher", "storage_key"]

#: etcd's default ``--max-request-bytes`` (1.5 MiB): the largest write etcd takes, key and value
MAX_REQUEST_BYTES = 1_572_864


class ObjectTooLarge(Exception):
    """A write larger than the limit :meth:`Store.put` was given (``size``: key and encoded value,
    in bytes); nothing changed."""

    def __init__(self, size: int) -> None:
        super().__init__(f"etcdserver: request is too large ({size} bytes)")
        self.size = size

log = logging.getLogger(__name__)

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

#: field paths whose exact-match watchers are indexed, so that fan-out to thousands of per-node
#: watchers costs O(matching watchers), not O(all watchers)
INDEXED_FIELDS = ("spec.nodeName", "metadata.name")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


def storage_key(resource: str, namespace: str, name: str) -> str:
    return f"{resource}/{namespace}/{name}"


@dataclass(slots=True)
class Stored:
    """One stored object: ``obj`` (do not mutate; :meth:`copy` to change), ``data`` (its JSON)
    and ``rv`` (its resourceVersion). Never changed once made (not a frozen dataclass only
    because a frozen one costs three ``object.__setattr__`` calls per construction: one per write)."""

    obj: dict[str, Any]
    data: bytes
    rv: int

    def copy(self) -> dict[str, Any]:
        """A fresh, mutable deep copy of ``obj``."""
        result: dict[str, Any] = _decode(self.data)
        return result


@dataclass(slots=True)
class Event:
    """A committed change: ``type`` ADDED/MODIFIED/DELETED, ``new`` (for DELETED: the object as
    deleted, carrying the deletion revision), ``old`` (None for ADDED). Never changed once made
    (not frozen for the same reason as :class:`Stored`)."""

    type: str
    rv: int
    resource: str
    new: Stored
    old: Stored | None


_T = TypeVar("_T")


class WatchQueue(Generic[_T]):
    """The unbounded FIFO of one watcher: the part of :class:`asyncio.Queue` a watch uses
    (``put_nowait``, ``get``, ``get_nowait``, ``empty``, ``qsize``), with the same wake-ups: a
    put wakes the longest-waiting ``get`` by completing its future, a cancelled ``get`` passes a
    wake-up it was given on to the next waiter. Lean because every event is put into every
    matching watcher's queue (asyncio's also keeps task-done counts and an Event per put).

    Mirrors: asyncio.queues.Queue (unbounded; no ``join``/``task_done``)."""

    __slots__ = ("_getters", "_items")

    def __init__(self) -> None:
        self._items: deque[_T] = deque()
        self._getters = WaiterLine()

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def put_nowait(self, item: _T) -> None:
        self._items.append(item)
        if self._getters:
            self._getters.wake_one()

    def get_nowait(self) -> _T:
        """The oldest item.

        Raises:
            asyncio.QueueEmpty: nothing is queued.
        """
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    async def get(self) -> _T:
        """The oldest item, waiting for one when the queue is empty."""
        items = self._items
        while not items:
            getter = self._getters.enter()
            try:
                await getter
            except BaseException:
                self._getters.leave(getter, items)
                raise
        return items.popleft()


class Expired(Exception):
    """The requested resourceVersion is older than the oldest event kept (410 Gone, Expired)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


@dataclass(eq=False)
class Watcher:
    """One watch: filter plus a queue of ``(type, Stored)`` items; ``None`` in the queue ends the
    watch (closed by the server, or the watcher fell too far behind)."""

    resource: str
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    queue: WatchQueue[tuple[str, Stored] | None] = field(default_factory=WatchQueue)
    closed: bool = False
    index: tuple[str, str] | None = None
    seq: int = 0
    start_rv: int = 0
    plain: bool = field(init=False, default=False)
    """No namespace and no selectors: every event passes as it is (set at construction)."""

    def __post_init__(self) -> None:
        self.plain = self.namespace is None and self.labels.empty and self.fields.empty

    def _match(self, s: Stored) -> bool:
        obj = s.obj
        if self.namespace is not None and obj.get("metadata", {}).get("namespace") != self.namespace:
            return False
        if not self.labels.empty and not self.labels.matches(obj.get("metadata", {}).get("labels")):
            return False
        return self.fields.empty or self.fields.matches(obj)

    def offer(self, ev: Event, limit: int) -> None:
        """Queue ``ev`` if it passes the filter, translating MODIFIED into ADDED/DELETED when the
        object starts/stops matching."""
        if self.closed or ev.rv <= self.start_rv:
            return
        if self.plain:  # every object matches: a MODIFIED stays MODIFIED (it has an old object)
            item = (ev.type, ev.new)
        elif ev.type == MODIFIED:
            now = self._match(ev.new)
            before = ev.old is not None and self._match(ev.old)
            if now and before:
                item = (MODIFIED, ev.new)
            elif now:
                item = (ADDED, ev.new)
            elif before:
                item = (DELETED, ev.new)
            else:
                return
        elif self._match(ev.new):
            item = (ev.type, ev.new)
        else:
            return
        q = self.queue
        if len(q._items) >= limit:
            self.closed = True
            q.put_nowait(None)
            return
        q.put_nowait(item)


#: field paths with a secondary index for lists (``spec.nodeName``: each node agent lists its Pods)
LIST_INDEXED_FIELDS = ("spec.nodeName",)


class _ResourceState:
    __slots__ = ("by_index", "compacted", "field_index", "history", "objects", "unindexed")

    def __init__(self, compacted: int, history: int) -> None:
        self.objects: dict[tuple[str, str], Stored] = {}
        # path -> (its parts, value -> keys (insertion-ordered set) of objects whose field has that value)
        self.field_index: dict[str, tuple[tuple[str, ...], dict[str, dict[tuple[str, str], None]]]] = {
            p: (_PARTS[p], {}) for p in LIST_INDEXED_FIELDS}
        self.history: deque[Event] = deque(maxlen=history)
        self.compacted = compacted  # events with rv > compacted are all in history
        # dicts used as insertion-ordered sets: fan-out order is registration order (deterministic)
        self.unindexed: dict[Watcher, None] = {}
        self.by_index: dict[tuple[str, str], dict[Watcher, None]] = {}


class Store:
    """The cache in front of a :class:`Storage` backend.

    Args:
        storage: the durable backend; loaded at construction.
        history: events kept per resource for watch resumption (older requests get 410).
        watcher_queue_limit: a watcher with this many undelivered events is closed (the client
            re-watches from its last resourceVersion, as with kube-apiserver's slow watchers).
    """

    def __init__(self, storage: Storage, *, history: int = 20_000, watcher_queue_limit: int = 200_000) -> None:
        self.storage = storage
        self._history = history
        self._queue_limit = watcher_queue_limit
        revision, rows = storage.load()
        self.revision = revision
        self._start = revision
        self._resources: dict[str, _ResourceState] = {}
        self.listeners: list[Callable[[Event], None]] = []
        self._seq = 0
        #: the revision of the newest event published to watchers (<= revision)
        self.published_revision = revision
        self._pending: deque[tuple[_ResourceState, Event]] = deque()
        self._publisher: asyncio.Task[None] | None = None
        for key, value in rows:
            resource, ns, name = _split_key(key)
            obj = _decode(value)
            rv = int(obj.get("metadata", {}).get("resourceVersion") or 0)
            st = self._state(resource)
            stored = st.objects[(ns, name)] = Stored(obj, value, rv)
            self._index(st, (ns, name), None, stored)

    def _index(self, st: _ResourceState, key: tuple[str, str], old: Stored | None, new: Stored | None) -> None:
        for parts, idx in st.field_index.values():
            _reindex(idx, parts, key, old, new)

    def index_field(self, resource: str, path: str) -> None:
        """Keep a secondary index of ``resource``'s objects by the value at ``path`` (a dotted field
        path) from now on, for :meth:`list_by_field`; built from the current objects on the first
        call, a no-op after. Every write of ``resource`` then looks the field up (the
        LIST_INDEXED_FIELDS are indexed for every resource from the start)."""
        st = self._state(resource)
        if path in st.field_index:
            return
        parts, idx = st.field_index[path] = (tuple(path.split(".")), {})
        for key, stored in st.objects.items():
            _reindex(idx, parts, key, None, stored)

    def list_by_field(self, resource: str, path: str, value: str, namespace: str | None = None) -> list[Stored]:
        """Current objects whose ``path`` (one of LIST_INDEXED_FIELDS, or one :meth:`index_field`
        indexes for ``resource``) equals ``value``, in key order.

        Raises:
            KeyError: ``path`` is not indexed.
        """
        st = self._resources.get(resource)
        if st is None:
            return []
        keys = st.field_index[path][1].get(value) if value else None
        if keys is None:
            if value:
                return []
            return [s for s in self.list(resource, namespace) if not field_value(s.obj, path)]
        objs = st.objects
        return [objs[k] for k in sorted(keys) if namespace is None or k[0] == namespace]

    def _state(self, resource: str) -> _ResourceState:
        st = self._resources.get(resource)
        if st is None:
            # nothing of this resource happened since load (a write would have made its state): its
            # history is complete from the load revision on
            st = self._resources[resource] = _ResourceState(self._start, self._history)
        return st

    # ---- reads ----

    def get(self, resource: str, namespace: str, name: str) -> Stored | None:
        st = self._resources.get(resource)
        return None if st is None else st.objects.get((namespace, name))

    def changed_at(self, resource: str) -> int:
        """The revision of the latest change to ``resource`` (stable while nothing of it changes;
        caches of derived data key on it)."""
        st = self._resources.get(resource)
        if st is None:
            return 0
        return st.history[-1].rv if st.history else st.compacted

    def list(self, resource: str, namespace: str | None = None) -> list[Stored]:
        """Current objects in key order (namespace, name); all namespaces when None."""
        st = self._resources.get(resource)
        if st is None:
            return []
        keys = sorted(st.objects) if namespace is None else sorted(k for k in st.objects if k[0] == namespace)
        objs = st.objects
        return [objs[k] for k in keys]

    def count(self, resource: str) -> int:
        st = self._resources.get(resource)
        return 0 if st is None else len(st.objects)

    def resources(self) -> builtins.list[str]:
        return sorted(self._resources)

    # ---- writes ----

    def put(self, resource: str, obj: dict[str, Any], *, max_bytes: int | None = None) -> Stored:
        """Store ``obj`` (create or replace) at the next revision; sets its
        ``metadata.resourceVersion`` in place and returns the Stored. The caller hands ``obj``
        over: it must not change it afterwards. ``max_bytes``: refuse a write whose key and JSON
        encoding are larger (etcd's request limit, :data:`MAX_REQUEST_BYTES`; None: no limit).

        Raises:
            StorageError: the commit failed; nothing changed.
            ObjectTooLarge: over ``max_bytes``; nothing changed (``resourceVersion`` put back).
        """
        md = obj["metadata"]
        ns, name = md.get("namespace") or "", md["name"]
        rv = self.revision + 1
        before = md.get("resourceVersion")
        md["resourceVersion"] = str(rv)
        data = _encode(obj)
        key = storage_key(resource, ns, name)
        if max_bytes is not None and len(data) + len(key) > max_bytes:
            if before is None:
                del md["resourceVersion"]
            else:
                md["resourceVersion"] = before
            raise ObjectTooLarge(len(data) + len(key))
        self.storage.commit(rv, [(key, data)], ())
        self.revision = rv
        st = self._state(resource)
        old = st.objects.get((ns, name))
        new = Stored(obj, data, rv)
        st.objects[(ns, name)] = new
        self._index(st, (ns, name), old, new)
        self._committed(st, Event(MODIFIED if old is not None else ADDED, rv, resource, new, old))
        return new

    def delete(self, resource: str, namespace: str, name: str) -> Stored | None:
        """Remove the object at the next revision; returns it as deleted (its resourceVersion is
        the deletion revision), or None when absent.

        Raises:
            StorageError: the commit failed; nothing changed.
        """
        st = self._state(resource)
        old = st.objects.get((namespace, name))
        if old is None:
            return None
        rv = self.revision + 1
        self.storage.commit(rv, (), [storage_key(resource, namespace, name)])
        self.revision = rv
        del st.objects[(namespace, name)]
        self._index(st, (namespace, name), old, None)
        # the object as deleted: old's own object with a new metadata carrying the deletion
        # revision (same keys in the same order as a decoded copy would have); the rest is shared
        # with old, which nobody changes (a Stored object is never mutated), so no deep copy
        prev = old.obj
        obj = {**prev, "metadata": {**prev["metadata"], "resourceVersion": str(rv)}}
        gone = Stored(obj, _encode(obj), rv)
        self._committed(st, Event(DELETED, rv, resource, gone, old))
        return gone

    # ---- publication once durable ----

    def _committed(self, st: _ResourceState, ev: Event) -> None:
        if not self._pending and self.storage.durable_revision >= ev.rv:
            self._publish(st, ev)
            return
        self._pending.append((st, ev))
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (tools, benchmarks): nobody can be watching
            self._publish_pending(ev.rv)
            return
        if self._publisher is None or self._publisher.done():
            self._publisher = loop.create_task(self._publish_when_durable(), name="pumice-store-publish")

    async def _publish_when_durable(self) -> None:
        while self._pending:
            target = self._pending[-1][1].rv
            try:
                await self.storage.sync(target)
            except StorageError as e:
                log.error("watch events after revision %d are not published: %s; ending every watch",
                          self.published_revision, e)
                self._pending.clear()
                self.close_watchers()
                return
            self._publish_pending(self.storage.durable_revision)

    def _publish_pending(self, upto: int) -> None:
        pending = self._pending
        while pending and pending[0][1].rv <= upto:
            st, ev = pending.popleft()
            self._publish(st, ev)

    async def wait_durable(self, revision: int) -> None:
        """Return once ``revision`` is durable (the acknowledgement point of a write).

        Raises:
            StorageError: the backend could not make it durable.
        """
        await self.storage.sync(revision)

    def bookmark_revision(self, w: Watcher) -> int:
        """The resourceVersion a BOOKMARK to ``w`` may carry: every event up to it was delivered
        to ``w`` or is covered by the snapshot ``w`` started from."""
        return max(self.published_revision, w.start_rv)

    def _publish(self, st: _ResourceState, ev: Event) -> None:
        self.published_revision = ev.rv
        if len(st.history) == st.history.maxlen:
            st.compacted = st.history[0].rv
        st.history.append(ev)
        limit = self._queue_limit
        for w in self._targets(st, ev):
            w.offer(ev, limit)
        for fn in self.listeners:
            fn(ev)

    def _targets(self, st: _ResourceState, ev: Event) -> Iterable[Watcher]:
        if not st.by_index:
            return list(st.unindexed)
        targets = dict(st.unindexed)
        for path in INDEXED_FIELDS:
            for s in (ev.new, ev.old):
                if s is not None:
                    ws = st.by_index.get((path, field_value_at(s.obj, _PARTS[path])))
                    if ws:
                        targets.update(ws)
        return sorted(targets, key=_seq) if len(targets) > 1 else list(targets)

    # ---- watch ----

    def watch(
        self,
        resource: str,
        namespace: str | None,
        *,
        resource_version: int | None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
    ) -> Watcher:
        """Register a watcher; its queue is pre-filled with the replay (history after
        ``resource_version``, or ADDED for every current object when None).

        Raises:
            Expired: ``resource_version`` is older than the history kept.
        """
        st = self._state(resource)
        self._seq += 1
        w = Watcher(resource, namespace, labels or LabelSelector(), fields or FieldSelector(), seq=self._seq,
                    start_rv=self.revision if resource_version is None else resource_version)
        if resource_version is None:
            objs = self.list(resource, namespace)
            for s in objs:
                if w._match(s):
                    w.queue.put_nowait((ADDED, s))
        else:
            if resource_version < st.compacted:
                raise Expired(resource_version, st.compacted + 1)
            for ev in st.history:
                if ev.rv > resource_version:
                    w.offer(ev, 1 << 62)
        for path in INDEXED_FIELDS:
            value = w.fields.exact(path)
            if value is not None:
                w.index = (path, value)
                st.by_index.setdefault(w.index, {})[w] = None
                break
        else:
            st.unindexed[w] = None
        return w

    def unwatch(self, w: Watcher) -> None:
        st = self._resources.get(w.resource)
        if st is None:
            return
        if w.index is None:
            st.unindexed.pop(w, None)
        else:
            ws = st.by_index.get(w.index)
            if ws is not None:
                ws.pop(w, None)
                if not ws:
                    del st.by_index[w.index]
        w.closed = True

    def changed_objects(self) -> builtins.list[str]:
        """The storage keys (with the event revision, for an object in the event history) of the
        stored objects that no longer encode to the JSON they were stored with: something changed
        a :attr:`Stored.obj` after it was stored. In-process informers share these objects (see
        :meth:`pumice.client.base.KubeClient.watch`, ``read_only``), so a handler that writes
        into an informer's object shows up here; tests and ``pumice simulate`` check that this is
        empty. Cost: one encode per current object and per event kept."""
        changed: builtins.list[str] = []
        for resource, st in sorted(self._resources.items()):
            for (ns, name), s in sorted(st.objects.items()):
                if _encode(s.obj) != s.data:
                    changed.append(storage_key(resource, ns, name))
            seen: set[int] = set()
            for ev in st.history:
                for kept in (ev.new, ev.old):
                    if kept is None or id(kept) in seen:
                        continue
                    seen.add(id(kept))
                    if _encode(kept.obj) != kept.data:
                        md = kept.obj.get("metadata") or {}
                        changed.append(f"{storage_key(resource, str(md.get('namespace') or ''), str(md.get('name')))}"
                                       f" (event {ev.rv})")
        return changed

    def close_watchers(self) -> None:
        """End every watch (server shutdown)."""
        for st in self._resources.values():
            for w in list(st.unindexed) + [w for ws in st.by_index.values() for w in ws]:
                if not w.closed:
                    w.closed = True
                    w.queue.put_nowait(None)
            st.unindexed.clear()
            st.by_index.clear()

    def watcher_count(self) -> int:
        return sum(len(st.unindexed) + sum(len(v) for v in st.by_index.values()) for st in self._resources.values())


#: the indexed field paths split at their dots, once
_PARTS = {path: tuple(path.split(".")) for path in (*INDEXED_FIELDS, *LIST_INDEXED_FIELDS)}


def _reindex(idx: dict[str, dict[tuple[str, str], None]], parts: tuple[str, ...], key: tuple[str, str],
             old: Stored | None, new: Stored | None) -> None:
    """Move ``key`` in one field index from the old object's value at ``parts`` to the new one's."""
    before = field_value_at(old.obj, parts) if old is not None else None
    after = field_value_at(new.obj, parts) if new is not None else None
    if before == after:
        return
    if before:
        keys = idx.get(before)
        if keys is not None:
            keys.pop(key, None)
            if not keys:
                del idx[before]
    if after:
        idx.setdefault(after, {})[key] = None


def _seq(w: Watcher) -> int:
    return w.seq


def _split_key(key: str) -> tuple[str, str, str]:
    group, plural, ns, name = key.split("/", 3)
    return f"{group}/{plural}", ns, name
