"""Node agent benchmarks (issue 4).

1. Process runtime: Pod start latency, bound -> Running (the Pod is created already bound; Running
   is when a watch sees ``status.phase == Running``), p50/p99 over 50 small Pods, created one every
   100 ms and then 50 at once. Baseline in the same run: the bare cost of starting the same command
   with ``subprocess.Popen`` (no namespaces, no shim). Kubernetes' SLO is p99 5 s (image pulls
   excluded); the target here is p99 < 1 s. Needs root for the netns mode (host mode otherwise).
2. Simulated runtime: 5,000 Nodes and 50,000 short Pods in one process under virtual time
   (looptime): Pod lifecycles per wall second. Baseline: the same number of Pods driven through
   the same in-memory API by a bare loop that writes the three status transitions itself (no agent).

    python bench/node_agent.py [--pods 50] [--sim-nodes 5000] [--sim-pods 50000] [--skip-process] [--skip-sim]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import looptime

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pumice.node.agent import NodeAgent  # noqa: E402
from pumice.testing.fake_client import FakeClient  # noqa: E402
from pumice.testing.node import pod, simulated_scale  # noqa: E402


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


async def process_latency(n: int, burst: bool) -> list[float]:
    data = Path(tempfile.mkdtemp(prefix="pumice-bench-", dir="/var/tmp" if os.geteuid() == 0 else None))
    client = FakeClient(graceful_pod_deletion=True)
    agent = NodeAgent(client, runtime="process", data_dir=data, node_names=["bench-0"], node_cpu="64",
                      node_memory="64Gi", lease_renew_interval=None, stop_grace=2)
    await agent.start()
    pods_kind = client.scheme.by_api_version_kind("v1", "Pod")
    created: dict[str, float] = {}
    running: dict[str, float] = {}
    done = asyncio.Event()

    async def watch() -> None:
        async for ev in client.watch(pods_kind, None):
            name = ev.object["metadata"]["name"]
            if (ev.object.get("status") or {}).get("phase") == "Running" and name not in running:
                running[name] = time.perf_counter()
                if len(running) == n:
                    done.set()
                    return

    w = asyncio.get_running_loop().create_task(watch())
    prefix = "burst" if burst else "p"
    for i in range(n):
        name = f"{prefix}{i:03d}"
        created[name] = time.perf_counter()
        await client.create(pod(name, "sleep 3600", node="bench-0", grace=1))
        if not burst:
            await asyncio.sleep(0.1)
    await asyncio.wait_for(done.wait(), 120)
    w.cancel()
    await agent.stop()
    await client.close()
    shutil.rmtree(data, ignore_errors=True)
    return [running[k] - created[k] for k in created]


def popen_baseline(n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        p = subprocess.Popen(["/bin/sh", "-c", "sleep 3600"], start_new_session=True)
        out.append(time.perf_counter() - t)
        p.kill()
        p.wait()
    return out


async def bare_api_lifecycles(pods: int) -> float:
    """Wall seconds to push ``pods`` Pods through create + Pending + Running + Succeeded writes."""
    client = FakeClient(graceful_pod_deletion=True)
    kind = client.scheme.by_api_version_kind("v1", "Pod")
    t = time.perf_counter()
    for i in range(pods):
        p = pod(f"b{i:06d}", node="n")
        await client.create(p)
        for phase in ("Pending", "Running", "Succeeded"):
            await client.patch(kind, p["metadata"]["name"], {"status": {"phase": phase}}, "default",
                               subresource="status")
    return time.perf_counter() - t


def run_sim(nodes: int, pods: int) -> tuple[dict, float]:
    loop = looptime.new_event_loop(start=0, noop_cycles=1)
    t = time.perf_counter()
    result = loop.run_until_complete(simulated_scale(nodes, pods, clock=None))
    wall = time.perf_counter() - t
    loop.close()
    return result, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=50)
    ap.add_argument("--sim-nodes", type=int, default=5000)
    ap.add_argument("--sim-pods", type=int, default=50000)
    ap.add_argument("--skip-process", action="store_true")
    ap.add_argument("--skip-sim", action="store_true")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}, "
          f"{'root (netns)' if os.geteuid() == 0 else 'non-root (host network)'}")
    if not args.skip_process:
        base = popen_baseline(args.pods)
        for burst in (False, True):
            lat = asyncio.run(process_latency(args.pods, burst))
            label = f"{args.pods} at once" if burst else f"{args.pods}, one per 100 ms"
            print(f"process runtime, bound->Running ({label}): p50 {pct(lat, .5) * 1e3:.0f} ms, "
                  f"p99 {pct(lat, .99) * 1e3:.0f} ms, max {max(lat) * 1e3:.0f} ms "
                  f"(baseline Popen p50 {statistics.median(base) * 1e3:.1f} ms; "
                  f"ratio p50/baseline {statistics.median(lat) / statistics.median(base):.0f}x)")
    if not args.skip_sim:
        result, wall = run_sim(args.sim_nodes, args.sim_pods)
        n = result["succeeded"] + result["failed"]
        base = asyncio.run(bare_api_lifecycles(min(args.sim_pods, 10000)))
        base_rate = min(args.sim_pods, 10000) / base
        print(f"simulated runtime: {args.sim_nodes} nodes, {n} pods ({result['succeeded']} succeeded, "
              f"{result['failed']} failed) in {wall:.1f} s wall for {result['virtual_seconds']:.0f} s virtual: "
              f"{n / wall:.0f} pod lifecycles/s ({result['writes']} API writes); baseline bare API lifecycles "
              f"{base_rate:.0f}/s; ratio {n / wall / base_rate:.2f}")


if __name__ == "__main__":
    main()
