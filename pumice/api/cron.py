"""Cron schedules of CronJobs: the standard five fields (minute, hour, day of month, month, day
of week) with ``*``, lists, ranges, steps, month and weekday names, and the ``@hourly``-style
descriptors (``@yearly @annually @monthly @weekly @daily @midnight @hourly``) and ``@every
<Go duration>``, evaluated in a time zone (UTC unless the CronJob names one).

Mirrors: robfig/cron/v3 ParseStandard as the CronJob controller uses it (pkg/controller/cronjob
utils.go mostRecentScheduleTime/nextScheduleTime): a day-of-month and day-of-week that are both
restricted match when either matches; ``@every D`` is robfig's ConstantDelaySchedule (D truncated
to whole seconds, at least 1 s; the next activation is the current second plus D).
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from pumice._util.duration import parse_go_duration

__all__ = ["CronSchedule", "Every", "Schedule", "parse_schedule"]

_MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
           "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_NAMES = ("minute", "hour", "day of month", "month", "day of week")
_MONTHS = {m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}


def _value(text: str, index: int) -> int:
    t = text.lower()
    if index == 3 and t in _MONTHS:
        return _MONTHS[t]
    if index == 4 and t in _DAYS:
        return _DAYS[t]
    if not t.isdigit():
        raise ValueError(f"failed to parse int from {text}: invalid syntax")
    v = int(t)
    if index == 4 and v == 7:
        return 0
    return v


def _field(text: str, index: int) -> frozenset[int]:
    lo, hi = _RANGES[index]
    out: set[int] = set()
    for part in text.split(","):
        rng, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise ValueError(f"invalid step {step_text!r} in {_NAMES[index]} field {text!r}")
            step = int(step_text)
        if rng in ("*", "?"):
            a, b = lo, hi
        elif "-" in rng:
            x, _, y = rng.partition("-")
            a, b = _value(x, index), _value(y, index)
        else:
            a = _value(rng, index)
            b = hi if step_text else a
        if a < lo or b > hi or a > b:
            raise ValueError(f"{_NAMES[index]} field {text!r} is beyond {lo}-{hi}")
        out.update(range(a, b + 1, step))
    return frozenset(out)


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule; :meth:`next_after` gives the next activation."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    day_restricted: bool
    weekday_restricted: bool
    zone: str = "UTC"

    def _day_matches(self, d: _dt.datetime) -> bool:
        dom = d.day in self.days
        dow = (d.isoweekday() % 7) in self.weekdays
        if self.day_restricted and self.weekday_restricted:
            return dom or dow
        return dom and dow

    def next_after(self, t: float) -> float:
        """The first activation strictly after ``t`` (seconds since the epoch).

        Raises:
            ValueError: no activation within five years (e.g. February 30th).
        """
        tz = ZoneInfo(self.zone)
        d = _dt.datetime.fromtimestamp(int(t) // 60 * 60 + 60, tz)
        limit = d + _dt.timedelta(days=366 * 5)
        while d < limit:
            if d.month not in self.months:
                d = (d.replace(day=1, hour=0, minute=0) + _dt.timedelta(days=32)).replace(day=1)
                continue
            if not self._day_matches(d):
                d = (d + _dt.timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if d.hour not in self.hours:
                d = (d + _dt.timedelta(hours=1)).replace(minute=0)
                continue
            if d.minute not in self.minutes:
                d = d + _dt.timedelta(minutes=1)
                continue
            return d.timestamp()
        raise ValueError("the schedule has no activation in the next five years")


@dataclass(frozen=True)
class Every:
    """``@every <duration>``: activations ``delay`` seconds apart, counted from the second a
    time falls in (robfig ConstantDelaySchedule); the zone plays no part."""

    delay: int
    zone: str = "UTC"

    def next_after(self, t: float) -> float:
        """``t`` rounded down to the second, plus ``delay`` (seconds since the epoch)."""
        return float(math.floor(t) + self.delay)


CronSchedule = Schedule | Every
"""What :func:`parse_schedule` returns; both have ``next_after(t) -> float``."""


def parse_schedule(text: str, zone: str | None = None) -> CronSchedule:
    """Parse a cron schedule (``TZ=Zone`` / ``CRON_TZ=Zone`` prefixes are refused, as the
    CronJob API does; use ``spec.timeZone``).

    Args:
        text: five fields, a descriptor such as ``@hourly``, or ``@every 1h30m``.
        zone: an IANA zone name, or None / "" for UTC.
    Raises:
        ValueError: with robfig/cron-like wording (``unrecognized descriptor: @often``,
            ``failed to parse duration @every 5x: ...``, ``expected exactly 5 fields, ...``).
    Mirrors: robfig/cron/v3 parser.go ParseStandard/parseDescriptor, constantdelay.go Every.
    """
    s = text.strip()
    if s.startswith(("TZ=", "CRON_TZ=")):
        raise ValueError("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    if zone:
        try:
            ZoneInfo(zone)
        except Exception as e:
            raise ValueError(f"unknown time zone {zone}") from e
    if s.startswith("@every "):
        try:
            seconds = parse_go_duration(s[len("@every "):])
        except ValueError as e:
            raise ValueError(f"failed to parse duration {s}: {e}") from e
        return Every(max(1, int(seconds)), zone or "UTC")
    if s.startswith("@"):
        if s not in _MACROS:
            raise ValueError(f"unrecognized descriptor: {s}")
        s = _MACROS[s]
    fields = s.split()
    if len(fields) != 5:
        raise ValueError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    parsed = [_field(f, i) for i, f in enumerate(fields)]
    return Schedule(parsed[0], parsed[1], parsed[2], parsed[3], parsed[4], fields[2] not in ("*", "?"),
                    fields[4] not in ("*", "?"), zone or "UTC")
