"""ResourceList arithmetic over wire dicts (``{"cpu": "500m", "memory": "1Gi"}``), exact.

Values are kept as :class:`fractions.Fraction` of base units (cores, bytes, counts) while adding
and formatted back to canonical quantity strings.

Mirrors: volcano pkg/scheduler/util CalTaskRequests and k8s quota/v1 Add.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pumice.api.quantity import QuantityError, format_bytes, format_millis, parse_quantity

Res = dict[str, Fraction]


def parse(rl: Any) -> Res:
    """A ResourceList dict -> exact values; unparsable entries are skipped."""
    out: Res = {}
    for k, v in (rl or {}).items():
        try:
            out[k] = parse_quantity(v)
        except (QuantityError, TypeError):
            continue
    return out


def add(a: Res, b: Res, times: int = 1) -> Res:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Fraction(0)) + v * times
    return out


def fmt_value(name: str, v: Fraction) -> str:
    if name == "memory" or name.endswith("storage"):
        return format_bytes(int(v)) if v == int(v) else str(int(v))
    if v == int(v):
        return str(int(v))
    return format_millis(int(v * 1000))


def fmt(r: Res) -> dict[str, str]:
    """Exact values -> a ResourceList dict with canonical strings, keys sorted."""
    return {k: fmt_value(k, r[k]) for k in sorted(r)}


def pod_requests(pod_spec: dict[str, Any]) -> Res:
    """The requests of one Pod: the sum over containers, raised per dimension to the largest
    init-container request (restartable init containers are added to the sum)."""
    total: Res = {}
    for c in pod_spec.get("containers") or []:
        total = add(total, parse((c.get("resources") or {}).get("requests")))
    init_max: Res = {}
    for c in pod_spec.get("initContainers") or []:
        req = parse((c.get("resources") or {}).get("requests"))
        if c.get("restartPolicy") == "Always":
            total = add(total, req)
            continue
        for k, v in req.items():
            init_max[k] = max(init_max.get(k, Fraction(0)), v)
    for k, v in init_max.items():
        total[k] = max(total.get(k, Fraction(0)), v)
    return total


def task_requests(pod_spec: dict[str, Any], count: int) -> Res:
    """``CalTaskRequests``: one Pod's requests times ``count``."""
    return {k: v * count for k, v in pod_requests(pod_spec).items()}
