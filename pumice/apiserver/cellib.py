"""Kubernetes' CEL libraries for CRD validation rules, as Python functions registered with the
``common-expression-language`` interpreter.

:data:`FUNCTIONS` maps a CEL function name (``quantity``, ``isGreaterThan``, ``format.dns1123Label``
...) to its implementation; :func:`functions_for` picks the ones a compiled rule references, so a
rule that calls none of them is evaluated exactly as before (no per-write cost). The interpreter
calls ``x.f(a)`` as ``f(x, a)``, so one Python function serves every overload of a name and
dispatches on its arguments (``indexOf`` on a string or a list, ``ip`` of a string or of a CIDR).

Kubernetes' own types (Quantity, URL, IP, CIDR, Format) cannot be handed to the interpreter as
Python objects, so each is a one-key map ``{"\\x00kubernetes.Quantity": "<exact value>"}`` whose
value is canonical: two such values are ``==`` exactly when upstream's ``Equal`` says so
(``quantity("1") == quantity("1000m")``, ``ip("::1") == ip("0::1")``).

Errors: a function that fails raises :class:`CelError`, whose text is upstream's
(``quantities must match the regular expression '...'``, ``URL parse error during conversion from
string: parse "x": invalid URI for request``, ``no such overload`` for arguments of the wrong
type); :func:`take_error` gives the last one to the rule evaluator, which reports it as
kube-apiserver does (``<error> evaluating rule: <rule>``).

Mirrors: k8s.io/apiserver pkg/cel/library (quantity.go, urls.go, ip.go, cidr.go, regex.go,
lists.go, format.go) and the cel-go extensions kube-apiserver's base environment adds: strings
version 2 (``charAt`` ... ``join``, ``format`` with cel-go's first formatter, ``strings.quote``;
index semantics of cel-go >= 0.22) and sets. Beyond that environment (as read at
pkg/cel/environment/base.go; the brief asked for them): string ``reverse`` (strings version 3)
and the cel-go list extensions ``slice``, ``flatten``, ``distinct``, ``reverse``, so a rule using
them is evaluated here where that kube-apiserver refuses it at create.

Deviates: ``string(ip)`` / ``string(cidr)`` are not available (the interpreter's ``string`` cannot
be overloaded): a rule using them is refused at evaluation with ``no such overload``; quantity
``mul``/``div``/``divInt``, semver and authz are not there (such a rule is skipped with a
warning); IP parse errors say ``unable to parse IP`` where Go's parser sometimes names the exact
fault; regular expressions are Python's ``re`` standing in for RE2; ``format`` (the string
method) covers ``%s %d %f %e %b %o %x %X %%`` with an optional precision.
"""

from __future__ import annotations

import base64
import binascii
import functools
import ipaddress
import json
import logging
import math
import re
import threading
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any
from urllib.parse import parse_qs, quote

import cel

from pumice._util.goregexp import compile_error
from pumice.api.quantity import ERR_FORMAT_WRONG, SPLIT_RE_STRING, QuantityError, parse_quantity
from pumice.api.validation import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
    mask_trailing_dash,
)

__all__ = ["FUNCTIONS", "CelError", "functions_for", "take_error"]

QUANTITY = "\x00kubernetes.Quantity"
URL = "\x00kubernetes.URL"
IP = "\x00net.IP"
CIDR = "\x00net.CIDR"
FORMAT = "\x00kubernetes.NamedFormat"

_last = threading.local()


class _HandledFailures(logging.Filter):
    """Drops the interpreter's log line for a :class:`CelError`: the rule evaluator reports it
    (a 422 cause naming the rule), so logging it too would log every refused write."""

    def filter(self, record: logging.LogRecord) -> bool:
        return ": CelError: " not in record.getMessage()


logging.getLogger("cel").addFilter(_HandledFailures())


