"""Volcano scheduler session throughput on synthetic clusters.

Clusters of 1,000 and 5,000 Nodes (32 cpu, 128Gi, 110 pods each), 10,000 pending Pods in gangs
of 1, 8 and 64 across 4 queues (requests 1, 2 or 4 cpu and 2Gi per Pod, seeded), scheduled by
the compiled-in default configuration plus preempt and reclaim. For each case the session runs
with numpy-vectorized predicates and scoring. The baseline is the plain per-node loop (the
same session with ``vectorize=False``), measured in the same run on the first
``--baseline-pods`` Pods of the same workload (default 2,000; the loop is too slow for 10,000 on
a busy machine), with the vectorized path timed on that same reduced workload for the ratio.

Times are CPU seconds of the benchmark process (``time.process_time``), so the figures stay
meaningful when other work shares the machine; the wall time of the whole run is printed last.

Prints per case: Pods bound, allocate-action time and Pods bound per second in allocate,
whole-session time; the plain-loop rate and the speed-up on the reduced workload; then session
time p50/p99 over repeated sessions of the headline case (5,000 Nodes, gangs of 8) and the peak
memory (tracemalloc) of one session.

The topology case: the same 5,000 Nodes under a 3-tier HyperNode tree (leaves of 8 Nodes,
spines of 10 leaves, 8 super-spines), 10,000 Pods in gangs of 8 whose PodGroups ask for hard
network topology at tier 2, scheduled by the default configuration plus network-topology-aware;
its allocate rate is printed beside the flat 5,000-Node gangs-of-8 case (``--topology-only``
runs just these); a third line runs the same gangs as vcjob partitions (``subGroupPolicy``: two
sub-groups of 4 per gang, each with hard topology at tier 1, the job at tier 2) and counts the
sub-groups that landed in more than one leaf (must be 0).

The agent case (``--agent``; ``--agent-only`` runs just it): the Agent Scheduler's time from Pod
creation to bind while a batch session of 10,000 Pods (1,000 Nodes, gangs of 8) runs in another
process (vc-scheduler and vc-agent-scheduler are separate processes upstream). Single 1-cpu
agent Pods are created every ``--agent-interval`` seconds (wall) from the moment the batch
session starts until it ends (at most ``--agent-pods``); creation-to-bind is wall time, p50/p99.
The agent runs ``--agent-workers`` worker threads (agent.core.WorkerPool); the bench's main thread
creates the Pods and is the binder, resolving results as the workers hand them over.
Baseline in the same run: the same Pods (one PodGroup each) through the batch scheduler alone;
they wait for the next session, which starts at max(end of the running session, its start + the
1 s schedule period) and binds when it closes; that next session (10,000 bound Pods plus the
agent Pods) is run and its wall time measured here, so the baseline latency of a Pod is
next-session start + its measured duration - the Pod's creation time. The agent's view holds
the Nodes as they were when the batch session started (the batch binds land at its close).

The queue-position case (``--queue-position-only``): 10,000 Pods in gangs of 8 on 100 Nodes, so
most gangs wait; session CPU with the default configuration and with the ``queue-position``
plugin added (it sorts each queue's waiting jobs at close), same run, and the ratio.

Usage: .venv/bin/python bench/volcano.py [--quick] [--repeat N] [--baseline-pods N] [--no-baseline] [--topology-only]
                                         [--agent | --agent-only] [--agent-pods N] [--agent-interval S]
                                         [--queue-position-only]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.conf import DEFAULT_SCHEDULER_CONF, parse_conf
from pumice.scheduler.volcano.framework import RecordingCache, open_session, run_action

START = time.perf_counter()
CONF = parse_conf(
    DEFAULT_SCHEDULER_CONF.replace('"enqueue, allocate, backfill"', '"enqueue, allocate, backfill, preempt, reclaim"'),
    source="bench",
)


def cluster(n_nodes: int, n_pods: int, gang: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for q in range(4):
        out.append({"kind": "Queue", "metadata": {"name": f"q{q}"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    rl = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    for i in range(n_nodes):
        out.append(
            {"kind": "Node", "metadata": {"name": f"n{i:05d}", "labels": {"zone": f"z{i % 4}"}}, "status": {"allocatable": rl, "capacity": rl}}
        )
    for g in range(n_pods // gang):
        out.append(
            {
                "kind": "PodGroup",
                "metadata": {"name": f"pg{g}", "namespace": "bench"},
                "spec": {"queue": f"q{g % 4}", "minMember": gang},
                "status": {"phase": "Pending"},
            }
        )
        cpu = rng.choice(["1", "2", "4"])
        for k in range(gang):
            out.append(
                {
                    "kind": "Pod",
                    "metadata": {"name": f"pg{g}-p-{k}", "namespace": "bench", "annotations": {"scheduling.k8s.io/group-name": f"pg{g}"}},
                    "spec": {
                        "schedulerName": "volcano",
                        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "2Gi"}}}],
                    },
                    "status": {"phase": "Pending"},
                }
            )
    return out


TOPO_CONF = parse_conf(
    DEFAULT_SCHEDULER_CONF.replace('"enqueue, allocate, backfill"', '"enqueue, allocate, backfill, preempt, reclaim"')
    + "  - name: network-topology-aware\n",
    source="bench-topology",
)


def topology_cluster(n_nodes: int, n_pods: int, gang: int = 8, tier: int = 2, seed: int = 0) -> list[dict[str, Any]]:
    """:func:`cluster` plus a 3-tier HyperNode tree and hard networkTopology at ``tier`` on every PodGroup."""
    out = cluster(n_nodes, n_pods, gang, seed)
    leaves = [f"leaf{i:04d}" for i in range((n_nodes + 7) // 8)]
    for i, leaf in enumerate(leaves):
        members = [{"type": "Node", "selector": {"exactMatch": {"name": f"n{j:05d}"}}} for j in range(8 * i, min(8 * i + 8, n_nodes))]
        out.append({"kind": "HyperNode", "metadata": {"name": leaf}, "spec": {"tier": 1, "members": members}})
    spines = [leaves[i:i + 10] for i in range(0, len(leaves), 10)]
    for s, group in enumerate(spines):
        out.append({"kind": "HyperNode", "metadata": {"name": f"spine{s:03d}"},
                    "spec": {"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": x}}} for x in group]}})
    per_super = (len(spines) + 7) // 8
    for t in range(8):
        group = [f"spine{s:03d}" for s in range(t * per_super, min((t + 1) * per_super, len(spines)))]
        if group:
            out.append({"kind": "HyperNode", "metadata": {"name": f"super{t}"},
                        "spec": {"tier": 3, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": x}}} for x in group]}})
    for o in out:
        if o["kind"] == "PodGroup":
            o["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": tier}
    return out


def partitioned_cluster(n_nodes: int, n_pods: int, gang: int = 8, part: int = 4) -> list[dict[str, Any]]:
    """:func:`topology_cluster` with each gang split into sub-groups of ``part`` Pods
    (``volcano.sh/partition-id``), each sub-group with hard network topology at tier 1."""
    out = topology_cluster(n_nodes, n_pods, gang)
    seen: dict[str, int] = {}
    for o in out:
        if o["kind"] == "PodGroup":
            o["spec"]["subGroupPolicy"] = [{"name": "part", "subGroupSize": part, "minSubGroups": gang // part,
                                            "matchLabelKeys": ["volcano.sh/partition-id"],
                                            "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}]
        elif o["kind"] == "Pod":
            g = o["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
            i = seen[g] = seen.get(g, -1) + 1
            o["metadata"].setdefault("labels", {})["volcano.sh/partition-id"] = str(i // part)
    return out


# CPU seconds of this process: the figures stay comparable when other work shares the machine
# (wall time is printed too).
clock = time.process_time


def one_session(objs: list[dict[str, Any]], vectorize: bool, conf: Any = None) -> dict[str, float]:
    w0 = time.perf_counter()
    t0 = clock()
    snap = build_snapshot(objs)
    t1 = clock()
    rec = RecordingCache()
    conf = conf or CONF
    ssn = open_session(snap, conf, rec, vectorize=vectorize)
    t2 = clock()
    per_action: dict[str, float] = {}
    for name in conf.actions:
        t = clock()
        run_action(ssn, name)
        per_action[name] = clock() - t
        if name == "allocate":
            per_action["allocate_binds"] = len(rec.binds)
    ssn.close()
    t3 = clock()
    per_action["wall"] = time.perf_counter() - w0
    leaf = {m["selector"]["exactMatch"]["name"]: o["metadata"]["name"] for o in objs if o["kind"] == "HyperNode"
            and o["spec"]["tier"] == 1 for m in o["spec"]["members"]}
    label = {f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}":
             (o["metadata"]["annotations"]["scheduling.k8s.io/group-name"], (o["metadata"].get("labels") or {}).get("volcano.sh/partition-id"))
             for o in objs if o["kind"] == "Pod"}
    groups: dict[Any, set[str]] = {}
    for key, node_name in rec.binds.items():
        g = label.get(key)
        if g is not None and g[1] is not None:
            groups.setdefault(g, set()).add(leaf.get(node_name, ""))
    per_action["split_groups"] = sum(1 for v in groups.values() if len(v) > 1)
    return {
        "snapshot": t1 - t0,
        "open": t2 - t1,
        "session": t3 - t1,
        "bound": len(rec.binds),
        "evicted": len(rec.evictions),
        **per_action,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000 Pods instead of 10,000 (smoke run)")
    ap.add_argument("--repeat", type=int, default=5, help="sessions for the p50/p99 of the headline case")
    ap.add_argument("--no-baseline", action="store_true", help="skip the plain-loop runs")
    ap.add_argument("--baseline-pods", type=int, default=2_000, help="Pods in the baseline comparison workload")
    ap.add_argument("--topology-only", action="store_true", help="only the topology case and its flat twin")
    ap.add_argument("--agent", action="store_true", help="also run the agent-scheduler case")
    ap.add_argument("--agent-only", action="store_true", help="only the agent-scheduler case")
    ap.add_argument("--agent-pods", type=int, default=1_000, help="most agent Pods created during the batch session")
    ap.add_argument("--agent-interval", type=float, default=0.02, help="seconds between agent Pod creations")
    ap.add_argument("--agent-workers", type=int, default=1, help="agent-scheduler workers")
    ap.add_argument("--queue-position-only", action="store_true", help="only the queue-position plugin's cost")
    args = ap.parse_args()
    n_pods = 1_000 if args.quick else 10_000
    if args.queue_position_only:
        queue_position_case(n_pods)
        return
    if args.agent_only:
        agent_case(n_pods, args.agent_pods, args.agent_interval, args.agent_workers)
        return
    if args.topology_only:
        topology_case(n_pods)
        return
    print(f"{'nodes':>6} {'gang':>5} {'pods':>6} {'mode':>10} {'bound':>6} {'alloc cpu':>9} {'pods/s':>8} {'session cpu':>11} {'speedup':>8}")
    headline: list[dict[str, Any]] | None = None
    for n_nodes in (1_000, 5_000):
        for gang in (1, 8, 64):
            objs = cluster(n_nodes, n_pods, gang)
            if n_nodes == 5_000 and gang == 8:
                headline = objs
            res_v = one_session(objs, True)
            rate_v = res_v["allocate_binds"] / res_v["allocate"]
            print(
                f"{n_nodes:>6} {gang:>5} {n_pods:>6} {'numpy':>10} {res_v['bound']:>6.0f} {res_v['allocate']:>9.2f} "
                f"{rate_v:>8.0f} {res_v['session']:>11.2f} {'':>8}",
                flush=True,
            )
            if not args.no_baseline:
                small = cluster(n_nodes, min(n_pods, args.baseline_pods), gang)
                gc.collect()
                sv = one_session(small, True)
                gc.collect()
                sp = one_session(small, False)
                assert sp["bound"] == sv["bound"], "plain loop and numpy paths disagree"
                rv = sv["allocate_binds"] / sv["allocate"]
                rp = sp["allocate_binds"] / sp["allocate"]
                n_small = min(n_pods, args.baseline_pods)
                for mode, r, rate in (("numpy", sv, rv), ("plain loop", sp, rp)):
                    extra = f"{rv / rp:>7.1f}x" if mode == "plain loop" else ""
                    print(
                        f"{n_nodes:>6} {gang:>5} {n_small:>6} {mode:>10} {r['bound']:>6.0f} {r['allocate']:>9.2f} "
                        f"{rate:>8.0f} {r['session']:>11.2f} {extra:>8}",
                        flush=True,
                    )
            gc.collect()
    topology_case(n_pods)
    assert headline is not None
    times = []
    for _ in range(max(1, args.repeat)):
        gc.collect()
        times.append(one_session(headline, True)["session"])
    times.sort()
    p50 = statistics.median(times)
    p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
    print(f"headline (5,000 nodes, gangs of 8): session CPU p50 {p50:.2f}s p99 {p99:.2f}s over {len(times)} sessions")
    gc.collect()
    tracemalloc.start()
    one_session(headline, True)
    _cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"peak memory of one headline session (snapshot + session, tracemalloc): {peak / 2**20:.0f} MiB")
    import resource

    print(f"peak RSS of the benchmark process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.agent:
        agent_case(n_pods, args.agent_pods, args.agent_interval, args.agent_workers)
    print(f"wall time of the whole benchmark: {time.perf_counter() - START:.0f}s (CPU {time.process_time():.0f}s)")


def topology_case(n_pods: int) -> None:
    """The 5,000-Node topology case beside the flat one (same workload, same actions)."""
    gc.collect()
    flat = one_session(cluster(5_000, n_pods, 8), True)
    gc.collect()
    objs = topology_cluster(5_000, n_pods)
    topo = one_session(objs, True, TOPO_CONF)
    pgs = {o["metadata"]["name"] for o in objs if o["kind"] == "PodGroup"}
    gc.collect()
    pobjs = partitioned_cluster(5_000, n_pods)
    parts = one_session(pobjs, True, TOPO_CONF)
    for label, r in (("flat", flat), ("topology tier<=2", topo), ("partitions of 4", parts)):
        print(f"5,000 nodes, gangs of 8, {label:>17}: bound {r['bound']:.0f} of {n_pods}, allocate CPU {r['allocate']:.2f}s, "
              f"{r['allocate_binds'] / r['allocate']:.0f} pods/s, session CPU {r['session']:.2f}s", flush=True)
    print(f"topology/flat allocate rate: {(topo['allocate_binds'] / topo['allocate']) / (flat['allocate_binds'] / flat['allocate']):.2f}x "
          f"({len(pgs)} gangs); partitioned/flat: {(parts['allocate_binds'] / parts['allocate']) / (flat['allocate_binds'] / flat['allocate']):.2f}x; "
          f"sub-groups across leaves: {parts['split_groups']:.0f}", flush=True)


def queue_position_case(n_pods: int, repeat: int = 3) -> None:
    """Session CPU without and with the queue-position plugin on an oversubscribed cluster."""
    with_pos = parse_conf(
        DEFAULT_SCHEDULER_CONF.replace('"enqueue, allocate, backfill"', '"enqueue, allocate, backfill, preempt, reclaim"')
        .replace("  - name: conformance\n", "  - name: conformance\n  - name: queue-position\n", 1),
        source="bench-queue-position",
    )
    objs = cluster(100, n_pods, 8)
    runs: dict[str, list[float]] = {"default": [], "queue-position": []}
    bound: dict[str, float] = {}
    for _ in range(repeat):
        for label, conf in (("default", CONF), ("queue-position", with_pos)):
            gc.collect()
            r = one_session(objs, True, conf)
            runs[label].append(r["session"])
            bound[label] = r["bound"]
    base, pos = statistics.median(runs["default"]), statistics.median(runs["queue-position"])
    print(f"queue-position: 100 Nodes, {n_pods} Pods in gangs of 8 ({n_pods // 8 - int(bound['default']) // 8} gangs wait): "
          f"session CPU {base:.2f}s default, {pos:.2f}s with queue-position (median of {repeat}); ratio {pos / base:.2f}x; "
          f"bound {bound['default']:.0f} / {bound['queue-position']:.0f}", flush=True)


def _agent_pod(i: int, scheduler: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": f"agent-{i}", "namespace": "agents",
                                        "annotations": {"scheduling.k8s.io/group-name": f"agent-{i}"}},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}


def _batch_child(objs: list[dict[str, Any]], out: Any, started: Any) -> None:
    started.set()
    t0 = time.monotonic()
    rec = RecordingCache()
    ssn = open_session(build_snapshot(objs), CONF, rec)
    for name in CONF.actions:
        run_action(ssn, name)
    ssn.close()
    out.put((t0, time.monotonic(), rec.binds))


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def agent_case(n_pods: int, max_agent: int, interval: float, workers: int, n_nodes: int = 1_000, period: float = 1.0) -> None:
    """Creation-to-bind of agent Pods during a batch session, beside the batch scheduler alone."""
    import multiprocessing as mp
    import queue as stdqueue

    from pumice.scheduler.volcano.agent.core import (
        AGENT_SCHEDULER_NAME,
        AgentScheduler,
        AgentView,
        ScheduleResult,
        WorkerPool,
    )
    from pumice.scheduler.volcano.api.task_info import TaskInfo

    objs = cluster(n_nodes, n_pods, 8)
    sched = AgentScheduler(AgentView(build_snapshot([o for o in objs if o["kind"] == "Node"],
                                                    scheduler_names=(AGENT_SCHEDULER_NAME,))), workers=workers)
    ctx = mp.get_context("fork")
    out, started = ctx.Queue(), ctx.Event()
    gc.collect()
    proc = ctx.Process(target=_batch_child, args=(objs, out, started))
    proc.start()
    started.wait()
    t_start = time.monotonic()
    created: dict[str, float] = {}
    bound: dict[str, float] = {}
    i = 0
    result = None
    # the worker threads compute; this thread creates the Pods and is the binder
    results: stdqueue.Queue[ScheduleResult] = stdqueue.Queue()
    pool = WorkerPool(sched, time.monotonic, results.put, poll=0.005)
    pool.start()
    while result is None:
        now = time.monotonic()
        while i < max_agent and t_start + i * interval <= now:
            pod = _agent_pod(i, AGENT_SCHEDULER_NAME)
            sched.add(TaskInfo.from_pod(pod), now)
            created[f"agents/agent-{i}"] = t_start + i * interval
            i += 1
        try:
            batch = [results.get(timeout=0.001)]
        except stdqueue.Empty:
            batch = []
        while not results.empty():
            batch.append(results.get_nowait())
        if batch:
            rep = sched.resolve(batch, now)
            t = time.monotonic()
            for k in rep.bound:
                bound[k] = t
        if not out.empty():
            result = out.get()
    pool.stop()
    proc.join()
    t0, t1, binds = result
    agent_lat = [bound[k] - created[k] for k in created if k in bound]
    # baseline: the same Pods through the batch scheduler's next session
    nxt = [dict(o, spec={**o["spec"], "nodeName": binds[f"bench/{o['metadata']['name']}"]})
           if o["kind"] == "Pod" and f"bench/{o['metadata']['name']}" in binds else o for o in objs]
    for j in range(i):
        nxt.append({"kind": "PodGroup", "metadata": {"name": f"agent-{j}", "namespace": "agents"},
                    "spec": {"queue": "q0", "minMember": 1}, "status": {"phase": "Pending"}})
        nxt.append(_agent_pod(j, "volcano"))
    gc.collect()
    w = time.perf_counter()
    second = one_session(nxt, True)
    dur2 = time.perf_counter() - w
    s2 = max(t1, t0 + period)
    base_lat = [s2 + dur2 - created[f"agents/agent-{j}"] for j in range(i)]
    print(f"agent case: batch session of {n_pods} Pods on {n_nodes} Nodes: {t1 - t0:.2f}s wall, {len(binds)} bound; "
          f"{i} agent Pods created every {interval * 1000:.0f} ms meanwhile, {len(agent_lat)} bound by the agent scheduler "
          f"({workers} worker thread(s), {sched.binder.conflicts} conflicts)", flush=True)
    print(f"agent scheduler creation-to-bind: p50 {_pct(agent_lat, 0.5) * 1000:.1f} ms, p99 {_pct(agent_lat, 0.99) * 1000:.1f} ms",
          flush=True)
    print(f"batch scheduler alone (next session {dur2:.2f}s wall, {second['bound']:.0f} of {len(binds) + i} bound): "
          f"p50 {_pct(base_lat, 0.5) * 1000:.0f} ms, p99 {_pct(base_lat, 0.99) * 1000:.0f} ms; "
          f"agent/batch p50 ratio {_pct(agent_lat, 0.5) / _pct(base_lat, 0.5):.4f}", flush=True)


if __name__ == "__main__":
    main()
