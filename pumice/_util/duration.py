"""Go ``time.ParseDuration`` strings (``"1h30m"``, ``"90s"``, ``"500ms"``) in seconds.

Mirrors: Go time.ParseDuration (units ns, us, µs, ms, s, m, h; a sign; decimals).
"""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_go_duration(s: str) -> float:
    """Seconds from a Go duration string. ``"0"`` and ``""`` are 0.

    Raises:
        ValueError: not a Go duration (e.g. ``"10"`` without a unit, ``"1x"``).
    """
    s = s.strip()
    if s in ("0", ""):
        return 0.0
    sign = -1.0 if s.startswith("-") else 1.0
    body = s.lstrip("+-")
    pos, total = 0, 0.0
    while pos < len(body):
        m = _PART.match(body, pos)
        if not m:
            raise ValueError(f"invalid duration {s!r}")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def go_duration_string(seconds: float) -> str:
    """Seconds as Go's ``Duration.String()`` prints them (``"1m30s"``, ``"2.5s"``, ``"0s"``)."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    out = ""
    if h:
        out += f"{int(h)}h"
    if h or m:
        out += f"{int(m)}m"
    out += f"{s:.9f}".rstrip("0").rstrip(".") + "s"
    return sign + out
