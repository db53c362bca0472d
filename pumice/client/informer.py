"""Shared informers: a local, indexed, watch-fed cache of one kind, with event handlers.

An :class:`Informer` lists a kind once, then watches from the list's resourceVersion and keeps a
:class:`Store` (the cache, also exposed as ``.lister``) current. Event handlers registered with
:meth:`Informer.add_event_handler` are called for every change. :class:`SharedInformerFactory`
hands out one informer per (kind, namespace) per process, so every controller reads the same
cache and the API server sees one watch per kind. A *filtered* informer (server-side label or
field selector, e.g. ``spec.nodeName=node-1`` for a node agent) is shared only among callers that
ask for the same selectors.

Behaviour (the reflector):

- list (paged, 500 per page) then watch with ``resourceVersion`` resume and bookmarks;
- a watch that ends normally is re-opened from the last resourceVersion seen (after 0.8 s if it
  ended within 1 s without any event, as client-go's reflector treats "very short watches");
- HTTP 410 / an ERROR event with code 410 (``pumice.client.base.is_gone``) means the version
  was compacted: relist and replace the store, emitting add/update/delete for the differences;
- any other error: wait with exponential backoff (0.8 s doubling up to 30 s, like client-go's
  reflector backoff manager) and retry, keeping the resourceVersion;
- a MemoryError (``pumice._util.errors.FATAL_TYPES``), there or in a handler, is not retried: the
  informer's task ends with it and :attr:`Informer.on_failure` is called (a Manager stops; an
  owner that waits on tasks awaits :meth:`SharedInformerFactory.wait_failed`);
- ``resync_period`` (seconds): every period, ``on_update(obj, obj)`` for every cached object.

Objects in the store are the dicts the client returned, shared by every reader: **treat them as
read-only; ``copy.deepcopy`` before mutating**. The watch is opened with ``read_only=True``, so
over the in-process transport the objects are the API server's own stored objects, shared by
every informer of the process with the server: changing one changes what the server holds (a
``pumice.testing`` cluster fails its test when that happens, and ``pumice simulate`` fails its
run). List items get ``apiVersion``/``kind`` filled in (the API server omits them in list items;
they are decoded afresh).

Keys: ``"<namespace>/<name>"``, or ``"<name>"`` for cluster-scoped objects (client-go
MetaNamespaceKeyFunc).

Mirrors: client-go tools/cache (shared_informer.go, reflector.go, thread_safe_store.go,
index.go) and informers/factory.go.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from pumice._util.clock import Clock, default_clock
from pumice._util.errors import FATAL_TYPES
from pumice.api import Obj
from pumice.api.scheme import ResourceKind
from pumice.api.selectors import LabelSelector, as_selector
from pumice.client.base import ApiError, KubeClient, detached_context, is_gone

IndexFunc = Callable[[Obj], list[str]]
AddHandler = Callable[[Obj], None]
UpdateHandler = Callable[[Obj, Obj], None]
DeleteHandler = Callable[[Obj], None]

log = logging.getLogger(__name__)

__all__ = [
    "NAMESPACE_INDEX",
    "OWNER_UID_INDEX",
    "EventHandlerRegistration",
    "Informer",
    "SharedInformerFactory",
    "Store",
    "label_index",
    "label_indexer",
    "matches_labels",
    "object_key",
    "selector_matcher",
]

NAMESPACE_INDEX = "namespace"
"""Built-in index: ``metadata.namespace`` (``""`` for cluster-scoped objects)."""
OWNER_UID_INDEX = "owner-uid"
"""Built-in index: uid of the controller ownerReference (``controller: true``), if any."""
LABEL_INDEX_PREFIX = "label:"

_PAGE_SIZE = 500
_BACKOFF_INITIAL = 0.8
_BACKOFF_MAX = 30.0
_WATCH_TIMEOUT: float | None = 300.0  # seconds the server keeps one watch open; it is re-opened after
_SHORT_WATCH = 1.0  # a watch ending sooner than this with no event waits before re-opening


def set_watch_timeout(seconds: float | None) -> float | None:
    """Set the ``timeoutSeconds`` informers ask for on each watch (default 300 s; None: none, the
    watch lasts until the server or the informer ends it) and return the previous value. The
    simulator turns it off for the length of a run: on a virtual clock a 149-day trace would
    otherwise re-open every watch of every informer every 5 simulated minutes (hundreds of
    thousands of requests that deliver nothing)."""
    global _WATCH_TIMEOUT
    previous, _WATCH_TIMEOUT = _WATCH_TIMEOUT, None if seconds is None else float(seconds)
    return previous


def object_key(obj: Mapping[str, Any]) -> str:
    """``"<namespace>/<name>"`` or ``"<name>"`` for cluster-scoped objects."""
    md = obj.get("metadata") or {}
    ns = md.get("namespace") or ""
    return f"{ns}/{md.get('name', '')}" if ns else str(md.get("name", ""))


def _key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def label_index(key: str) -> str:
    """Index name of the label index on ``key``: ``"label:<key>"``."""
    return LABEL_INDEX_PREFIX + key


def label_indexer(key: str) -> IndexFunc:
    """Index function: the value of label ``key`` (no entry when the label is absent)."""

    def fn(obj: Obj) -> list[str]:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return [labels[key]] if key in labels else []

    return fn


def _namespace_indexer(obj: Obj) -> list[str]:
    return [(obj.get("metadata") or {}).get("namespace") or ""]


def _owner_uid_indexer(obj: Obj) -> list[str]:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return [str(ref.get("uid", ""))]
    return []


def _compiled(selector: Mapping[str, Any] | LabelSelector | None) -> LabelSelector:
    # no selector given to a lister means "no filter"; the dict forms follow pumice.api.selectors
    return LabelSelector() if not selector else as_selector(selector)


def matches_labels(labels: Mapping[str, str], selector: Mapping[str, Any] | None) -> bool:
    """Whether ``labels`` match ``selector``.

    ``selector`` is either a matchLabels dict (``{"app": "web"}``) or a metav1.LabelSelector
    (``{"matchLabels": {...}, "matchExpressions": [{"key", "operator", "values"}]}``). None and
    ``{}`` match everything. The matching is :mod:`pumice.api.selectors`'.

    Raises:
        SelectorError: (a ValueError) on an unknown matchExpressions operator.
    """
    return _compiled(selector).matches(labels)


def selector_matcher(selector: Mapping[str, Any] | None) -> Callable[[Mapping[str, str]], bool]:
    """Compile ``selector`` (as in :func:`matches_labels`) once into a ``labels -> bool`` test.

    Raises:
        SelectorError: (a ValueError) on an unknown matchExpressions operator.
    """
    return _compiled(selector).matches


class Store:
    """The informer's cache: objects by key plus named indices. Read-only for callers.

    Index functions map an object to a list of index values; :meth:`by_index` returns the objects
    whose list contains a value. Built in: ``"namespace"``, ``"owner-uid"``; ``"label:<key>"``
    indices are created on first use.

    Mirrors: client-go tools/cache thread_safe_store.go (threadSafeMap) and listers.
    """

    def __init__(self) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self._held: dict[str, dict[str, list[str]]] = {}  # index name -> key -> the object's values
        self.add_indexer(NAMESPACE_INDEX, _namespace_indexer)
        self.add_indexer(OWNER_UID_INDEX, _owner_uid_indexer)

    # -- reads -----------------------------------------------------------------------------

    def get(self, namespace: str | None, name: str) -> Obj | None:
        """The cached object, or None. Cluster-scoped kinds: ``namespace`` None or ``""``."""
        return self._items.get(_key(namespace, name))

    def get_by_key(self, key: str) -> Obj | None:
        return self._items.get(key)

    def list(
        self, namespace: str | None = None, label_selector: Mapping[str, Any] | LabelSelector | None = None
    ) -> builtins.list[Obj]:
        """Cached objects, sorted by key, optionally in one namespace and matching a selector
        (see :func:`matches_labels`).

        Cost: with a selector that has matchLabels, candidates come from the ``label:<key>``
        index of its first key (created on first use), so a list costs O(matches), not
        O(objects).
        """
        candidates: set[str] | None = None
        selector = _compiled(label_selector)
        equal = [r for r in selector.requirements if r.op == "="]
        if equal:
            req = min(equal, key=lambda r: r.key)
            index_name = LABEL_INDEX_PREFIX + req.key
            if index_name not in self._indexers:
                self.add_indexer(index_name, label_indexer(req.key))
            candidates = self._indices[index_name].get(req.values[0], set())
        if namespace:
            in_ns = self._indices[NAMESPACE_INDEX].get(namespace, set())
            candidates = in_ns if candidates is None else (candidates & in_ns)
        keys = sorted(self._items if candidates is None else candidates)
        if selector.empty:
            return [self._items[k] for k in keys]
        return [self._items[k] for k in keys
                if selector.matches((self._items[k].get("metadata") or {}).get("labels") or {})]

    def keys(self) -> builtins.list[str]:
        return sorted(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        """Objects whose index ``index_name`` contains ``value``, sorted by key.

        Raises:
            KeyError: for an unknown index name (``"label:<key>"`` names are always known).
        """
        if index_name not in self._indexers:
            if not index_name.startswith(LABEL_INDEX_PREFIX):
                raise KeyError(f"no index {index_name!r}; known: {sorted(self._indexers)}")
            self.add_indexer(index_name, label_indexer(index_name[len(LABEL_INDEX_PREFIX):]))
        return [self._items[k] for k in sorted(self._indices[index_name].get(value, ()))]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        """Keys (not objects) in index ``index_name`` under ``value``."""
        if index_name not in self._indexers:
            self.by_index(index_name, value)
        return sorted(self._indices[index_name].get(value, ()))

    # -- indexers --------------------------------------------------------------------------

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index and build it over the current contents.

        Raises:
            ValueError: if an index of that name exists.
        """
        if name in self._indexers:
            raise ValueError(f"indexer {name!r} already exists")
        self._indexers[name] = fn
        index: dict[str, set[str]] = {}
        self._indices[name] = index
        held = self._held[name] = {}
        for key, obj in self._items.items():
            values = held[key] = fn(obj)
            for v in values:
                index.setdefault(v, set()).add(key)

    def has_indexer(self, name: str) -> bool:
        return name in self._indexers

    # -- writes (the informer only) --------------------------------------------------------

    # Each index keeps the values it gave each cached object (_held): an update compares with
    # those and a removal takes them, instead of calling the index function on the old object
    # again (index functions are functions of the object, and cached objects never change).

    def _put(self, key: str, obj: Obj) -> Obj | None:
        old = self._items.get(key)
        self._items[key] = obj
        for name, fn in self._indexers.items():
            values = fn(obj)
            index = self._indices[name]
            held = self._held[name]
            if old is not None:
                before = held[key]
                held[key] = values
                if before == values:
                    continue  # an update that keeps this index's values (most do): nothing moves
                for v in before:
                    bucket = index.get(v)
                    if bucket is not None:
                        bucket.discard(key)
                        if not bucket:
                            del index[v]
            else:
                held[key] = values
            for v in values:
                index.setdefault(v, set()).add(key)
        return old

    def _remove(self, key: str) -> Obj | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key)
        return old

    def _unindex(self, key: str) -> None:
        for name in self._indexers:
            index = self._indices[name]
            for v in self._held[name].pop(key):
                bucket = index.get(v)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del index[v]


