"""YAML text as Go's ``sigs.k8s.io/yaml.Marshal`` writes it (what kubectl plugins print for
``--dry-run``): go-yaml v2's emitter over the object's JSON form.

What differs from PyYAML's defaults, and is done here:

- mapping keys in go-yaml's order (``sorter.go``): rune by rune, a non-letter before a letter,
  letters by code point, and a run of digits against a run of digits by its number
  (``group-2`` before ``group-10``);
- a string that would read back as another type (``"2"``, ``"true"``, ``""``, and what go-yaml
  reads as no string where PyYAML does: ``"y"``, ``"1e3"``) is double-quoted, where PyYAML
  single-quotes it; a string with a line break is a literal block (``|``).

:func:`resolve` is go-yaml v2's resolution of a plain scalar (what the readers of
:mod:`pumice.api.yamlsafe` build, and what the writer above quotes).

Mirrors: sigs.k8s.io/yaml yaml.go (Marshal: JSON, then JSONToYAML), gopkg.in/yaml.v2 encode.go
(stringv), resolve.go (resolve) and sorter.go (keyList.Less).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

import yaml

from pumice._util.gostrings import parse_int

__all__ = ["dump", "key_less", "resolve"]

_STR = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
#: the plain scalars go-yaml v2 looks up before anything else (resolve.go resolveMap): YAML 1.1's
#: words, with ``y``/``n`` (which PyYAML leaves text)
_GO_WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), (_BOOL_TAG, True)),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), (_BOOL_TAG, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (_NULL_TAG, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (_FLOAT_TAG, math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (_FLOAT_TAG, math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (_FLOAT_TAG, -math.inf)),
}
#: what Go's strconv.ParseFloat reads of a text starting with ``.``: decimal digits, ``_`` only
#: between two digits, an optional exponent
_GO_POINT_FLOAT = re.compile(r"\.[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+(?:_[0-9]+)*)?")
#: go-yaml's yamlStyleFloat (tried on the text without ``_``)
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")


def resolve(text: str) -> tuple[str, Any]:
    """The tag and value go-yaml v2 gives the plain scalar ``text`` (decoded into ``interface{}``):
    ``(tag, value)``, the tag one of YAML's ``null``, ``bool``, ``int`` (a Python int within
    int64, else uint64), ``float`` (a Python float), ``str`` (the text: an unquoted timestamp
    too, which go-yaml keeps as text in an ``interface{}``, and ``<<``: a merge is the decoder's
    isMerge of a mapping key, not resolve's). The words of :data:`_GO_WORDS` first; then a text
    starting with ``.`` is a float when ParseFloat reads it; one starting with a sign or a digit, ``_`` removed, is
    ParseInt's (base 0: ``0x1f``, ``0o17``, ``017`` octal, ``0b11``), else ParseUint's, else a
    float when it has yamlStyleFloat's shape (``1e3``, ``-.5``, ``1.``, ``09``) and is within
    float64 (``1e400`` stays text), else a binary number after ``0b`` / ``-0b``. Anything else is
    text, base-60 numbers (``1:30``) included.

    Mirrors: go.yaml.in/yaml/v2 resolve.go resolve (tag "").
    """
    hit = _GO_WORDS.get(text)
    if hit is not None:
        return hit
    first = text[:1]
    if first == ".":
        if _GO_POINT_FLOAT.fullmatch(text) and math.isfinite(number := float(text)):
            return _FLOAT_TAG, number
    elif first and first in "+-0123456789":
        plain = text.replace("_", "")
        n = parse_int(plain)
        if n is None:
            n = parse_int(plain, unsigned=True)
        if n is not None:
            return _INT_TAG, n
        if _YAML_STYLE_FLOAT.fullmatch(plain) and math.isfinite(number := float(plain)):
            return _FLOAT_TAG, number
        if plain.startswith("0b"):
            n = parse_int(plain[2:], 2)
            if n is None:
                n = parse_int(plain[2:], 2, unsigned=True)
        elif plain.startswith("-0b"):
            n = parse_int("-" + plain[3:], 2)
        if n is not None:
            return _INT_TAG, n
    return _STR, text


def key_less(a: str, b: str) -> bool:
    """Whether mapping key ``a`` sorts before ``b`` in go-yaml v2's output."""
    n = min(len(a), len(b))
    for i in range(n):
        x, y = a[i], b[i]
        if x == y:
            continue
        xl, yl = x.isalpha(), y.isalpha()
        if xl and yl:
            return x < y
        if xl or yl:
            return yl  # the non-letter first
        # at least one digit or other non-letter: compare the digit runs from here as numbers
        xn = yn = 0
        if x == "0" or y == "0":
            j = i - 1
            while j >= 0 and a[j].isdigit():
                if a[j] != "0":
                    xn = yn = 1
                    break
                j -= 1
        xi = i
        while xi < len(a) and a[xi].isdigit():
            xn = xn * 10 + ord(a[xi]) - 48
            xi += 1
        yi = i
        while yi < len(b) and b[yi].isdigit():
            yn = yn * 10 + ord(b[yi]) - 48
            yi += 1
        if xn != yn:
            return xn < yn
        if xi != yi:
            return xi < yi
        return x < y
    return len(a) < len(b)


def _cmp(a: str, b: str) -> int:
    return -1 if key_less(a, b) else 1 if key_less(b, a) else 0


_KEY = functools.cmp_to_key(_cmp)


def _ordered(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _ordered(obj[k]) for k in sorted(obj, key=lambda k: _KEY(str(k)))}
    if isinstance(obj, list | tuple):
        return [_ordered(v) for v in obj]
    return obj


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar(_STR, data, style="|")
    node = dumper.represent_scalar(_STR, data)
    if resolve(data)[0] != _STR or dumper.resolve(yaml.ScalarNode, data, (True, False)) != _STR:
        node.style = '"'
    return node


_Dumper.add_representer(str, _represent_str)


def dump(obj: Any) -> str:
    """``obj`` (JSON-like: dicts, lists, str, int, float, bool, None) as YAML text ending in a
    newline, keys in go-yaml's order."""
    return str(yaml.dump(_ordered(obj), Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True))
