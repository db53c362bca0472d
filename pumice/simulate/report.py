"""Writing a run's outputs: per-job and per-Pod CSV and JSON, the summary, the allocation timeline,
plots and an HTML report. Everything here except ``timing.json`` is a pure function of the run,
so the same input, configuration and seed give byte-identical files.

Output directory layout (one run; with ``--compare`` one such directory per policy plus
``compare.json`` and ``index.html`` at the top)::

    summary.json    the summary (schema: :data:`SUMMARY_SCHEMA`)
    jobs.csv/.json  one row per job (columns: :data:`JOB_COLUMNS`)
    pods.csv/.json  one row per Pod (columns: :data:`POD_COLUMNS`)
    timeline.csv    t, cpu_milli, gpu_milli, frag_gpu_milli (allocated at t, until the next row;
                    t in seconds rounded to the millisecond, as every time in the outputs)
    report.html     tables and the plots below
    utilization.png, queues.png, delay_cdf.png
    timing.json     wall seconds, API writes, writes/s, wall ms per job (not deterministic)
"""

from __future__ import annotations

import csv
import html
import io
import json
from pathlib import Path
from typing import Any

from pumice.simulate import metrics
from pumice.simulate.runner import INTERRUPTED, SimResult

JOB_COLUMNS = {
    "job": "job name (the pumice.io/sim-job label of its Pods)",
    "kind": "Pod, Job (Volcano Job), RayJob, RayService or Deployment",
    "queue": "Volcano Queue",
    "tasks": "Pods the job runs (its gang size for a Volcano Job)",
    "gpus": "GPUs requested in total",
    "arrival": "seconds: when it was created",
    "enqueue": "seconds: PodGroup Inqueue (empty: never / no PodGroup)",
    "bind": "seconds: first Pod bound",
    "start": "seconds: the last Pod of its gang bound (one-Pod jobs: the bind)",
    "ready": "seconds: RayService Ready condition first True; RayJob: its Ray job started (rayJobInfo.startTime); "
             "empty for other kinds",
    "finish": "seconds: every Pod terminal (Volcano Job: its phase Completed, Failed, Aborted or Terminated, "
              "after any restarts its policies made; RayJob: Complete/Failed, ValidationFailed: rejected at once; "
              "services: deleted)",
    "status": "Succeeded, Failed, Deleted (a service at the end of its lifetime), Deleted before start, "
              "Rejected: <why>, and for a Volcano Job Aborted or Terminated (its phase; Completed is Succeeded); "
              "at the end: Running, PartialGang <held>/<minMember>, Pending",
    "queueing_delay": "start - arrival, seconds",
    "jct": "finish - arrival, seconds",
    "partial_gang_seconds": "time with 0 < bound Pods < minMember",
    "evictions": "its Pods' evictions (preempt, reclaim)",
    "restarts": "Volcano Job: its status.retryCount at the end: one per restart its lifecycle policies made "
                "(RestartJob, RestartTask, RestartPod), also the last one, which found maxRetry used up and "
                "failed the job instead; empty for other kinds",
    "trace_queueing_delay": "the trace's own scheduled - creation (openb), seconds",
    "nodes": "Nodes its Pods ran on, space-separated",
}
POD_COLUMNS = {
    "pod": "namespace/name (a re-created Pod of the same name, as a vcjob makes after an eviction or a restart "
           "by its policies: namespace/name#2, #3...)", "job": "job", "queue": "queue", "node": "Node bound to",
    "cpu_milli": "cpu request, millicores", "gpu_milli": "GPU request, 1/1000 GPU",
    "arrival": "seconds: first seen", "bind": "seconds", "start": "seconds: phase Running",
    "finish": "seconds: phase Succeeded/Failed", "deleted": "seconds: gone from the API",
    "phase": "its last phase before it was deleted (Pending, Running, Succeeded, Failed); not deleted: at the end",
    "status": "how it ended: Succeeded or Failed (on its own), Deleted (deleted while Pending or Running: by its "
              "owner, e.g. a RayCluster torn down after its RayJob, or by the run at a service's end; the kubelet "
              "then reports phase Failed for the containers it stopped, as upstream), Evicted (preempt, reclaim, a "
              "disruption); still there at the end: Running or Pending",
    "evictions": "times evicted",
}
SUMMARY_SCHEMA = {
    "ended_by": "done (every job that can end ended), until (--until reached), stalled (no progress possible) or "
                "interrupted (Ctrl-C / SIGTERM: the report covers what arrived by then, as --until would)",
    "interrupted": "only when interrupted: {signal, simulated_seconds}",
    "config": "the scheduler configuration: {file (as given, or <built-in default>), sha256 of its bytes, "
              "actions, plugins (tiers separated by ' | ')}",
    "inputs": "what produced the run, as given: {nodes, workload, format (the one read; auto: detected), queues "
              "(--queues file or null), scheduler_conf (--scheduler-conf, or the two --compare files, or null: the "
              "built-in default), batch_scheduler, seed, until (seconds or null), scale, sample (--sample N or null), "
              "period, workload_arrivals (in the file), arrivals (replayed: after --sample and --until), and note (only "
              "when --sample asked for more arrivals than the workload has)}; a run made without the CLI has what its "
              "SimConfig knows (workload, seed, until, period, batch_scheduler, arrivals)",
    "simulated_seconds": "simulated time at the end",
    "jobs": "{total, finished, started, never_started, rejected}: finished = ended after they started; rejected = "
            "the API server refused the manifest, or KubeRay a RayJob (jobDeploymentStatus ValidationFailed) "
            "(job status 'Rejected: <reason>'; never started)",
    "pods": "Pods created", "nodes": "Nodes", "gpus": "GPUs", "cpu_cores": "cores",
    "jct": "{mean, median, p99} seconds over finished jobs",
    "queueing_delay": "{mean, median, p99, p99.9} seconds over started jobs",
    "makespan": "last finish - first arrival, seconds",
    "allocation": "{cpu_ratio_mean, gpu_ratio_mean, gpu_fragmentation_mean}: time-weighted over the run; "
                  "{cpu_ratio_peak, gpu_ratio_peak}: the largest share held at any time",
    "queues": "queue -> {jobs, allocated_cpu_share, deserved_cpu_share, and on a cluster with GPUs allocated_gpu_share, "
              "deserved_gpu_share}: time-weighted means of the CPU (GPUs) the queue's Pods hold and of the CPU (GPUs) "
              "the fair-share plugin (proportion, capacity) made it deserve in each session, as shares of the "
              "cluster's; a queue with no job in a session deserves 0 then (queues.png draws both over time)",
    "preemptions": "tasks evicted by the preempt action", "reclaims": "tasks evicted by reclaim",
    "evictions": "Pod evictions seen",
    "restarts": "only when a Volcano Job restarted: {jobs, total}: the Volcano Jobs whose status.retryCount ended "
                "above 0, and the sum of those counts (jobs.csv restarts)",
    "gang": "{gang_jobs, partial_gang_seconds, jobs_holding_partial_gang_at_end, deadlock}",
    "sessions": "scheduling sessions run",
    "ready_delay": "only with RayServices/RayJobs that got ready: {jobs, mean, median, p99} of ready - arrival, "
                   "seconds (a RayService until it serves, a RayJob until its Ray job runs)",
    "trace_check": "openb only (pumice.simulate.metrics.trace_check): over the Pods the trace scheduled, the simulated "
                   "and the trace's queueing delay {pods, mean, median, p90, p99, max, share_over_10s, share_over_60s} "
                   "(simulated also not_started); trace_no_gpu: the trace's delay of the Pods without GPU; "
                   "trace_pods_never_scheduled and how many of them the simulation bound; occupancy: peak CPU and GPU "
                   "share the trace's own bind..deletion intervals hold vs the simulated peak. Why the two delays differ: "
                   "README, 'Fidelity: the openb trace check'",
}


