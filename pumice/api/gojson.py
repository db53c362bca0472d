"""JSON text as Go's ``encoding/json`` writes an untyped value (``map[string]interface{}``, as
apimachinery's unstructured objects hold): map keys sorted, no spaces, ``<``, ``>``, ``&``,
U+2028 and U+2029 escaped in strings (HTML-safe), integers as integers and other numbers in Go's
shortest form.

Mirrors: Go encoding/json (Marshal and Encoder.Encode with the default HTML escaping);
k8s.io/apimachinery pkg/apis/meta/v1/unstructured (UnstructuredJSONScheme's encoder).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import msgspec

__all__ = ["GoFloat", "enc_hook", "encode_unstructured", "go_json", "go_number", "go_string", "go_value", "go_values",
           "summarize", "syntax_error"]

_msgspec_encode = msgspec.json.Encoder().encode

_CONTROL = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def go_string(s: str) -> str:
    """A JSON string as Go's encoding/json writes it (HTML-safe)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "<>&" or o in (0x2028, 0x2029):
            out.append(f"\\u{o:04x}")
        elif o < 0x20:
            out.append(_CONTROL.get(ch, f"\\u{o:04x}"))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_number(value: int | float) -> str:
    """A JSON number as Go's encoding/json writes it: an integer as is; a float64 (floatEncoder)
    in the shortest digits that read back the same, positional (strconv ``'f'``, ``-1``:
    ``1``, ``0.5``, ``-0``, ``100000000000000000000``, ``0.000001``) unless its magnitude is below
    1e-6 or at least 1e21, then with an exponent (``'e'``, ``-1``: ``1e+21``, ``1.5e-7``; a
    negative one-digit exponent without the ``0`` strconv pads it with).

    Raises:
        ValueError: an infinite or NaN float (Go's UnsupportedValueError).

    Mirrors: Go encoding/json encode.go floatEncoder.encode (64 bits)."""
    if isinstance(value, int):
        return str(value)
    f = float(value)
    if not math.isfinite(f):
        raise ValueError(f"json: unsupported value: {f}")
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    _, digits, exponent = Decimal(repr(f)).as_tuple()  # repr: the shortest digits reading back f
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0")
    exponent += len(digits) - len(text)
    sign = "-" if f < 0 else ""
    a = abs(f)
    if a < 1e-6 or a >= 1e21:
        e = exponent + len(text) - 1
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{sign}{mantissa}e+{e:02d}" if e >= 0 else f"{sign}{mantissa}e-{-e}"
    point = len(text) + exponent  # digits before the decimal point
    if point >= len(text):
        return sign + text + "0" * (point - len(text))
    if point > 0:
        return f"{sign}{text[:point]}.{text[point:]}"
    return f"{sign}0.{'0' * -point}{text}"


class GoFloat(float):
    """A float whose JSON text as Go writes it (:func:`go_number`, in ``text``) is not the one
    msgspec writes for the float (``1e+21``, ``-0``, ``0.000001``): encoded by :func:`enc_hook`.
    Made only by :func:`go_value`."""

    __slots__ = ("text",)

    text: str

    def __new__(cls, value: float, text: str) -> GoFloat:
        number = super().__new__(cls, value)
        number.text = text
        return number

    def __reduce__(self) -> tuple[type[GoFloat], tuple[float, str]]:
        return GoFloat, (float(self), self.text)

    def __copy__(self) -> GoFloat:
        return self  # immutable, as a float

    def __deepcopy__(self, memo: dict[int, Any]) -> GoFloat:
        return self


def enc_hook(value: Any) -> Any:
    """msgspec's ``enc_hook`` for objects that may hold a :class:`GoFloat`: its Go text.

    Raises:
        NotImplementedError: any other type msgspec cannot encode (msgspec's own error follows)."""
    if isinstance(value, GoFloat):
        return msgspec.Raw(value.text.encode())
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


