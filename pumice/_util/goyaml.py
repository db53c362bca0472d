"""YAML text as Go's ``sigs.k8s.io/yaml.Marshal`` writes it (what kubectl plugins print for
``--dry-run``): go-yaml v2's emitter over the object's JSON form.

What differs from PyYAML's defaults, and is done here:

- mapping keys in go-yaml's order (``sorter.go``): rune by rune, a non-letter before a letter,
  letters by code point, and a run of digits against a run of digits by its number
  (``group-2`` before ``group-10``);
- a string that would read back as another type (``"2"``, ``"true"``, ``""``) is double-quoted,
  where PyYAML single-quotes it; a string with a line break is a literal block (``|``).

Mirrors: sigs.k8s.io/yaml yaml.go (Marshal: JSON, then JSONToYAML), gopkg.in/yaml.v2 encode.go
(stringv) and sorter.go (keyList.Less).
"""

from __future__ import annotations

import functools
from typing import Any

import yaml

__all__ = ["dump", "key_less"]

_STR = "tag:yaml.org,2002:str"


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
    if dumper.resolve(yaml.ScalarNode, data, (True, False)) != _STR:
        node.style = '"'
    return node


_Dumper.add_representer(str, _represent_str)


def dump(obj: Any) -> str:
    """``obj`` (JSON-like: dicts, lists, str, int, float, bool, None) as YAML text ending in a
    newline, keys in go-yaml's order."""
    return str(yaml.dump(_ordered(obj), Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True))
