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
runs just these two).

Usage: .venv/bin/python bench/volcano.py [--quick] [--repeat N] [--baseline-pods N] [--no-baseline] [--topology-only]
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
    args = ap.parse_args()
    n_pods = 1_000 if args.quick else 10_000
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
    print(f"wall time of the whole benchmark: {time.perf_counter() - START:.0f}s (CPU {time.process_time():.0f}s)")


def topology_case(n_pods: int) -> None:
    """The 5,000-Node topology case beside the flat one (same workload, same actions)."""
    gc.collect()
    flat = one_session(cluster(5_000, n_pods, 8), True)
    gc.collect()
    objs = topology_cluster(5_000, n_pods)
    topo = one_session(objs, True, TOPO_CONF)
    pgs = {o["metadata"]["name"] for o in objs if o["kind"] == "PodGroup"}
    for label, r in (("flat", flat), ("topology tier<=2", topo)):
        print(f"5,000 nodes, gangs of 8, {label:>17}: bound {r['bound']:.0f} of {n_pods}, allocate CPU {r['allocate']:.2f}s, "
              f"{r['allocate_binds'] / r['allocate']:.0f} pods/s, session CPU {r['session']:.2f}s", flush=True)
    print(f"topology/flat allocate rate: {(topo['allocate_binds'] / topo['allocate']) / (flat['allocate_binds'] / flat['allocate']):.2f}x "
          f"({len(pgs)} gangs)", flush=True)


if __name__ == "__main__":
    main()
