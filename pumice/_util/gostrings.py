"""Go's quoting of strings, for texts that must read as upstream's (error messages, shell words),
and Go's integer parsing, for inputs that must take what upstream takes.

Mirrors: Go's strconv.Quote (``%q`` of a string), strconv.Atoi, strconv.ParseInt,
strconv.ParseUint and unicode.IsPrint.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

_ATOI = re.compile(r"[+-]?[0-9]+")
_DIGITS = re.compile(r"[0-9]+")
_BASE_DIGITS = {2: re.compile(r"[01]+"), 8: re.compile(r"[0-7]+"), 10: _DIGITS, 16: re.compile(r"[0-9a-fA-F]+")}
_PREFIX_BASES = {"0b": 2, "0o": 8, "0x": 16}
#: the most significant digits a 64-bit number has in each base (2**64 - 1: 20 decimal digits):
#: a text with more is out of range before it is converted, so ``int()`` never meets an unbounded
#: text (CPython refuses a decimal one over 4,300 digits with a ValueError of its own)
_MAX_DIGITS = {2: 64, 8: 22, 10: 20, 16: 16}

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def is_print(ch: str) -> bool:
    """Go's ``unicode.IsPrint`` of one character: letters, marks, numbers, punctuation, symbols and
    the ASCII space (what Python's ``str.isprintable`` accepts)."""
    return ch.isprintable()


def atoi(s: str, func: str = "Atoi") -> int:
    """``s`` as Go's ``strconv.Atoi`` (or, with ``func="ParseInt"``, ``strconv.ParseInt(s, 10,
    64)``) parses it: an optional sign and ASCII digits only (Python's ``int``/``str.isdigit`` also
    take other scripts' digits, ``_`` and spaces), within int64.

    Raises:
        ValueError: ``s`` is not such a number, or is out of the int64 range, with Go's text
            (``strconv.<func>: parsing "abc": invalid syntax``, ``... value out of range``).
    """
    if not _ATOI.fullmatch(s):
        raise ValueError(f"strconv.{func}: parsing {quote(s)}: invalid syntax")
    n = _bounded_int(s.lstrip("+-"), 10)
    if s[:1] == "-" and n is not None:
        n = -n
    if n is None or not -(2**63) <= n < 2**63:
        raise ValueError(f"strconv.{func}: parsing {quote(s)}: value out of range")
    return n


def parse_uint(s: str) -> int:
    """``s`` as Go's ``strconv.ParseUint(s, 10, 64)`` parses it: ASCII digits only (no sign),
    within uint64.

    Raises:
        ValueError: with Go's text (``strconv.ParseUint: parsing "-1": invalid syntax``,
            ``... value out of range``).
    """
    if not _DIGITS.fullmatch(s):
        raise ValueError(f"strconv.ParseUint: parsing {quote(s)}: invalid syntax")
    n = _bounded_int(s, 10)
    if n is None or n >= 2**64:
        raise ValueError(f"strconv.ParseUint: parsing {quote(s)}: value out of range")
    return n


def parse_int(s: str, base: int = 0, *, unsigned: bool = False) -> int | None:
    """``s`` as Go's ``strconv.ParseInt(s, base, 64)`` reads it (``unsigned``: ``ParseUint(s,
    base, 64)``, which takes no sign), or None where Go answers an error (invalid syntax, out of
    range). ``base``: 2, 8, 10 or 16, or 0 for the base the prefix gives (``0b``, ``0o``, ``0x`` in
    either case, a leading ``0`` for octal; else 10). Deviates: no ``_`` digit separators (Go takes
    them with base 0; go-yaml removes them before it parses).

    >>> parse_int("-0x1F"), parse_int("017"), parse_int("09"), parse_int("18446744073709551615", unsigned=True)
    (-31, 15, None, 18446744073709551615)
    """
    sign = s[:1] if s[:1] in ("+", "-") and not unsigned else ""
    body = s[len(sign):]
    if base == 0:
        base = _PREFIX_BASES.get(body[:2].lower(), 0) if len(body) >= 3 else 0
        if base:
            body = body[2:]
        elif body[:1] == "0":
            base, body = 8, body[1:] or "0"
        else:
            base = 10
    n = _bounded_int(body, base) if _BASE_DIGITS[base].fullmatch(body) else None
    if n is None:
        return None
    if sign == "-":
        n = -n
    if unsigned:
        return n if n < 2**64 else None
    return n if -(2**63) <= n < 2**63 else None


def _bounded_int(digits: str, base: int) -> int | None:
    """The value of ``digits`` (valid digits of ``base``, no sign), or None when it has more
    significant digits than a 64-bit number (out of range, found before converting)."""
    significant = digits.lstrip("0") or "0"
    return int(significant, base) if len(significant) <= _MAX_DIGITS[base] else None


def quote(s: str) -> str:
    """``s`` as Go's ``strconv.Quote`` (and so ``fmt``'s ``%q``) writes it: in double quotes,
    ``"`` and ``\\`` escaped, printable characters as they are, the seven C escapes as such, other
    characters as ``\\xHH`` (ASCII), ``\\uHHHH`` or ``\\UHHHHHHHH``.

    >>> quote('a "b"\\n\\x01é')
    '"a \\\\"b\\\\"\\\\n\\\\x01é"'
    """
    out = ['"']
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif is_print(ch):
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def sprint_v(value: object) -> str:
    """An untyped JSON value (``map[string]interface{}`` and what it holds) as Go's ``fmt`` ``%v``
    (and ``%+v``) prints it: ``map[k1:v1 k2:v2]`` with the keys sorted, ``[a b]``, strings bare,
    ``<nil>``, integers as integers and other numbers as ``%g`` (``1e+06``, ``1.5``).

    >>> sprint_v({"b": [1, "x"], "a": {"c": None, "d": 1.5}})
    'map[a:map[c:<nil> d:1.5] b:[1 x]]'
    """
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_g(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(sprint_v(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{sprint_v(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _go_g(f: float) -> str:
    """Go's ``%v`` of a float64 (``strconv.FormatFloat(f, 'g', -1, 64)``): the shortest digits,
    in exponent form (``1e+06``, ``1.5e-05``) when the decimal exponent is below -4 or at least 6."""
    if f != f:
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digits, exponent = Decimal(repr(f)).normalize().as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits))
    exp10 = len(ds) + exponent - 1
    neg = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if exponent >= 0:
        return neg + ds + "0" * exponent
    point = len(ds) + exponent
    return neg + (ds[:point] if point > 0 else "0") + "." + ("0" * -point if point < 0 else "") + ds[max(point, 0):]
