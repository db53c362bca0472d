"""Go's ``time.Parse`` errors for the two layouts Kubernetes decodes times with.

metav1.Time is decoded with ``time.Parse(time.RFC3339, s)``, metav1.MicroTime with
``time.Parse("2006-01-02T15:04:05.000000Z07:00", s)``; a string either refuses fails the JSON
decoding of the whole object, and its error text is Go's ``*time.ParseError``:
``parsing time "bogus" as "2006-01-02T15:04:05Z07:00": cannot parse "bogus" as "2006"``,
``parsing time "2026-13-45T99:00:00Z": month out of range``.

Mirrors: Go src/time/format.go (parse, skip, getnum, parseNanoseconds, ParseError.Error, quote),
k8s.io/apimachinery pkg/apis/meta/v1 time.go and micro_time.go (UnmarshalJSON).
"""

from __future__ import annotations

import re

__all__ = ["MICRO_LAYOUT", "RFC3339_LAYOUT", "parse_error", "parses", "seconds"]

RFC3339_LAYOUT = "2006-01-02T15:04:05Z07:00"
MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"

# the layouts as Go's nextStdChunk splits them: (literal prefix, std element)
_CHUNKS = {
    RFC3339_LAYOUT: (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"), ("", "Z07:00")),
    MICRO_LAYOUT: (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"), ("", ".000000"),
                   ("", "Z07:00")),
}

# strings that certainly parse (the common case, no error to build): whole-field shapes with
# ranges checked below
_FAST = {
    RFC3339_LAYOUT: re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:\d\d)", re.ASCII),
    MICRO_LAYOUT: re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)[.,]\d{6}(?:Z|[+-]\d\d:\d\d)", re.ASCII),
}
_FAST_ZONE = re.compile(r"[+-](\d\d):(\d\d)$", re.ASCII)  # ASCII: Go's digits are 0-9 only

_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class _Bad(Exception):
    """Go's errBad: the element does not parse."""


def _days_in(month: int, year: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _DAYS[month - 1]


def _quote(s: str) -> str:
    """Go time's quote: double quotes, ``"`` and ``\\`` escaped, non-ASCII and control bytes as ``\\xNN``."""
    out = ['"']
    for c in s:
        if c >= "\x80" or c < " ":
            out.extend(f"\\x{b:02x}" for b in c.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + c if c in '"\\' else c)
    out.append('"')
    return "".join(out)


def _isdigit(s: str, i: int) -> bool:
    return i < len(s) and "0" <= s[i] <= "9"


def _getnum(s: str, fixed: bool) -> tuple[int, str]:
    if not _isdigit(s, 0):
        raise _Bad
    if not _isdigit(s, 1):
        if fixed:
            raise _Bad
        return int(s[0]), s[1:]
    return int(s[:2]), s[2:]


def _skip(value: str, prefix: str) -> tuple[str, bool]:
    for ch in prefix:
        if not value or value[0] != ch:
            return value, False
        value = value[1:]
    return value, True


def _fast_ok(value: str, layout: str) -> bool:
    m = _FAST[layout].fullmatch(value)
    if m is None:
        return False
    year, month, day, hour, minute, sec = (int(g) for g in m.groups())
    if not (1 <= month <= 12 and 1 <= day <= _days_in(month, year) and hour < 24 and minute < 60 and sec < 60):
        return False
    z = _FAST_ZONE.search(value)
    return z is None or (int(z.group(1)) <= 24 and int(z.group(2)) <= 60)


#: strings known to parse, per layout (times repeat: one clock second stamps many objects);
#: emptied when it reaches _PARSED_MAX entries
_PARSED: dict[str, set[str]] = {RFC3339_LAYOUT: set(), MICRO_LAYOUT: set()}
_PARSED_MAX = 4096


def parses(value: str, layout: str = RFC3339_LAYOUT) -> bool:
    """Whether Go's ``time.Parse(layout, value)`` succeeds (:func:`parse_error` is None); a string
    that parsed before costs one set lookup."""
    seen = _PARSED[layout]
    if value in seen:
        return True
    if not _fast_ok(value, layout) and parse_error(value, layout) is not None:
        return False
    if len(seen) >= _PARSED_MAX:
        seen.clear()
    seen.add(value)
    return True


def parse_error(value: str, layout: str = RFC3339_LAYOUT) -> str | None:
    """The error of Go's ``time.Parse(layout, value)``, or None when it parses.

    Args:
        value: the JSON string of a metav1.Time (``layout`` :data:`RFC3339_LAYOUT`) or
            metav1.MicroTime (:data:`MICRO_LAYOUT`).

    Returns:
        None, or Go's ``ParseError.Error()`` text.
    """
    if _fast_ok(value, layout):
        return None
    qlayout, qvalue = _quote(layout), _quote(value)

    def cannot(elem_value: str, elem_layout: str) -> str:
        return f"parsing time {qvalue} as {qlayout}: cannot parse {_quote(elem_value)} as {_quote(elem_layout)}"

    rest = value
    year = month = day = 0
    for prefix, std in _CHUNKS[layout]:
        rest, ok = _skip(rest, prefix)
        if not ok:
            return cannot(rest, prefix)
        hold, range_err = rest, ""
        try:
            if std == "2006":
                if len(rest) < 4 or not _isdigit(rest, 0) or not rest[:4].isdigit() or not rest[:4].isascii():
                    raise _Bad
                year, rest = int(rest[:4]), rest[4:]
            elif std == "01":
                month, rest = _getnum(rest, True)
                range_err = "month" if not 1 <= month <= 12 else ""
            elif std == "02":
                day, rest = _getnum(rest, True)
            elif std == "15":
                hour, rest = _getnum(rest, False)
                range_err = "hour" if hour >= 24 else ""
            elif std == "04":
                minute, rest = _getnum(rest, True)
                range_err = "minute" if minute >= 60 else ""
            elif std == "05":
                sec, rest = _getnum(rest, True)
                if sec >= 60:
                    range_err = "second"
                elif layout == RFC3339_LAYOUT and len(rest) >= 2 and rest[0] in ".," and _isdigit(rest, 1):
                    n = 2
                    while _isdigit(rest, n):
                        n += 1
                    rest = rest[n:]
            elif std == ".000000":
                if len(rest) < 7 or rest[0] not in ".," or not (rest[1:7].isdigit() and rest[1:7].isascii()):
                    raise _Bad
                rest = rest[7:]
            else:  # Z07:00
                if rest[:1] == "Z":
                    rest = rest[1:]
                else:
                    if len(rest) < 6 or rest[3] != ":":
                        raise _Bad
                    sign, hh, mm, rest = rest[0], rest[1:3], rest[4:6], rest[6:]
                    bad = False
                    try:
                        hr, _ = _getnum(hh, True)
                        mi, _ = _getnum(mm, True)
                    except _Bad:
                        hr = mi = 0
                        bad = True
                    if hr > 24:
                        range_err = "time zone offset hour"
                    if mi > 60:
                        range_err = "time zone offset minute"
                    if (bad or sign not in "+-") and not range_err:
                        raise _Bad
        except _Bad:
            return cannot(hold, std)
        if range_err:
            return f"parsing time {qvalue}: {range_err} out of range"
    if rest:
        return f"parsing time {qvalue}: extra text: {_quote(rest)}"
    if day < 1 or day > _days_in(month, year):
        return f"parsing time {qvalue}: day out of range"
    return None


# the fields of a string Go's time.Parse(time.RFC3339) took (hour: one or two digits, getnum;
# any number of fraction digits; the zone Z or +hh:mm)
_FIELDS = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d?):(\d\d):(\d\d)(?:[.,](\d+))?(?:Z|([+-])(\d\d):(\d\d))", re.ASCII)

