"""The HPA's replica calculator for Resource and ContainerResource metrics: from the Pods a scale
target selects and their metrics.k8s.io readings, the replica count that brings the average
usage to the target (a utilization percentage of the Pods' requests, or a raw average value).

Pure: no client, no clock (``now`` is passed in, epoch seconds). Values are milli-units (cpu
millicores, memory milli-bytes), as upstream's ``Quantity.MilliValue()``.

- :func:`pod_metrics_info` turns a PodMetricsList's items into ``{pod name: PodMetric}`` (a Pod's
  containers summed; one container's reading for a ContainerResource metric);
- :func:`group_pods` sorts the selected Pods into ready, unready (Pending; for cpu also not yet
  Ready or still inside the cpu initialization period with a reading from before it became
  Ready), missing (no reading) and ignored (being deleted, or Failed);
- :meth:`ReplicaCalculator.resource_replicas` (Utilization) and
  :meth:`ReplicaCalculator.raw_resource_replicas` (AverageValue): ``ceil(ratio * ready Pods)``
  unless the ratio is within the tolerance; with missing or (on a scale-up) unready Pods the
  ratio is computed again counting missing Pods at 100% of their request (or the target when it
  is above 100%) on a scale-down and at 0 on a scale-up, unready Pods at 0, and the count kept
  when that reverses the direction.

Errors are :class:`MetricsError` carrying upstream's texts (``unable to get metrics for
resource cpu: ...``, ``no pods returned by selector while calculating replica count``,
``did not receive metrics for targeted pods (pods might be unready)``, ``missing request for
cpu in container c of Pod p``, ``no metrics returned matched known pods``).

Mirrors: kubernetes pkg/controller/podautoscaler/replica_calculator.go (GetResourceReplicas,
GetRawResourceReplicas, calcPlainMetricReplicas, groupPods, calculatePodRequests,
removeMetricsForPods), metrics/utilization.go (GetResourceUtilizationRatio,
GetMetricUsageRatio) and metrics/client.go (getPodMetrics, getContainerMetrics).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pumice._util.clock import parse_rfc3339
from pumice._util.duration import parse_go_duration
from pumice.api import Obj
from pumice.api.meta import get_condition
from pumice.api.quantity import QuantityError, milli_value_int64

__all__ = [
    "CPU_INITIALIZATION_PERIOD",
    "DELAY_OF_INITIAL_READINESS_STATUS",
    "TOLERANCE",
    "MetricsError",
    "PodMetric",
    "ReplicaCalculator",
    "Tolerances",
    "calculate_pod_requests",
    "group_pods",
    "pod_metrics_info",
]

#: --horizontal-pod-autoscaler-tolerance
TOLERANCE = 0.1
#: --horizontal-pod-autoscaler-cpu-initialization-period, seconds
CPU_INITIALIZATION_PERIOD = 300.0
#: --horizontal-pod-autoscaler-initial-readiness-delay, seconds
DELAY_OF_INITIAL_READINESS_STATUS = 30.0


class MetricsError(Exception):
    """A metric could not be read or turned into a replica count; ``str()`` is upstream's text."""


@dataclass(frozen=True)
class PodMetric:
    """One Pod's reading: ``value`` in milli-units, ``timestamp`` epoch seconds, ``window`` seconds."""

    value: int
    timestamp: float = 0.0
    window: float = 0.0


PodMetricsInfo = dict[str, PodMetric]


def _usage_milli(usage: Mapping[str, object], resource: str) -> int | None:
    raw = usage.get(resource)
    if raw is None:
        return None
    try:
        return milli_value_int64(raw)  # type: ignore[arg-type]
    except QuantityError:
        return None


def _stamp(item: Obj) -> tuple[float, float]:
    ts = item.get("timestamp")
    window = item.get("window")
    return (parse_rfc3339(ts) if isinstance(ts, str) and ts else 0.0,
            parse_go_duration(window) if isinstance(window, str) and window else 0.0)


def pod_metrics_info(items: Iterable[Obj], resource: str, container: str = "") -> PodMetricsInfo:
    """``{pod name: PodMetric}`` of ``resource`` from PodMetrics objects (metrics.k8s.io/v1beta1).

    Without ``container``: a Pod's containers summed; a Pod with no containers, or one lacking
    the resource, is left out. With ``container``: that container's reading (a Pod whose
    container lacks the resource is left out).

    Raises:
        MetricsError: ``container <c> not present in metrics for pod <ns>/<name>``.
    """
    out: PodMetricsInfo = {}
    for item in items:
        md = item.get("metadata") or {}
        name = str(md.get("name") or "")
        containers = [c for c in item.get("containers") or [] if isinstance(c, dict)]
        ts, window = _stamp(item)
        if container:
            found = next((c for c in containers if c.get("name") == container), None)
            if found is None:
                raise MetricsError(f"container {container} not present in metrics for pod "
                                   f"{md.get('namespace', '')}/{name}")
            value = _usage_milli(found.get("usage") or {}, resource)
            if value is not None:
                out[name] = PodMetric(value, ts, window)
            continue
        total = 0
        missing = not containers
        for c in containers:
            value = _usage_milli(c.get("usage") or {}, resource)
            if value is None:
                missing = True
                break
            total += value
        if not missing:
            out[name] = PodMetric(total, ts, window)
    return out


