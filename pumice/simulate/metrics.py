"""The summary of a run: pure functions of the recorded run (no clock, no I/O).

Definitions (all times in simulated seconds; see docs in :mod:`pumice.simulate.report`):

- job arrival: the trace's arrival time; job *start*: the moment the last Pod its gang needs was
  bound (``gang_bound``; one-Pod jobs: the bind; a Ray cluster's gang is its PodGroup's
  ``minMember``); *ready* (Ray kinds only): a RayService's ``Ready`` condition first True, a
  RayJob's Ray job start (``rayJobInfo.startTime``); *finish*: the last of its Pods terminal
  (Volcano Job: its phase Completed/Failed/Aborted/Terminated, after the restarts its policies
  made; RayJob: ``jobDeploymentStatus`` Complete/Failed; services (RayService, Deployment, DLRM
  instances): deleted);
- ready delay = ready - arrival, over Ray jobs that got ready (RayService: until it serves;
  RayJob: until its Ray job runs);
- JCT = finish - arrival, over finished jobs that started (for a service: its lifetime up to its
  deletion); queueing delay = start - arrival, over started jobs;
- makespan = last finish - first arrival;
- allocation ratio: time-weighted mean of allocated / capacity over [0, end], from the step
  timeline; fragmentation likewise (free GPUs on partly allocated GPU Nodes / all GPUs);
- per-queue share: time-weighted mean of the CPU the Queue's Pods hold / all CPU, next to the
  time-weighted mean of the deserved CPU the fair-share plugin (proportion, capacity) computed /
  all CPU; the same for GPUs on a cluster with GPUs (``*_gpu_share``; left out without GPUs);
- partial-gang seconds: summed over gang jobs, time with 0 < held Pods < minMember;
- percentiles: nearest-rank on the sorted values (p99 of n values is the ceil(0.99 n)-th).
"""

from __future__ import annotations

import math
from typing import Any

from pumice.simulate.recorder import REJECTED, Recorder, Sample


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


def _queue_means(timeline: list[Sample], end: float, queues: list[str], cpu_cap: int,
                 gpu_cap: int) -> dict[str, tuple[float, float]]:
    """Per queue, the means over [0, end] of the CPU and GPU shares its Pods hold (``queues``'
    cpu / ``cpu_cap`` and gpu / ``gpu_cap`` in each sample, 0 where a sample leaves the queue out;
    0.0 for a capacity of 0): :func:`time_weighted` of each, in one walk of the timeline. Each
    queue's sum takes the same terms in the same order (a sample without the queue adds 0.0,
    which leaves a sum of non-negative terms as it is), so the same floats."""
    cpu = dict.fromkeys(queues, 0.0)
    gpu = dict.fromkeys(queues, 0.0)
    if end > 0 and timeline:
        last = len(timeline) - 1
        for i, s in enumerate(timeline):
            if s.t >= end:
                break
            dt = min(timeline[i + 1].t if i < last else end, end) - s.t
            for q, (c, g) in s.queues.items():
                if q in cpu:
                    if cpu_cap:
                        cpu[q] += float(c / cpu_cap) * dt
                    if gpu_cap:
                        gpu[q] += float(g / gpu_cap) * dt
    else:
        end = 0.0
    return {q: (cpu[q] / end if end else 0.0, gpu[q] / end if end else 0.0) for q in queues}


def _series_mean(series: list[tuple[float, float, float]], end: float, index: int) -> float:
    """Mean over [0, end] of the step function ``(t, value...)``'s ``index``-th value (0 before
    its first step)."""
    if end <= 0 or not series:
        return 0.0
    total = 0.0
    for i, step in enumerate(series):
        t = step[0]
        if t >= end:
            break
        nxt = series[i + 1][0] if i + 1 < len(series) else end
        total += step[index] * (min(nxt, end) - t)
    return total / end