class CelError(Exception):
    """A library function's failure, with upstream's text; remembered for :func:`take_error`."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text
        _last.error = text


def take_error() -> str | None:
    """The text of the last :class:`CelError` raised on this thread, and forget it."""
    text: str | None = getattr(_last, "error", None)
    _last.error = None
    return text


def _no_overload() -> CelError:
    return CelError("no such overload")


def _tagged(value: Any, tag: str) -> Any:
    """The payload of a ``tag`` value, or raise ``no such overload``."""
    if type(value) is dict and len(value) == 1 and tag in value:
        return value[tag]
    raise _no_overload()


def _is_tagged(value: Any, tag: str) -> bool:
    return type(value) is dict and len(value) == 1 and tag in value


def _string(value: Any) -> str:
    if type(value) is not str:
        raise _no_overload()
    return value


def _int(value: Any) -> int:
    if type(value) is not int:
        raise _no_overload()
    return value


# --- quantity -------------------------------------------------------------------------------

_GO_QUANTITY_RE = re.compile(SPLIT_RE_STRING)
_FORMAT_WRONG = ERR_FORMAT_WRONG
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _parse_q(text: Any) -> Fraction:
    return _parse_q_text(_string(text))


@functools.lru_cache(maxsize=4096)
def _parse_q_text(s: str) -> Fraction:
    """The exact value of a quantity string, or raise with resource.ParseQuantity's error
    (kept: a rule parses the same few strings on every write; a refused one raises every time)."""
    if not _GO_QUANTITY_RE.match(s):
        raise CelError(_FORMAT_WRONG)
    try:
        return parse_quantity(s)
    except QuantityError:
        # the loose Go pattern matched: upstream's parser then fails on the suffix ("200K", "1.2.3")
        raise CelError("unable to parse quantity's suffix") from None


def _q(value: Fraction) -> dict[str, str]:
    return {QUANTITY: str(value)}


def _qv(value: Any) -> Fraction:
    return _fraction(_tagged(value, QUANTITY))


@functools.lru_cache(maxsize=4096)
def _fraction(text: str) -> Fraction:
    return Fraction(text)


def _quantity(s: Any) -> dict[str, str]:
    return _q(_parse_q(s))


def _parses(parse: Callable[[Any], Any], s: Any) -> bool:
    """True when ``parse(s)`` succeeds (isQuantity, isIP, isCIDR); an argument of the wrong type
    still has no overload."""
    try:
        parse(s)
    except CelError as e:
        if e.text == "no such overload":
            raise
        _last.error = None
        return False
    return True


def _operand(value: Any) -> Fraction:
    if type(value) is int:
        return Fraction(value)
    return _qv(value)


def _compare(a: Any, b: Any) -> int:
    x, y = _qv(a), _qv(b)
    return (x > y) - (x < y)


def _as_int64(value: Any) -> int | None:
    v = _qv(value)
    if v.denominator != 1 or not _INT64_MIN <= v.numerator <= _INT64_MAX:
        return None
    return v.numerator


def _as_integer(value: Any) -> int:
    n = _as_int64(value)
    if n is None:
        raise CelError("cannot convert value to integer")
    return n


def _as_float(value: Any) -> float:
    v = _qv(value)
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _sign(value: Any) -> int:
    v = _qv(value)
    return (v > 0) - (v < 0)


# --- url ------------------------------------------------------------------------------------

_SCHEME_CHARS = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})(.{0,2})", re.S)


def _url_error(raw: str) -> str | None:
    """url.ParseRequestURI's error for ``raw`` (None when it parses), as Go prints it."""
    q = json.dumps(raw, ensure_ascii=False)  # Go's %q for printable text
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        return f"parse {q}: net/url: invalid control character in URL"
    if raw == "":
        return f"parse {q}: empty url"
    rest = raw
    m = _SCHEME_CHARS.match(raw)
    if raw.startswith(":"):
        return f"parse {q}: missing protocol scheme"
    if m and raw[m.end():m.end() + 1] == ":":
        rest = raw[m.end() + 1:]
    elif not raw.startswith("/"):
        return f"parse {q}: invalid URI for request"
    rest = rest.split("?", 1)[0]
    if rest.startswith("//"):
        authority, _, path = rest[2:].partition("/")
        host = authority.rsplit("@", 1)[-1]
        if host.startswith("["):
            close = host.find("]")
            if close < 0:
                return f"parse {q}: missing ']' in host"
            port = host[close + 1:]
        else:
            port = host[host.rfind(":"):] if ":" in host else ""
        if port and port != ":" and (port[0] != ":" or not port[1:].isdigit()):
            return f"parse {q}: invalid port {json.dumps(port)} after host"
        rest = "/" + path
    bad = _BAD_ESCAPE.search(rest)
    if bad:
        return f"parse {q}: invalid URL escape {json.dumps(bad.group(0)[:3])}"
    return None