def _csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})
    return buf.getvalue()


def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def timing(result: SimResult) -> dict[str, Any]:
    n = max(1, len(result.recorder.jobs))
    wall = result.wall_seconds
    return {"wall_seconds": round(wall, 3), "api_writes": result.api_writes,
            "api_writes_per_second": round(result.api_writes / wall, 1) if wall else None,
            "wall_ms_per_job": round(1000 * wall / n, 3), "sessions": result.recorder.sessions,
            "simulated_seconds": round(result.end_time, 3)}


RUN_FILES = ("summary.json", "jobs.csv", "jobs.json", "pods.csv", "pods.json", "timeline.csv", "timing.json",
             "report.html", "utilization.png", "queues.png", "delay_cdf.png")
"""The files :func:`write_run` writes (the PNGs only with plots)."""

COMPARE_FILES = ("compare.json", "index.html")
"""The files :func:`write_compare` writes at the top, beside one :data:`RUN_FILES` directory per run."""


def clear_earlier(out: Path) -> list[Path]:
    """Remove an earlier report from ``out`` before a new one is written there, so the directory
    never mixes two runs (a single run over a comparison, or a ``--no-plots`` run over one with
    plots): the :data:`RUN_FILES` and :data:`COMPARE_FILES` at the top, and the :data:`RUN_FILES`
    of every subdirectory holding a ``summary.json`` (a comparison's run; the subdirectory too
    when that empties it). Nothing else is touched. Returns the removed paths, sorted.

    Raises OSError when a file cannot be removed."""
    removed: list[Path] = []
    if not out.is_dir():
        return removed
    dirs = [out, *sorted(d for d in out.iterdir() if d.is_dir() and (d / "summary.json").is_file())]
    for d in dirs:
        for name in RUN_FILES + (COMPARE_FILES if d == out else ()):
            f = d / name
            if f.is_file():
                f.unlink()
                removed.append(f)
        if d != out and not any(d.iterdir()):
            d.rmdir()
    return sorted(removed)


