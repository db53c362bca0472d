"""The project clock: the only source of time in pumice.

Every component takes a :class:`Clock`. :class:`LoopClock` reads the running asyncio loop's
``time()``, so under ``looptime`` (the simulated mode and tests) the whole system runs on virtual
time, and on a normal loop it runs on the wall clock. :class:`FakeClock` is for unit tests of pure
code that needs a settable "now".

Units: seconds (float) everywhere. ``now()`` is seconds since the Unix epoch; ``monotonic()`` is
seconds on an arbitrary monotonic origin.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import time as _time
from typing import Protocol


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

    ``now()`` is the wall time captured at construction plus the loop time elapsed since; under
    looptime the loop time is virtual, so ``now()`` advances virtually too. Outside a running loop
    it falls back to ``time.monotonic()`` for the elapsed part.
    """

    def __init__(self, epoch: float | None = None) -> None:
        self._epoch = _time.time() if epoch is None else epoch
        self._origin: float | None = None

    def monotonic(self) -> float:
        try:
            loop_time = asyncio.get_running_loop().time()
        except RuntimeError:
            loop_time = _time.monotonic()
        if self._origin is None:
            self._origin = loop_time
        return loop_time

    def now(self) -> float:
        t = self.monotonic()
        assert self._origin is not None
        return self._epoch + (t - self._origin)

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


def rfc3339(ts: float) -> str:
    """Format epoch seconds as Kubernetes' metav1.Time: ``2024-01-02T03:04:05Z`` (second precision)."""
    return _dt.datetime.fromtimestamp(int(ts), tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(ts: float) -> str:
    """Format epoch seconds as metav1.MicroTime: ``2024-01-02T03:04:05.123456Z``."""
    return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(value: str) -> float:
    """Parse a metav1.Time / MicroTime string into epoch seconds.

    Raises:
        ValueError: when ``value`` is not an RFC 3339 timestamp.
    """
    v = value.strip()
    if v.endswith("Z"):
        v = v[:-1] + "+00:00"
    return _dt.datetime.fromisoformat(v).timestamp()
