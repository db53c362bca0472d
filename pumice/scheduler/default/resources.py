"""Pod requests and Node allocatable as integer vectors.

Units: ``cpu`` in millicores, ``memory`` and ``ephemeral-storage`` in bytes, ``pods`` as a count,
extended resources (``nvidia.com/gpu``, ``hugepages-2Mi`` ...) in whole units (``Value()``).
Every amount and sum is an int64, saturated as Quantity.MilliValue()/Value() saturate: a Node or
a request of ``1e400`` holds 9223372036854775807 (the node table is numpy int64).

Mirrors: kubernetes staging/src/k8s.io/component-helpers/resource/helpers.go PodRequests (the
init-container max rule with restartable sidecars, plus pod overhead) and
pkg/scheduler/util/pod_resources.go GetNonzeroRequests (100m cpu / 200 MiB memory defaults used by
scoring only).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pumice.api import Obj
from pumice.api.quantity import clamp_int64, milli_value_int64, value_int64

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

# Upstream pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def quantity_units(resource: str, q: str | int | float) -> int:
    """One resource quantity in pumice's integer units (millicores for cpu, else ``Value()``),
    saturated to int64.

    Raises:
        QuantityError: ``q`` is not a quantity.
    """
    return _units(resource == CPU, q)


@lru_cache(maxsize=4096)
def _units(milli: bool, q: str | int | float) -> int:
    return milli_value_int64(q) if milli else value_int64(q)


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def container_requests(container: Obj) -> dict[str, int]:
    """``resources.requests`` of one container in integer units (limits stand in for missing
    requests, as the API server's defaulting does)."""
    res = container.get("resources") or {}
    req = dict(res.get("limits") or {})
    req.update(res.get("requests") or {})
    return {k: quantity_units(k, v) for k, v in req.items()}


def _combine(spec: Obj, per_container: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in spec.get("containers") or []:
        _add(total, per_container(c))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in spec.get("initContainers") or []:
        req = per_container(c)
        if c.get("restartPolicy") == "Always":
            # A restartable init container (sidecar) keeps running next to everything after it.
            _add(sidecars, req)
            _max(init_max, sidecars)
        else:
            step = dict(sidecars)
            _add(step, req)
            _max(init_max, step)
    _add(total, sidecars)
    _max(total, init_max)
    return total


def pod_requests(pod: Obj) -> dict[str, int]:
    """Effective requests of a Pod: ``max(sum(containers) + sidecars, max(init step))`` plus
    ``spec.overhead``. Does not include the implicit ``pods: 1``.

    Raises:
        QuantityError: a request is not a quantity.
    """
    spec = pod.get("spec") or {}
    total = _combine(spec, container_requests)
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, 0) + quantity_units(k, v)
    return {k: clamp_int64(v) for k, v in total.items() if v}


def _nonzero_container(container: Obj) -> dict[str, int]:
    req = container_requests(container)
    return {
        CPU: req.get(CPU, DEFAULT_MILLI_CPU_REQUEST),
        MEMORY: req.get(MEMORY, DEFAULT_MEMORY_REQUEST),
    }


def pod_nonzero_requests(pod: Obj) -> tuple[int, int]:
    """``(millicores, bytes)`` used by LeastAllocated scoring: missing container requests count
    as 100m / 200 MiB."""
    spec = pod.get("spec") or {}
    total = _combine(spec, _nonzero_container)
    for k, v in (spec.get("overhead") or {}).items():
        if k in (CPU, MEMORY):
            total[k] = total.get(k, 0) + quantity_units(k, v)
    return clamp_int64(total.get(CPU, 0)), clamp_int64(total.get(MEMORY, 0))


def node_allocatable(node: Obj) -> dict[str, int]:
    """``status.allocatable`` (falling back to ``status.capacity``) in integer units."""
    status = node.get("status") or {}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    return {k: quantity_units(k, v) for k, v in alloc.items()}


def pod_host_ports(pod: Obj) -> list[tuple[str, str, int]]:
    """``(protocol, hostIP, hostPort)`` of every container port with a hostPort (init containers
    included, as upstream's NodePorts does)."""
    spec = pod.get("spec") or {}
    out: list[tuple[str, str, int]] = []
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for p in c.get("ports") or []:
            hp = p.get("hostPort")
            if hp:
                out.append((p.get("protocol") or "TCP", p.get("hostIP") or "0.0.0.0", int(hp)))
    return out
