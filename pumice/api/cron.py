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
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from pumice._util.duration import parse_go_duration
from pumice._util.gostrings import atoi

__all__ = ["NEVER_FIRES", "CronSchedule", "Every", "NoActivation", "Schedule", "parse_schedule", "time_zone_errors"]

_MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
           "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_NAMES = ("minute", "hour", "day of month", "month", "day of week")
_MONTHS = {m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}


_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def _atoi(text: str) -> int:
    """Go strconv.Atoi (:func:`pumice._util.gostrings.atoi`) with robfig's mustParseInt
    wording and its refusal of a negative number."""
    try:
        v = atoi(text)
    except ValueError as e:
        raise ValueError(f"failed to parse int from {text}: {e}") from None
    if v < 0:
        raise ValueError(f"negative number ({v}) not allowed: {text}")
    return v


def _value(text: str, index: int) -> int:
    """parseIntOrName: a month or weekday name (any case) in those fields, else an integer."""
    names = _MONTHS if index == 3 else _DAYS if index == 4 else None
    if names is not None and text.lower() in names:
        return names[text.lower()]
    return _atoi(text)


def _field(text: str, index: int) -> tuple[frozenset[int], bool]:
    """The values of one field and whether it carries robfig's star bit (a ``*`` or ``?``
    range with no step above 1: such a day field does not restrict the day)."""
    lo, hi = _RANGES[index]
    out: set[int] = set()
    star = False
    for expr in (p for p in text.split(",") if p):
        range_and_step = expr.split("/")
        low_high = range_and_step[0].split("-")
        extra = False
        if low_high[0] in ("*", "?"):
            a, b = lo, hi
            extra = True
        else:
            a = _value(low_high[0], index)
            if len(low_high) == 1:
                b = a
            elif len(low_high) == 2:
                b = _value(low_high[1], index)
            else:
                raise ValueError(f"too many hyphens: {expr}")
        if len(range_and_step) == 1:
            step = 1
        elif len(range_and_step) == 2:
            step = _atoi(range_and_step[1])
            if len(low_high) == 1:  # "N/step" means "N-max/step"
                b = hi
            if step > 1:
                extra = False
        else:
            raise ValueError(f"too many slashes: {expr}")
        if a < lo:
            raise ValueError(f"beginning of range ({a}) below minimum ({lo}): {expr}")
        if b > hi:
            raise ValueError(f"end of range ({b}) above maximum ({hi}): {expr}")
        if a > b:
            raise ValueError(f"beginning of range ({a}) beyond end of range ({b}): {expr}")
        if step == 0:
            raise ValueError(f"step of range should be a positive number: {expr}")
        out.update(range(a, b + 1, step))
        star = star or extra
    return frozenset(out), star


NEVER_FIRES = "time difference between two schedules is less than 1 second"
"""How the CronJob controllers (kube-controller-manager's and Volcano's, utils
mostRecentScheduleTime) word a schedule that parses but never fires: robfig gives the zero time
for both of the next two activations, which are then 0 s apart."""


class NoActivation(ValueError):
    """A schedule that parses but never fires within five years of a time (``0 0 30 2 *``).

    robfig/cron's ``SpecSchedule.Next`` gives the zero time then; the CronJob controllers turn
    that into their ``InvalidSchedule`` event, so they catch this, not a plain ValueError.
    """


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
            NoActivation: no activation within five years (e.g. February 30th).
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
        raise NoActivation("the schedule has no activation in the next five years")


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
        zone: an IANA zone name, or None / "" for UTC; ``Local`` is UTC too (Go's
            LoadLocation answers the process's zone for it, and pumice keeps its schedules in
            UTC, the zone a schedule without one runs in: as kube-controller-manager in a UTC
            process). Validation refuses ``Local`` now; a CronJob stored before may have it.
    Raises:
        ValueError: with robfig/cron v3's wording (``unrecognized descriptor: @often``,
            ``failed to parse duration @every 5x: ...``, ``expected exactly 5 fields, ...``,
            ``end of range (61) above maximum (59): 61``); the day of week is 0-6 (``7`` is refused).
    Mirrors: robfig/cron/v3 parser.go ParseStandard/parseDescriptor, constantdelay.go Every.
    """
    if not text:
        raise ValueError("empty spec string")
    s = text.strip()
    if s.startswith(("TZ=", "CRON_TZ=")):
        raise ValueError("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    if zone == "Local":  # exactly: LoadLocation("local") is an unknown zone
        zone = None
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
    return Schedule(parsed[0][0], parsed[1][0], parsed[2][0], parsed[3][0], parsed[4][0], not parsed[2][1],
                    not parsed[4][1], zone or "UTC")


def time_zone_errors(zone: str) -> list[str]:
    """Why a CronJob's ``spec.timeZone`` is refused (empty when it is a zone).

    Each path part is 1-14 of letters, digits, ``.-_+`` (not ``.``, ``..`` or starting with
    ``-``), the zone is not ``Local`` (any case), and the IANA database knows it.
    Returns: upstream's messages, in its order (``timeZone must be nil or non-empty string``,
    ``unknown time zone X``, ``timeZone must be an explicit time zone as defined in
    https://www.iana.org/time-zones``).
    Mirrors: kubernetes pkg/apis/batch/validation validateTimeZone (time.LoadLocation, where
    ``Local`` loads and "" is UTC).
    """
    if zone == "":
        return ["timeZone must be nil or non-empty string"]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _ZONE_PART.fullmatch(part):
            return [f"unknown time zone {zone}"]
    errs = []
    if zone.lower() == "local":
        errs.append("timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")
    if zone != "Local":  # Go's LoadLocation takes exactly "Local"
        try:
            ZoneInfo(zone)
        except Exception:  # ZoneInfoNotFoundError, or ValueError for a key zoneinfo will not open
            errs.append(f"unknown time zone {zone}")
    return errs