def write_run(result: SimResult, out: Path, *, plots: bool = True) -> dict[str, Any]:
    """Write one run's files into ``out`` (created). Returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    rec = result.recorder
    jobs = metrics.job_rows(rec)
    pods = metrics.pod_rows(rec)
    summ = metrics.summary(rec, result.end_time, result.ended_by, jobs)
    if result.ended_by == INTERRUPTED:
        summ["interrupted"] = {"signal": result.stop_reason, "simulated_seconds": summ["simulated_seconds"]}
    summ["config"] = dict(result.conf)
    summ["inputs"] = inputs(result.config)
    (out / "summary.json").write_text(_json(summ))
    (out / "jobs.csv").write_text(_csv(jobs, list(JOB_COLUMNS)))
    (out / "jobs.json").write_text(_json(jobs))
    (out / "pods.csv").write_text(_csv(pods, list(POD_COLUMNS)))
    (out / "pods.json").write_text(_json(pods))
    tl: list[dict[str, Any]] = []
    for s in rec.timeline:
        row = {"t": metrics.rounded(s.t), "cpu_milli": s.cpu_milli, "gpu_milli": s.gpu_milli,
               "frag_gpu_milli": s.frag_gpu_milli}
        if tl and tl[-1]["t"] == row["t"]:
            tl[-1] = row  # two steps within the same millisecond: the later holds
        else:
            tl.append(row)
    (out / "timeline.csv").write_text(_csv(tl, ["t", "cpu_milli", "gpu_milli", "frag_gpu_milli"]))
    (out / "timing.json").write_text(_json(timing(result)))
    images = _plots(result, jobs, out) if plots else []
    (out / "report.html").write_text(_html([(result.config.name, summ)], images, title=result.config.name,
                                           configs=[(result.config.name, None, result.conf)]))
    return summ


def inputs(cfg: Any) -> dict[str, Any]:
    """``summary.json``'s ``inputs`` (:data:`SUMMARY_SCHEMA`): what the config knows, then what
    the CLI recorded in ``cfg.inputs`` (files and flags as given)."""
    out: dict[str, Any] = {"workload": cfg.workload.source or None, "batch_scheduler": cfg.batch_scheduler or "none",
                           "seed": cfg.seed, "until": cfg.until, "period": float(cfg.schedule_period),
                           "arrivals": len(cfg.workload.arrivals)}
    out.update(cfg.inputs)
    return out


def _inputs_html(summ: dict[str, Any]) -> str:
    """One line naming the files and flags of the run (``inputs``)."""
    i = summ.get("inputs") or {}
    if not i:
        return ""
    parts = [f"{html.escape(k)} <code>{html.escape('-' if i[k] is None else str(i[k]))}</code>" for k in sorted(i)]
    return "<p>Inputs: " + "; ".join(parts) + "</p>\n"


def write_compare(results: list[SimResult], out: Path, *, plots: bool = True) -> dict[str, Any]:
    """Write each run under ``out/<name>/`` and the side-by-side ``compare.json`` and ``index.html``."""
    out.mkdir(parents=True, exist_ok=True)
    summaries = []
    for r in results:
        summaries.append((r.config.name, write_run(r, out / r.config.name, plots=plots)))
    table = compare_table(summaries)
    (out / "compare.json").write_text(_json({"policies": [n for n, _ in summaries], "rows": table}))
    images = [f"{n}/{img}" for n, _ in summaries for img in ("utilization.png", "delay_cdf.png")] if plots else []
    configs: list[tuple[str, str | None, dict[str, Any]]] = [
        (r.config.name, f"{r.config.name}/report.html", r.conf) for r in results]
    (out / "index.html").write_text(_html(summaries, images, title="pumice simulate --compare", configs=configs))
    return {"policies": [n for n, _ in summaries], "rows": table}


def flat(summ: dict[str, Any]) -> dict[str, Any]:
    """The summary's scalar figures as ``a.b`` -> value (the rows of the side-by-side table)."""
    out: dict[str, Any] = {}

    def walk(prefix: str, v: Any) -> None:
        if isinstance(v, dict):
            for k in sorted(v):
                walk(f"{prefix}.{k}" if prefix else k, v[k])
        elif isinstance(v, list):
            out[prefix] = len(v)
        else:
            out[prefix] = v

    walk("", summ)
    return out


