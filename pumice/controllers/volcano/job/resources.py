"""ResourceList arithmetic over wire dicts (``{"cpu": "500m", "memory": "1Gi"}``), exact.

Values are kept as :class:`fractions.Fraction` of base units (cores, bytes, counts) while adding
and formatted back to canonical quantity strings.

Mirrors: volcano pkg/scheduler/util CalTaskRequests and k8s quota/v1 Add.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pumice.api.quantity import (
    DECIMAL_SI,
    QuantityError,
    add_format,
    canonical_string,
    format_bytes,
    format_millis,
    parse_quantity,
    quantity_format,
)

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


def pod_request_formats(pod_spec: dict[str, Any]) -> dict[str, str]:
    """Per resource name, the Go Quantity format of :func:`pod_requests`'s value, as
    resourcehelper.PodRequests leaves it: a container sum keeps the first non-zero operand's
    format (Quantity.Add), an init container's request that is larger replaces the value and
    its format (maxResourceList copies it).

    Mirrors: k8s component-helpers resource/helpers.go AggregateContainerRequests."""
    total: Res = {}
    fmts: dict[str, tuple[str, bool]] = {}

    def add_list(rl: Any) -> None:
        for k, q in parse_with_text(rl):
            total[k] = total.get(k, Fraction(0)) + q[0]
            fmts[k] = add_format(fmts.get(k), quantity_format(q[1]), q[0] == 0)

    for c in pod_spec.get("containers") or []:
        add_list((c.get("resources") or {}).get("requests"))
    init_max: dict[str, tuple[Fraction, str]] = {}
    for c in pod_spec.get("initContainers") or []:
        rl = (c.get("resources") or {}).get("requests")
        if c.get("restartPolicy") == "Always":
            add_list(rl)
            continue
        for k, (v, text) in parse_with_text(rl):
            if k not in init_max or v > init_max[k][0]:
                init_max[k] = (v, quantity_format(text))
    for k, (v, f) in init_max.items():
        if k not in total or v > total[k]:
            total[k] = v
            fmts[k] = (f, v == 0)
    return {k: f for k, (f, _) in fmts.items()}


def parse_with_text(rl: Any) -> list[tuple[str, tuple[Fraction, str]]]:
    """A ResourceList dict -> (name, (exact value, the text as written)); unparsable entries are
    skipped, as :func:`parse` does."""
    out = []
    for k, v in (rl or {}).items():
        try:
            out.append((k, (parse_quantity(v), str(v))))
        except (QuantityError, TypeError):
            continue
    return out


def fmt_in(r: Res, formats: dict[str, str]) -> dict[str, str]:
    """Exact values -> a ResourceList dict written as Go's Quantity.String() does in each name's
    format (``formats``; DecimalSI when missing), keys sorted: ``1G`` stays ``1G``, ``2e9``
    stays ``2e9``, ``1000`` is ``1k``."""
    return {k: canonical_string(r[k], formats.get(k, DECIMAL_SI)) for k in sorted(r)}


def task_requests(pod_spec: dict[str, Any], count: int) -> Res:
    """``CalTaskRequests``: one Pod's requests times ``count``."""
    return {k: v * count for k, v in pod_requests(pod_spec).items()}
