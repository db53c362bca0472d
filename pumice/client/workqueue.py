"""Work queues for controllers: deduplicating, delaying and rate limited.

A controller's event handlers put *keys* (usually :class:`pumice.runtime.Request`) into a
:class:`RateLimitingQueue`; workers take them with :meth:`RateLimitingQueue.get`, reconcile, and
call :meth:`RateLimitingQueue.done`. The queue guarantees, as client-go's workqueue does:

- **dedup**: an item added several times before a worker takes it is processed once;
- **exclusivity**: an item is never handed to two workers at once; an item added while it is
  being processed is queued again when the worker calls ``done``;
- **fairness**: items come out in the order they were (first) added;
- **delays**: :meth:`~RateLimitingQueue.add_after` keeps the earliest pending ready time per item;
- **rate limiting**: :meth:`~RateLimitingQueue.add_rate_limited` asks the rate limiter for a delay
  (per-item exponential backoff combined with a global token bucket by default).

Time comes only from the injected :class:`pumice._util.clock.Clock` (monotonic seconds); delayed
items wait with ``clock.sleep``, so the queue runs on virtual time under ``looptime``. (With a
:class:`~pumice._util.clock.FakeClock`, whose ``sleep`` advances time at once, delays elapse
immediately: use looptime to test timing.)

Metrics (prometheus_client, default registry, label ``name``): ``workqueue_depth``,
``workqueue_adds_total``, ``workqueue_queue_duration_seconds``,
``workqueue_work_duration_seconds``, ``workqueue_retries_total``,
``workqueue_unfinished_work_seconds``, ``workqueue_longest_running_processor_seconds`` (the
depth and the last two computed at scrape time from the most recent queue of that name, so an
add or a get costs no gauge update).

Mirrors: client-go util/workqueue (queue.go, delaying_queue.go, rate_limiting_queue.go,
default_rate_limiters.go, metrics.go).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from prometheus_client import Gauge

from pumice._util.clock import Clock, default_clock
from pumice._util.metrics import TallyCounter, TallyHistogram
from pumice._util.waiters import WaiterLine

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "QueueShutDown",
    "RateLimiter",
    "RateLimitingQueue",
    "default_controller_rate_limiter",
]

_BUCKETS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)

WORKQUEUE_DEPTH = Gauge("workqueue_depth", "Current depth of workqueue", ["name"])
# updated on every add, get and done: plain numbers, scraped as prometheus_client's Counter/Histogram
WORKQUEUE_ADDS = TallyCounter("workqueue_adds", "Total number of adds handled by workqueue", ["name"])
WORKQUEUE_QUEUE_DURATION = TallyHistogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name"], _BUCKETS,
)
WORKQUEUE_WORK_DURATION = TallyHistogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes",
    ["name"], _BUCKETS,
)
WORKQUEUE_RETRIES = TallyCounter("workqueue_retries", "Total number of retries handled by workqueue", ["name"])
WORKQUEUE_UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads.", ["name"],
)
WORKQUEUE_LONGEST_RUNNING = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.", ["name"],
)


class QueueShutDown(Exception):
    """Raised by :meth:`RateLimitingQueue.get` once the queue is shut down and drained."""


# --------------------------------------------------------------------------------------------
# Rate limiters
# --------------------------------------------------------------------------------------------


class RateLimiter(Protocol[T_contra]):
    """How long to wait before an item may be retried.

    Mirrors: client-go util/workqueue/default_rate_limiters.go TypedRateLimiter.
    """

    def when(self, item: T_contra) -> float:
        """Delay in seconds before ``item`` may be processed again; counts one failure."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item`` (it succeeded or was given up on)."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures of ``item`` are being tracked."""
        ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """Per-item exponential backoff: ``base_delay * 2**failures``, capped at ``max_delay``.

    Args:
        base_delay: first delay in seconds (controller-runtime default 0.005).
        max_delay: cap in seconds (controller-runtime default 1000).

    Mirrors: client-go default_rate_limiters.go ItemExponentialFailureRateLimiter.
    """

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay <= 0 or max_delay < base_delay:
            raise ValueError(f"need 0 < base_delay <= max_delay, got {base_delay}, {max_delay}")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp > 1023:  # 2**exp would overflow a float; the cap applies long before
            return self.max_delay
        return min(self.base_delay * (2.0**exp), self.max_delay)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter(Generic[T]):
    """A global token bucket shared by all items: ``qps`` tokens per second, ``burst`` capacity.

    Each :meth:`when` reserves one token and returns how long until that token exists (0 while the
    bucket holds tokens), like ``golang.org/x/time/rate.Limiter.Reserve().Delay()``.

    Mirrors: client-go default_rate_limiters.go BucketRateLimiter.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"need qps > 0 and burst >= 1, got {qps}, {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock or default_clock()
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, item: T) -> float:
        now = self._clock.monotonic()
        if self._last is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: T) -> None:
        return None

    def num_requeues(self, item: T) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """The longest delay of several limiters (every limiter counts the failure).

    Mirrors: client-go default_rate_limiters.go MaxOfRateLimiter.
    """

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


