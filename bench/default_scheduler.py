"""Default scheduler throughput: Pods bound per second at 500 and 5,000 Nodes, 10,000 pending Pods.

Pure scheduling core (filter + score + assume, no API): the numpy-vectorized core against the
plain-loop baseline, both measured in this run on the same seeded cluster; the baseline runs a
prefix of the Pods (it is ~100x slower) and its rate is extrapolated from that prefix.

End to end (``--e2e``): the in-process API server (pumice.testing.cluster.local_cluster), the
scheduler watching Pods and Nodes and binding each through ``pods/binding``.

Anchor: kube-scheduler's own benchmark requires 680-810 Pods/s at 5,000 Nodes; target here is at
least 500 Pods/s at 5,000 Nodes.

Times are CPU seconds of this process (time.process_time), so a loaded machine does not skew
the ratio; the end-to-end figure is wall time.

Usage: python bench/default_scheduler.py [--pods 10000] [--baseline-pods 300] [--spread-pods 2000]
    [--hard-spread-pods 2000] [--e2e]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import time

from pumice.api import Obj
from pumice.scheduler.default.core import CoreBase, LoopCore
from pumice.scheduler.default.podinfo import PodInfo
from pumice.scheduler.default.vector import VectorCore


def make_node(i: int, rng: random.Random) -> Obj:
    cpu = rng.choice([16, 32, 64])
    alloc = {"cpu": str(cpu), "memory": f"{cpu * 4}Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": f"node-{i:05d}", "labels": {
            "kubernetes.io/hostname": f"node-{i:05d}", "topology.kubernetes.io/zone": f"zone-{i % 3}"}},
        "spec": {},
        "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def make_pod(j: int, rng: random.Random) -> Obj:
    cpu = rng.choice(["100m", "250m", "500m", "1"])
    mem = rng.choice(["128Mi", "512Mi", "1Gi"])
    spec: Obj = {"containers": [{"name": "c", "image": "busybox",
                                 "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}
    if j % 10 == 0:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": f"zone-{j % 3}"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{j:05d}", "namespace": "bench", "uid": f"uid-{j}"},
            "spec": spec, "status": {"phase": "Pending"}}


SERVICES = 50


def with_default_spread(pod: Obj, j: int) -> PodInfo:
    """Pod ``j`` as one replica of Service ``svc-<j mod 50>``: labelled for it, scored with
    Kubernetes' system-default spread constraints (hostname maxSkew 3, zone maxSkew 5)."""
    from pumice.scheduler.default.spread import default_selector, soft_constraints

    pod["metadata"]["labels"] = {"app": f"svc-{j % SERVICES}"}
    svc = {"spec": {"selector": {"app": f"svc-{j % SERVICES}"}}}
    return dataclasses.replace(PodInfo.from_pod(pod), spread=soft_constraints(pod, default_selector(pod, [svc], None)))


