"""A controller: watches that enqueue Requests, a work queue, and N workers calling a reconciler.

Built with :class:`pumice.runtime.builder.Builder` (``mgr.controller(name).for_(...)...``) and run
by the :class:`pumice.runtime.manager.Manager` while it leads. On start it registers its event
handlers on the shared informers (which replays every cached object as an add, so each object is
reconciled once at start), waits for those informers to sync, then runs
``max_concurrent_reconciles`` workers. A Request is never reconciled by two workers at once.

Outcome mapping (see :mod:`pumice.runtime.reconcile`): TerminalError -> forget + error metric;
MemoryError (:data:`pumice._util.errors.FATAL_TYPES`) and any other BaseException but cancellation
-> error metric, raised: the controller stops and its Manager with it; other exception ->
add_rate_limited + error metric; ``Result(requeue_after=s)`` -> forget +
add_after(s); otherwise forget. :meth:`Controller.stop` makes a running reconcile's next API call
raise :class:`pumice.client.base.ContextCanceled`: that reconcile ends with one INFO line.

Mirrors: controller-runtime pkg/internal/controller/controller.go and pkg/handler
(EnqueueRequestForObject, EnqueueRequestForOwner with OnlyControllerOwner,
EnqueueRequestsFromMapFunc).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pumice._util.clock import Clock, default_clock
from pumice._util.errors import FATAL_TYPES, is_bug
from pumice.api import Obj
from pumice.api.scheme import ResourceKind
from pumice.client.base import (
    ApiError,
    ContextCanceled,
    cancel_scope,
    is_already_exists,
    is_conflict,
    is_not_found,
)
from pumice.client.informer import EventHandlerRegistration, Informer
from pumice.client.workqueue import QueueShutDown, RateLimiter, RateLimitingQueue
from pumice.runtime import metrics
from pumice.runtime.predicates import Predicate
from pumice.runtime.reconcile import Reconciler, Request, Result, TerminalError

MapFunc = Callable[[Obj], Iterable[Request]]

#: requeues after which a retryable failure (see :func:`retryable_reason`) is logged at ERROR
#: (with the rate limiter's 5 ms doubling backoff, ~5 s of failing); before, at INFO.
RETRYABLE_QUIET_REQUEUES = 10


def retryable_reason(e: BaseException) -> str | None:
    """What makes ``e`` a failure that heals on a retry, or None: a stale read (409 Conflict,
    "the object has been modified"), an object gone or not there yet in a race (404, a plain
    ``LookupError`` as the controllers raise for a child not created yet), or one created
    meanwhile (409 AlreadyExists)."""
    if is_conflict(e):
        return "conflict"
    if is_not_found(e):
        return "not found"
    if is_already_exists(e):
        return "already exists"
    if type(e) is LookupError:
        return "not there yet"
    return None

log = logging.getLogger(__name__)

__all__ = ["Controller", "MapFunc", "Watch", "enqueue_for_object", "enqueue_for_owner"]


def enqueue_for_object(obj: Obj) -> list[Request]:
    """The Request naming ``obj`` itself (controller-runtime EnqueueRequestForObject)."""
    return [Request.for_object(obj)]


def enqueue_for_owner(owner_kind: ResourceKind) -> MapFunc:
    """A map function: the Request of ``obj``'s *controller* owner when it is of ``owner_kind``
    (group and kind compared, version ignored), else nothing. It reads only the object's
    ``ownerReferences`` and namespace (an update that leaves them alone maps old and new alike).

    Mirrors: controller-runtime handler.EnqueueRequestForOwner(..., OnlyControllerOwner()).
    """
    return _OwnerMapper(owner_kind)


class _OwnerMapper:
    """:func:`enqueue_for_owner`'s map function (a class, so that the event handlers can tell
    that only ``ownerReferences`` and the namespace decide its Requests)."""

    __slots__ = ("_groups", "group", "kind", "namespaced")

    def __init__(self, owner_kind: ResourceKind) -> None:
        self.group, self.kind, self.namespaced = owner_kind.group, owner_kind.kind, owner_kind.namespaced
        self._groups: dict[str, str] = {}  # apiVersion -> its group, for the few apiVersions seen

    def __call__(self, obj: Obj) -> list[Request]:
        md = obj.get("metadata") or {}
        for ref in md.get("ownerReferences") or ():
            if not ref.get("controller"):
                continue
            if ref.get("kind") != self.kind:
                return []
            api = str(ref.get("apiVersion", ""))
            group = self._groups.get(api)
            if group is None:
                group = api.rpartition("/")[0]
                if len(self._groups) < 64:
                    self._groups[api] = group
            if group != self.group:
                return []
            ns = (md.get("namespace") or "") if self.namespaced else ""
            return [Request(ns, str(ref.get("name", "")))]
        return []


@dataclass
class Watch:
    """One event source of a controller: an informer, a map function and predicates.

    Attributes:
        informer: the shared informer the events come from.
        map_fn: object -> Requests to enqueue.
        predicates: all must pass for an event to enqueue.
        map_old: on update, also map the old object (owner or mapped keys may have changed).
    """

    informer: Informer
    map_fn: MapFunc
    predicates: list[Predicate] = field(default_factory=list)
    map_old: bool = True


class Controller:
    """Run a reconciler over Requests produced by its watches.

    Args:
        name: unique per manager; metrics label and queue name.
        reconciler: the :class:`Reconciler`.
        watches: event sources.
        max_concurrent_reconciles: number of workers (>= 1).
        rate_limiter: for the queue (default: 5 ms..1000 s per item, 10 qps / burst 100).
        clock: time source.
        graceful_shutdown_timeout: seconds :meth:`stop` waits for in-flight reconciles before
            cancelling them.
        keep_metrics: count controller-runtime's reconcile metrics (totals, errors, reconcile
            time) and its work queue's; without them a reconcile reads no clock and counts
            nothing (for a process that serves no metrics: a simulation).

    Raises:
        ValueError: when ``max_concurrent_reconciles < 1``.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        watches: Iterable[Watch] = (),
        *,
        max_concurrent_reconciles: int = 1,
        rate_limiter: RateLimiter[Request] | None = None,
        clock: Clock | None = None,
        graceful_shutdown_timeout: float = 30.0,
        keep_metrics: bool = True,
    ) -> None:
        if max_concurrent_reconciles < 1:
            raise ValueError(f"max_concurrent_reconciles must be >= 1, got {max_concurrent_reconciles}")
        self.name = name
        self.reconciler = reconciler
        self.watches: list[Watch] = list(watches)
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.clock = clock or default_clock()
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self._rate_limiter = rate_limiter
        self.keep_metrics = keep_metrics
        self.queue: RateLimitingQueue[Request] = self._new_queue()
        self._registrations: list[tuple[Informer, EventHandlerRegistration]] = []
        self._workers: list[asyncio.Task[None]] = []
        self._stopping = False
        self.started = asyncio.Event()
        """Set once handlers are registered, informers synced and workers running."""
        self._total = {r: metrics.RECONCILE_TOTAL.labels(name, r)
                       for r in ("success", "error", "requeue_after", "requeue")}
        self._errors = metrics.RECONCILE_ERRORS.labels(name)
        self._terminal = metrics.TERMINAL_RECONCILE_ERRORS.labels(name)
        self._time = metrics.RECONCILE_TIME.labels(name)
        self._active = 0  # reconciles in flight; the gauge reads it at scrape time
        metrics.ACTIVE_WORKERS.labels(name).set_function(lambda: self._active)

    def _new_queue(self) -> RateLimitingQueue[Request]:
        return RateLimitingQueue(self.name, rate_limiter=self._rate_limiter, clock=self.clock,
                                 keep_metrics=self.keep_metrics)

    def watch(self, watch: Watch) -> None:
        """Add an event source (before :meth:`start`; added later it takes effect at next start)."""
        self.watches.append(watch)

    def informers(self) -> list[Informer]:
        out: list[Informer] = []
        for w in self.watches:
            if w.informer not in out:
                out.append(w.informer)
        return out

    # -- event handlers ----------------------------------------------------------------------

    def _handlers(self, w: Watch) -> EventHandlerRegistration:
        # called once per informer event for every watch of every controller: the predicates and
        # the map function are looked up once here, not per event
        add = self.queue.add
        map_fn = w.map_fn
        preds = tuple(w.predicates)
        name = self.name
        map_old = w.map_old
        # an owner mapper maps old and new alike when the update left ownerReferences alone: the
        # old object's Request would be the new one's, which the queue holds once anyway
        by_owner = isinstance(map_fn, _OwnerMapper)

        def enqueue(obj: Obj) -> None:
            try:
                reqs = map_fn(obj)
                if type(reqs) is not list:
                    reqs = list(reqs)
            except FATAL_TYPES:
                raise  # not carried on: the informer that called this ends, and the manager (see FATAL_TYPES)
            except Exception:
                md = obj.get("metadata") or {}
                log.exception("controller %s: map function failed on %s %s/%s; this event enqueues nothing", name,
                              obj.get("kind", "?"), md.get("namespace", ""), md.get("name", "?"))
                return
            for req in reqs:
                add(req)

        def on_add(obj: Obj) -> None:
            for p in preds:
                if not p.create(obj):
                    return
            enqueue(obj)

        def on_update(old: Obj, new: Obj) -> None:
            for p in preds:
                if not p.update(old, new):
                    return
            if map_old and not (by_owner and (old.get("metadata") or {}).get("ownerReferences") == (
                    new.get("metadata") or {}).get("ownerReferences")):
                enqueue(old)
            enqueue(new)

        def on_delete(obj: Obj) -> None:
            for p in preds:
                if not p.delete(obj):
                    return
            enqueue(obj)

        return EventHandlerRegistration(on_add, on_update, on_delete)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Register handlers, wait for the informers to sync, run the workers until cancelled or
        :meth:`stop`. Returns after the workers have ended."""
        if self.queue.shutting_down:
            self.queue = self._new_queue()
        self._stopping = False
        metrics.MAX_CONCURRENT_RECONCILES.labels(self.name).set(self.max_concurrent_reconciles)
        for w in self.watches:
            h = self._handlers(w)
            reg = w.informer.add_event_handler(h.on_add, h.on_update, h.on_delete)
            self._registrations.append((w.informer, reg))
        try:
            for inf in self.informers():
                inf.start()
            await asyncio.gather(*(inf.wait_synced() for inf in self.informers()))
            log.info("controller %s: starting %d workers", self.name, self.max_concurrent_reconciles)
            self._workers = [
                asyncio.get_running_loop().create_task(self._worker(), name=f"{self.name}-worker-{i}")
                for i in range(self.max_concurrent_reconciles)
            ]
            self.started.set()
            try:
                await asyncio.gather(*self._workers)
            except asyncio.CancelledError:
                await self._shutdown_workers()
                raise
        finally:
            for inf, reg in self._registrations:
                inf.remove_event_handler(reg)
            self._registrations.clear()
            self.queue.shutdown()
            self.started.clear()

    async def stop(self) -> None:
        """Stop taking new Requests and tell the in-flight reconciles to stop: their next API call
        raises :class:`ContextCanceled` (controller-runtime cancels the reconciles' context).
        Wait up to ``graceful_shutdown_timeout`` for them to end, then cancel them."""
        await self._shutdown_workers()

    async def _shutdown_workers(self) -> None:
        self._stopping = True
        self.queue.shutdown()
        workers = [t for t in self._workers if not t.done()]
        if workers:
            _, pending = await asyncio.wait(workers, timeout=self.graceful_shutdown_timeout)
            for t in pending:
                t.cancel()
            for t in pending:
                with contextlib.suppress(asyncio.CancelledError):
                    await t

    def _is_stopping(self) -> bool:
        return self._stopping

    async def _worker(self) -> None:
        cancel_scope(self._is_stopping)  # this task's reconciles: see stop()
        while not self._stopping:
            try:
                req = await self.queue.get()
            except QueueShutDown:
                return
            if self._stopping:
                self.queue.done(req)
                return
            end: float | None = None
            try:
                end = await self._reconcile(req, self.queue.started_at(req))
            finally:
                self.queue.done(req, now=end)

    async def reconcile_handler(self, req: Request) -> None:
        """Reconcile ``req`` once and map the outcome onto the queue (see the module doc)."""
        await self._reconcile(req, None)

    async def _reconcile(self, req: Request, t0: float | None) -> float | None:
        """:meth:`reconcile_handler`, timed from ``t0`` (the clock's monotonic time; read here
        when None); returns the monotonic time at its end (None, and no time read and nothing
        counted, without :attr:`keep_metrics`)."""
        self._active += 1
        keep = self.keep_metrics
        end: float | None = None
        if keep and t0 is None:
            t0 = self.clock.monotonic()
        try:
            result = await self.reconciler.reconcile(req)
        except asyncio.CancelledError:
            raise
        except ContextCanceled:
            log.info("controller %s: %s: stopping, reconcile ended at its next API call", self.name, req)
        except TerminalError as e:
            self.queue.forget(req)
            if keep:
                self._errors.inc()
                self._terminal.inc()
                self._total["error"].inc()
            log.error("controller %s: %s: terminal error: %s", self.name, req, e)
        except FATAL_TYPES:
            # not retried: this worker ends, then the controller, then its manager (see FATAL_TYPES)
            if keep:
                self._errors.inc()
                self._total["error"].inc()
            raise
        except Exception as e:
            self.queue.add_rate_limited(req)
            if keep:
                self._errors.inc()
                self._total["error"].inc()
            n = self.queue.num_requeues(req)
            why = retryable_reason(e)
            if why is not None and n < RETRYABLE_QUIET_REQUEUES:  # a race that the retry heals, routinely
                log.info("controller %s: %s: %s, retrying (requeue #%d): %s", self.name, req, why, n, _one_line(e))
            elif is_bug(e):  # a programming error: its traceback is what a fix needs
                log.exception("controller %s: %s: reconcile failed (requeue #%d)", self.name, req, n)
            else:  # an API refusal, a race that lasts ...: retried with backoff, one line each
                log.error("controller %s: %s: reconcile failed (requeue #%d): %s", self.name, req, n, _one_line(e))
                log.debug("controller %s: %s: reconcile failure", self.name, req, exc_info=e)
        else:
            if result is not None and not isinstance(result, Result):
                log.warning("controller %s: reconcile returned %r, not a Result", self.name, result)
            after = getattr(result, "requeue_after", None)
            self.queue.forget(req)
            if after is not None and after > 0:
                self.queue.add_after(req, after)
                if keep:
                    self._total["requeue_after"].inc()
            elif keep:
                self._total["success"].inc()
        finally:
            if keep and t0 is not None:
                end = self.clock.monotonic()
                self._time.observe(max(0.0, end - t0))
            self._active -= 1
        return end


def _one_line(e: BaseException) -> str:
    """``Type: message`` on one line (an ApiError is named by its Status, already in its text)."""
    text = " ".join(str(e).split())
    return text if isinstance(e, ApiError) else f"{type(e).__name__}: {text}"
