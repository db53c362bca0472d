"""EventRecorder: write core/v1 Events about objects, correlated like client-go's recorder.

``recorder.event(obj, "Normal" | "Warning", reason, message)`` returns at once; the write happens
in order on a background task (await the returned future, or :meth:`EventRecorder.flush`, to wait
for it). Before writing, each event goes through client-go's EventCorrelator:

1. **spam filter**: per (source, involved object) token bucket, burst 25, one token per 300 s;
   an event without a token is dropped;
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

__all__ = ["EVENT_TYPES", "EventRecorder"]


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
    """

    def __init__(
        self, client: KubeClient, component: str, *, clock: Clock | None = None, host: str = "",
        instance: str = "",
    ) -> None:
        self.client = client
        self.component = component
        self.clock = clock or default_clock()
        self.host = host
        self.instance = instance
        self._aggregates: _LRU = _LRU(MAX_LRU_CACHE_ENTRIES)
        self._observed: _LRU = _LRU(MAX_LRU_CACHE_ENTRIES)
        self._spam: _LRU = _LRU(MAX_LRU_CACHE_ENTRIES)
        self._queue: asyncio.Queue[tuple[str, Obj, asyncio.Future[Obj | None]]] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._last_nanos = 0
        self._renamed: dict[str, str] = {}
        """Event name -> the name it was created under after a name clash (see :meth:`_write`)."""
        self.dropped = 0
        """Events dropped by the spam filter or after failed writes."""

    # -- public ------------------------------------------------------------------------------

    def event(self, obj: Obj, type: str, reason: str, message: str) -> asyncio.Future[Obj | None]:
        """Record an event about ``obj`` (a wire-form object with apiVersion, kind, metadata).

        Returns a future resolving to the written Event (None when dropped); awaiting it is
        optional. Needs a running event loop.

        Raises:
            ValueError: when ``type`` is not "Normal" or "Warning", or ``obj`` has no name.
        """
        if type not in EVENT_TYPES:
            raise ValueError(f"event type must be one of {EVENT_TYPES}, got {type!r}")
        md = obj.get("metadata") or {}
        if not md.get("name"):
            raise ValueError("event about an object without metadata.name")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Obj | None] = loop.create_future()
        action, ev = self._correlate(obj, type, reason, message)
        if action == "drop":
            self.dropped += 1
            fut.set_result(None)
            return fut
        if self._queue is None:
            self._queue = asyncio.Queue()
        self._queue.put_nowait((action, ev, fut))
        if self._writer is None or self._writer.done():
            # the writer is shared by every caller: a reconcile that first records an Event must
            # not pass it its cancel scope (the Events are still written after that reconcile stops)
            self._writer = loop.create_task(self._write_loop(), name=f"events-{self.component}",
                                            context=detached_context())
        return fut

    def eventf(self, obj: Obj, type: str, reason: str, fmt: str, *args: Any) -> asyncio.Future[Obj | None]:
        """:meth:`event` with ``fmt % args`` as the message."""
        return self.event(obj, type, reason, fmt % args if args else fmt)

    async def flush(self) -> None:
        """Wait until every event recorded so far has been written (or dropped)."""
        if self._queue is not None and self._writer is not None and not self._writer.done():
            await self._queue.join()

    async def close(self) -> None:
        """Flush, then stop the writer task."""
        with contextlib.suppress(Exception):
            await self.flush()
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
            self._writer = None

    # -- correlation (synchronous, so counts follow call order) ---------------------------------

    def _correlate(self, obj: Obj, etype: str, reason: str, message: str) -> tuple[str, Obj]:
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
                      involved["name"], involved["uid"], involved["apiVersion"])
        mono = self.clock.monotonic()
        # 1. spam filter
        bucket: _Bucket | None = self._spam.fetch(source_key)
        if bucket is None:
            bucket = _Bucket(float(SPAM_BURST), mono)
            self._spam.put(source_key, bucket)
        bucket.tokens = min(float(SPAM_BURST), bucket.tokens + (mono - bucket.last) * SPAM_QPS)
        bucket.last = mono
        if bucket.tokens < 1.0:
            return "drop", {}
        bucket.tokens -= 1.0
        # 2. aggregator
        agg_key = (*source_key, etype, reason, self.component, self.instance)
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
            self._observed.put(log_key, _Observation(1, ts, name))
            return "create", event
        seen.count += 1
        event["metadata"]["name"] = seen.name
        event["firstTimestamp"] = seen.first_timestamp
        event["count"] = seen.count
        return "patch", event

    def _nanos(self, now: float) -> int:
        n = int(now * 1e9)
        if n <= self._last_nanos:  # two events in the same clock tick: keep names unique
            n = self._last_nanos + 1
        self._last_nanos = n
        return n

    # -- writing ---------------------------------------------------------------------------------

    async def _write_loop(self) -> None:
        assert self._queue is not None
        while True:
            action, ev, fut = await self._queue.get()
            try:
                written = await self._write(action, ev)
                if not fut.done():
                    fut.set_result(written)
            except asyncio.CancelledError:
                if not fut.done():
                    fut.cancel()
                raise
            except Exception as e:
                self.dropped += 1
                log.warning("events: could not write %s %s: %s", ev.get("reason"), ev["metadata"].get("name"), e)
                if not fut.done():
                    fut.set_result(None)
            finally:
                self._queue.task_done()

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