def with_hard_spread(pod: Obj, j: int) -> PodInfo:
    """Pod ``j`` as one replica of Deployment ``dep-<j mod 50>`` whose template carries the common
    ``maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule``
    constraint (PodTopologySpread's filter runs for every Pod; no system-default scoring)."""
    from pumice.scheduler.default.spread import hard_constraints, soft_constraints

    app = f"dep-{j % SERVICES}"
    pod["metadata"]["labels"] = {"app": app}
    pod["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}}}]
    return dataclasses.replace(PodInfo.from_pod(pod), spread=soft_constraints(pod, None),
                               spread_filter=hard_constraints(pod))


def run_core(core: CoreBase, nodes: list[Obj], pods: list[PodInfo]) -> tuple[float, int]:
    for n in nodes:
        core.set_node(n)
    bound = 0
    t0 = time.process_time()
    for p in pods:
        d = core.schedule(p)
        if d.node is not None:
            core.add_pod(p, d.node)
            bound += 1
    return time.process_time() - t0, bound



def scheduled_count() -> float:
    """Pods the default scheduler bound so far (scheduler_schedule_attempts_total{result="scheduled"})."""
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("scheduler_schedule_attempts_total",
                                     {"profile": "default-scheduler", "result": "scheduled"}) or 0.0


async def run_e2e(n_nodes: int, n_pods: int) -> tuple[float, float]:
    from pumice.scheduler.default.scheduler import DefaultScheduler
    from pumice.testing.cluster import local_cluster

    rng = random.Random(1)
    async with local_cluster(install_crds=False) as cluster:
        client = cluster.client
        sem = asyncio.Semaphore(64)

        async def create(obj: Obj) -> None:
            async with sem:
                await client.create(obj)

        await asyncio.gather(*(create(make_node(i, rng)) for i in range(n_nodes)))
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
        pods = [make_pod(j, rng) for j in range(n_pods)]
        for p in pods:
            p["metadata"].pop("uid")
        await asyncio.gather(*(create(p) for p in pods))
        sched = DefaultScheduler(cluster.new_client(), record_scheduled_events=False)
        t0 = time.perf_counter()
        c0 = time.process_time()
        bound0 = scheduled_count()
        await sched.start()
        while scheduled_count() - bound0 < n_pods:
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
        await sched.stop()
        return n_pods / elapsed, n_pods / cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=10_000, help="0: skip the vectorized/plain-loop comparison")
    ap.add_argument("--baseline-pods", type=int, default=300)
    ap.add_argument("--nodes", type=int, nargs="*", default=[500, 5000])
    ap.add_argument("--e2e", action="store_true", help="also run end to end through the in-process API")
    ap.add_argument("--e2e-pods", type=int, default=2000)
    ap.add_argument("--hard-spread-pods", type=int, default=2000,
                    help="Pods (replicas of 50 Deployments with a maxSkew 1 hostname DoNotSchedule constraint) "
                         "timed with the vectorized core against the same Pods without it; 0: skip")
    ap.add_argument("--spread-pods", type=int, default=2000,
                    help="Pods (replicas of 50 Services, so PodTopologySpread's system defaults score them) "
                         "timed with the vectorized core against the same number without spreading; 0: skip")
    args = ap.parse_args()
    if args.pods:
        for n_nodes in args.nodes:
            rng = random.Random(42)
            nodes = [make_node(i, rng) for i in range(n_nodes)]
            pods = [PodInfo.from_pod(make_pod(j, rng)) for j in range(args.pods)]
            vt, vbound = run_core(VectorCore(seed=1), nodes, pods)
            base = pods[: args.baseline_pods]
            lt, lbound = run_core(LoopCore(seed=1), nodes, base)
            vrate, lrate = vbound / vt, lbound / lt
            print(f"nodes={n_nodes:>5} pods={len(pods)}: vectorized {vrate:8.0f} pods/s ({vbound} bound in {vt:.2f} CPU s); "
                  f"plain-loop baseline {lrate:6.1f} pods/s (first {len(base)} pods); ratio {vrate / lrate:.1f}x")
    if args.spread_pods:
        for n_nodes in args.nodes:
            rng = random.Random(42)
            nodes = [make_node(i, rng) for i in range(n_nodes)]
            raw = [make_pod(j, rng) for j in range(args.spread_pods)]
            plain = [PodInfo.from_pod(p) for p in raw]
            spread = [with_default_spread(p, j) for j, p in enumerate(raw)]
            pt, pbound = run_core(VectorCore(seed=1), nodes, plain)
            st, sbound = run_core(VectorCore(seed=1), nodes, spread)
            print(f"nodes={n_nodes:>5} pods={len(raw)}: with default spreading {sbound / st:8.0f} pods/s, "
                  f"without {pbound / pt:8.0f} pods/s (same Pods, this run); ratio {(sbound / st) / (pbound / pt):.3f}")
    if args.hard_spread_pods:
        for n_nodes in args.nodes:
            rng = random.Random(42)
            nodes = [make_node(i, rng) for i in range(n_nodes)]
            raw = [make_pod(j, rng) for j in range(args.hard_spread_pods)]
            plain = [PodInfo.from_pod(p) for p in raw]
            hard = [with_hard_spread(p, j) for j, p in enumerate(raw)]
            pt, pbound = run_core(VectorCore(seed=1), nodes, plain)
            ht, hbound = run_core(VectorCore(seed=1), nodes, hard)
            print(f"nodes={n_nodes:>5} pods={len(raw)}: with a DoNotSchedule hostname constraint {hbound / ht:8.0f} "
                  f"pods/s ({hbound} bound), without {pbound / pt:8.0f} pods/s (same Pods, this run); "
                  f"ratio {(hbound / ht) / (pbound / pt):.3f}")
    if args.e2e:
        for n_nodes in args.nodes:
            rate, cpu_rate = asyncio.run(run_e2e(n_nodes, args.e2e_pods))
            print(f"e2e nodes={n_nodes:>5} pods={args.e2e_pods}: {rate:.0f} pods/s bound through pods/binding "
                  f"(wall, includes the informer sync); {cpu_rate:.0f} pods per CPU second "
                  "(API server + scheduler in one process)")


if __name__ == "__main__":
    main()
