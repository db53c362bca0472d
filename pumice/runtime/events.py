"""EventRecorder: write core/v1 Events about objects, correlated like client-go's recorder.

``recorder.event(obj, "Normal" | "Warning", reason, message)`` returns at once; the write happens
on a background writer task (await the returned future, or :meth:`EventRecorder.flush`, to wait
for it). At most :data:`MAX_QUEUED_EVENTS` events wait to be written: past that a new event is
dropped (client-go's broadcaster queue, ``DropIfChannelFull``). Before writing, each event goes
through client-go's EventCorrelator:

1. **spam filter**: per (source, involved object, event type) token bucket, burst 25, one token
   per 300 s; an event without a token is dropped;
2. **aggregator**: per (source, object, type, reason), once 10 distinct messages have been seen
   within 600 s, the 10th and later get the message
   ``"(combined from similar events): <message>"`` and share one Event object;
3. **logger**: an event identical to one already written (same source, object, type, reason,
   message) is not created again: the existing Event is patched with ``count + 1``, the new
   ``lastTimestamp`` and the message.

Event shape: ``metadata.name`` ``"<object name>.<hex nanoseconds>"``, ``metadata.namespace`` the
object's (``"default"`` for cluster-scoped objects), ``involvedObject`` (kind, namespace, name,
uid, apiVersion, resourceVersion), ``reason``, ``message``, ``type``, ``count``,
``firstTimestamp``, ``lastTimestamp``, ``source.component``, ``reportingComponent``,
``reportingInstance``.

Deviates: upstream's aggregator drops an arbitrary remembered message once it reaches the limit
(``PopAny``); here the set keeps growing within the window, so the outcome is deterministic.
``writers`` > 1 writes events concurrently (upstream's sink writes one at a time): kube-apiserver
answers many requests at once in a few ms, while pumice's API server serves them on one loop in
arrival order, so a single writer next to a component's other concurrent writers (the Volcano
scheduler's 16 Pod-condition workers) gets only its small share of the answers. One Event's writes
(its create, then its count patches) always go to the same writer, in order.

Mirrors: client-go tools/record/event.go (recorder, recordToSink) and events_cache.go
(EventCorrelator, EventAggregator, eventLogger, EventSourceObjectSpamFilter).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pumice._util.clock import Clock, default_clock, rfc3339
from pumice._util.errors import FATAL_TYPES
from pumice.api import Obj
from pumice.api.scheme import EVENT
from pumice.client.base import KubeClient, detached_context, is_already_exists, is_not_found

log = logging.getLogger(__name__)


EVENT_TYPES = ("Normal", "Warning")
MAX_LRU_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "
NAME_CLASH_RETRIES = 3
MAX_QUEUED_EVENTS = 1000
"""Events recorded and not yet written past which a new one is dropped. Mirrors: client-go
tools/record/event.go ``maxQueuedEvents`` (``NewLongQueueBroadcaster(maxQueuedEvents,
DropIfChannelFull)``)."""

__all__ = ["EVENT_TYPES", "MAX_QUEUED_EVENTS", "EventRecorder"]


class _LRU(OrderedDict[Any, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)

    def fetch(self, key: Any) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value


@dataclass
class _Aggregate:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass
class _Observation:
    count: int
    first_timestamp: str
    name: str
    writer: int = 0
    """The writer its create went to (its patches follow it there)."""


@dataclass
class _Bucket:
    tokens: float
    last: float


class EventRecorder:
    """Record Events for one component (``source.component``), e.g. ``"raycluster-controller"``.

    Args:
        client: API client (Events are created and patched through it).
        component: ``source.component`` / ``reportingComponent``.
        clock: time source for timestamps, names and the correlator's windows.
        host: ``source.host`` (empty for controllers; the node name for a kubelet).
        instance: ``reportingInstance``.
        writers: how many events are written at once (>= 1; see the module doc).

    Raises:
        ValueError: when ``writers < 1``.
    """

    def __init__(
        self, client: KubeClient, component: str, *, clock: Clock | None = None, host: str = "",
        instance: str = "", writers: int = 1,
    ) -> None:
        if writers < 1:
            raise ValueError(f"writers must be >= 1, got {writers}")
        self.client = client
        self.component = component
        self.clock = clock or default_clock()
        self.host = host
        self.instance = instance
        self._aggregates: _LRU = _LRU(MAX_LRU_CACHE_ENTRIES)
        self._observed: _LRU = _LRU(MAX_LRU_CACHE_ENTRIES)
        self._spam: _LRU = _LRU(MAX_LRU_CACHE_ENTRIES)
        self._queues: list[asyncio.Queue[tuple[str, Obj, asyncio.Future[Obj | None]]] | None] = [None] * writers
        self._writers: list[asyncio.Task[None] | None] = [None] * writers
        self._queued = 0
        """Events handed to the writers and not yet written (or failed)."""
        self._pending = [0] * writers
        """:attr:`_queued` per writer."""
        self._overflow = 0
        """Events dropped because :data:`MAX_QUEUED_EVENTS` were queued, since the queue was last empty."""
        self._last_nanos = 0
        self._renamed: dict[str, str] = {}
        """Event name -> the name it was created under after a name clash (see :meth:`_write`)."""
        self.dropped = 0
        """Events dropped by the spam filter, a full queue, or after failed writes."""

    # -- public ------------------------------------------------------------------------------

    def event(self, obj: Obj, type: str, reason: str, message: str) -> asyncio.Future[Obj | None]:
        """Record an event about ``obj`` (a wire-form object with apiVersion, kind, metadata).

        Returns a future resolving to the written Event (None when dropped); awaiting it is
        optional. Needs a running event loop.

        Raises:
            ValueError: when ``type`` is not "Normal" or "Warning", or ``obj`` has no name.
            MemoryError: (any of ``pumice._util.errors.FATAL_TYPES``) what a writer task ended
                with: a recorder that cannot write is not carried on with (the caller's reconcile
                raises it, and its controller and manager stop).
        """
        for w in self._writers:
            if w is not None and w.done() and not w.cancelled() and (e := w.exception()) is not None:
                raise e
        if type not in EVENT_TYPES:
            raise ValueError(f"event type must be one of {EVENT_TYPES}, got {type!r}")
        md = obj.get("metadata") or {}
        if not md.get("name"):
            raise ValueError("event about an object without metadata.name")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Obj | None] = loop.create_future()
        if self._queued >= MAX_QUEUED_EVENTS:  # before the correlator, as upstream's queue is
            self.dropped += 1
            self._overflow += 1
            if self._overflow == 1:
                log.warning("events: %d events of %s wait to be written; dropping new ones (%s %s on %s %s/%s "
                            "first) until they are", self._queued, self.component, type, reason, obj.get("kind"),
                            md.get("namespace") or "", md["name"])
            fut.set_result(None)
            return fut
        action, ev, seen = self._correlate(obj, type, reason, message)
        if seen is None:
            self.dropped += 1
            fut.set_result(None)
            return fut
        # one Event's create and count patches go to one writer, so they are written in order; a
        # create goes to the writer with the fewest queued (the first of those)
        if action == "create" and len(self._queues) > 1:
            seen.writer = min(range(len(self._queues)), key=self._pending.__getitem__)
        i = seen.writer
        queue = self._queues[i]
        if queue is None:
            queue = self._queues[i] = asyncio.Queue()
        queue.put_nowait((action, ev, fut))
        self._queued += 1
        self._pending[i] += 1
        writer = self._writers[i]
        if writer is None or writer.done():
            # the writer is shared by every caller: a reconcile that first records an Event must
            # not pass it its cancel scope (the Events are still written after that reconcile stops)
            self._writers[i] = loop.create_task(self._write_loop(i), name=f"events-{self.component}-{i}",
                                                context=detached_context())
        return fut

    def eventf(self, obj: Obj, type: str, reason: str, fmt: str, *args: Any) -> asyncio.Future[Obj | None]:
        """:meth:`event` with ``fmt % args`` as the message."""
        return self.event(obj, type, reason, fmt % args if args else fmt)

    async def flush(self) -> None:
        """Wait until every event recorded so far has been written (or dropped)."""
        await asyncio.gather(*(q.join() for q, w in zip(self._queues, self._writers, strict=True)
                               if q is not None and w is not None and not w.done()))

    async def close(self) -> None:
        """Flush, then stop the writer tasks."""
        with contextlib.suppress(Exception):
            await self.flush()
        for i, writer in enumerate(self._writers):
            if writer is not None and writer.done():  # ended with a FATAL_TYPES error: event() raises it
                continue
            if writer is not None:
                writer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await writer
                self._writers[i] = None

    # -- correlation (synchronous, so counts follow call order) ---------------------------------

    def _correlate(self, obj: Obj, etype: str, reason: str, message: str) -> tuple[str, Obj, _Observation | None]:
        """(``"create"`` or ``"patch"``, the Event, its observation), or (``"drop"``, {}, None)."""
        md = obj.get("metadata") or {}
        involved = {
            "kind": obj.get("kind", ""),
            "namespace": md.get("namespace") or "",
            "name": md.get("name", ""),
            "uid": md.get("uid", ""),
            "apiVersion": obj.get("apiVersion", ""),
            "resourceVersion": md.get("resourceVersion", ""),
        }
        source_key = (self.component, self.host, involved["kind"], involved["namespace"],
                      involved["name"], involved["uid"], involved["apiVersion"], etype)
        mono = self.clock.monotonic()
        # 1. spam filter
        bucket: _Bucket | None = self._spam.fetch(source_key)
        if bucket is None:
            bucket = _Bucket(float(SPAM_BURST), mono)
            self._spam.put(source_key, bucket)
        bucket.tokens = min(float(SPAM_BURST), bucket.tokens + (mono - bucket.last) * SPAM_QPS)
        bucket.last = mono
        if bucket.tokens < 1.0:
            return "drop", {}, None
        bucket.tokens -= 1.0
        # 2. aggregator
        agg_key = (*source_key, reason, self.component, self.instance)
        agg: _Aggregate | None = self._aggregates.fetch(agg_key)
        if agg is None or mono - agg.last > AGGREGATE_INTERVAL:
            agg = _Aggregate()
            self._aggregates.put(agg_key, agg)
        agg.last = mono
        agg.messages.add(message)
        if len(agg.messages) >= AGGREGATE_MAX_EVENTS:
            message = COMBINED_PREFIX + message
            log_key: tuple[Any, ...] = agg_key
        else:
            log_key = (*agg_key, message)
        # 3. logger
        now = self.clock.now()
        ts = rfc3339(now)
        seen: _Observation | None = self._observed.fetch(log_key)
        event: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": involved["namespace"] or "default"},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": etype,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "lastTimestamp": ts,
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
        }
        if seen is None:
            name = f"{involved['name']}.{self._nanos(now):x}"
            event["metadata"]["name"] = name
            event["firstTimestamp"] = ts
            event["count"] = 1
            seen = _Observation(1, ts, name)
            self._observed.put(log_key, seen)
            return "create", event, seen
        seen.count += 1
        event["metadata"]["name"] = seen.name
        event["firstTimestamp"] = seen.first_timestamp
        event["count"] = seen.count
        return "patch", event, seen

    def _nanos(self, now: float) -> int:
        n = int(now * 1e9)
        if n <= self._last_nanos:  # two events in the same clock tick: keep names unique
            n = self._last_nanos + 1
        self._last_nanos = n
        return n

    # -- writing ---------------------------------------------------------------------------------

    async def _write_loop(self, i: int) -> None:
        queue = self._queues[i]
        assert queue is not None
        while True:
            action, ev, fut = await queue.get()
            try:
                written = await self._write(action, ev)
                if not fut.done():
                    fut.set_result(written)
            except asyncio.CancelledError:
                if not fut.done():
                    fut.cancel()
                raise
            except FATAL_TYPES as e:
                # not dropped and carried on: the writer ends with it, and the next event() raises it
                log.error("events: %s's writer stopped with %s: %s", self.component, type(e).__name__, e)
                if not fut.done():
                    fut.set_exception(e)
                self._fail_queued(i, e)
                raise
            except Exception as e:
                self.dropped += 1
                log.warning("events: could not write %s %s: %s", ev.get("reason"), ev["metadata"].get("name"), e)
                if not fut.done():
                    fut.set_result(None)
            finally:
                queue.task_done()
                self._queued -= 1
                self._pending[i] -= 1
                if self._queued == 0 and self._overflow:
                    log.warning("events: %s's queue is written out; %d events were dropped while it was full",
                                self.component, self._overflow)
                    self._overflow = 0

    def _fail_queued(self, i: int, e: BaseException) -> None:
        """Resolve every Event still queued on writer ``i``, which ends with ``e`` (a FATAL_TYPES
        error), with ``e``: no caller awaiting one waits for ever, and flush() does not wait on
        them."""
        queue = self._queues[i]
        assert queue is not None
        while not queue.empty():
            _, _, fut = queue.get_nowait()
            if not fut.done():
                fut.set_exception(e)
            queue.task_done()
            self._queued -= 1
            self._pending[i] -= 1

    async def _write(self, action: str, ev: Obj) -> Obj:
        """Create or patch ``ev``. A create whose name another recorder took in the same clock tick
        (two objects of one name, e.g. a RayJob and its submitter Job, on a virtual clock where
        ticks repeat) is retried under this recorder's next nanosecond name, which later patches
        follow."""
        name = ev["metadata"]["name"]
        ev["metadata"]["name"] = self._renamed.get(name, name)
        if action == "patch":
            patch = {"count": ev["count"], "lastTimestamp": ev["lastTimestamp"], "message": ev["message"]}
            try:
                return await self.client.patch(
                    EVENT, ev["metadata"]["name"], patch, ev["metadata"]["namespace"], patch_type="merge"
                )
            except Exception as e:
                if not is_not_found(e):
                    raise
                # the Event was deleted (TTL): create it again under its name
        for _ in range(NAME_CLASH_RETRIES):
            try:
                return await self.client.create(ev)
            except Exception as e:
                if not is_already_exists(e) or action == "patch":
                    raise
            new = f"{ev['involvedObject']['name']}.{self._nanos(self.clock.now()):x}"
            self._renamed[name] = ev["metadata"]["name"] = new
        return await self.client.create(ev)
