"""JSON text as Go's ``encoding/json`` writes an untyped value (``map[string]interface{}``, as
apimachinery's unstructured objects hold): map keys sorted, no spaces, ``<``, ``>``, ``&``,
U+2028 and U+2029 escaped in strings (HTML-safe), integers as integers and other numbers in Go's
shortest form.

Mirrors: Go encoding/json (Marshal and Encoder.Encode with the default HTML escaping);
k8s.io/apimachinery pkg/apis/meta/v1/unstructured (UnstructuredJSONScheme's encoder).
"""

from __future__ import annotations

from typing import Any

__all__ = ["encode_unstructured", "go_json", "go_number", "go_string"]

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