def go_value(number: float | str) -> int | float:
    """The value a JSON float (``number``, or its text) has after kube-apiserver stored it in an
    unstructured object (a custom resource): Go decodes a number as int64 when its text is an
    integer and as float64 otherwise, writes the float64 as :func:`go_number`, and reads that text
    back the same way. So: an int when Go writes an integer (``1.0``, ``3e1``, ``1e20``); else the
    float, or a :class:`GoFloat` when msgspec would write it otherwise than Go (``1e+21``,
    ``-0``, ``0.000001``).

    Mirrors: k8s.io/apimachinery pkg/util/json (Unmarshal: int64, else float64) with Go
    encoding/json floatEncoder."""
    f = float(number)
    text = go_number(f)
    if text.lstrip("-").isdigit() and text != "-0":
        return int(text)
    if _msgspec_encode(f) == text.encode():
        return f
    return GoFloat(f, text)


def go_values(value: Any) -> Any:
    """``value`` (decoded JSON) with every float replaced, in place, by :func:`go_value`; returns
    the value (a new one when ``value`` is itself a float)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict | list | float):
                value[k] = go_values(v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, dict | list | float):
                value[i] = go_values(v)
    elif type(value) is float:
        return go_value(value)
    return value


def go_json(value: Any, *, sort_keys: bool = True) -> str:
    """An untyped JSON value: ``interface{}`` (map keys sorted), or with ``sort_keys=False`` raw
    JSON (members kept in the order given)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_string(value)
    if isinstance(value, (int, float)):
        return go_number(value)
    if isinstance(value, list):
        return "[" + ",".join(go_json(v, sort_keys=sort_keys) for v in value) + "]"
    items = sorted(value.items()) if sort_keys else list(value.items())
    return "{" + ",".join(go_string(str(k)) + ":" + go_json(v, sort_keys=sort_keys) for k, v in items) + "}"


def encode_unstructured(obj: dict[str, Any]) -> str:
    """What ``runtime.Encode(unstructured.UnstructuredJSONScheme, obj)`` writes: the object by
    :func:`go_json` and a newline (json.Encoder.Encode ends every value with one)."""
    return go_json(obj) + "\n"


