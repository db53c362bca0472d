"""JSON text as Go's ``encoding/json`` writes an untyped value (``map[string]interface{}``, as
apimachinery's unstructured objects hold): map keys sorted, no spaces, ``<``, ``>``, ``&``,
U+2028 and U+2029 escaped in strings (HTML-safe), integers as integers and other numbers in Go's
shortest form.

Mirrors: Go encoding/json (Marshal and Encoder.Encode with the default HTML escaping);
k8s.io/apimachinery pkg/apis/meta/v1/unstructured (UnstructuredJSONScheme's encoder).
"""

from __future__ import annotations

from typing import Any

__all__ = ["encode_unstructured", "go_json", "go_number", "go_string", "summarize", "syntax_error"]

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
    """A JSON number: an integer (or an integral float below 1e21) without a fraction."""
    if isinstance(value, int) or (value == int(value) and abs(value) < 1e21):
        return str(int(value))
    return repr(float(value))


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
