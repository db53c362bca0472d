"""The project clock: the only source of time in pumice.

Every component takes a :class:`Clock`. :class:`LoopClock` reads the running asyncio loop's
``time()``, so under ``looptime`` (the simulated mode and tests) the whole system runs on virtual
time, and on a normal loop ``now()`` is the wall clock itself. :class:`FakeClock` is for unit tests of pure
code that needs a settable "now".

Units: seconds (float) everywhere. ``now()`` is seconds since the Unix epoch; ``monotonic()`` is
seconds on an arbitrary monotonic origin.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import time as _time
import weakref
from asyncio import _get_running_loop
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pumice._util.gotime import seconds as _gotime_seconds


class Clock(Protocol):
    """What components need from time."""

    def now(self) -> float:
        """Seconds since the Unix epoch (UTC)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a monotonic origin; only differences are meaningful."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the calling task for ``seconds`` of this clock's time."""
        ...


class LoopClock:
    """Clock over the asyncio loop's time.

    ``now()``:

    - on a normal loop, or with no running loop: the wall clock, ``time.time()``, read at each call
      (it never lags the wall clock, whenever the clock was made or first used);
    - on a looptime loop with time compaction on: virtual time. With ``epoch`` given, ``now()`` is
      ``epoch + loop.time()`` (the simulator starts its loop at 0, so ``epoch`` is the simulated
      start); without it, each such loop is anchored once, at the first call that sees it, to the
      wall time of that moment, and virtual time counts on from there.

    ``monotonic()`` is the running loop's ``time()`` (virtual under looptime), or ``time.monotonic()``
    with no running loop.

    Args:
        epoch: seconds since the Unix epoch that loop time 0 stands for under looptime; ``None``
            anchors each looptime loop at the wall time when this clock first sees it.
    """

    def __init__(self, epoch: float | None = None) -> None:
        self._epoch = epoch
        self._anchors: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, float] = (
            weakref.WeakKeyDictionary()
        )
        self._pinned: asyncio.AbstractEventLoop | None = None

    @property
    def epoch(self) -> float | None:
        """The epoch loop time 0 stands for under looptime, or ``None`` (anchored at first sight)."""
        return self._epoch

    def pin(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Declare ``loop`` a looptime loop whose time compaction stays on for as long as it is
        pinned (the simulator's loop, for its run), so ``now()`` on it is ``epoch + loop.time()``
        without asking the loop each time (the clock is read about 190 times per simulated job).
        Needs ``epoch``. ``None`` unpins (the simulator does at the end of its run).

        Raises:
            ValueError: ``loop`` given on a clock without an epoch.
        """
        if loop is not None and self._epoch is None:
            raise ValueError("LoopClock.pin needs a clock with an epoch")
        self._pinned = loop

    def monotonic(self) -> float:
        loop = _get_running_loop()
        return _time.monotonic() if loop is None else loop.time()

    def now(self) -> float:
        loop = _get_running_loop()
        if loop is self._pinned and loop is not None:
            return self._epoch + loop.time()  # type: ignore[operator]  # pin() checked the epoch
        if loop is None:
            return _time.time()
        if not getattr(loop, "looptime_on", False):
            return _time.time()
        loop_time = loop.time()
        if self._epoch is not None:
            return self._epoch + loop_time
        offset = self._anchors.get(loop)
        if offset is None:
            offset = _time.time() - loop_time
            self._anchors[loop] = offset
        return offset + loop_time

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """A settable clock for unit tests of pure code. ``sleep`` advances time without waiting."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self._now = now
        self._mono = 0.0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        self._now += seconds
        self._mono += seconds

    async def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)


_default: Clock = LoopClock()


def default_clock() -> Clock:
    """The process-wide clock used when a component is not given one."""
    return _default


def set_default_clock(clock: Clock) -> None:
    """Replace the process-wide clock (the simulator does this once at start)."""
    global _default
    _default = clock


async def run_every(clock: Clock, interval: float, pass_: Callable[[], Awaitable[Any]], *,
                    wait_first: bool = False) -> None:
    """Await ``pass_()`` every ``interval`` seconds on ``clock`` (the first pass at once, or after
    one interval with ``wait_first``), each interval counted from the end of the last pass, until
    cancelled; an exception of a pass ends the loop with it (a pass that retries its failures
    catches them itself).

    Mirrors: k8s.io/apimachinery pkg/util/wait Until (sliding, no jitter)."""
    if wait_first:
        await clock.sleep(interval)
    while True:
        await pass_()
        await clock.sleep(interval)


_RFC3339: dict[int, str] = {}  # whole second -> its text (writes stamp the same seconds often)
_RFC3339_DAYS: dict[int, str] = {}  # whole UTC day since the epoch -> its ``YYYY-MM-DDT`` text


def rfc3339(ts: float) -> str:
    """Format epoch seconds as Kubernetes' metav1.Time: ``2024-01-02T03:04:05Z`` (second precision)."""
    key = int(ts)
    out = _RFC3339.get(key)
    if out is None:
        if len(_RFC3339) >= 4096:
            _RFC3339.clear()
        day, sec = divmod(key, 86400)
        date = _RFC3339_DAYS.get(day)
        if date is None:
            if len(_RFC3339_DAYS) >= 4096:
                _RFC3339_DAYS.clear()
            # the day's text as the whole second's would begin (a second past the day's range
            # raises here as there)
            date = _RFC3339_DAYS[day] = _dt.datetime.fromtimestamp(day * 86400, tz=_dt.UTC).strftime("%Y-%m-%dT")
        hour, sec = divmod(sec, 3600)
        minute, sec = divmod(sec, 60)
        out = _RFC3339[key] = f"{date}{hour:02d}:{minute:02d}:{sec:02d}Z"
    return out


def rfc3339_micro(ts: float) -> str:
    """Format epoch seconds as metav1.MicroTime: ``2024-01-02T03:04:05.123456Z``."""
    return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(value: str) -> float:
    """Parse a metav1.Time / MicroTime string into epoch seconds, as Go's ``time.Parse(time.RFC3339)``
    reads it: the one time reader, the same rule the API server checks built-in kinds' metav1.Time
    fields with (:func:`pumice._util.gotime.seconds`), so what was stored there can always be read
    (a ``+24:00`` offset, year 0, a one-digit hour) and nothing else is (a bare date, the basic
    format ``20240102T...``, spaces around it). A custom resource's ``format: date-time`` field is
    checked by kube-openapi's looser rule, which also takes a lower-case ``t``/``z``
    (``2024-01-01t00:00:00z``): such a value is refused here, as Go's clients refuse to decode it.

    Raises:
        ValueError: Go's error text (``parsing time "bogus" as "2006-01-02T15:04:05Z07:00":
            cannot parse "bogus" as "2006"``).
    """
    return _gotime_seconds(value)