def _time(value: object) -> float | None:
    return parse_rfc3339(value) if isinstance(value, str) and value else None


def group_pods(pods: Iterable[Obj], metrics: Mapping[str, PodMetric], resource: str, now: float,
               cpu_initialization_period: float = CPU_INITIALIZATION_PERIOD,
               delay_of_initial_readiness_status: float = DELAY_OF_INITIAL_READINESS_STATUS,
               ) -> tuple[int, set[str], set[str], set[str]]:
    """``(ready count, unready names, missing names, ignored names)`` (see the module docstring)."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        md = pod.get("metadata") or {}
        name = str(md.get("name") or "")
        status = pod.get("status") or {}
        phase = status.get("phase")
        if md.get("deletionTimestamp") or phase == "Failed":
            ignored.add(name)
            continue
        if phase == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            condition = get_condition(pod, "Ready")
            started = _time(status.get("startTime"))
            if condition is None or started is None:
                is_unready = True
            else:
                transition = _time(condition.get("lastTransitionTime")) or 0.0
                if started + cpu_initialization_period > now:
                    # still initializing: not ready, or no full window since it became ready
                    is_unready = condition.get("status") == "False" or metric.timestamp < transition + metric.window
                else:
                    # unready and never ready since start
                    is_unready = (condition.get("status") == "False"
                                  and started + delay_of_initial_readiness_status > transition)
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def calculate_pod_requests(pods: Iterable[Obj], container: str, resource: str) -> dict[str, int]:
    """``{pod name: request of resource, milli}``: the Pod-level request when the Pod sets
    ``spec.resources`` and no container is named, else its containers (and restartable init
    containers) summed, or only ``container``'s.

    Raises:
        MetricsError: ``missing request for <resource> in container <c> of Pod <p>``, ``missing
            pod-level request for <resource> in Pod <p>``, ``container <c> not found in Pod <p>``.
    """
    out: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        name = str((pod.get("metadata") or {}).get("name") or "")
        pod_level = spec.get("resources") or {}
        if not container and (pod_level.get("requests") or pod_level.get("limits")):
            value = _usage_milli(pod_level.get("requests") or {}, resource)
            if value is None:
                raise MetricsError(f"missing pod-level request for {resource} in Pod {name}")
            out[name] = value
            continue
        containers = list(spec.get("containers") or [])
        containers += [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
        total = 0
        found = False
        for c in containers:
            if container and c.get("name") != container:
                continue
            value = _usage_milli((c.get("resources") or {}).get("requests") or {}, resource)
            if value is None:
                raise MetricsError(f"missing request for {resource} in container {c.get('name', '')} of Pod {name}")
            total += value
            found = True
            if container:
                break
        if container and not found:
            raise MetricsError(f"container {container} not found in Pod {name}")
        out[name] = total
    return out


def _quotient(a: int, b: int) -> int:
    """Go's integer division (truncated toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def resource_utilization_ratio(metrics: Mapping[str, PodMetric], requests: Mapping[str, int],
                               target_utilization: int) -> tuple[float, int, int]:
    """``(usage ratio, utilization %, average raw value milli)`` over the Pods that have a request.

    Raises:
        MetricsError: ``no metrics returned matched known pods``.
    """
    total = requested = entries = 0
    for name, metric in metrics.items():
        if name not in requests:
            continue
        total += metric.value
        requested += requests[name]
        entries += 1
    if requested == 0:
        raise MetricsError("no metrics returned matched known pods")
    utilization = _quotient(total * 100, requested)
    return utilization / target_utilization, utilization, _quotient(total, entries)


def metric_usage_ratio(metrics: Mapping[str, PodMetric], target_usage: int) -> tuple[float, int]:
    """``(usage ratio, average usage milli)`` (an empty mapping is ratio 0)."""
    if not metrics:
        return 0.0, 0
    usage = _quotient(sum(m.value for m in metrics.values()), len(metrics))
    return usage / target_usage, usage


@dataclass(frozen=True)
class Tolerances:
    """The band of usage ratios ``[1 - scale_down, 1 + scale_up]`` within which the replica count
    stays (an HPA's ``behavior.scaleDown.tolerance`` / ``scaleUp.tolerance``, else the
    controller's --horizontal-pod-autoscaler-tolerance).

    Mirrors: kubernetes pkg/controller/podautoscaler/replica_calculator.go Tolerances.isWithin."""

    scale_down: float = TOLERANCE
    scale_up: float = TOLERANCE

    def within(self, ratio: float) -> bool:
        return 1.0 - self.scale_down <= ratio <= 1.0 + self.scale_up