@dataclass
class EventHandlerRegistration:
    """A registered handler triple; pass to :meth:`Informer.remove_event_handler`."""

    on_add: AddHandler | None
    on_update: UpdateHandler | None
    on_delete: DeleteHandler | None


class Informer:
    """List + watch one kind (optionally one namespace) into a :class:`Store`, calling handlers.

    Do not construct directly in components; use :meth:`SharedInformerFactory.informer`.

    Attributes:
        kind: the watched kind.
        namespace: the watched namespace, None for all.
        store: the cache (same object as ``lister``).
        resource_version: last resourceVersion seen ("" before the first list).

    Handlers are plain synchronous callables run on the informer's task in event order; they must
    be quick (typically: put a key in a work queue). An exception in a handler is logged and does
    not stop the informer, but one of :data:`pumice._util.errors.FATAL_TYPES` (MemoryError) ends
    the informer's task with it, as does one in the list/watch loop (never retried); the task's
    owner learns of it through :attr:`on_failure` or :attr:`task`.

    Mirrors: client-go tools/cache shared_informer.go sharedIndexInformer + reflector.go.
    """

    def __init__(
        self,
        client: KubeClient,
        kind: ResourceKind,
        namespace: str | None = None,
        *,
        clock: Clock | None = None,
        resync_period: float | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> None:
        self.client = client
        self.kind = kind
        self.namespace = namespace if kind.namespaced else None
        self.label_selector = label_selector or None
        self.field_selector = field_selector or None
        self.clock = clock or default_clock()
        self.resync_period = resync_period
        self.store = Store()
        self.resource_version = ""
        self._handlers: list[EventHandlerRegistration] = []
        self._registered: tuple[EventHandlerRegistration, ...] = ()  # _handlers as the emitters see it
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._resync_task: asyncio.Task[None] | None = None
        self.relists = 0
        """How many times the informer listed (1 after the first sync; +1 per 410 / error relist)."""
        self.on_failure: Callable[[Informer, BaseException], None] | None = None
        """Called on the loop with the exception a task of this informer ended with (a FATAL_TYPES
        one: every other is logged and retried), after it is logged."""

    @property
    def lister(self) -> Store:
        """Alias of :attr:`store` (client-go's lister over the indexer)."""
        return self.store

    @property
    def has_synced(self) -> bool:
        """True once the first list has been stored and its add handlers called."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Wait until :attr:`has_synced`.

        Raises:
            MemoryError: (a FATAL_TYPES error) what the list/watch task ended with before the
                first list was stored: the informer will never sync.
        """
        task = self._task
        if self._synced.is_set() or task is None:
            await self._synced.wait()
            return
        synced = asyncio.ensure_future(self._synced.wait())
        try:
            await asyncio.wait({synced, task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            synced.cancel()
        failure = task.exception() if not self._synced.is_set() and task.done() and not task.cancelled() else None
        if failure is not None:
            raise failure
        await self._synced.wait()

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The list/watch task (None before :meth:`start` and after :meth:`stop`): it ends only when
        cancelled or with a FATAL_TYPES exception."""
        return self._task

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    # -- indexers and handlers ---------------------------------------------------------------

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add a custom index to the store (see :meth:`Store.add_indexer`); a no-op if an index of
        that name exists already (shared informers get the same indexer from several controllers)."""
        if not self.store.has_indexer(name):
            self.store.add_indexer(name, fn)

    def add_event_handler(
        self,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
    ) -> EventHandlerRegistration:
        """Register callbacks: ``on_add(obj)``, ``on_update(old, new)``, ``on_delete(obj)``.

        A handler registered after the informer has synced first receives ``on_add`` for every
        object already cached (as client-go does). ``on_delete`` receives the last known state.
        """
        reg = EventHandlerRegistration(on_add, on_update, on_delete)
        self._handlers.append(reg)
        self._registered = tuple(self._handlers)
        if self.has_synced and on_add is not None:
            for obj in self.store.list():
                self._call(on_add, obj)
        return reg

    def remove_event_handler(self, reg: EventHandlerRegistration) -> None:
        with contextlib.suppress(ValueError):
            self._handlers.remove(reg)
        self._registered = tuple(self._handlers)

    def _call(self, fn: Callable[..., None], *args: Obj) -> None:
        try:
            fn(*args)
        except FATAL_TYPES:
            raise  # not carried on: the informer's task ends (see FATAL_TYPES)
        except Exception:
            self._handler_failed(fn, args[-1])

    def _handler_failed(self, fn: Callable[..., None], obj: Obj) -> None:
        """Log the exception being handled: which handler failed on which object. A handler's
        failure never stops the informer or the other handlers (client-go's handlers cannot
        fail; a panic there is recovered and logged by the runtime)."""
        md = obj.get("metadata") if isinstance(obj, dict) else None
        ns, name = (md.get("namespace"), md.get("name")) if isinstance(md, dict) else (None, None)
        log.exception(
            "informer %s: event handler %s failed on %s",
            self.kind.plural,
            getattr(fn, "__qualname__", repr(fn)),
            f"{ns}/{name}" if ns else name,
        )

    # The three emitters run once per event and informer: they walk the registrations as they
    # were when the event came (a tuple kept beside the list) and call each handler in place
    # (what _call does, without a call per handler; a failure goes to _handler_failed).

    def _emit_add(self, obj: Obj) -> None:
        for h in self._registered:
            fn = h.on_add
            if fn is not None:
                try:
                    fn(obj)
                except FATAL_TYPES:
                    raise
                except Exception:
                    self._handler_failed(fn, obj)

    def _emit_update(self, old: Obj, new: Obj) -> None:
        for h in self._registered:
            fn = h.on_update
            if fn is not None:
                try:
                    fn(old, new)
                except FATAL_TYPES:
                    raise
                except Exception:
                    self._handler_failed(fn, new)

    def _emit_delete(self, obj: Obj) -> None:
        for h in self._registered:
            fn = h.on_delete
            if fn is not None:
                try:
                    fn(obj)
                except FATAL_TYPES:
                    raise
                except Exception:
                    self._handler_failed(fn, obj)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the list/watch task (idempotent). Needs a running loop. The task is shared, so it
        never takes the caller's :func:`pumice.client.base.cancel_scope` (a reconcile that starts
        an informer does not stop it by stopping)."""
        if self.running:
            return
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._run(), name=f"informer-{self.kind.plural}", context=detached_context())
        self._task.add_done_callback(self._ended)
        if self.resync_period and self.resync_period > 0:
            self._resync_task = loop.create_task(self._resync(), name=f"resync-{self.kind.plural}",
                                                 context=detached_context())
            self._resync_task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or (e := task.exception()) is None:
            return
        log.error("informer %s: %s stopped with %s: %s", self.kind.plural, task.get_name(), type(e).__name__, e)
        if self.on_failure is not None:
            self.on_failure(self, e)

    async def stop(self) -> None:
        """Cancel the list/watch task and wait for it to end."""
        for task in (self._task, self._resync_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = None
        self._resync_task = None

    # -- the reflector -----------------------------------------------------------------------

    async def _run(self) -> None:
        delay = _BACKOFF_INITIAL
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list_and_replace()
                    need_list = False
                opened = self.clock.monotonic()
                events = await self._watch()
                delay = _BACKOFF_INITIAL  # a watch that ended normally: re-open it
                if events == 0 and self.clock.monotonic() - opened < _SHORT_WATCH:
                    # ended at once with nothing: don't hammer a server that keeps closing watches
                    await self.clock.sleep(_BACKOFF_INITIAL)
            except asyncio.CancelledError:
                raise
            except FATAL_TYPES:
                raise  # not retried: the task ends with it (see on_failure)
            except Exception as e:
                if is_gone(e):
                    log.info("informer %s: resourceVersion %s expired; relisting",
                             self.kind.plural, self.resource_version)
                    need_list = True
                    continue
                hint = ""
                if isinstance(e, ApiError) and e.code == 404:
                    hint = f" (is {self.kind.plural}.{self.kind.group or 'core'} served? a CRD may be missing)"
                log.warning("informer %s: %s%s; retrying in %.1fs", self.kind.plural, e, hint, delay)
                await self.clock.sleep(delay)
                delay = min(delay * 2, _BACKOFF_MAX)

    async def _list_all(self) -> tuple[list[Obj], str]:
        items: list[Obj] = []
        cont: str | None = None
        try:
            while True:
                page = await self.client.list(
                    self.kind, self.namespace, limit=_PAGE_SIZE, continue_=cont,
                    label_selector=self.label_selector, field_selector=self.field_selector,
                )
                items.extend(page.items)
                if not page.continue_:
                    return items, page.resource_version
                cont = page.continue_
        except ApiError as e:
            if not (is_gone(e) and cont):
                raise
        # the continue token expired mid-way: one unpaged list
        page = await self.client.list(self.kind, self.namespace, label_selector=self.label_selector,
                                      field_selector=self.field_selector)
        return list(page.items), page.resource_version

    async def _list_and_replace(self) -> None:
        items, rv = await self._list_all()
        self.relists += 1
        fresh: dict[str, Obj] = {}
        for obj in items:
            obj.setdefault("apiVersion", self.kind.api_version)
            obj.setdefault("kind", self.kind.kind)
            fresh[object_key(obj)] = obj
        for key in sorted(set(self.store.keys()) - set(fresh)):
            old = self.store._remove(key)
            if old is not None:
                self._emit_delete(old)
        for key in sorted(fresh):
            obj = fresh[key]
            old = self.store._put(key, obj)
            if old is None:
                self._emit_add(obj)
            elif _rv(old) != _rv(obj):
                self._emit_update(old, obj)
        self.resource_version = rv
        self._synced.set()

    async def _watch(self) -> int:
        """Follow one watch stream until it ends; returns the number of events received."""
        count = 0
        stream = self.client.watch(
            self.kind,
            self.namespace,
            resource_version=self.resource_version or None,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=None if _WATCH_TIMEOUT is None else int(_WATCH_TIMEOUT),
            allow_bookmarks=True,
            read_only=True,
        )
        try:
            store = self.store
            async for ev in stream:
                count += 1
                obj = ev.object
                etype = ev.type
                if etype == "ERROR":
                    raise ApiError(
                        int(obj.get("code") or 500), str(obj.get("reason", "")),
                        str(obj.get("message", "")), obj,
                    )
                md = obj.get("metadata") or {}
                rv = str(md.get("resourceVersion", ""))  # _rv(obj), once per event and informer
                if etype == "BOOKMARK":
                    if rv:
                        self.resource_version = rv
                    continue
                ns = md.get("namespace") or ""  # object_key(obj)
                key = f"{ns}/{md.get('name', '')}" if ns else str(md.get("name", ""))
                if etype == "ADDED" or etype == "MODIFIED":
                    old = store._put(key, obj)
                    if old is None:
                        self._emit_add(obj)
                    else:
                        self._emit_update(old, obj)
                elif etype == "DELETED":
                    store._remove(key)
                    self._emit_delete(obj)
                if rv:
                    self.resource_version = rv
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        return count

    async def _resync(self) -> None:
        assert self.resync_period is not None
        while True:
            await self.clock.sleep(self.resync_period)
            if not self.has_synced:
                continue
            for obj in self.store.list():
                self._emit_update(obj, obj)


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))


class SharedInformerFactory:
    """One :class:`Informer` per (kind, namespace) per process, started and stopped together.

    Args:
        client: the API client.
        clock: time source for backoff and resync.
        resync_period: seconds between resyncs for informers it creates (None: never).

    :meth:`informer` may be called before or after :meth:`start`; an informer created after
    start is started at once.

    Mirrors: client-go informers/factory.go sharedInformerFactory.
    """

    def __init__(
        self, client: KubeClient, *, clock: Clock | None = None, resync_period: float | None = None
    ) -> None:
        self.client = client
        self.clock = clock or default_clock()
        self.resync_period = resync_period
        self._informers: dict[tuple[str, ...], Informer] = {}
        self._started = False
        self.on_failure: Callable[[Informer, BaseException], None] | None = None
        """Given to every informer (see :attr:`Informer.on_failure`): the owner's way to learn that
        one of them stopped for good (a MemoryError)."""
        self.failure: BaseException | None = None
        """What the first of its informers that stopped for good ended with (None: none has): an
        owner with a loop of its own (a scheduler's cycle) raises it there."""
        self._failed = asyncio.Event()  # set with failure

    def informer(
        self, kind: ResourceKind | str, namespace: str | None = None, *,
        label_selector: str | None = None, field_selector: str | None = None,
    ) -> Informer:
        """The shared informer of ``kind`` (a ResourceKind, or a name the client's scheme
        resolves, e.g. ``"pods"``, ``"rayclusters.ray.io"``) in ``namespace`` (None: all).

        ``label_selector`` / ``field_selector`` (server-side, wire syntax, e.g.
        ``"spec.nodeName=node-1"``) make a *filtered* informer, shared only with callers asking
        for the same selectors; objects that stop matching arrive as deletes.

        Raises:
            ValueError: when a kind name does not resolve.
        """
        rk = self._resolve(kind)
        ns = (namespace or "") if rk.namespaced else ""
        key = (rk.group, rk.version, rk.plural, ns, label_selector or "", field_selector or "")
        inf = self._informers.get(key)
        if inf is None:
            inf = Informer(self.client, rk, ns or None, clock=self.clock, resync_period=self.resync_period,
                           label_selector=label_selector, field_selector=field_selector)
            inf.on_failure = self._informer_failed
            self._informers[key] = inf
            if self._started:
                inf.start()
        return inf

    def _resolve(self, kind: ResourceKind | str) -> ResourceKind:
        if isinstance(kind, ResourceKind):
            return kind
        rk = self.client.scheme.resolve(kind)
        if rk is None:
            raise ValueError(f"unknown kind {kind!r}")
        return rk

    def _informer_failed(self, inf: Informer, e: BaseException) -> None:
        if self.failure is None:
            self.failure = e
            self._failed.set()
        if self.on_failure is not None:
            self.on_failure(inf, e)

    async def wait_failed(self) -> NoReturn:
        """Wait until one of its informers stops for good, then raise what it ended with (also
        when one already has). An owner that waits on tasks runs this as one of them, so that it
        fails with its cache instead of serving from one that no longer follows the API (``pumice
        up``'s and the node agent's simulated Ray dashboard informers, the web dashboard's cache).

        Raises:
            MemoryError: (a FATAL_TYPES error) :attr:`failure`.
        """
        await self._failed.wait()
        assert self.failure is not None
        raise self.failure

    def informers(self) -> list[Informer]:
        """Every informer handed out so far, in creation order."""
        return list(self._informers.values())

    async def start(self) -> None:
        """Start every informer created so far (and any created later)."""
        self._started = True
        for inf in list(self._informers.values()):
            inf.start()

    async def wait_for_cache_sync(
        self, informers: Iterable[Informer] | None = None, timeout: float | None = None
    ) -> bool:
        """Wait until ``informers`` (default: all) have synced. Returns False on timeout."""
        targets = list(informers) if informers is not None else self.informers()
        waits = [inf.wait_synced() for inf in targets]
        if not waits:
            return True
        try:
            async with asyncio.timeout(timeout):
                await asyncio.gather(*waits)
        except TimeoutError:
            return False
        return True

    @property
    def started(self) -> bool:
        return self._started

    async def stop(self) -> None:
        """Stop every informer."""
        self._started = False
        for inf in list(self._informers.values()):
            await inf.stop()