def rounded(x: float | None, nd: int = 3) -> float | None:
    """``x`` rounded to ``nd`` decimals (3: milliseconds), always a float (``0.0``, never ``0``:
    every figure of a field has one JSON type), or None."""
    return None if x is None else float(round(x, nd))


_r = rounded


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
            "start": _r(started), "ready": _r(js.ready), "finish": _r(js.finished), "status": js.status or ("Running" if started is not None else
                                    f"PartialGang {js.held}/{js.min_member}" if js.held else "Pending"),
            "queueing_delay": _r(started - a.time) if started is not None else None,
            "jct": _r(js.finished - a.time) if js.finished is not None and started is not None else None,
            "partial_gang_seconds": _r(js.partial_seconds),
            "evictions": sum(p.evictions for p in pods),
            "restarts": js.retry_count,
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
                     "finish": _r(p.finished), "deleted": _r(p.deleted),
                     "phase": p.phase_at_deletion if p.phase_at_deletion is not None else p.phase,
                     "status": p.status, "evictions": p.evictions})
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
    held = _queue_means(rec.timeline, end, names, cpu_cap, gpu_cap)
    counts: dict[str, int] = {}
    for j in jobs:
        counts[j["queue"]] = counts.get(j["queue"], 0) + 1
    for q in names:
        queues[q] = {
            "jobs": counts.get(q, 0),
            "allocated_cpu_share": _r(held[q][0] if cpu_cap else 0.0, 4),
            "deserved_cpu_share": _r(_series_mean(rec.deserved.get(q, []), end, 1), 4),
        }
        if gpu_cap:
            queues[q]["allocated_gpu_share"] = _r(held[q][1], 4)
            queues[q]["deserved_gpu_share"] = _r(_series_mean(rec.deserved.get(q, []), end, 2), 4)
    out: dict[str, Any] = {
        "ended_by": ended_by,
        "simulated_seconds": _r(end),
        "jobs": {"total": len(jobs), "finished": len(jct), "started": len(delay),
                 "never_started": sum(1 for j in jobs if j["start"] is None),
                 "rejected": sum(1 for j in jobs if str(j["status"]).startswith(REJECTED))},
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
            "cpu_ratio_peak": _r(max((s.cpu_milli for s in rec.timeline), default=0) / cpu_cap if cpu_cap else 0.0, 4),
            "gpu_ratio_peak": _r(max((s.gpu_milli for s in rec.timeline), default=0) / gpu_cap if gpu_cap else 0.0, 4),
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
    restarted = [j["restarts"] for j in jobs if j["restarts"]]
    if restarted:
        out["restarts"] = {"jobs": len(restarted), "total": sum(restarted)}
    ready = [j["ready"] - j["arrival"] for j in jobs if j["ready"] is not None]
    if ready:
        out["ready_delay"] = {"jobs": len(ready), "mean": _r(mean(ready)), "median": _r(median(ready)),
                              "p99": _r(percentile(ready, 99))}
    if trace_delay:
        out["trace_check"] = trace_check(rec, jobs)
    return out


WAIT_THRESHOLDS = (10.0, 60.0)
"""Delays (seconds) the trace check counts Pods over: well above the 1-s granularity of both the
trace's timestamps and the default scheduling period, so neither rounding counts as waiting."""


def _delay_stats(values: list[float]) -> dict[str, Any]:
    out: dict[str, Any] = {"pods": len(values), "mean": _r(mean(values)), "median": _r(median(values)),
                           "p90": _r(percentile(values, 90)), "p99": _r(percentile(values, 99)),
                           "max": _r(max(values) if values else None)}
    for th in WAIT_THRESHOLDS:
        out[f"share_over_{th:g}s"] = _r(sum(1 for v in values if v > th) / len(values), 4) if values else None
    return out


def trace_timeline(rec: Recorder, jobs: list[dict[str, Any]]) -> list[tuple[float, int, int]]:
    """The allocation the trace's own times imply, as a step function ``[(t, cpu_milli, gpu_milli)]``:
    each Pod the trace scheduled holds its requests from ``arrival + trace delay`` for its trace
    duration (to the end of the run when it has none). Arrival times are the replayed ones, so with
    ``--scale`` not 1 it is the demand the replay offers at the trace's own delays."""
    end = max((s.t for s in rec.timeline), default=0.0)
    pods_by_job: dict[str, list[Any]] = {}
    for p in rec.pods.values():
        pods_by_job.setdefault(p.job, []).append(p)
    steps: list[tuple[float, int, int]] = []
    for j in jobs:
        if j["trace_queueing_delay"] is None:
            continue
        a = rec.jobs[j["job"]].arrival
        start = a.time + (a.trace_delay or 0.0)
        stop = start + a.duration if a.duration is not None else max(end, start)
        for p in pods_by_job.get(j["job"], []):
            steps += [(start, p.cpu_milli, p.gpu_milli), (stop, -p.cpu_milli, -p.gpu_milli)]
    steps.sort(key=lambda x: (x[0], x[1] + x[2]))  # ends before starts at the same instant
    out: list[tuple[float, int, int]] = []
    cpu = gpu = 0
    for t, c, g in steps:
        cpu, gpu = cpu + c, gpu + g
        if out and out[-1][0] == t:
            out[-1] = (t, cpu, gpu)
        else:
            out.append((t, cpu, gpu))
    return out


def trace_check(rec: Recorder, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """Simulated vs the trace's own queueing delay, over the same Pods (openb).

    ``simulated`` and ``trace`` are taken over the Pods the trace scheduled (a trace delay is
    known), so both sides count the same Pods; ``simulated.not_started`` counts those the
    simulation never bound. The trace's Pods that were never scheduled (still Pending when
    deleted) are counted apart with what the simulation did with them. ``trace_no_gpu``: the
    trace's delay of Pods that ask for no GPU (the cluster's CPU was never short in the pod
    list: the floor of the real system's latency). ``occupancy``: the peak share of the
    cluster's CPU and GPU the trace's own bind..deletion intervals hold (on the arrival times as
    replayed; with ``--scale`` not 1 that is the demand the replay offers), next to the simulated
    peak (see :func:`summary`'s ``allocation``).
    """
    compared = [j for j in jobs if j["trace_queueing_delay"] is not None]
    sim = [j["queueing_delay"] for j in compared if j["queueing_delay"] is not None]
    never = [j for j in jobs if j["kind"] == "Pod" and j["trace_queueing_delay"] is None]
    no_gpu = [j["trace_queueing_delay"] for j in compared if not j["gpus"]]
    implied = trace_timeline(rec, jobs)
    cpu_cap, gpu_cap = rec.cpu_capacity, rec.gpu_capacity
    sim_stats = _delay_stats(sim)
    sim_stats["not_started"] = len(compared) - len(sim)
    return {
        "what": "queueing delay (creation -> bind), seconds, over the Pods the trace scheduled: simulated vs the "
                "trace's scheduled_time - creation_time",
        "simulated": sim_stats,
        "trace": _delay_stats([j["trace_queueing_delay"] for j in compared]),
        "trace_no_gpu": _delay_stats(no_gpu),
        "trace_pods_never_scheduled": len(never),
        "trace_pods_never_scheduled_bound_in_simulation": sum(1 for j in never if j["start"] is not None),
        "occupancy": {
            "trace_cpu_ratio_peak": _r(max((c for _t, c, _g in implied), default=0) / cpu_cap if cpu_cap else 0.0, 4),
            "trace_gpu_ratio_peak": _r(max((g for _t, _c, g in implied), default=0) / gpu_cap if gpu_cap else 0.0, 4),
            "simulated_cpu_ratio_peak": _r(max((s.cpu_milli for s in rec.timeline), default=0) / cpu_cap
                                           if cpu_cap else 0.0, 4),
            "simulated_gpu_ratio_peak": _r(max((s.gpu_milli for s in rec.timeline), default=0) / gpu_cap
                                           if gpu_cap else 0.0, 4),
        },
    }