_WS = frozenset(b" \t\r\n")
_DIGITS = frozenset(b"0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = frozenset(b'bfnrt\\/"')
_LITERALS = {ord("t"): "true", ord("f"): "false", ord("n"): "null"}
_GO_QUOTE = {0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v",
             0x5C: "\\\\"}


def _quote_char(c: int) -> str:
    """A byte as Go's scanner names it in a syntax error (quoteChar: strconv.Quote of the rune
    in single quotes)."""
    if c == 0x27:
        return "'\\''"
    if c == 0x22:
        return "'\"'"
    if c in _GO_QUOTE:
        return f"'{_GO_QUOTE[c]}'"
    ch = chr(c)
    if c < 0x20 or c == 0x7F:
        return f"'\\x{c:02x}'"
    if c >= 0x80 and not ch.isprintable():
        return f"'\\u{c:04x}'"
    return f"'{ch}'"


class _Syntax(Exception):
    pass


def _bad(c: int, context: str) -> _Syntax:
    return _Syntax(f"invalid character {_quote_char(c)} {context}")


def syntax_error(data: bytes) -> str | None:
    """The text of Go's ``*json.SyntaxError`` for ``data`` (``invalid character 'n' looking for
    beginning of object key string``, ``unexpected end of JSON input``), or None when ``data`` is
    one valid JSON value (surrounded by white space). Go checks a whole document this way before
    it decodes anything, so a syntax error comes before any type error.

    Mirrors: Go encoding/json scanner.go (checkValid, the step functions and their error
    contexts, quoteChar).
    """
    n = len(data)
    i = 0
    stack: list[int] = []  # 0: in an object (key expected next after a comma), 1: in an array

    def skip(j: int) -> int:
        while j < n and data[j] in _WS:
            j += 1
        return j

    def value(j: int) -> int:
        """Scan one value starting at data[j] (white space skipped); the index after it."""
        j = skip(j)
        if j >= n:
            raise _Syntax("unexpected end of JSON input")
        c = data[j]
        if c == 0x7B:  # {
            stack.append(0)
            j = skip(j + 1)
            if j >= n:
                raise _Syntax("unexpected end of JSON input")
            if data[j] == 0x7D:
                stack.pop()
                return j + 1
            return members(j)
        if c == 0x5B:  # [
            stack.append(1)
            j = skip(j + 1)
            if j >= n:
                raise _Syntax("unexpected end of JSON input")
            if data[j] == 0x5D:
                stack.pop()
                return j + 1
            return elements(j)
        if c == 0x22:
            return string(j + 1)
        if c == 0x2D or c in _DIGITS:
            return number(j)
        if c in _LITERALS:
            word = _LITERALS[c]
            for k, want in enumerate(word[1:], 1):
                if j + k >= n:
                    raise _Syntax("unexpected end of JSON input")
                if data[j + k] != ord(want):
                    raise _bad(data[j + k], f"in literal {word} (expecting '{want}')")
            return j + len(word)
        raise _bad(c, "looking for beginning of value")

    def members(j: int) -> int:
        while True:
            j = skip(j)
            if j >= n:
                raise _Syntax("unexpected end of JSON input")
            if data[j] != 0x22:
                raise _bad(data[j], "looking for beginning of object key string")
            j = skip(string(j + 1))
            if j >= n:
                raise _Syntax("unexpected end of JSON input")
            if data[j] != 0x3A:
                raise _bad(data[j], "after object key")
            j = skip(value(j + 1))
            if j >= n:
                raise _Syntax("unexpected end of JSON input")
            if data[j] == 0x2C:
                j += 1
                continue
            if data[j] == 0x7D:
                stack.pop()
                return j + 1
            raise _bad(data[j], "after object key:value pair")

    def elements(j: int) -> int:
        while True:
            j = skip(value(j))
            if j >= n:
                raise _Syntax("unexpected end of JSON input")
            if data[j] == 0x2C:
                j += 1
                continue
            if data[j] == 0x5D:
                stack.pop()
                return j + 1
            raise _bad(data[j], "after array element")

    def string(j: int) -> int:
        while j < n:
            c = data[j]
            if c == 0x22:
                return j + 1
            if c == 0x5C:
                j += 1
                if j >= n:
                    break
                e = data[j]
                if e == 0x75:  # u
                    for k in range(1, 5):
                        if j + k >= n:
                            raise _Syntax("unexpected end of JSON input")
                        if data[j + k] not in _HEX:
                            raise _bad(data[j + k], "in \\u hexadecimal character escape")
                    j += 5
                    continue
                if e not in _ESCAPES:
                    raise _bad(e, "in string escape code")
                j += 1
                continue
            if c < 0x20:
                raise _bad(c, "in string literal")
            j += 1
        raise _Syntax("unexpected end of JSON input")

    def number(j: int) -> int:
        if data[j] == 0x2D:
            j += 1
            if j >= n:
                raise _Syntax("unexpected end of JSON input")
            if data[j] not in _DIGITS:
                raise _bad(data[j], "in numeric literal")
        if data[j] == 0x30:
            j += 1
        else:
            while j < n and data[j] in _DIGITS:
                j += 1
        if j < n and data[j] == 0x2E:
            j += 1
            if j >= n:
                raise _Syntax("unexpected end of JSON input")
            if data[j] not in _DIGITS:
                raise _bad(data[j], "after decimal point in numeric literal")
            while j < n and data[j] in _DIGITS:
                j += 1
        if j < n and data[j] in b"eE":
            j += 1
            if j < n and data[j] in b"+-":
                j += 1
            if j >= n:
                raise _Syntax("unexpected end of JSON input")
            if data[j] not in _DIGITS:
                raise _bad(data[j], "in exponent of numeric literal")
            while j < n and data[j] in _DIGITS:
                j += 1
        return j

    try:
        i = skip(value(i))
        if i < n:
            raise _bad(data[i], "after top-level value")
    except _Syntax as e:
        return str(e)
    except RecursionError:
        return "exceeded max depth"
    return None


def summarize(data: bytes, max_length: int = 30) -> str:
    """A request body as kube-apiserver quotes it in a decode error: ``<empty>``, the text when it
    starts with ``{`` (cut at ``max_length`` bytes, then `` ...``), else its hex.

    Mirrors: k8s.io/apiserver pkg/endpoints/handlers/rest.go summarizeData."""
    if not data:
        return "<empty>"
    if data[0] == 0x7B:
        head = data[:max_length].decode("utf-8", "replace")
        return head + " ..." if len(data) > max_length else head
    return data[:max_length].hex() + (" ..." if len(data) > max_length else "")