def compare_table(summaries: list[tuple[str, dict[str, Any]]]) -> list[list[Any]]:
    flats = [flat(s) for _, s in summaries]
    keys: list[str] = []
    for f in flats:
        keys += [k for k in f if k not in keys]
    return [[k, *[f.get(k) for f in flats]] for k in keys]


def format_table(summaries: list[tuple[str, dict[str, Any]]], keys: list[str] | None = None) -> str:
    """A plain-text side-by-side table (for the terminal)."""
    rows = compare_table(summaries)
    if keys is not None:
        rows = [r for r in rows if r[0] in keys]
    header = ["", *[n for n, _ in summaries]]
    cells = [header, *[[str(c) if c is not None else "-" for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


HEADLINE = ["ended_by", "jobs.total", "jobs.finished", "jobs.rejected", "jct.mean", "jct.median", "jct.p99",
            "queueing_delay.mean", "queueing_delay.p99", "makespan", "allocation.gpu_ratio_mean", "allocation.cpu_ratio_mean",
            "allocation.gpu_fragmentation_mean", "preemptions", "reclaims", "gang.partial_gang_seconds",
            "gang.deadlock", "trace_check.simulated.median", "trace_check.trace.median"]


def _conf_html(configs: list[tuple[str, str | None, dict[str, Any]]]) -> str:
    """One line per run: its name (linked to its report when ``link``), conf file, digest, actions,
    plugins."""
    items = []
    for name, link, conf in configs:
        label = f'<a href="{html.escape(link)}">{html.escape(name)}</a>' if link else html.escape(name)
        items.append(f"<li>{label}: scheduler configuration <code>{html.escape(str(conf.get('file')))}</code> "
                     f"(sha256 <code>{html.escape(str(conf.get('sha256')))}</code>); actions "
                     f"<code>{html.escape(str(conf.get('actions')))}</code>; plugins "
                     f"<code>{html.escape(str(conf.get('plugins')))}</code></li>")
    return "<ul>\n" + "\n".join(items) + "\n</ul>\n"


def _interrupted_html(summaries: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(f"<p><strong>{html.escape(n)}: interrupted ({html.escape(str(s['interrupted']['signal']))}) at "
                   f"simulated {s['interrupted']['simulated_seconds']} s</strong>; the figures cover what arrived "
                   "by then.</p>\n" for n, s in summaries if "interrupted" in s)


TRACE_CHECK_README = "README.md, section \"Fidelity: the openb trace check\""
"""Where the trace check's figures are explained at length (named in report.html)."""


def _trace_check_html(summaries: list[tuple[str, dict[str, Any]]]) -> str:
    """A short explanation of the ``trace_check.*`` rows, for the runs that have them (openb), with
    their own figures, and where the long one is."""
    runs = [(n, s["trace_check"]) for n, s in summaries if "trace_check" in s]
    if not runs:
        return ""
    def v(x: Any) -> str:
        return "-" if x is None else str(x)

    figures = "; ".join(
        f"{html.escape(n) + ': ' if len(summaries) > 1 else ''}simulated median "
        f"{v(c['simulated']['median'])} s vs the trace's {v(c['trace']['median'])} s (p99 {v(c['simulated']['p99'])} "
        f"vs {v(c['trace']['p99'])} s); the trace's own bind..deletion times hold at most "
        f"{100 * (c['occupancy']['trace_gpu_ratio_peak'] or 0):.1f}% of the GPUs and "
        f"{100 * (c['occupancy']['trace_cpu_ratio_peak'] or 0):.1f}% of the CPU"
        for n, c in runs)
    return ("<p><strong>trace_check rows</strong>: the queueing delay (creation -&gt; bind) the simulation gives "
            "the Pods the trace scheduled, next to the trace's own <code>scheduled_time - creation_time</code> for "
            f"the same Pods ({figures}). Where the trace's own times hold a small share of the cluster, as on "
            "the openb default list (about 1% of its GPUs at the peak), a scheduler given only these Pods binds "
            "each at its first session and the two are not expected to match: the trace's delays come from what "
            "the list does not carry (other tenants' Pods, quotas, node pools, the real system's own latency: "
            "see <code>trace_no_gpu</code>). Pods the trace never scheduled are counted "
            "apart (<code>trace_pods_never_scheduled</code>). The full explanation, with figures for the whole "
            f"default trace: {html.escape(TRACE_CHECK_README)}.</p>\n")


def _html(summaries: list[tuple[str, dict[str, Any]]], images: list[str], *, title: str,
          configs: list[tuple[str, str | None, dict[str, Any]]] | None = None) -> str:
    rows = compare_table(summaries)
    head = "".join(f"<th>{html.escape(n)}</th>" for n, _ in summaries)
    body = "\n".join("<tr><td>" + html.escape(str(r[0])) + "</td>" +
                     "".join(f"<td>{html.escape('-' if c is None else str(c))}</td>" for c in r[1:]) + "</tr>"
                     for r in rows)
    imgs = "\n".join(f'<p><img src="{html.escape(i)}" alt="{html.escape(i)}"></p>' for i in images)
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:2px 6px}"
            "table{border-collapse:collapse}</style></head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>\n{_interrupted_html(summaries)}"
            f"{_inputs_html(summaries[0][1]) if summaries else ''}{_conf_html(configs or [])}"
            f"{_trace_check_html(summaries)}<table><tr><th>figure</th>{head}</tr>\n{body}\n</table>\n{imgs}\n"
            "<p>Definitions: pumice/simulate/metrics.py; columns of jobs.csv and pods.csv and every summary "
            "figure: pumice/simulate/report.py; the output files: README.md, section \"Simulate: replay a trace "
            "through the real scheduler\".</p>\n</body></html>\n")


def _plots(result: SimResult, jobs: list[dict[str, Any]], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec = result.recorder
    meta = {"Software": None}
    t = [s.t / 3600 for s in rec.timeline] + [result.end_time / 3600]
    files = []

    fig, ax = plt.subplots(figsize=(8, 3.5))
    if rec.timeline:
        if rec.gpu_capacity:
            ax.step(t, [s.gpu_milli / rec.gpu_capacity for s in rec.timeline] + [rec.timeline[-1].gpu_milli / rec.gpu_capacity],
                    where="post", label="GPU allocated")
            ax.step(t, [s.frag_gpu_milli / rec.gpu_capacity for s in rec.timeline] +
                    [rec.timeline[-1].frag_gpu_milli / rec.gpu_capacity], where="post", label="GPU fragmented")
        if rec.cpu_capacity:
            ax.step(t, [s.cpu_milli / rec.cpu_capacity for s in rec.timeline] + [rec.timeline[-1].cpu_milli / rec.cpu_capacity],
                    where="post", label="CPU allocated")
    implied = [x for x in metrics.trace_timeline(rec, jobs) if x[0] <= result.end_time]
    if implied:
        ti = [x[0] / 3600 for x in implied] + [result.end_time / 3600]
        for i, (label, cap) in ((2, ("GPU the trace's times imply", rec.gpu_capacity)),
                                (1, ("CPU the trace's times imply", rec.cpu_capacity))):
            if cap:
                ys = [x[i] / cap for x in implied]
                ax.step(ti, [*ys, ys[-1]], where="post", linestyle="--", label=label)
    ax.set_xlabel("simulated hours")
    ax.set_ylabel("fraction of capacity")
    ax.set_ylim(0, 1.05)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right")
    else:  # a run that ended before any allocation was sampled (no legend: matplotlib would warn)
        ax.text(0.5, 0.5, "nothing allocated", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(out / "utilization.png", metadata=meta)
    plt.close(fig)
    files.append("utilization.png")

    _queue_plot(plt, rec, result.end_time, out / "queues.png", meta)
    files.append("queues.png")

    fig, ax = plt.subplots(figsize=(8, 3.5))
    # with a trace, both delays over the Pods the trace scheduled (as trace_check)
    same = [j for j in jobs if j["trace_queueing_delay"] is not None] or jobs
    for label, key in (("simulated", "queueing_delay"), ("trace", "trace_queueing_delay")):
        v = sorted(j[key] for j in same if j[key] is not None)
        if v:
            ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", label=f"{label} queueing delay")
    v = sorted(j["jct"] for j in jobs if j["jct"] is not None)
    if v:
        ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", label="JCT")
    ax.set_xscale("symlog")
    ax.set_xlabel("seconds")
    ax.set_ylabel("CDF")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right")
    else:  # no job started (a deadlocked run): say so instead of matplotlib's empty-legend warning
        ax.text(0.5, 0.5, "no job started", transform=ax.transAxes, ha="center", va="center")
    fig.tight_layout()
    fig.savefig(out / "delay_cdf.png", metadata=meta)
    plt.close(fig)
    files.append("delay_cdf.png")
    return files


QUEUES_PLOTTED = 20
"""queues.png draws at most this many queues (the first by name)."""


def _queue_plot(plt: Any, rec: Any, end: float, path: Path, meta: dict[str, Any]) -> None:
    """queues.png: per queue, the share of the cluster's CPU its Pods hold (solid) and the share
    the fair-share plugin made it deserve (dashed, as sampled by the sessions); a GPU panel above
    it on a cluster with GPUs."""
    panels = [(2, "GPU", rec.gpu_capacity)] if rec.gpu_capacity else []
    panels.append((1, "CPU", rec.cpu_capacity))
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 3.5 * len(panels)), squeeze=False, sharex=True)
    queues = sorted({q for s in rec.timeline for q in s.queues} | set(rec.deserved))[:QUEUES_PLOTTED]
    hours = [s.t / 3600 for s in rec.timeline] + [end / 3600]
    for (index, label, cap), ax in zip(panels, axes[:, 0], strict=True):
        for i, q in enumerate(queues):
            color = f"C{i % 10}"
            if rec.timeline and cap:
                ys = [s.queues.get(q, (0, 0))[index - 1] / cap for s in rec.timeline]
                ax.step(hours, [*ys, ys[-1]], where="post", color=color, label=f"{q} allocated")
            steps = rec.deserved.get(q, [])
            if steps:
                ys = [st[index] for st in steps]
                ax.step([st[0] / 3600 for st in steps] + [end / 3600], [*ys, ys[-1]], where="post", color=color,
                        linestyle="--", label=f"{q} deserved")
        ax.set_ylabel(f"share of the {label}")
        ax.set_ylim(0, 1.05)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right", fontsize="x-small", ncol=2)
        else:  # no queue held anything and no session computed a deserved share
            ax.text(0.5, 0.5, f"no queue held {label}", ha="center", va="center", transform=ax.transAxes)
    axes[-1, 0].set_xlabel("simulated hours")
    fig.tight_layout()
    fig.savefig(path, metadata=meta)
    plt.close(fig)
