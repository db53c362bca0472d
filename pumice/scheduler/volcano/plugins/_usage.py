"""Past resource usage of a queue, read from the Pods the scheduler sees (pure functions).

A Pod used its request from ``status.startTime`` until it ended (the latest
``containerStatuses[].state.terminated.finishedAt``) or, still running, until now. The usage
plugins (admission-fair-sharing, usage-quota) integrate these intervals; nothing is stored between
sessions, so history lasts as long as the Pods do (a deleted Pod's usage is forgotten).

Units: cpu in cores, memory in GiB, other resources in whole units (``nvidia.com/gpu``), times in
epoch seconds; usage in unit-seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from pumice._util.clock import parse_rfc3339
from pumice.scheduler.volcano.api.resource import CPU, MEMORY, PODS, Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus

GIB = float(1 << 30)

_USING = (TaskStatus.Bound, TaskStatus.Running, TaskStatus.Succeeded, TaskStatus.Failed, TaskStatus.Releasing)


def units(res: Resource) -> dict[str, float]:
    """``res`` as cores / GiB / whole units per resource name (``pods`` left out)."""
    out: dict[str, float] = {}
    for n in res.resource_names():
        if n == PODS:
            continue
        v = res.get(n)
        out[n] = v / 1000.0 if n == CPU else v / GIB if n == MEMORY else v / 1000.0
    return out


def run_interval(task: TaskInfo, now: float) -> tuple[float, float] | None:
    """``(start, end)`` of the task's Pod in epoch seconds, or None when it never started.

    Raises:
        ValueError: a timestamp on the Pod is not RFC 3339.
    """
    if task.status not in _USING:
        return None
    st = task.pod.get("status") or {}
    start = st.get("startTime")
    if not start:
        return None
    begin = parse_rfc3339(str(start))
    if task.status in (TaskStatus.Succeeded, TaskStatus.Failed):
        ends = [parse_rfc3339(str(t)) for cs in st.get("containerStatuses") or []
                if (t := ((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))]
        end = max(ends) if ends else now
    else:
        end = now
    return begin, max(begin, min(end, now))


def decayed_seconds(start: float, end: float, now: float, half_life: float) -> float:
    """``integral over [start, end] of 2^(-(now - t) / half_life) dt``: seconds of use, each
    weighted by how long ago it was (a use ``half_life`` ago counts half). ``half_life`` <= 0
    means no decay (plain duration)."""
    if end <= start:
        return 0.0
    if half_life <= 0:
        return end - start
    k = math.log(2) / half_life
    return (math.exp(-k * (now - end)) - math.exp(-k * (now - start))) / k


def window_seconds(start: float, end: float, since: float, until: float) -> float:
    """Seconds of ``[start, end]`` inside ``[since, until]``."""
    return max(0.0, min(end, until) - max(start, since))


def weighted(amounts: Mapping[str, float], weights: Mapping[str, float], default: float) -> float:
    """``sum(amount * weight)``, a resource without a weight counting ``default``."""
    return sum(v * weights.get(n, default) for n, v in amounts.items())


def task_usage(tasks: Iterable[TaskInfo], now: float, seconds_of: Callable[[float, float], float]) -> dict[str, float]:
    """Per resource, ``sum(units(request) * seconds_of(start, end))`` over ``tasks`` that ran.

    ``seconds_of`` is a ``(start, end) -> seconds`` function (decayed or windowed).
    """
    out: dict[str, float] = {}
    for t in tasks:
        iv = run_interval(t, now)
        if iv is None:
            continue
        s = seconds_of(*iv)
        if s <= 0:
            continue
        for n, v in units(t.resreq).items():
            out[n] = out.get(n, 0.0) + v * s
    return out
