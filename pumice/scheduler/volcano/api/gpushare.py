"""GPU sharing per device: which GPU cards of a Node each Pod holds, and which cards fit a Pod.

A Node publishes ``volcano.sh/gpu-memory`` (the memory of all its cards) and
``volcano.sh/gpu-number`` (its cards) in ``status.capacity``; each card gets
``memory // number``; the ids listed in the Node annotation ``volcano.sh/gpu-unhealthy-ids``
are left out. A Pod asks in its containers' *limits* for ``volcano.sh/gpu-memory`` (memory on
one card, shared with other Pods) or ``volcano.sh/gpu-number`` (whole cards no other Pod uses);
the scheduler records the cards it chose in the Pod annotation ``volcano.sh/gpu-index``
(comma-separated ids) through the Binding. A Pod counts against the cards its annotation names
(a Pod without one holds no card, as upstream).

Mirrors: volcano pkg/scheduler/api/devices/nvidia/gpushare (type.go, device_info.go, share.go):
NewGPUDevices, getGPUMemoryOfPod / getGPUNumberOfPod, getDevicesIdleGPUMemory (clamped at 0),
predicateGPUbyMemory (every card with enough idle memory, ascending id; the first is taken),
predicateGPUbyNumber (the first ``n`` idle cards by id).
Deviates: upstream exits when both sharing modes are enabled; here both may be on (a trace can
mix shared and multi-card Pods), and a card that holds a ``gpu-number`` Pod has no idle memory
for ``gpu-memory`` Pods (upstream counts such a Pod as 0 memory, which only matters with both on).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pumice.api import Obj, quantity

GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
GPU_INDEX = "volcano.sh/gpu-index"
PREDICATE_TIME = "volcano.sh/predicate-time"
UNHEALTHY_GPU_IDS = "volcano.sh/gpu-unhealthy-ids"


def _limit_sum(pod: Obj, name: str) -> int:
    """max(sum over containers, largest init container) of a limit (upstream's rule)."""
    spec = pod.get("spec") or {}

    def one(c: Obj) -> int:
        v = ((c.get("resources") or {}).get("limits") or {}).get(name)
        return quantity.value(str(v)) if v is not None else 0

    main = sum(one(c) for c in spec.get("containers") or [])
    init = max((one(c) for c in spec.get("initContainers") or []), default=0)
    return max(main, init)


def gpu_memory_of_pod(pod: Obj) -> int:
    """``volcano.sh/gpu-memory`` the Pod asks for (0: none). Raises QuantityError on a bad limit."""
    return _limit_sum(pod, GPU_MEMORY)


def gpu_number_of_pod(pod: Obj) -> int:
    """``volcano.sh/gpu-number`` the Pod asks for (0: none). Raises QuantityError on a bad limit."""
    return _limit_sum(pod, GPU_NUMBER)


def gpu_index(annotations: Mapping[str, str]) -> list[int]:
    """The card ids of a ``volcano.sh/gpu-index`` annotation ([] when absent or malformed)."""
    raw = annotations.get(GPU_INDEX)
    if not raw:
        return []
    try:
        return [int(x) for x in raw.split(",")]
    except ValueError:
        return []


@dataclass
class GPUDevice:
    """One card: its memory and the Pods on it (``<ns>/<name>`` -> (gpu-memory, whole card))."""

    id: int
    memory: int
    pods: dict[str, tuple[int, bool]] = field(default_factory=dict)

    def used_memory(self) -> int:
        return sum(self.memory if whole else mem for mem, whole in self.pods.values())

    def idle_memory(self) -> int:
        return max(0, self.memory - self.used_memory())

    def is_idle(self) -> bool:
        return not self.pods


@dataclass
class GPUDevices:
    """The cards of one Node (ids in ascending order)."""

    name: str
    devices: dict[int, GPUDevice]

    @classmethod
    def from_node(cls, node: Obj) -> GPUDevices | None:
        """None when the Node publishes no ``volcano.sh/gpu-memory`` or ``gpu-number`` (or 0 cards).

        Raises QuantityError on a malformed capacity."""
        md, cap = node.get("metadata") or {}, (node.get("status") or {}).get("capacity") or {}
        if GPU_MEMORY not in cap or GPU_NUMBER not in cap:
            return None
        number = quantity.value(str(cap[GPU_NUMBER]))
        if number <= 0:
            return None
        per_card = quantity.value(str(cap[GPU_MEMORY])) // number
        unhealthy = set()
        for part in str((md.get("annotations") or {}).get(UNHEALTHY_GPU_IDS, "")).split(","):
            if part.strip().lstrip("-").isdigit():
                unhealthy.add(int(part))
        return cls(md.get("name", ""), {i: GPUDevice(i, per_card) for i in range(number) if i not in unhealthy})

    def copy(self) -> GPUDevices:
        return GPUDevices(self.name, {i: GPUDevice(d.id, d.memory, dict(d.pods)) for i, d in self.devices.items()})

    def add_pod(self, key: str, pod: Obj, ids: Iterable[int]) -> None:
        """Account the Pod ``key`` on the cards ``ids`` (unknown ids are skipped, as upstream)."""
        mem, whole = gpu_memory_of_pod(pod), gpu_number_of_pod(pod) > 0
        if mem <= 0 and not whole:
            return
        for i in ids:
            d = self.devices.get(i)
            if d is not None:
                d.pods[key] = (mem, whole)

    def remove_pod(self, key: str) -> None:
        for d in self.devices.values():
            d.pods.pop(key, None)

    def fit_by_memory(self, request: int) -> list[int]:
        """Cards with at least ``request`` idle memory, ascending id."""
        return sorted(i for i, d in self.devices.items() if d.idle_memory() >= request)

    def fit_by_number(self, request: int) -> list[int]:
        """The first ``request`` idle cards by id; [] when fewer are idle."""
        idle = sorted(i for i, d in self.devices.items() if d.is_idle())
        return idle[:request] if len(idle) >= request else []

    def max_idle_memory(self) -> int:
        return max((d.idle_memory() for d in self.devices.values()), default=0)

    def idle_cards(self) -> int:
        return sum(1 for d in self.devices.values() if d.is_idle())