@dataclass(frozen=True)
class ReplicaCalculator:
    """Computes replica counts (see the module docstring); periods in seconds."""

    tolerance: float = TOLERANCE
    cpu_initialization_period: float = CPU_INITIALIZATION_PERIOD
    delay_of_initial_readiness_status: float = DELAY_OF_INITIAL_READINESS_STATUS

    def _sorted(self, pods: list[Obj], metrics: PodMetricsInfo, resource: str, now: float
                ) -> tuple[int, set[str], set[str]]:
        if not pods:
            raise MetricsError("no pods returned by selector while calculating replica count")
        ready, unready, missing, ignored = group_pods(pods, metrics, resource, now, self.cpu_initialization_period,
                                                      self.delay_of_initial_readiness_status)
        for name in ignored | unready:
            metrics.pop(name, None)
        if not metrics:
            raise MetricsError("did not receive metrics for targeted pods (pods might be unready)")
        return ready, unready, missing

    def resource_replicas(self, current: int, target_utilization: int, resource: str, pods: list[Obj],
                          metrics: PodMetricsInfo, now: float, container: str = "",
                          tolerances: Tolerances | None = None) -> tuple[int, int, int]:
        """GetResourceReplicas after the metrics were read: ``(replicas, utilization %,
        average raw value milli)``. ``metrics`` is consumed (modified).

        Raises:
            MetricsError: see the module docstring.
        """
        ready, unready, missing = self._sorted(pods, metrics, resource, now)
        requests = calculate_pod_requests(pods, container, resource)
        ratio, utilization, raw = resource_utilization_ratio(metrics, requests, target_utilization)
        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if self._band(tolerances).within(ratio):
                return current, utilization, raw
            return math.ceil(ratio * ready), utilization, raw
        fallback = max(100, target_utilization)
        _refill(metrics, ratio, missing, unready if scale_up_with_unready else [],
                lambda name: requests[name] * fallback // 100)
        new_ratio, _, _ = resource_utilization_ratio(metrics, requests, target_utilization)
        return self._rebalanced(current, ratio, new_ratio, len(metrics), tolerances), utilization, raw

    def raw_resource_replicas(self, current: int, target_usage: int, resource: str, pods: list[Obj],
                              metrics: PodMetricsInfo, now: float, tolerances: Tolerances | None = None
                              ) -> tuple[int, int]:
        """GetRawResourceReplicas (calcPlainMetricReplicas) after the metrics were read:
        ``(replicas, average usage milli)``. ``metrics`` is consumed (modified).

        Raises:
            MetricsError: see the module docstring.
        """
        ready, unready, missing = self._sorted(pods, metrics, resource, now)
        ratio, usage = metric_usage_ratio(metrics, target_usage)
        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if self._band(tolerances).within(ratio):
                return current, usage
            return math.ceil(ratio * ready), usage
        _refill(metrics, ratio, missing, unready if scale_up_with_unready else [], lambda name: target_usage)
        new_ratio, _ = metric_usage_ratio(metrics, target_usage)
        return self._rebalanced(current, ratio, new_ratio, len(metrics), tolerances), usage

    def _band(self, tolerances: Tolerances | None) -> Tolerances:
        return tolerances if tolerances is not None else Tolerances(self.tolerance, self.tolerance)

    def _rebalanced(self, current: int, ratio: float, new_ratio: float, counted: int,
                    tolerances: Tolerances | None) -> int:
        """The count after the missing/unready Pods were filled in: the current one when the
        change is within the tolerances or would reverse the direction of the first ratio."""
        if (self._band(tolerances).within(new_ratio) or (ratio < 1.0 < new_ratio)
                or (ratio > 1.0 > new_ratio)):
            return current
        replicas = math.ceil(new_ratio * counted)
        if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
            return current
        return replicas


def _refill(metrics: PodMetricsInfo, ratio: float, missing: Iterable[str], unready: Iterable[str],
            low: Callable[[str], int]) -> None:
    """Fill in the Pods without a usable sample before the ratio is taken again, as upstream's
    calculators do: a missing Pod counts ``low(name)`` (milli) when the ratio points down, 0 when it
    points up (none when it is exactly 1); each Pod of ``unready`` (pass it only when scaling up
    with unready Pods) counts 0. ``metrics`` is modified in place."""
    if ratio < 1.0:
        for name in missing:
            metrics[name] = PodMetric(low(name))
    elif ratio > 1.0:
        for name in missing:
            metrics[name] = PodMetric(0)
    for name in unready:
        metrics[name] = PodMetric(0)