#: seconds of strings read before (one clock second stamps many objects), and day numbers of
#: dates; each emptied at _PARSED_MAX entries
_SECONDS: dict[str, float] = {}
_DAY_NUMBERS: dict[tuple[int, int, int], int] = {}


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (year 0 included, as Go's)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def seconds(value: str) -> float:
    """Epoch seconds of a metav1.Time or MicroTime string, read as Go's ``time.Parse(time.RFC3339,
    value)`` reads it (what the API server lets be stored in a built-in kind's metav1.Time field:
    year 0, a one-digit hour, a ``,`` before the fraction, a ``+24:00`` offset); the fraction kept
    to the nanosecond, then a float. Not the rule for a custom resource's ``format: date-time``
    (kube-openapi's, which also takes ``2024-01-01t00:00:00z``: refused here, as by Go's decode).

    Raises:
        ValueError: Go's ``time.Parse`` error text (``parsing time "bogus" as
            "2006-01-02T15:04:05Z07:00": cannot parse "bogus" as "2006"``).
    """
    out = _SECONDS.get(value)
    if out is not None:
        return out
    m = _FIELDS.fullmatch(value)
    if m is None:
        raise ValueError(parse_error(value) or f"parsing time {_quote(value)}: cannot parse")
    ys, mos, ds, hs, mis, ss, frac, sign, oh, om = m.groups()
    year, month, day, hour, minute, sec = int(ys), int(mos), int(ds), int(hs), int(mis), int(ss)
    if not (0 < month < 13 and 0 < day <= (_DAYS[month - 1] if month != 2 else _days_in(2, year)) and hour < 24
            and minute < 60 and sec < 60 and (sign is None or (int(oh) <= 24 and int(om) <= 60))):
        raise ValueError(parse_error(value) or f"parsing time {_quote(value)}: out of range")
    days = _DAY_NUMBERS.get((year, month, day))
    if days is None:
        if len(_DAY_NUMBERS) >= _PARSED_MAX:
            _DAY_NUMBERS.clear()
        days = _DAY_NUMBERS[year, month, day] = _days_from_civil(year, month, day)
    out = float(days * 86400 + hour * 3600 + minute * 60 + sec)
    if sign is not None:
        offset = int(oh) * 3600 + int(om) * 60
        out -= offset if sign == "+" else -offset
    if frac:
        out += int(frac[:9].ljust(9, "0")) / 1e9
    if len(_SECONDS) >= _PARSED_MAX:
        _SECONDS.clear()
    _SECONDS[value] = out
    return out
