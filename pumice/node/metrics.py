"""Resource usage of the node agent's Nodes and Pods, for metrics.k8s.io (``kubectl top``).

Every ``period`` seconds the sampler reads, per running Pod, the CPU time of its processes
(``/proc/<pid>/stat`` utime + stime of every pid in the Pod's memory cgroup, or of its container
process groups) and its memory working set (the cgroup's ``memory.current`` /
``memory.usage_in_bytes`` minus inactive file pages, else the processes' resident set), and for
the machine ``/proc/stat`` and ``/proc/meminfo``. CPU usage is the CPU time between the last two
samples divided by the time between them (the window), as metrics-server computes it.

The kubelet endpoint serves the result as JSON at ``GET /stats/usage``::

    {"timestamp": <epoch s>, "window": <s>, "nodes": {"<node>": {"cpu": <cores>, "memory": <bytes>}},
     "pods": [{"namespace": ..., "name": ..., "node": ..., "containers": [{"name": ..., "cpu": <cores>,
               "memory": <bytes>}]}]}

Mirrors: kubernetes-sigs/metrics-server (pkg/scraper: cpu rate over the scrape window, memory
working set) over the kubelet's cAdvisor figures. Deviates: a Pod's usage is reported against its
first container (processes are not attributed to containers); the logical Nodes of one agent
share the machine and each reports the machine's usage divided evenly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pumice.api import Obj

__all__ = ["UsageSampler"]

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_cpu_seconds(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _proc_rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _cgroup_working_set(path: str) -> int | None:
    if not path:
        return None
    p = Path(path)
    try:
        if (p / "memory.current").exists():
            usage = int((p / "memory.current").read_text())
            inactive = _stat_value(p / "memory.stat", "inactive_file")
        else:
            usage = int((p / "memory.usage_in_bytes").read_text())
            inactive = _stat_value(p / "memory.stat", "total_inactive_file")
    except (OSError, ValueError):
        return None
    return max(0, usage - inactive)


def _stat_value(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
    except (OSError, ValueError):
        pass
    return 0


def _machine() -> tuple[float, int]:
    """(busy CPU seconds since boot, memory working set bytes) of the machine."""
    busy = 0.0
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in first[:8])
        busy = (user + nice + system + irq + softirq + steal) / _TICKS
    except (OSError, ValueError, IndexError):
        pass
    mem: dict[str, int] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            k, _, v = line.partition(":")
            mem[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return busy, max(0, mem.get("MemTotal", 0) - mem.get("MemAvailable", 0))


@dataclass
class PodSample:
    namespace: str
    name: str
    node: str
    container: str
    cpu_seconds: float
    memory: int


@dataclass
class Sample:
    at: float
    machine_cpu: float
    machine_memory: int
    pods: dict[str, PodSample] = field(default_factory=dict)


#: ``pods()`` -> ``(uid, namespace, name, node, first container, pids, cgroup path)`` of running Pods
PodSource = Callable[[], Iterable[tuple[str, str, str, str, str, list[int], str]]]


class UsageSampler:
    """Samples usage (see the module docstring); :meth:`sample` is called periodically by the agent."""

    def __init__(self, pods: PodSource, nodes: Callable[[], list[str]], now: Callable[[], float]) -> None:
        self._pods = pods
        self._nodes = nodes
        self._now = now
        self._prev: Sample | None = None
        self._last: Sample | None = None

    def sample(self) -> None:
        cpu, mem = _machine()
        s = Sample(self._now(), cpu, mem)
        for uid, ns, name, node, container, pids, cgroup in self._pods():
            ws = _cgroup_working_set(cgroup)
            s.pods[uid] = PodSample(ns, name, node, container, sum(_proc_cpu_seconds(p) for p in pids),
                                    ws if ws is not None else sum(_proc_rss(p) for p in pids))
        self._prev, self._last = self._last, s

    def usage(self) -> Obj | None:
        """The JSON document of ``/stats/usage``; None before two samples exist."""
        prev, last = self._prev, self._last
        if prev is None or last is None or last.at <= prev.at:
            return None
        window = last.at - prev.at
        nodes = self._nodes() or [""]
        node_cpu = max(0.0, last.machine_cpu - prev.machine_cpu) / window / len(nodes)
        out: Obj = {"timestamp": last.at, "window": window,
                    "nodes": {n: {"cpu": node_cpu, "memory": last.machine_memory // len(nodes)} for n in nodes},
                    "pods": []}
        for uid, ps in sorted(last.pods.items(), key=lambda kv: (kv[1].namespace, kv[1].name)):
            before = prev.pods.get(uid)
            cpu = max(0.0, ps.cpu_seconds - before.cpu_seconds) / window if before is not None else 0.0
            out["pods"].append({"namespace": ps.namespace, "name": ps.name, "node": ps.node,
                                "containers": [{"name": ps.container, "cpu": cpu, "memory": ps.memory}]})
        return out
