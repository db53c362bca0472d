"""Go ``time.ParseDuration`` strings (``"1h30m"``, ``"90s"``, ``"500ms"``) in seconds.

Mirrors: Go time.ParseDuration (src/time/format.go): units ns, us, µs (U+00B5), μs (U+03BC), ms,
s, m, h; one leading sign; decimals; the sum must fit an int64 of nanoseconds (about 292 years);
errors ``time: invalid duration "<s>"``, ``time: missing unit in duration "<s>"`` and ``time:
unknown unit "<u>" in duration "<s>"``, quoted as Go's time package quotes them.
"""

from __future__ import annotations

_UNIT_NS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
            "m": 60_000_000_000, "h": 3_600_000_000_000}
_MAX = 1 << 63  # |int64 min|: the most a negative duration's magnitude may be


def _go_quote(s: str) -> str:
    """``s`` in double quotes as Go's time package quotes it in errors: ``"`` and ``\\`` escaped,
    each byte of a non-ASCII or control character as ``\\xHH``."""
    out = ['"']
    for ch in s:
        if ch < " " or ord(ch) >= 0x80:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))
        elif ch in '"\\':
            out.append("\\" + ch)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def parse_go_duration_ns(s: str) -> int:
    """Nanoseconds (an int64) from a Go duration string, exactly as Go's ``time.ParseDuration``.

    Raises:
        ValueError: not a Go duration, with Go's error text: ``time: invalid duration "h1"``
            (also for ``""`` and for a value beyond int64 nanoseconds, e.g. ``"3000000h"``),
            ``time: missing unit in duration "10"``, ``time: unknown unit "x" in duration "1x"``.
    """
    orig = s
    invalid = ValueError(f"time: invalid duration {_go_quote(orig)}")
    neg = False
    if s[:1] in ("-", "+"):
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise invalid
    total = 0
    i, n = 0, len(s)
    while i < n:
        if not (s[i] == "." or "0" <= s[i] <= "9"):
            raise invalid
        j = i
        v = 0
        while j < n and "0" <= s[j] <= "9":
            if v > _MAX // 10:
                raise invalid
            v = v * 10 + ord(s[j]) - 48
            if v > _MAX:
                raise invalid
            j += 1
        pre = j > i
        f, scale, post = 0, 1.0, False
        if j < n and s[j] == ".":
            j += 1
            k = j
            overflow = False
            while j < n and "0" <= s[j] <= "9":
                if not overflow:
                    if f > (_MAX - 1) // 10 or f * 10 + ord(s[j]) - 48 > _MAX:
                        overflow = True  # Go stops taking precision here, without an error
                    else:
                        f, scale = f * 10 + ord(s[j]) - 48, scale * 10
                j += 1
            post = j > k
        if not pre and not post:
            raise invalid
        k = j
        while j < n and not (s[j] == "." or "0" <= s[j] <= "9"):
            j += 1
        if j == k:
            raise ValueError(f"time: missing unit in duration {_go_quote(orig)}")
        unit = _UNIT_NS.get(s[k:j])
        if unit is None:
            raise ValueError(f"time: unknown unit {_go_quote(s[k:j])} in duration {_go_quote(orig)}")
        if v > _MAX // unit:
            raise invalid
        v *= unit
        if f > 0:
            v += int(float(f) * (float(unit) / scale))
            if v > _MAX:
                raise invalid
        total += v
        if total > _MAX:
            raise invalid
        i = j
    if neg:
        return -total
    if total > _MAX - 1:
        raise invalid
    return total


def parse_go_duration(s: str) -> float:
    """Seconds from a Go duration string (:func:`parse_go_duration_ns` / 1e9).

    Raises:
        ValueError: not a Go duration (Go's error text, see :func:`parse_go_duration_ns`).
    """
    return parse_go_duration_ns(s) / 1e9


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
