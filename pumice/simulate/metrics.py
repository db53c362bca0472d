"""The summary of a run: pure functions of the recorded run (no clock, no I/O).

Definitions (all times in simulated seconds; see docs in :mod:`pumice.simulate.report`):

- job arrival: the trace's arrival time; job *start*: the moment the last Pod its gang needs was
  bound (``gang_bound``; one-Pod jobs: the bind); *finish*: the last of its Pods terminal (RayJob:
  ``jobDeploymentStatus`` Complete/Failed; services: deleted);
- JCT = finish - arrival, over finished jobs; queueing delay = start - arrival, over started jobs;
- makespan = last finish - first arrival;
- allocation ratio: time-weighted mean of allocated / capacity over [0, end], from the step
  timeline; fragmentation likewise (free GPUs on partly allocated GPU Nodes / all GPUs);
- per-queue share: time-weighted mean of the Queue's allocated GPUs / all GPUs, next to the
  time-weighted mean of the deserved share the proportion plugin computed;
- partial-gang seconds: summed over gang jobs, time with 0 < held Pods < minMember;
- percentiles: nearest-rank on the sorted values (p99 of n values is the ceil(0.99 n)-th).
"""

from __future__ import annotations

import math
from typing import Any

from pumice.simulate.recorder import Recorder, Sample


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (``p`` in [0, 100]); None for no values."""
    if not values:
        return None
    v = sorted(values)
    k = max(1, math.ceil(p / 100 * len(v)))
    return v[min(k, len(v)) - 1]


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def median(values: list[float]) -> float | None:
    if not values:
        return None
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def time_weighted(timeline: list[Sample], end: float, value: Any) -> float:
    """Mean of ``value(sample)`` over [0, end] for a step function (0 before the first sample)."""
    if end <= 0 or not timeline:
        return 0.0
    total = 0.0
    for i, s in enumerate(timeline):
        if s.t >= end:
            break
        nxt = timeline[i + 1].t if i + 1 < len(timeline) else end
        total += float(value(s)) * (min(nxt, end) - s.t)
    return total / end


def _series_mean(series: list[tuple[float, float]], end: float) -> float:
    if end <= 0 or not series:
        return 0.0
    total = 0.0
    for i, (t, v) in enumerate(series):
        if t >= end:
            break
        nxt = series[i + 1][0] if i + 1 < len(series) else end
        total += v * (min(nxt, end) - t)
    return total / end


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def job_rows(rec: Recorder) -> list[dict[str, Any]]:
    """One row per job (see the output schema in the README)."""
    by_job: dict[str, list[Any]] = {}
    for p in rec.pods.values():
        by_job.setdefault(p.job, []).append(p)
    rows = []
    for name in sorted(rec.jobs, key=lambda j: (rec.jobs[j].arrival.time, j)):
        js = rec.jobs[name]
        a = js.arrival
        pods = by_job.get(name, [])
        started = js.gang_bound
        rows.append({
            "job": name, "kind": a.kind, "queue": a.queue, "tasks": a.tasks, "gpus": a.gpus,
            "arrival": _r(a.time), "enqueue": _r(js.enqueued), "bind": _r(min((p.bound for p in pods if p.bound is not None), default=None)),
            "start": _r(started), "finish": _r(js.finished), "status": js.status or ("Running" if started is not None else
                                    f"PartialGang {js.held}/{js.min_member}" if js.held else "Pending"),
            "queueing_delay": _r(started - a.time) if started is not None else None,
            "jct": _r(js.finished - a.time) if js.finished is not None and started is not None else None,
            "partial_gang_seconds": _r(js.partial_seconds),
            "evictions": sum(p.evictions for p in pods),
            "trace_queueing_delay": _r(a.trace_delay),
            "nodes": " ".join(sorted({p.node for p in pods if p.node})),
        })
    return rows


def pod_rows(rec: Recorder) -> list[dict[str, Any]]:
    """One row per Pod."""
    rows = []
    for key in sorted(rec.pods, key=lambda k: (rec.pods[k].created, k)):
        p = rec.pods[key]
        rows.append({"pod": key, "job": p.job, "queue": p.queue, "node": p.node, "cpu_milli": p.cpu_milli,
                     "gpu_milli": p.gpu_milli, "arrival": _r(p.created), "bind": _r(p.bound), "start": _r(p.started),
                     "finish": _r(p.finished), "deleted": _r(p.deleted), "phase": p.phase, "evictions": p.evictions})
    return rows


def summary(rec: Recorder, end: float, ended_by: str, jobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The summary dict (deterministic: no wall time in it)."""
    jobs = jobs if jobs is not None else job_rows(rec)
    jct = [j["jct"] for j in jobs if j["jct"] is not None]
    delay = [j["queueing_delay"] for j in jobs if j["queueing_delay"] is not None]
    trace_delay = [j["trace_queueing_delay"] for j in jobs if j["trace_queueing_delay"] is not None]
    finishes = [j["finish"] for j in jobs if j["finish"] is not None]
    arrivals = [j["arrival"] for j in jobs]
    gpu_cap, cpu_cap = rec.gpu_capacity, rec.cpu_capacity
    gang_jobs = [js for js in rec.jobs.values() if js.min_member > 1]
    partial_end = [name for name, js in sorted(rec.jobs.items()) if 0 < js.held < js.min_member]
    queues: dict[str, Any] = {}
    names = sorted({j["queue"] for j in jobs} | set(rec.deserved))
    for q in names:
        queues[q] = {
            "jobs": sum(1 for j in jobs if j["queue"] == q),
            "allocated_gpu_share": _r(time_weighted(rec.timeline, end, lambda s, q=q: s.queues.get(q, 0) / gpu_cap)
                                      if gpu_cap else 0.0, 4),
            "deserved_gpu_share": _r(_series_mean(rec.deserved.get(q, []), end), 4),
        }
    out: dict[str, Any] = {
        "ended_by": ended_by,
        "simulated_seconds": _r(end),
        "jobs": {"total": len(jobs), "finished": len(jct), "started": len(delay),
                 "never_started": sum(1 for j in jobs if j["start"] is None)},
        "pods": len(rec.pods),
        "nodes": len(rec.nodes), "gpus": gpu_cap // 1000, "cpu_cores": cpu_cap / 1000,
        "jct": {"mean": _r(mean(jct)), "median": _r(median(jct)), "p99": _r(percentile(jct, 99))},
        "queueing_delay": {"mean": _r(mean(delay)), "median": _r(median(delay)), "p99": _r(percentile(delay, 99)),
                           "p99.9": _r(percentile(delay, 99.9))},
        "makespan": _r(max(finishes) - min(arrivals)) if finishes and arrivals else None,
        "allocation": {
            "cpu_ratio_mean": _r(time_weighted(rec.timeline, end, lambda s: s.cpu_milli / cpu_cap) if cpu_cap else 0.0, 4),
            "gpu_ratio_mean": _r(time_weighted(rec.timeline, end, lambda s: s.gpu_milli / gpu_cap) if gpu_cap else 0.0, 4),
            "gpu_fragmentation_mean": _r(time_weighted(rec.timeline, end, lambda s: s.frag_gpu_milli / gpu_cap)
                                         if gpu_cap else 0.0, 4),
        },
        "queues": queues,
        "preemptions": rec.preemptions,
        "reclaims": rec.reclaims,
        "evictions": sum(p.evictions for p in rec.pods.values()),
        "gang": {"gang_jobs": len(gang_jobs),
                 "partial_gang_seconds": _r(sum(js.partial_seconds for js in gang_jobs)),
                 "jobs_holding_partial_gang_at_end": partial_end,
                 "deadlock": ended_by == "stalled" and bool(partial_end)},
        "sessions": rec.sessions,
    }
    if trace_delay:
        out["trace_check"] = {
            "what": "queueing delay (creation -> bind): simulated vs the trace's scheduled_time - creation_time",
            "simulated": {"mean": _r(mean(delay)), "median": _r(median(delay)), "p90": _r(percentile(delay, 90)),
                          "p99": _r(percentile(delay, 99))},
            "trace": {"mean": _r(mean(trace_delay)), "median": _r(median(trace_delay)),
                      "p90": _r(percentile(trace_delay, 90)), "p99": _r(percentile(trace_delay, 99))},
            "trace_pods_never_scheduled": sum(1 for j in jobs if j["kind"] == "Pod" and j["trace_queueing_delay"] is None
                                              and rec.jobs[j["job"]].arrival.trace_delay is None),
        }
    return out