def _url(s: Any) -> dict[str, str]:
    raw = _string(s)
    err = _url_error(raw)
    if err is not None:
        raise CelError(f"URL parse error during conversion from string: {err}")
    return {URL: raw}


def _is_url(s: Any) -> bool:
    return _url_error(_string(s)) is None


def _split_url(value: Any) -> tuple[str, str, str, str]:
    """(scheme, host with port, path, query) of a URL value, as Go's url.Parse splits them."""
    raw = _tagged(value, URL).split("#", 1)[0]
    scheme = ""
    m = _SCHEME_CHARS.match(raw)
    if m and raw[m.end():m.end() + 1] == ":":
        scheme, raw = raw[:m.end()], raw[m.end() + 1:]
    raw, _, query = raw.partition("?")
    host = ""
    if raw.startswith("//"):
        authority, slash, path = raw[2:].partition("/")
        host = authority.rsplit("@", 1)[-1]
        raw = slash + path
    return scheme.lower(), host, raw, query


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[1:host.find("]")]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _port(host: str) -> str:
    after = host[host.find("]") + 1:] if host.startswith("[") else host
    return after.rsplit(":", 1)[1] if ":" in after else ""


def _get_query(value: Any) -> dict[str, list[str]]:
    return parse_qs(_split_url(value)[3], keep_blank_values=True)


# --- ip and cidr ----------------------------------------------------------------------------

Addr = ipaddress.IPv4Address | ipaddress.IPv6Address
_Iface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


@functools.lru_cache(maxsize=4096)
def _parse_ip(raw: str) -> Addr:
    """An address as upstream's parseIPAddr takes it (no zone, no IPv4-mapped IPv6)."""
    q = json.dumps(raw, ensure_ascii=False)
    try:
        addr = ipaddress.ip_address(raw)
    except ValueError:
        raise CelError(f"IP Address {q} parse error during conversion from string: "
                       f"ParseAddr({q}): unable to parse IP") from None
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.scope_id:
            raise CelError(f"IP address {q} with zone value is not allowed")
        if addr.ipv4_mapped is not None:
            raise CelError(f"IPv4-mapped IPv6 address {q} is not allowed")
    return addr


def _ip_value(value: Any) -> Addr:
    return _address(_tagged(value, IP))


@functools.lru_cache(maxsize=4096)
def _address(text: str) -> Addr:
    return ipaddress.ip_address(text)


@functools.lru_cache(maxsize=4096)
def _interface(text: str) -> _Iface:
    return ipaddress.ip_interface(text)


def _ip(value: Any) -> dict[str, str]:
    if type(value) is str:
        return {IP: str(_parse_ip(value))}
    return {IP: str(_interface(_tagged(value, CIDR)).ip)}


def _ip_is_canonical(s: Any) -> bool:
    raw = _string(s)
    return str(_parse_ip(raw)) == raw


def _is_link_local_multicast(value: Any) -> bool:
    a = _ip_value(value)
    if a.version == 4:
        return a in ipaddress.ip_network("224.0.0.0/24")
    b = a.packed
    return b[0] == 0xFF and b[1] & 0x0F == 0x02


def _is_global_unicast(value: Any) -> bool:
    a = _ip_value(value)
    if a.version == 4 and a == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local)


@functools.lru_cache(maxsize=4096)
def _parse_cidr(raw: str) -> _Iface:
    """A prefix as netip.ParsePrefix takes it (host bits kept), or raise with its error."""
    q = json.dumps(raw, ensure_ascii=False)
    pre = "network address parse error during conversion from string: netip.ParsePrefix"
    addr, slash, bits = raw.rpartition("/")
    if not slash:
        raise CelError(f"{pre}({q}): no '/'")
    if "%" in addr:
        raise CelError(f"{pre}({q}): IPv6 zones cannot be present in a prefix")
    if not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        raise CelError(f"{pre}({q}): bad bits after slash: {json.dumps(bits)}")
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        raise CelError(f"{pre}({q}): ParseAddr({json.dumps(addr)}): unable to parse IP") from None
    if int(bits) > ip.max_prefixlen:
        raise CelError(f"{pre}({q}): prefix length out of range")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        raise CelError(f"IPv4-mapped IPv6 address {q} is not allowed")
    return _interface(f"{ip}/{bits}")


