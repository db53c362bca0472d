"""``pumice simulate`` throughput on the real traces.

Cases:

- ``openb``: the Alibaba openb default pod list (8,152 Pods) on the openb node list (1,523 Nodes),
  the whole ~149 simulated days. Target: < 60 s on 2 cores. Anchor: the FGD simulator takes about
  10 minutes per experiment on the same trace on 2 vCPUs (reference/performance.md).
- ``philly``: Philly via Pollux (82,247 jobs, one Queue per VC, workers of <= 8 GPUs) on the PAI
  machine spec (1,896 machines, 6,742 GPUs). Target: < 10 minutes, memory < 4 GB. Anchor: PAI's
  simulator replays 20,000 jobs in 51-110 s. ``--philly-sample N`` replays N jobs drawn with
  seed 0 (the full trace is the default).

Baseline, measured in the same run: the Tiresias 60-job example on its 32-node cluster (a small
cluster, so its rate shows what the cluster size costs); each case prints its API writes per
second and the ratio to the baseline's.

Figures per case: wall seconds, CPU seconds (``time.process_time``, steadier on a shared machine),
simulated seconds, API writes and writes/s ("events"), scheduling sessions and ms per session,
jobs finished, peak RSS (``ru_maxrss`` of the process, cumulative across cases), the 1-minute load
average at the end; then the simulated queueing delay, and for openb the ``trace_check`` (simulated
vs the trace's own creation -> scheduled delay).

``adapters``: the other adapters end to end: Pollux ``workload-1.csv`` (160 jobs) on Pollux's
testbed (16 Nodes of 4 GPUs), 300 Alibaba DLRM serving instances (seed 0) on the openb node list,
and the README's RayJob + RayService example (docs/examples/ray-workload.yaml) on one 4-GPU Node.

``job-writes``: the API cost of one openb job outside the scheduler's sessions, on the real
in-process stack: the ten calls one job makes (create Pod, create PodGroup, annotate the Pod,
PodGroup status, bind, Queue status, Pod Running, Pod Succeeded, delete Pod, delete PodGroup),
with the fan-out of a run (3 Pod informers, 2 PodGroup and 2 Queue informers, as the scheduler,
the controller manager and the node agent have), on the virtual clock. Prints CPU per job and
per write, and the ratio to a raw ``Store.put`` of the same Pods measured in the same run.

``idle``: two bare Pods (restartPolicy Never, 10 s each) on the Tiresias 32-node cluster, one at
0 and one ``--idle-days`` (default 10) simulated days later, nothing running in between: what an
idle stretch costs in wall time (simulated seconds per wall second), against the baseline.

``openb-contended`` replays 1,000 sampled openb Pods on every 8th openb Node with arrivals
compressed 1e5x, once card by card (deviceshare) and once pooled per Node, so the trace check
shows what contention does to the simulated delay.

Usage: .venv/bin/python bench/simulate.py [--only openb|openb-contended|philly|adapters|baseline|job-writes|idle] [--philly-sample N]
[--openb-sample N] [--contended-sample N] [--contended-scale X] [--philly-until-days D] [--idle-days D] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pumice.scheduler.volcano.conf import DEFAULT_SCHEDULER_CONF
from pumice.simulate import metrics
from pumice.simulate.nodes import load_nodes
from pumice.simulate.runner import SimConfig, simulate
from pumice.simulate.workload import load_workload, sample, scale
from pumice.testing.paths import shared_dir


def run(name: str, nodes: Path, workload: Path, n: int | None, profile: bool, until: float | None = None, *,
        node_every: int = 1, scale_by: float = 1.0, conf: str | None = None) -> dict[str, Any]:
    specs = load_nodes(nodes)[::node_every]
    w = load_workload(workload)
    if n is not None:
        w = sample(w, n, 0)
    if scale_by != 1.0:
        w = scale(w, scale_by)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    last = [0.0]

    def progress(sim_t: float, done: int, total: int, writes: int) -> None:
        if sim_t - last[0] >= 86400:
            last[0] = sim_t
            print(f"  {name}: day {sim_t / 86400:.0f}, {done}/{total} jobs done, {writes} writes, "
                  f"{time.perf_counter() - wall0:.0f} s wall, {time.process_time() - cpu0:.0f} s cpu",
                  file=sys.stderr, flush=True)

    r = simulate(SimConfig(specs, w, name=name, until=until, scheduler_conf=conf), progress=progress)
    if prof:
        prof.disable()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    summ = metrics.summary(r.recorder, r.end_time, r.ended_by)
    out = {"case": name, "nodes": len(specs), "jobs": len(w.arrivals), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
           "simulated_s": round(r.end_time), "ended_by": r.ended_by, "api_writes": r.api_writes,
           "writes_per_s": round(r.api_writes / wall, 1), "sessions": r.recorder.sessions,
           "ms_per_session": round(1000 * cpu / max(1, r.recorder.sessions), 1), "finished": r.recorder.finished,
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    out["load_avg"] = round(os.getloadavg()[0], 1)
    print(" ".join(f"{k}={v}" for k, v in out.items()), flush=True)
    delay = summ.get("queueing_delay") or {}
    print(f"  {name}: queueing delay (s) mean {delay.get('mean')} median {delay.get('median')} p99 {delay.get('p99')}; "
          f"JCT {summ.get('jct')}; makespan {summ.get('makespan')}", flush=True)
    if "trace_check" in summ:
        print(f"  {name}: trace_check {json.dumps(summ['trace_check'], sort_keys=True)}", flush=True)
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    return out


def job_writes(jobs: int) -> dict[str, Any]:
    """The ``job-writes`` case (see the module doc)."""
    import asyncio
    import copy

    import looptime

    from pumice._util.clock import LoopClock, default_clock, set_default_clock
    from pumice.api import scheme
    from pumice.apiserver.server import APIServer
    from pumice.apiserver.storage import MemoryStorage
    from pumice.apiserver.store import Store
    from pumice.client.informer import Informer, set_watch_timeout
    from pumice.client.kubeconfig import in_process
    from pumice.controllers import volcano as vc
    from pumice.controllers.volcano.podgroup import build_podgroup_for_pod, podgroup_name_for_pod

    t = shared_dir() / "traces/alibaba-clusterdata-gpu-v2023"
    w = load_workload(t / "openb_pod_list_default.csv")
    nodes = load_nodes(t / "openb_node_list_all_node.csv")[:50]
    pods = [copy.deepcopy(a.objects[0]) for a in w.arrivals if a.objects[0]["kind"] == "Pod"][:jobs + 50]
    ts = "2023-01-01T00:00:00Z"
    running = {"phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.1.0.1", "podIPs": [{"ip": "10.1.0.1"}],
               "startTime": ts, "qosClass": "Burstable",
               "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}],
               "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "image": "x", "imageID": "",
                                      "started": True, "state": {"running": {"startedAt": ts}}}]}
    done = {**running, "phase": "Succeeded", "containerStatuses": [
        {"name": "main", "ready": False, "restartCount": 0, "image": "x", "imageID": "", "started": False,
         "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": ts, "finishedAt": ts}}}]}
    out: dict[str, Any] = {}

    async def main() -> None:
        clock = LoopClock(epoch=1.7e9)
        set_default_clock(clock)
        m, v = vc.admission_plugins()
        server = APIServer(None, admission_plugins=[*m, *v], clock=clock, seed=0, bookmark_interval=None,
                           history=5000)
        await server.start()
        c = in_process(server.app, scheme=server.scheme)
        for name, value in sorted(w.priority_classes.items()):
            await c.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": name}, "value": value})
        await c.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                        "spec": {"weight": 1, "reclaimable": True}})
        await c.patch(scheme.QUEUE, "default", {"status": {"state": "Open"}}, subresource="status")
        for n in nodes:
            await c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n.name, "labels": n.node_labels()},
                            "status": {"capacity": n.capacity(), "allocatable": n.capacity()}})
        infs = [Informer(c, k) for k in [scheme.POD] * 3 + [scheme.POD_GROUP] * 2 + [scheme.QUEUE] * 2]
        for i in infs:
            i.start()
        for i in infs:
            await i.wait_synced()

        async def job(k: int, pod: dict[str, Any]) -> None:
            ns = pod["metadata"].get("namespace", "default")
            created = await c.create(pod)
            name = created["metadata"]["name"]
            await c.create(build_podgroup_for_pod(created, {}, inherit_owner_annotations=True))
            group = podgroup_name_for_pod(created)
            await c.patch(scheme.POD, name, {"metadata": {"annotations": {"scheduling.k8s.io/group-name": group}}}, ns)
            await c.patch(scheme.POD_GROUP, group, {"status": {"phase": "Inqueue", "conditions": [
                {"type": "Scheduled", "status": "True", "transitionID": f"t{k}", "lastTransitionTime": ts,
                 "reason": "tasks in gang are ready to be scheduled", "message": ""}]}}, ns)
            await c.bind(ns, name, nodes[k % len(nodes)].name, pod_uid=created["metadata"]["uid"])
            await c.patch(scheme.QUEUE, "default", {"status": {"allocated": {"cpu": str(k), "memory": str(k * 1024)}}},
                          subresource="status")
            await c.patch(scheme.POD, name, {"status": running}, ns, subresource="status")
            await c.patch(scheme.POD, name, {"status": done}, ns, subresource="status")
            await c.delete(scheme.POD, name, ns, propagation_policy="Background")
            await c.delete(scheme.POD_GROUP, group, ns)
            await asyncio.sleep(0.01)  # the informers take their events

        for k, p in enumerate(pods[:50]):  # warm-up
            await job(k, p)
        writes0, cpu0 = server.store.revision, time.process_time()
        for k, p in enumerate(pods[50:], 50):
            await job(k, p)
        out["cpu_s"] = time.process_time() - cpu0
        out["writes"] = server.store.revision - writes0
        for i in infs:
            await i.stop()
        await c.close()
        server.close()

    previous_clock, previous_watch = default_clock(), set_watch_timeout(None)
    try:
        with asyncio.Runner(loop_factory=lambda: looptime.new_event_loop(start=0, noop_cycles=1)) as runner:
            runner.run(main())
    finally:
        set_default_clock(previous_clock)
        set_watch_timeout(previous_watch)
    store = Store(MemoryStorage())  # baseline: the raw store write of the same Pods
    cpu0 = time.process_time()
    for p in pods:
        obj = copy.deepcopy(p)
        obj["metadata"].setdefault("namespace", "default")
        store.put("/pods", obj)
    put_us = 1e6 * (time.process_time() - cpu0) / len(pods)
    n = len(pods) - 50
    r = {"case": "job-writes", "jobs": n, "writes": out["writes"], "cpu_s": round(out["cpu_s"], 2),
         "cpu_us_per_job": round(1e6 * out["cpu_s"] / n), "cpu_us_per_write": round(1e6 * out["cpu_s"] / out["writes"], 1),
         "store_put_us": round(put_us, 1), "ratio_to_store_put": round(1e6 * out["cpu_s"] / out["writes"] / put_us, 1),
         "load_avg": round(os.getloadavg()[0], 1)}
    print(" ".join(f"{k}={v}" for k, v in r.items()), flush=True)
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["openb", "openb-contended", "philly", "adapters", "baseline", "job-writes",
                                       "idle"])
    ap.add_argument("--idle-days", type=float, default=10.0, help="the idle stretch of the idle case")
    ap.add_argument("--jobs", type=int, default=1500, help="jobs of the job-writes case")
    ap.add_argument("--contended-sample", type=int, default=1000)
    ap.add_argument("--contended-scale", type=float, default=1e5)
    ap.add_argument("--philly-sample", type=int, default=None)
    ap.add_argument("--openb-sample", type=int, default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--philly-until-days", type=float, default=None,
                    help="stop the Philly case at this simulated day (the figures are then for that part)")
    a = ap.parse_args()
    t = shared_dir() / "traces"
    t0 = time.perf_counter()
    if a.only == "job-writes":
        job_writes(a.jobs)
        return
    results = {}
    if a.only in (None, "baseline", "openb", "openb-contended", "philly", "adapters", "idle"):
        results["baseline"] = run("baseline-tiresias60", t / "tiresias-example/n32g4.csv",
                                  t / "tiresias-example/60_job.csv", None, False)
    if a.only in (None, "openb"):
        results["openb"] = run("openb-default", t / "alibaba-clusterdata-gpu-v2023/openb_node_list_all_node.csv",
                               t / "alibaba-clusterdata-gpu-v2023/openb_pod_list_default.csv", a.openb_sample, a.profile)
    if a.only in (None, "openb-contended"):
        # every 8th openb Node (755 GPUs) and 1,000 of the 8,152 Pods (their GPU requests add up
        # to about the same), arrivals compressed 1e5x (149 days into 129 s): the cluster fills,
        # so the trace check shows delay from contention; card by card (deviceshare, the default
        # for openb) and pooled per Node (the built-in configuration)
        ob = t / "alibaba-clusterdata-gpu-v2023"
        with tempfile.TemporaryDirectory() as tmp:
            pooled = Path(tmp) / "builtin.conf"
            pooled.write_text(DEFAULT_SCHEDULER_CONF)
            for label, conf in (("per-card", None), ("pooled", str(pooled))):
                results[f"openb-contended-{label}"] = run(
                    f"openb-contended-{label}", ob / "openb_node_list_all_node.csv", ob / "openb_pod_list_default.csv",
                    a.contended_sample, a.profile, node_every=8, scale_by=a.contended_scale, conf=conf)
    if a.only in (None, "philly"):
        results["philly"] = run("philly-via-pollux", t / "alibaba-clusterdata-gpu-v2020/pai_machine_spec.csv",
                                t / "philly-via-pollux/philly.csv", a.philly_sample, a.profile,
                                None if a.philly_until_days is None else a.philly_until_days * 86400)
    if a.only in (None, "adapters"):
        with tempfile.TemporaryDirectory() as tmp:
            testbed = Path(tmp) / "pollux-testbed.csv"  # Pollux's 16 x (4 GPUs, 48 cpu, 192 GiB)
            testbed.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,16,4,48,192\n")
            results["pollux"] = run("pollux-workload-1", testbed, t / "philly-via-pollux/workloads/workload-1.csv",
                                    None, a.profile)
        results["dlrm"] = run("dlrm-300", t / "alibaba-clusterdata-gpu-v2023/openb_node_list_all_node.csv",
                              t / "alibaba-clusterdata-gpu-v2025/disaggregated_DLRM_trace.csv", 300, a.profile)
        results["ray"] = run("ray-example", t / "tiresias-example/n1g4.csv",
                             Path(__file__).resolve().parents[1] / "docs/examples/ray-workload.yaml", None, a.profile)
    if a.only in (None, "idle"):
        with tempfile.TemporaryDirectory() as tmp:
            idle = Path(tmp) / "idle.yaml"
            pod = "{apiVersion: v1, kind: Pod, spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}"
            idle.write_text(f"arrivals:\n  - {{at: 0, duration: 10, name: first, manifest: {pod}}}\n"
                            f"  - {{at: {a.idle_days * 86400:g}, duration: 10, name: late, manifest: {pod}}}\n")
            results["idle"] = run(f"idle-{a.idle_days:g}-days", t / "tiresias-example/n32g4.csv", idle, None, a.profile)
        for k in ("baseline", "idle"):
            r = results[k]
            print(f"{k}: {r['simulated_s'] / max(r['wall_s'], 1e-9):,.0f} simulated s per wall s")
    base = results["baseline"]["writes_per_s"] or 1
    for k, v in results.items():
        if k != "baseline":
            print(f"{k}: {v['writes_per_s']} writes/s = {v['writes_per_s'] / base:.2f} x the baseline's {base}/s; "
                  f"wall {v['wall_s']} s")
    print(f"total wall {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
