"""The bytes Go's ``encoding/json`` writes for a KubeRay ``RayClusterSpec`` decoded from a wire
object: what upstream hashes for ``ray.io/hash-without-replicas-and-workers-to-delete`` and
``ray.io/upgrade-strategy-recreate-hash``.

Go writes struct fields in declaration order, omits ``omitempty`` fields that are empty (nil
pointer, empty string/slice/map, 0, false; never a struct) and ``omitzero`` fields that are zero,
writes every other field even when the wire object lacks it (``"resources":{}``), drops fields
the Go type does not have, sorts map keys, escapes ``<``, ``>``, ``&``, U+2028 and U+2029 in
strings, and writes resource quantities in canonical form (``2048Mi`` -> ``2Gi``, ``1000m`` ->
``1``). The Go types' layout (field order, names, flags) is data, generated from upstream's Go
types by ``tools/gen_go_json_layout.py`` into ``raycluster_spec_layout.json`` beside this module.

Mirrors: Go encoding/json (Marshal of structs, maps, strings), k8s.io/apimachinery
pkg/api/resource Quantity.MarshalJSON (CanonicalizeBytes), metav1.Time.MarshalJSON,
intstr.IntOrString.MarshalJSON.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from pumice._util.duration import go_duration_string, parse_go_duration
from pumice.api import quantity as q
from pumice.api.gojson import go_json, go_number, go_string

__all__ = ["GoLayout", "go_quantity_string", "go_string", "marshal", "raycluster_spec_layout"]



@dataclass(frozen=True)
class GoLayout:
    """Go types as encoding/json sees them.

    Attributes:
        root: the type id of the value :func:`marshal` is given.
        types: struct type id -> fields in declaration order, each ``(json name, type, flags)``;
            type and flag grammar as in ``tools/gen_go_json_layout.py``.
        source: where the layout was generated from.
    """

    root: str
    types: dict[str, list[tuple[str, str, str]]]
    source: str = ""


@cache
def raycluster_spec_layout() -> GoLayout:
    """The layout of KubeRay's ``RayClusterSpec`` at the reference snapshot (shipped data)."""
    doc = json.loads(resources.files("pumice.controllers.ray.common").joinpath("raycluster_spec_layout.json")
                     .read_text())
    return GoLayout(root=doc["root"], source=doc["source"],
                    types={k: [(f[0], f[1], f[2]) for f in v] for k, v in doc["types"].items()})


def go_quantity_string(value: str | int | float) -> str:
    """A quantity in Go's canonical form (``Quantity.String()``): see
    :func:`pumice.api.quantity.canonical_string`.

    Raises:
        pumice.api.quantity.QuantityError: not a quantity.
    """
    return q.canonical_string(value)


def _go_time(value: Any, micro: bool) -> str:
    if value in (None, ""):
        return "null"
    t = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(datetime.UTC)
    return go_string(t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ"))


class _Encoder:
    def __init__(self, layout: GoLayout) -> None:
        self.types = layout.types

    def empty(self, value: Any, t: str) -> bool:
        """``omitempty``: nil pointer, interface, slice or map; empty string, slice or map; 0;
        false. Structs (and the self-encoding struct types) are never empty."""
        if t.startswith("*") or t == "any":
            return value is None
        if t.startswith(("[]", "map[")) or t in ("string", "bytes"):
            return not value
        if t in ("int", "uint", "float", "bool"):
            return not value
        return False

    def zero(self, value: Any, t: str) -> bool:
        """``omitzero``: the Go zero value (``IsZero()`` where the type has one)."""
        if t.startswith(("*", "[]", "map[")) or t in ("any", "bytes", "raw"):
            return value is None
        if t in ("string", "int", "uint", "float", "bool", "time", "microtime"):
            return not value
        if t == "quantity":
            return value in (None, "") or q.parse_quantity(value) == 0
        if t in ("duration", "intorstring"):
            return not value
        fields = self.types[t]
        return all(self.zero((value or {}).get(name), ft) for name, ft, _ in fields)

    def encode(self, value: Any, t: str) -> str:
        if t.startswith("*"):
            return "null" if value is None else self.encode(value, t[1:])
        if t.startswith("[]"):
            return "null" if value is None else "[" + ",".join(self.encode(v, t[2:]) for v in value) + "]"
        if t.startswith("map["):
            if value is None:
                return "null"
            depth, i = 0, 3
            while True:
                depth += {"[": 1, "]": -1}.get(t[i], 0)
                if depth == 0:
                    break
                i += 1
            elem = t[i + 1:]
            return "{" + ",".join(go_string(str(k)) + ":" + self.encode(value[k], elem) for k in sorted(value)) + "}"
        if t == "string":
            return go_string("" if value is None else str(value))
        if t in ("int", "uint"):
            return str(int(value or 0))
        if t == "float":
            return go_number(value or 0)
        if t == "bool":
            return "true" if value else "false"
        if t == "bytes":
            return "null" if value is None else go_string(str(value))
        if t == "any":
            return go_json(value)
        if t == "raw":
            return go_json(value, sort_keys=False)
        if t == "quantity":
            return go_string(go_quantity_string("0" if value in (None, "") else value))
        if t in ("time", "microtime"):
            return _go_time(value, t == "microtime")
        if t == "duration":
            return go_string(go_duration_string(parse_go_duration(str(value or "0s"))))
        if t == "intorstring":
            return go_string(value) if isinstance(value, str) else str(int(value or 0))
        return "{" + ",".join(self.members(value or {}, t)) + "}"

    def members(self, obj: dict[str, Any], t: str) -> list[str]:
        out: list[str] = []
        for name, ft, flags in self.types[t]:
            if "i" in flags:
                if not ft.startswith("*") or obj:
                    out.extend(self.members(obj, ft.lstrip("*")))
                continue
            value = obj.get(name)
            if ("o" in flags and self.empty(value, ft)) or ("z" in flags and self.zero(value, ft)):
                continue
            out.append(go_string(name) + ":" + self.encode(value, ft))
        return out


def marshal(value: Any, layout: GoLayout | None = None) -> bytes:
    """``json.Marshal`` of ``value`` decoded into the layout's root Go type.

    Args:
        value: the wire form (a dict from JSON or YAML).
        layout: default :func:`raycluster_spec_layout`.
    Returns:
        UTF-8 bytes, equal to Go's for the same input.
    """
    lay = layout or raycluster_spec_layout()
    return _Encoder(lay).encode(value, lay.root).encode()
