"""ResourceList arithmetic over wire dicts (``{"cpu": "500m", "memory": "1Gi"}``), exact.

Values are kept as :class:`fractions.Fraction` of base units (cores, bytes, counts) while adding,
each name with the Go Quantity format its sum has, and written back as Go's Quantity.String()
writes them.

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
    parse_quantity,
    quantity_format,
)

Res = dict[str, Fraction]


Formats = dict[str, str]


def _add_into(total: Res, fmts: Formats, items: list[tuple[str, Fraction, str]]) -> None:
    """``total += items`` per name, formats as quotav1.Add / addResourceList leave them."""
    for k, v, f in items:
        if k in total:
            fmts[k] = add_format((fmts[k], total[k] == 0), f, v == 0)[0]
            total[k] += v
        else:
            total[k] = v
            fmts[k] = f


def _max_into(target: Res, fmts: Formats, source: Res, source_fmts: Formats) -> None:
    """``target = max(target, source)`` per name; a strictly larger value brings its format
    (maxResourceList copies the larger Quantity)."""
    for k, v in source.items():
        if k not in target or v > target[k]:
            target[k] = v
            fmts[k] = source_fmts[k]


def _request_items(c: Any) -> list[tuple[str, Fraction, str]]:
    """A container's requests as (name, exact value, Go format); unparsable ones skipped (they
    are refused by validation before a Pod or job gets here)."""
    out = []
    for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
        try:
            out.append((k, parse_quantity(v), quantity_format(v)))
        except (QuantityError, TypeError):
            continue
    return out


def pod_requests(pod_spec: dict[str, Any]) -> tuple[Res, Formats]:
    """The requests of one Pod and, per resource name, the Go Quantity format of each sum, in one
    walk: the containers summed (a sum keeps its first non-zero operand's format), each
    restartable (sidecar) init container added to that sum; each regular init container's use is
    its own request plus the restartable init containers declared before it; the sum is raised
    per name to the largest init-container use (a strictly larger value brings its format).

    Mirrors: k8s component-helpers resource/helpers.go AggregateContainerRequests (no Pod-level
    resources, no overhead)."""
    total: Res = {}
    fmts: Formats = {}
    for c in pod_spec.get("containers") or []:
        _add_into(total, fmts, _request_items(c))
    sidecars: Res = {}
    sidecar_fmts: Formats = {}
    init: Res = {}
    init_fmts: Formats = {}
    for c in pod_spec.get("initContainers") or []:
        items = _request_items(c)
        if c.get("restartPolicy") == "Always":
            _add_into(total, fmts, items)
            _add_into(sidecars, sidecar_fmts, items)
            _max_into(init, init_fmts, sidecars, sidecar_fmts)
            continue
        use: Res = {}
        use_fmts: Formats = {}
        _add_into(use, use_fmts, items)
        _add_into(use, use_fmts, [(k, v, sidecar_fmts[k]) for k, v in sidecars.items()])
        _max_into(init, init_fmts, use, use_fmts)
    _max_into(total, fmts, init, init_fmts)
    return total, fmts


def fmt_in(r: Res, formats: Formats) -> dict[str, str]:
    """Exact values -> a ResourceList dict written as Go's Quantity.String() does in each name's
    format (``formats``; DecimalSI when missing), keys sorted: ``1G`` stays ``1G``, ``2e9``
    stays ``2e9``, ``1000`` is ``1k``."""
    return {k: canonical_string(r[k], formats.get(k, DECIMAL_SI)) for k in sorted(r)}


def add_task(total: Res, fmts: Formats, task: tuple[Res, Formats]) -> None:
    """``total = quotav1.Add(total, task)`` in place, formats included (a name first seen takes
    the task's format; a zero sum takes the added one's)."""
    values, task_fmts = task
    _add_into(total, fmts, [(k, v, task_fmts[k]) for k, v in values.items()])


def task_requests(pod_spec: dict[str, Any], count: int) -> tuple[Res, Formats]:
    """``CalTaskRequests``: one Pod's requests added ``count`` times (formats those of the Pod's
    sums); nothing at all for a count of 0 or less (the loop does not run)."""
    if count <= 0:
        return {}, {}
    values, fmts = pod_requests(pod_spec)
    return {k: v * count for k, v in values.items()}, fmts