#: seconds within which a delayed item counts as ready (far below any delay a caller asks for)
_DUE_SLACK = 1e-9


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter[Hashable]:
    """Per-item backoff 5 ms .. 1000 s combined with a 10 qps / burst 100 token bucket.

    Mirrors: client-go default_rate_limiters.go DefaultTypedControllerRateLimiter.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )


# --------------------------------------------------------------------------------------------
# The queue
# --------------------------------------------------------------------------------------------


class RateLimitingQueue(Generic[T]):
    """A deduplicating, delaying, rate-limited FIFO of hashable items for async workers.

    Args:
        name: metrics label and log name (e.g. the controller name).
        rate_limiter: defaults to :func:`default_controller_rate_limiter`.
        clock: time source for delays and metrics; defaults to the process clock.
        keep_metrics: count client-go's work queue metrics (adds, retries, queue and work
            durations, depth and in-progress gauges). Without them no item's times are read or
            kept, and the queue registers no gauge: for a process that serves no metrics (a
            simulation).

    Worker loop::

        while True:
            try:
                item = await queue.get()
            except QueueShutDown:
                return
            try:
                ...  # process; then queue.forget(item) or queue.add_rate_limited(item)
            finally:
                queue.done(item)

    ``add``/``add_after``/``add_rate_limited``/``forget``/``done``/``shutdown`` are synchronous and
    safe to call from event handlers. ``add_after`` needs a running event loop (it starts the
    delay task). All adds after :meth:`shutdown` are ignored.

    Mirrors: client-go util/workqueue Typed(RateLimiting|Delaying)Interface.
    """

    def __init__(
        self, name: str, *, rate_limiter: RateLimiter[T] | None = None, clock: Clock | None = None,
        keep_metrics: bool = True,
    ) -> None:
        self.name = name
        self._clock = clock or default_clock()
        self.rate_limiter: RateLimiter[T] = rate_limiter or default_controller_rate_limiter(self._clock)  # type: ignore[assignment]
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._added_at: dict[T, float] = {}
        self._started_at: dict[T, float] = {}
        self._shutting_down = False
        # workers waiting in get(), oldest first: an item made ready wakes one of them (an
        # asyncio.Event would wake every idle worker for each item, all but one to find nothing)
        self._getters = WaiterLine()
        # delaying part: heap of (ready_at monotonic, seq, item); _waiting: item -> ready_at
        self._heap: list[tuple[float, int, T]] = []
        self._waiting: dict[T, float] = {}
        self._seq = itertools.count()
        self._heap_changed = asyncio.Event()
        self._delay_task: asyncio.Task[None] | None = None
        self.keep_metrics = keep_metrics
        if keep_metrics:
            self._adds = WORKQUEUE_ADDS.labels(name)
            self._queue_duration = WORKQUEUE_QUEUE_DURATION.labels(name)
            self._work_duration = WORKQUEUE_WORK_DURATION.labels(name)
            self._retries = WORKQUEUE_RETRIES.labels(name)
            WORKQUEUE_DEPTH.labels(name).set_function(self.__len__)
            WORKQUEUE_UNFINISHED_WORK.labels(name).set_function(self.unfinished_work_seconds)
            WORKQUEUE_LONGEST_RUNNING.labels(name).set_function(self.longest_running_seconds)

    # -- basic queue ---------------------------------------------------------------------

    def add(self, item: T) -> None:
        """Queue ``item`` now unless it is already queued (dedup) or being processed (then it is
        queued again on :meth:`done`). Ignored after shutdown."""
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if self.keep_metrics:
            self._adds.inc()
            if item not in self._added_at:
                self._added_at[item] = self._clock.monotonic()
        if item in self._processing:
            return
        self._queue.append(item)
        if self._getters:
            self._getters.wake_one()

    def __len__(self) -> int:
        """Number of items ready to be handed out (not counting delayed or in-process ones)."""
        return len(self._queue)

    async def get(self) -> T:
        """Wait for the next item and mark it as being processed. Waiting workers are woken one
        per item made ready, oldest first; a woken worker that finds the queue empty (another
        took the item) waits again.

        Raises:
            QueueShutDown: after :meth:`shutdown` once no ready item is left.
        """
        while not self._queue:
            if self._shutting_down:
                raise QueueShutDown(self.name)
            waiter = self._getters.enter()
            try:
                await waiter
            except BaseException:
                self._getters.leave(waiter, self._queue)
                raise
        item = self._queue.popleft()
        if self.keep_metrics:
            now = self._clock.monotonic()
            added = self._added_at.pop(item, None)
            if added is not None:
                self._queue_duration.observe(max(0.0, now - added))
            self._started_at[item] = now
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def started_at(self, item: T) -> float | None:
        """The clock's monotonic time at which a worker took ``item`` (None when not processing,
        or without :attr:`keep_metrics`)."""
        return self._started_at.get(item)

    def done(self, item: T, *, now: float | None = None) -> None:
        """Mark ``item`` finished; if it was added again meanwhile, queue it again. ``now``: the
        clock's monotonic time, when the caller has just read it (read here otherwise)."""
        started = self._started_at.pop(item, None)
        if started is not None:
            self._work_duration.observe(max(0.0, (self._clock.monotonic() if now is None else now) - started))
        if item not in self._processing:
            return  # a stray or repeated done(): never queue an item twice
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            if self._getters:
                self._getters.wake_one()

    def shutdown(self) -> None:
        """Stop accepting items, drop delayed ones, and wake every waiting :meth:`get` (which
        drains the ready items, then raises :class:`QueueShutDown`)."""
        self._shutting_down = True
        self._getters.wake_all()
        self._heap.clear()
        self._waiting.clear()
        if self._delay_task is not None:
            self._delay_task.cancel()
            self._delay_task = None

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def is_processing(self, item: T) -> bool:
        """True while a worker holds ``item`` (between get and done)."""
        return item in self._processing

    def delayed(self) -> int:
        """Number of items waiting in :meth:`add_after`."""
        return len(self._waiting)

    def unfinished_work_seconds(self) -> float:
        """Sum of the seconds the items now being processed have been running."""
        now = self._clock.monotonic()
        return sum(now - t for t in self._started_at.values())

    def longest_running_seconds(self) -> float:
        """Seconds the longest-running item in process has been running (0 when idle)."""
        if not self._started_at:
            return 0.0
        return self._clock.monotonic() - min(self._started_at.values())

    # -- delaying ------------------------------------------------------------------------

    def add_after(self, item: T, seconds: float) -> None:
        """Add ``item`` after ``seconds`` (immediately when ``seconds <= 0``).

        If ``item`` is already waiting, the earlier ready time wins. Ignored after shutdown.
        """
        if self._shutting_down:
            return
        if seconds <= 0:
            self.add(item)
            return
        ready = self._clock.monotonic() + seconds
        current = self._waiting.get(item)
        if current is not None and current <= ready:
            return
        self._waiting[item] = ready
        heapq.heappush(self._heap, (ready, next(self._seq), item))
        self._heap_changed.set()
        if self._delay_task is None or self._delay_task.done():
            self._delay_task = asyncio.get_running_loop().create_task(
                self._run_delays(), name=f"workqueue-delay-{self.name}"
            )

    async def _run_delays(self) -> None:
        """Move delayed items whose ready time has come into the queue, sleeping until the next."""
        while not self._shutting_down:
            self._heap_changed.clear()
            now = self._clock.monotonic()
            # a ready time a float rounding error past ``now`` is due: sleeping 1e-17 s does not
            # move a virtual clock (looptime), and the loop would spin at that instant forever
            while self._heap and self._heap[0][0] <= now + _DUE_SLACK:
                ready, _, item = heapq.heappop(self._heap)
                if self._waiting.get(item) == ready:  # else a stale, superseded entry
                    del self._waiting[item]
                    self.add(item)
            if not self._heap:
                await self._heap_changed.wait()
                continue
            delay = self._heap[0][0] - now
            sleeper = asyncio.ensure_future(self._clock.sleep(delay))
            changed = asyncio.ensure_future(self._heap_changed.wait())
            try:
                await asyncio.wait({sleeper, changed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                changed.cancel()

    # -- rate limiting -------------------------------------------------------------------

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the rate limiter's delay (counts one retry)."""
        if self._shutting_down:
            return
        if self.keep_metrics:
            self._retries.inc()
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset ``item``'s failure count in the rate limiter (call after a success)."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """Failures of ``item`` tracked by the rate limiter."""
        return self.rate_limiter.num_requeues(item)
