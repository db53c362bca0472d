"""Resource arithmetic over Pod specs and RayCluster specs.

Amounts are exact :class:`fractions.Fraction` values in base units (cpu in cores, memory in
bytes), keyed by resource name; :func:`format_resource_list` renders them as canonical quantity
strings (cpu ``"1268m"``, memory ``"968Mi"``, counts ``"2"``), each in the Quantity format its sum
kept when the caller tracked it (``*_quantities``: ``2G`` + ``1G`` is ``3G``, not a byte count).

Mirrors: kuberay ray-operator/controllers/ray/utils/util.go (CalculatePodResource,
CalculateDesiredResources, CalculateMinResources, SumResourceList, GetWorkerGroupDesiredReplicas,
CalculateDesiredReplicas, CalculateMinReplicas, CalculateMaxReplicas) and utils/resources.go.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction

from pumice.api import Obj
from pumice.api.quantity import (
    DECIMAL_SI,
    add_format,
    canonical_string,
    parse_quantity,
    quantity_format,
    resource_string,
)
from pumice.controllers.ray import constants as c

ResourceList = dict[str, Fraction]
Formats = dict[str, str]
"""resource name -> the Go Quantity format of its amount (``DecimalSI``, ``BinarySI``, ``DecimalExponent``)."""

_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


def is_gpu_resource_key(key: str) -> bool:
    """A key ending in ``gpu`` or an NVIDIA MIG profile."""
    return key.endswith("gpu") or bool(_MIG.search(key))


def sum_gpus(resources: ResourceList) -> Fraction:
    """The sum of every GPU-like quantity (:func:`is_gpu_resource_key`) in ``resources``.

    Mirrors: raycluster_controller.go sumGPUs."""
    return sum((v for k, v in resources.items() if is_gpu_resource_key(k)), Fraction(0))


def _container_quantities(container: Obj) -> dict[str, str]:
    """The container's quantity strings: requests, with limits filling the names requests do not
    set (CalculatePodResource)."""
    res = container.get("resources") or {}
    out = dict(res.get("requests") or {})
    for k, v in (res.get("limits") or {}).items():
        out.setdefault(k, v)
    return out


def container_resources(container: Obj) -> ResourceList:
    """Requests, with limits filling the names requests do not set."""
    return {k: parse_quantity(v) for k, v in _container_quantities(container).items()}


def pod_resources(pod_spec: Obj) -> ResourceList:
    """Sum of :func:`container_resources` over the regular containers (init containers excluded)."""
    return sum_resource_lists(container_resources(ct) for ct in pod_spec.get("containers") or [])


def sum_resource_lists(lists: Iterable[ResourceList]) -> ResourceList:
    total: ResourceList = {}
    for rl in lists:
        for k, v in rl.items():
            total[k] = total.get(k, Fraction(0)) + v
    return total


def format_resource_list(rl: ResourceList, formats: Formats | None = None) -> dict[str, str]:
    """``rl`` as a wire ResourceList, keys sorted, each amount as Quantity.String() writes it in
    its format from ``formats`` (else in :func:`resource_string`'s form)."""
    return {k: canonical_string(rl[k], formats[k]) if formats and k in formats else resource_string(k, rl[k])
            for k in sorted(rl)}


def sum_quantities(parts: Iterable[tuple[ResourceList, Formats]]) -> tuple[ResourceList, Formats]:
    """The sum of ``(amounts, formats)`` parts and each sum's format: the first operand's, taken
    over by the next one's while the sum is still zero (resource.Quantity.Add).

    Mirrors: kuberay utils/util.go SumResourceList."""
    total: ResourceList = {}
    formats: Formats = {}
    for rl, fmts in parts:
        for k, v in rl.items():
            fmt = fmts.get(k, DECIMAL_SI)
            formats[k] = add_format(None if k not in total else (formats[k], total[k] == 0), fmt, v == 0)[0]
            total[k] = total.get(k, Fraction(0)) + v
    return total, formats


# --- replica arithmetic -------------------------------------------------------------------------

def num_of_hosts(group: Obj) -> int:
    """``numOfHosts``: 1 when missing (the CRD default), else the value (0 and below: 0).

    An explicit 0 means no worker Pods for the group, as upstream's GetWorkerGroupDesiredReplicas
    multiplies by the field (envtest "RayCluster with invalid NumOfHosts"); upstream's
    max(1, numOfHosts) in reconcilePods (issue #2084) only guards CRDs without the field."""
    n = group.get("numOfHosts")
    return 1 if n is None else max(0, int(n))


def is_group_suspended(group: Obj) -> bool:
    return bool(group.get("suspend"))


def group_min_max(group: Obj) -> tuple[int, int]:
    mn = group.get("minReplicas")
    mx = group.get("maxReplicas")
    return (int(mn) if mn is not None else 0, int(mx) if mx is not None else c.MAX_INT32)


def group_desired_replicas(group: Obj) -> int:
    """clamp(replicas, min, max) (replica units, not pods); 0 for a suspended group.

    Mirrors: utils.GetWorkerGroupDesiredReplicas.
    """
    if is_group_suspended(group):
        return 0
    mn, mx = group_min_max(group)
    replicas = group.get("replicas")
    r = int(replicas) if replicas is not None else 0
    if replicas is None or r < mn:
        return mn
    return min(r, mx)


def desired_worker_pods(spec: Obj) -> int:
    """Σ desired replicas × numOfHosts over the worker groups."""
    return sum(group_desired_replicas(g) * num_of_hosts(g) for g in spec.get("workerGroupSpecs") or [])


def min_worker_pods(spec: Obj) -> int:
    return _saturate(sum(group_min_max(g)[0] * num_of_hosts(g)
                         for g in spec.get("workerGroupSpecs") or [] if not is_group_suspended(g)))


def max_worker_pods(spec: Obj) -> int:
    return _saturate(sum(group_min_max(g)[1] * num_of_hosts(g)
                         for g in spec.get("workerGroupSpecs") or [] if not is_group_suspended(g)))


def _saturate(n: int) -> int:
    return min(n, c.MAX_INT32)


def _cluster_pods(spec: Obj, count: Callable[[Obj], int]) -> Iterator[tuple[Obj, int]]:
    """``(Pod spec, how many)``: the head's once, then each worker group's that is not
    suspended, ``count(group)`` times (the order KubeRay sums them in)."""
    yield spec.get("headGroupSpec", {}).get("template", {}).get("spec", {}), 1
    for g in spec.get("workerGroupSpecs") or []:
        if not is_group_suspended(g):
            yield g.get("template", {}).get("spec", {}), count(g)


def _raw_replicas(group: Obj) -> int:
    return int(group.get("replicas") or 0) * num_of_hosts(group)


def _pod_quantities(pod_spec: Obj) -> tuple[ResourceList, dict[str, tuple[str, bool]]]:
    """The Pod's sum (as :func:`pod_resources`) and, per resource name, the Go Quantity format of
    that sum and whether it is zero, as CalculatePodResource leaves them: the first container's
    quantity, whose format an Add takes over only while the sum is zero (resource.Quantity.Add)."""
    total: ResourceList = {}
    formats: dict[str, tuple[str, bool]] = {}
    for ct in pod_spec.get("containers") or []:
        for k, v in _container_quantities(ct).items():
            amount = parse_quantity(v)
            total[k] = total.get(k, Fraction(0)) + amount
            _add_format(formats, k, quantity_format(v), amount == 0)
    return total, formats


def _add_format(out: dict[str, tuple[str, bool]], name: str, fmt: str, zero: bool) -> None:
    """Add a quantity of format ``fmt`` (zero or not) to the sum ``out[name]`` (:func:`add_format`)."""
    out[name] = add_format(out.get(name), fmt, zero)


def pod_quantities(pod_spec: Obj) -> tuple[ResourceList, Formats]:
    """:func:`pod_resources` and the format of each sum (CalculatePodResource)."""
    total, formats = _pod_quantities(pod_spec)
    return total, {k: fmt for k, (fmt, _) in formats.items()}


def container_quantities(container: Obj) -> tuple[ResourceList, Formats]:
    """:func:`container_resources` and the format of each amount."""
    given = _container_quantities(container)
    return {k: parse_quantity(v) for k, v in given.items()}, {k: quantity_format(v) for k, v in given.items()}


def desired_quantities(spec: Obj) -> tuple[ResourceList, dict[str, str]]:
    """``(sums, formats)`` in one walk of the spec: the head Pod + Σ per-Pod × raw ``replicas`` ×
    numOfHosts (suspended groups skipped; the raw ``replicas``, not the clamped one, as upstream),
    and the Go Quantity format of each sum as KubeRay's CalculateDesiredResources leaves it (each
    Pod's sum multiplied by its replicas keeps the format; a zero product takes the next one's),
    so the status prints it as upstream does (``1e400`` is ``10e399``, ``2G`` + ``1G`` is ``3G``).

    Mirrors: kuberay utils/util.go CalculateDesiredResources, CalculatePodResource.
    """
    return _cluster_quantities(spec, _raw_replicas)


def min_quantities(spec: Obj) -> tuple[ResourceList, Formats]:
    """As :func:`desired_quantities` with ``minReplicas`` × numOfHosts per worker group.

    Mirrors: kuberay utils/util.go CalculateMinResources."""
    return _cluster_quantities(spec, lambda g: group_min_max(g)[0] * num_of_hosts(g))


def _cluster_quantities(spec: Obj, count: Callable[[Obj], int]) -> tuple[ResourceList, Formats]:
    """The head Pod + Σ per-Pod × ``count(group)`` and each sum's format (see :func:`desired_quantities`)."""
    total: ResourceList = {}
    formats: dict[str, tuple[str, bool]] = {}
    for pod_spec, n in _cluster_pods(spec, count):
        amounts, pod_formats = _pod_quantities(pod_spec)
        for k, v in amounts.items():
            total[k] = total.get(k, Fraction(0)) + v * n
        for k, (fmt, zero) in pod_formats.items():
            _add_format(formats, k, fmt, zero or n == 0)
    return total, {k: fmt for k, (fmt, _) in formats.items()}


def desired_resources(spec: Obj) -> ResourceList:
    """The sums of :func:`desired_quantities`."""
    return desired_quantities(spec)[0]


def status_quantity(total: ResourceList, formats: dict[str, str], name: str) -> str:
    """``total[name]`` as KubeRay's status writes the Quantity (``Quantity.String()`` in the
    format :func:`desired_quantities` found; ``"0"`` when absent)."""
    amount = total.get(name, Fraction(0))
    return canonical_string(amount, formats.get(name, DECIMAL_SI))


def min_resources(spec: Obj) -> ResourceList:
    """Head pod + Σ per-pod × minReplicas × numOfHosts (suspended groups skipped): the sums of
    :func:`min_quantities`."""
    return min_quantities(spec)[0]


def is_autoscaling_enabled(spec: Obj) -> bool:
    return bool(spec.get("enableInTreeAutoscaling"))