def _cidr_value(value: Any) -> _Iface:
    return _interface(_tagged(value, CIDR))


def _cidr(s: Any) -> dict[str, str]:
    try:
        return {CIDR: str(_parse_cidr(_string(s)))}
    except CelError as e:
        if e.text.startswith("network address"):
            raise CelError(f"network address parse error during conversion from string: {e.text}") from None
        raise


def _contains_ip(cidr_v: Any, other: Any) -> bool:
    c = _cidr_value(cidr_v)
    a = _parse_ip(other) if type(other) is str else _ip_value(other)
    return a.version == c.version and a in c.network


def _contains_cidr(cidr_v: Any, other: Any) -> bool:
    c = _cidr_value(cidr_v)
    o = _cidr_value(_cidr(other)) if type(other) is str else _cidr_value(other)
    if o.version != c.version or c.network.prefixlen > o.network.prefixlen:
        return False
    return _interface(f"{o.ip}/{c.network.prefixlen}").network == c.network


def _masked(value: Any) -> dict[str, str]:
    return {CIDR: str(_cidr_value(value).network)}


# --- strings (cel-go ext strings) -------------------------------------------------------------

_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _out_of_range(i: int) -> CelError:
    return CelError(f"index out of range: {i}")


def _char_at(s: Any, i: Any) -> str:
    text, idx = _string(s), _int(i)
    if idx < 0 or idx > len(text):
        raise _out_of_range(idx)
    return text[idx:idx + 1]


def _cel_equal(a: Any, b: Any) -> bool:
    """CEL's heterogeneous equality: bools never equal numbers."""
    if (type(a) is bool) != (type(b) is bool):
        return False
    return bool(a == b)


def _index_of(target: Any, item: Any, offset: Any = None) -> int:
    if type(target) is list and offset is None:
        return next((i for i, x in enumerate(target) if _cel_equal(x, item)), -1)
    text, sub = _string(target), _string(item)
    start = 0 if offset is None else _int(offset)
    if start < 0:
        raise _out_of_range(start)
    if sub == "":
        return min(start, len(text))
    return -1 if start >= len(text) else text.find(sub, start)


def _last_index_of(target: Any, item: Any, offset: Any = None) -> int:
    if type(target) is list and offset is None:
        return next((i for i in range(len(target) - 1, -1, -1) if _cel_equal(target[i], item)), -1)
    text, sub = _string(target), _string(item)
    if offset is None:
        return text.rfind(sub)
    end = _int(offset)
    if end < 0:
        raise _out_of_range(end)
    if sub == "":
        return min(end, len(text))
    return -1 if end >= len(text) else text.rfind(sub, 0, end + len(sub))


def _replace(s: Any, old: Any, new: Any, n: Any = -1) -> str:
    text, a, b, count = _string(s), _string(old), _string(new), _int(n)
    return text.replace(a, b, count if count >= 0 else -1)


def _split(s: Any, sep: Any, n: Any = -1) -> list[str]:
    text, by, limit = _string(s), _string(sep), _int(n)
    if limit == 0:
        return []
    if by == "":
        chars = list(text)
        if 0 < limit < len(chars):
            return [*chars[:limit - 1], "".join(chars[limit - 1:])]
        return chars
    return text.split(by, limit - 1 if limit > 0 else -1)


def _substring(s: Any, start: Any, end: Any = None) -> str:
    text, a = _string(s), _int(start)
    b = len(text) if end is None else _int(end)
    if a > b:
        raise CelError(f"invalid substring range. start: {a}, end: {b}")
    if a < 0 or a > len(text):
        raise _out_of_range(a)
    if b < 0 or b > len(text):
        raise _out_of_range(b)
    return text[a:b]


def _join(items: Any, sep: Any = "") -> str:
    if type(items) is not list or any(type(x) is not str for x in items):
        raise _no_overload()
    return _string(sep).join(items)


def _quote(s: Any) -> str:
    out = ['"']
    for c in _string(s):
        if c in '"\\':
            out.append("\\" + c)
        elif c in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                        "\v": "\\v"}[c])
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def _reverse(value: Any) -> Any:
    if type(value) is list:
        return value[::-1]
    return _string(value)[::-1]


