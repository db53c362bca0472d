"""Controller throughput: 1,000 ReplicaSets x 10 Pods created at once, in-process.

The in-process API server (pumice.testing.cluster.local_cluster), the kube controllers on a
Manager, the default scheduler and the fake kubelet (pumice.testing.fake_kubelet) run in one
event loop. The ReplicaSets are created as fast as the API accepts them; the clock starts at the
first create and stops when every Pod is Running.

Prints: time until all Pods are Running (wall, and CPU seconds of the process: on a shared,
loaded machine the CPU figure is the stable one), Pods created per second (at the creation of the
last Pod), Pods bound per second, and a baseline measured in the same run: a tenth of the
ReplicaSets with 1 ReplicaSet worker instead of 8.

Usage: python bench/controllers.py [--replicasets 1000] [--pods-per-rs 10] [--nodes 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time

from pumice.api.scheme import POD
from pumice.controllers.kube import setup
from pumice.runtime import Manager
from pumice.scheduler.default.scheduler import DefaultScheduler
from pumice.testing.cluster import local_cluster
from pumice.testing.fake_kubelet import FakeKubelet


def replica_set(i: int, n: int) -> dict:
    name = f"rs-{i:04d}"
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "bench"},
            "spec": {"replicas": n, "selector": {"matchLabels": {"rs": name}},
                     "template": {"metadata": {"labels": {"rs": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox",
                                                           "resources": {"requests": {"cpu": "10m"}}}]}}}}



def scheduled_count() -> float:
    """Pods the default scheduler bound so far (scheduler_schedule_attempts_total{result="scheduled"})."""
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("scheduler_schedule_attempts_total",
                                     {"profile": "default-scheduler", "result": "scheduled"}) or 0.0


async def run(n_rs: int, per_rs: int, n_nodes: int, workers: int) -> dict[str, float]:
    async with local_cluster(install_crds=False) as cluster:
        total = n_rs * per_rs
        kubelet = FakeKubelet(cluster.new_client(), nodes=n_nodes, cpu="64", pods=max(110, total // n_nodes + 10),
                              heartbeat_period=None, concurrency=128)
        await kubelet.start()
        sched = DefaultScheduler(cluster.new_client(), record_scheduled_events=False)
        bound0 = scheduled_count()
        await sched.start()
        mgr = Manager(cluster.new_client(), graceful_shutdown_timeout=5.0)
        setup(mgr, controllers=["replicaset", "garbagecollector"], workers=workers)
        mgr_task = asyncio.create_task(mgr.start())
        await mgr.wait_started()
        client = cluster.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
        created_at: list[float] = []
        pods_inf = kubelet._pods
        assert pods_inf is not None
        pods_inf.add_event_handler(lambda _o: created_at.append(time.perf_counter()), None, None)
        t0 = time.perf_counter()
        c0 = time.process_time()
        sem = asyncio.Semaphore(64)

        async def create(i: int) -> None:
            async with sem:
                await client.create(replica_set(i, per_rs))

        await asyncio.gather(*(create(i) for i in range(n_rs)))
        t_rs = time.perf_counter() - t0
        while kubelet.running_count < total:
            await asyncio.sleep(0.05)
        t_all = time.perf_counter() - t0
        cpu = time.process_time() - c0
        running = sum(1 for p in (await client.list(POD, "bench")).items if p["status"].get("phase") == "Running")
        mgr.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(mgr_task, 30)
        await sched.stop()
        await kubelet.stop()
        t_created = (created_at[total - 1] - t0) if len(created_at) >= total else float("nan")
        return {"rs_created_s": t_rs, "all_running_s": t_all, "pods_created_per_s": total / t_created,
                "running": running, "bound_per_s": (scheduled_count() - bound0) / t_all, "cpu_s": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicasets", type=int, default=1000)
    ap.add_argument("--pods-per-rs", type=int, default=10)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--workers", type=int, default=8)
    args = ap.parse_args()
    total = args.replicasets * args.pods_per_rs
    r = asyncio.run(run(args.replicasets, args.pods_per_rs, args.nodes, args.workers))
    print(f"{args.replicasets} ReplicaSets x {args.pods_per_rs} Pods on {args.nodes} fake Nodes, "
          f"{args.workers} ReplicaSet workers:")
    print(f"  ReplicaSets created in {r['rs_created_s']:.2f} s")
    print(f"  all {total} Pods Running after {r['all_running_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU of this process "
          f"({int(r['running'])} Running at the end; API server, controllers, scheduler, kubelet share one loop)")
    print(f"  Pods Running per CPU second: {total / r['cpu_s']:.0f}")
    print(f"  Pods created per second: {r['pods_created_per_s']:.0f}")
    print(f"  Pods bound per second (scheduler, same run): {r['bound_per_s']:.0f}")
    base = asyncio.run(run(args.replicasets // 10, args.pods_per_rs, args.nodes, 1))
    print(f"  baseline, 1 worker, {args.replicasets // 10} ReplicaSets: {base['pods_created_per_s']:.0f} Pods created/s; "
          f"ratio {r['pods_created_per_s'] / base['pods_created_per_s']:.1f}x")


if __name__ == "__main__":
    main()
