"""The quantity-only walk of drop_zero_values (a status: its quantity numbers become strings,
nothing is dropped) visits only the keys that can lead to a Quantity, and changes every object of
every message exactly as the walk over every key does."""
from __future__ import annotations

from typing import Any

import msgspec

from pumice.api import protobuf as pb

_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_SAMPLE = {"string": "", "bytes": "", "bool": False, "double": 0, "float": 0}


def _full_walk(name: str, obj: dict[str, Any]) -> None:
    """The walk over every key of ``obj``, quantities only (the reference)."""
    fields = pb.flat_fields(name)
    for key in list(obj):
        f = fields.get(key)
        if f is None:
            continue
        v = obj[key]
        if f.type in pb._SCALARS and not f.map_key:
            continue
        if f.type == _QUANTITY and not f.repeated:
            obj[key] = pb.quantity_number(v)
        elif f.map_key:
            if isinstance(v, dict) and f.map_value == _QUANTITY:
                for k2, q in v.items():
                    v[k2] = pb.quantity_number(q, resource_list=True)
            elif isinstance(v, dict) and f.map_value not in pb._SCALARS:
                for item in v.values():
                    if isinstance(item, dict):
                        _full_walk(f.map_value, item)
        elif f.repeated:
            if isinstance(v, list):
                for item in v:
                    if isinstance(item, dict):
                        _full_walk(f.type, item)
        elif isinstance(v, dict):
            _full_walk(f.type, v)


def _filled(name: str, depth: int) -> dict[str, Any]:
    """An object of message ``name`` with every field set (quantities as numbers, zero scalars)
    down to ``depth`` levels."""
    out: dict[str, Any] = {}
    for key, f in pb.flat_fields(name).items():
        if f.map_key:
            value = f.map_value
            out[key] = {"cpu": 1000000} if value == _QUANTITY else (
                {"k": _filled(value, depth - 1)} if value in pb.schema().messages and depth else {"k": ""})
        elif f.type == _QUANTITY:
            out[key] = [1, "2"] if f.repeated else 1000000
        elif f.type in pb.schema().messages:
            if depth:
                item = _filled(f.type, depth - 1)
                out[key] = [item, 0.5] if f.repeated else item
        else:
            out[key] = [0] if f.repeated else _SAMPLE.get(f.type, 0)
    return out


def test_the_walk_visits_only_keys_that_lead_to_a_quantity() -> None:
    walk = pb._quantity_walk("k8s.io.api.core.v1.PodStatus")
    assert "containerStatuses" in walk and "resize" not in walk
    assert "conditions" not in walk and "phase" not in walk and "podIPs" not in walk
    assert set(pb._quantity_walk("k8s.io.api.core.v1.NodeStatus")) >= {"capacity", "allocatable"}
    assert "conditions" not in pb._quantity_walk("k8s.io.api.core.v1.NodeStatus")


def test_every_message_is_changed_as_the_walk_over_every_key_changes_it() -> None:
    for name in sorted(pb.schema().messages):
        # every message is a root once, so three levels below each reach every path in pieces
        raw = msgspec.json.encode(_filled(name, 3))
        want, got = msgspec.json.decode(raw), msgspec.json.decode(raw)
        _full_walk(name, want)
        pb._drop_zero(name, got, False)
        assert got == want, name
        assert list(got) == list(want), name