def _format_arg(value: Any, nested: bool = False) -> str:
    if type(value) is str:
        return _quote(value) if nested else value
    if type(value) is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if type(value) is float:
        return (_go_shortest_g(value) if math.isfinite(value) else ("NaN" if math.isnan(value) else
                                                         ("+Inf" if value > 0 else "-Inf")))
    if type(value) is list:
        return "[" + ", ".join(_format_arg(v, True) for v in value) + "]"
    if type(value) is dict:
        return "{" + ", ".join(f"{_format_arg(k, True)}: {_format_arg(v, True)}"
                               for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "}"
    if type(value) is bytes:
        return value.decode("utf-8", "replace")
    return str(value)


def _go_shortest_g(x: float) -> str:
    """Go's ``strconv.FormatFloat(x, 'g', -1, 64)`` (cel-go's ``string(double)``): the shortest
    digits that round-trip, with an exponent when it is below -4 or at least 6 digits."""
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign, digits, exp = Decimal(repr(x)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exp)  # decimal point position after the first len(digits) digits
    e = point - 1
    out = "-" if sign else ""
    if e < -4 or e >= 6:  # shortest: Go decides with precision 6
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{out}{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if point <= 0:
        return f"{out}0.{'0' * -point}{ds}"
    if point >= len(ds):
        return f"{out}{ds}{'0' * (point - len(ds))}"
    return f"{out}{ds[:point]}.{ds[point:]}"


_VERB = re.compile(r"%(?:\.(\d+))?([sdfeboxX%])|%")


def _format(template: Any, args: Any) -> str:
    text = _string(template)
    if type(args) is not list:
        raise _no_overload()
    out: list[str] = []
    pos = 0
    n = 0
    for m in _VERB.finditer(text):
        out.append(text[pos:m.start()])
        pos = m.end()
        verb = m.group(2)
        if verb is None:
            raise CelError(f"could not parse formatting clause: unrecognized formatting clause \"{text[m.start():m.start() + 2]}\"")
        if verb == "%":
            out.append("%")
            continue
        if n >= len(args):
            raise CelError(f"index {n} out of range")
        arg = args[n]
        n += 1
        prec = int(m.group(1)) if m.group(1) is not None else None
        if verb == "s":
            out.append(_format_arg(arg))
        elif verb == "d":
            if type(arg) is not int:
                raise CelError(f"error during formatting: decimal clause can only be used on integers, was given {_type_name(arg)}")
            out.append(str(arg))
        elif verb in "fe":
            if type(arg) not in (int, float):
                raise CelError(f"error during formatting: fixed-point clause can only be used on doubles, was given {_type_name(arg)}")
            out.append(f"{float(arg):.{6 if prec is None else prec}{verb}}")
        else:
            if type(arg) is int:
                spec = {"b": "b", "o": "o", "x": "x", "X": "X"}[verb]
                out.append(("-" if arg < 0 else "") + format(abs(arg), spec))
            elif type(arg) is str and verb in "xX":
                h = arg.encode().hex()
                out.append(h.upper() if verb == "X" else h)
            else:
                raise CelError(f"error during formatting: only integers and strings can be formatted as {verb}, was given {_type_name(arg)}")
    out.append(text[pos:])
    return "".join(out)


def _type_name(value: Any) -> str:
    return {bool: "bool", int: "int", float: "double", str: "string", list: "list", dict: "map",
            bytes: "bytes"}.get(type(value), type(value).__name__)


# --- regex ----------------------------------------------------------------------------------


def _compile_re(pattern: Any) -> re.Pattern[str]:
    return _regex(_string(pattern))


@functools.lru_cache(maxsize=1024)
def _regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error:
        raise CelError(compile_error(text) or f"error parsing regexp: `{text}`") from None


def _find(s: Any, pattern: Any) -> str:
    m = _compile_re(pattern).search(_string(s))
    return m.group(0) if m else ""


def _find_all(s: Any, pattern: Any, n: Any = -1) -> list[str]:
    limit = _int(n)
    if limit == 0:
        return []
    found = [m.group(0) for m in _compile_re(pattern).finditer(_string(s))]
    return found[:limit] if limit > 0 else found


# --- lists (Kubernetes' lists library and cel-go ext lists) ------------------------------------

_COMPARABLE = (int, float, bool, str, bytes)


def _comparable_list(items: Any) -> list[Any]:
    if type(items) is not list:
        raise _no_overload()
    for x in items:
        if not isinstance(x, _COMPARABLE) and not hasattr(x, "__lt__"):
            raise _no_overload()
    return items


def _less(a: Any, b: Any) -> bool:
    try:
        return bool(a < b)
    except TypeError:
        raise _no_overload() from None


def _is_sorted(items: Any) -> bool:
    xs = _comparable_list(items)
    return all(not _less(xs[i], xs[i - 1]) for i in range(1, len(xs)))


def _sum(items: Any) -> Any:
    if type(items) is not list:
        raise _no_overload()
    if not items:
        return 0
    total = items[0]
    for x in items[1:]:
        try:
            total = total + x
        except TypeError:
            raise _no_overload() from None
    if type(total) is int and not _INT64_MIN <= total <= _INT64_MAX:
        raise CelError("integer overflow")
    return total


def _min_max(items: Any, name: str) -> Any:
    xs = _comparable_list(items)
    if not xs:
        raise CelError(f"{name} called on empty list")
    best = xs[0]
    for x in xs[1:]:
        if (_less(x, best) if name == "min" else _less(best, x)):
            best = x
    return best


def _slice(items: Any, start: Any, end: Any) -> list[Any]:
    if type(items) is not list:
        raise _no_overload()
    a, b = _int(start), _int(end)
    if a < 0 or b < 0:
        raise CelError(f"cannot slice({a}, {b}), negative indexes not supported")
    if a > b:
        raise CelError(f"cannot slice({a}, {b}), start index must be less than or equal to end index")
    if b > len(items):
        raise CelError(f"cannot slice({a}, {b}), list is length {len(items)}")
    return items[a:b]


def _flatten(items: Any, depth: Any = 1) -> list[Any]:
    if type(items) is not list:
        raise _no_overload()
    level = _int(depth)
    if level < 0:
        raise CelError("level must be non-negative")
    out: list[Any] = []
    for x in items:
        if type(x) is list and level > 0:
            out.extend(_flatten(x, level - 1))
        else:
            out.append(x)
    return out


def _distinct(items: Any) -> list[Any]:
    if type(items) is not list:
        raise _no_overload()
    out: list[Any] = []
    for x in items:
        if not any(_cel_equal(x, y) for y in out):
            out.append(x)
    return out


def _sets_contains(a: Any, b: Any) -> bool:
    if type(a) is not list or type(b) is not list:
        raise _no_overload()
    return all(any(_cel_equal(x, y) for y in a) for x in b)


def _sets_intersects(a: Any, b: Any) -> bool:
    if type(a) is not list or type(b) is not list:
        raise _no_overload()
    return any(any(_cel_equal(x, y) for y in a) for x in b)


# --- format library -------------------------------------------------------------------------


_UUID = re.compile(r"(?i)(^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$)|(^[0-9a-f]{32}$)")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _uri_errors(s: str) -> list[str]:
    err = _url_error(s)
    return [err] if err else []


def _byte_errors(s: str) -> list[str]:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _date_errors(s: str) -> list[str]:
    try:
        datetime.strptime(s, "%Y-%m-%d")
    except ValueError:
        return ["invalid date"]
    return [] if len(s) == 10 else ["invalid date"]


def _datetime_errors(s: str) -> list[str]:
    if not _DATETIME.match(s):
        return ["invalid datetime"]
    try:
        datetime.fromisoformat(s[:19])
    except ValueError:
        return ["invalid datetime"]
    return []


_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": is_dns1123_label,
    "dns1123Subdomain": is_dns1123_subdomain,
    "dns1035Label": is_dns1035_label,
    "qualifiedName": is_qualified_name,
    "dns1123LabelPrefix": lambda s: is_dns1123_label(mask_trailing_dash(s)),
    "dns1123SubdomainPrefix": lambda s: is_dns1123_subdomain(mask_trailing_dash(s)),
    "dns1035LabelPrefix": lambda s: is_dns1035_label(mask_trailing_dash(s)),
    "labelValue": is_label_value,
    "uri": _uri_errors,
    "uuid": lambda s: [] if _UUID.match(s) else ["does not match the UUID format"],
    "byte": _byte_errors,
    "date": _date_errors,
    "datetime": _datetime_errors,
}


def _format_named(name: Any) -> Any:
    text = _string(name)
    return cel.OptionalValue.of({FORMAT: text}) if text in _FORMATS else cel.OptionalValue.none()


def _validate(fmt: Any, s: Any) -> Any:
    errs = _FORMATS[_tagged(fmt, FORMAT)](_string(s))
    return cel.OptionalValue.of(list(errs)) if errs else cel.OptionalValue.none()


def _constant_format(name: str) -> Callable[[], dict[str, str]]:
    return lambda: {FORMAT: name}


# --- dispatch of shared names -------------------------------------------------------------------


def _sign_any(value: Any) -> int:
    return _sign(value)


def _add(a: Any, b: Any) -> dict[str, str]:
    return _q(_qv(a) + _operand(b))


def _sub(a: Any, b: Any) -> dict[str, str]:
    return _q(_qv(a) - _operand(b))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    # quantity
    "quantity": _quantity,
    "isQuantity": lambda s: _parses(_parse_q, s),
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) == 1,
    "isLessThan": lambda a, b: _compare(a, b) == -1,
    "add": _add,
    "sub": _sub,
    "asInteger": _as_integer,
    "isInteger": lambda q: _as_int64(q) is not None,
    "asApproximateFloat": _as_float,
    "sign": _sign_any,
    # url
    "url": _url,
    "isURL": _is_url,
    "getScheme": lambda u: _split_url(u)[0],
    "getHost": lambda u: _split_url(u)[1],
    "getHostname": lambda u: _hostname(_split_url(u)[1]),
    "getPort": lambda u: _port(_split_url(u)[1]),
    "getEscapedPath": lambda u: quote(_split_url(u)[2], safe="/;:@&=+$,!~*'()%-._"),
    "getQuery": _get_query,
    # ip
    "ip": _ip,
    "isIP": lambda s: _parses(lambda x: _parse_ip(_string(x)), s),
    "ip.isCanonical": _ip_is_canonical,
    "family": lambda a: _ip_value(a).version,
    "isUnspecified": lambda a: _ip_value(a).is_unspecified,
    "isLoopback": lambda a: _ip_value(a).is_loopback,
    "isLinkLocalMulticast": _is_link_local_multicast,
    "isLinkLocalUnicast": lambda a: _ip_value(a).is_link_local,
    "isGlobalUnicast": _is_global_unicast,
    # cidr
    "cidr": _cidr,
    "isCIDR": lambda s: _parses(lambda x: _parse_cidr(_string(x)), s),
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "prefixLength": lambda c: _cidr_value(c).network.prefixlen,
    "masked": _masked,
    # strings
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": lambda s: _string(s).translate(_ASCII_LOWER),
    "upperAscii": lambda s: _string(s).translate(_ASCII_UPPER),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": lambda s: _string(s).strip(_GO_SPACE),
    "join": _join,
    "strings.quote": _quote,
    "reverse": _reverse,
    "format": _format,
    # regex
    "find": _find,
    "findAll": _find_all,
    # lists
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": lambda xs: _min_max(xs, "min"),
    "max": lambda xs: _min_max(xs, "max"),
    "slice": _slice,
    "flatten": _flatten,
    "distinct": _distinct,
    # sets
    "sets.contains": _sets_contains,
    "sets.equivalent": lambda a, b: _sets_contains(a, b) and _sets_contains(b, a),
    "sets.intersects": _sets_intersects,
    # format
    "format.named": _format_named,
    "validate": _validate,
    **{f"format.{name}": _constant_format(name) for name in _FORMATS},
}
"""CEL function name -> implementation (every overload of the name)."""

_NAMESPACES = {"ip", "strings", "sets", "format"}


def functions_for(references: dict[str, list[str]]) -> dict[str, Callable[..., Any]]:
    """The library functions a compiled rule uses, from ``Program.references()`` (a qualified
    name such as ``format.dns1123Label`` shows there as variable ``format`` and function
    ``dns1123Label``); empty when it uses none."""
    names = set(references.get("functions") or ())
    spaces = _NAMESPACES.intersection(references.get("variables") or ())
    out = {n: FUNCTIONS[n] for n in names if n in FUNCTIONS}
    for space in spaces:
        for n in names:
            if f"{space}.{n}" in FUNCTIONS:
                out[f"{space}.{n}"] = FUNCTIONS[f"{space}.{n}"]
    return out
