"""KubeRay operator benchmark, simulated mode: N RayClusters of 1 head + W workers created at once.

The operator (``pumice.controllers.ray.setup`` on a runtime Manager, informer-backed reads) runs
against an in-process API (the in-memory FakeClient by default, or the in-process API server with
``--backend local``); a simulated kubelet marks every new Pod Running and Ready. Prints: wall time
until every cluster is ``ready``, reconciles per second, peak RSS of the process (operator + API +
kubelet), and the per-cluster time against a small baseline run in the same process.

Anchor (reference/performance.md): KubeRay's own test had 10,000 RayClusters ready in about
25 minutes on GKE and uses about 500 MB per 500 Ray Pods.

Process mode (``--process``, needs root and Ray): the upstream ray-job.sample.yaml on the real
stack (in-process API server, kube controllers, default scheduler, node agent with the process
runtime, the operator) and the time from creating the RayJob to SUCCEEDED, broken down from the
objects' own timestamps into: cluster creation and scheduling (RayJob created -> last Ray Pod
bound), Pod start (-> last Ray Pod Running), Ray start (-> cluster ``ready``), submission
(-> Ray job started), job run (Ray's start -> end, includes the runtime_env pip install) and
completion (-> RayJob Complete).

RayService mode (``--rayservice``, needs root, Ray and Ray Serve): the sample RayService on real Ray
Serve: head Pod ready (baseline), RayService Ready, first answered request; then the upgrade
duration and the requests failed during it (see :func:`run_rayservice`).

Autoscaler mode (``--autoscaler``, needs root and Ray): ``pumice up`` in a subprocess with KubeRay's
ray-cluster.autoscaler.yaml and the unmodified Ray autoscaler in the head Pod (the scenario of the
acceptance test, :mod:`pumice.testing.autoscaler`): scale-up latency (task queued -> worker Pod
created -> Running -> task started) against the Pod's own start (created -> Running, what a manual
``replicas`` change costs too), and scale-down latency (task ended -> ``replicas`` 0 through
``workersToDelete`` -> Pod gone) against ``idleTimeoutSeconds``, beside KubeRay's documented
defaults. ``--rounds N`` repeats the cycle on the same cluster.

Usage: ``python bench/kuberay.py [--clusters 1000] [--workers 3] [--concurrency 8] [--backend fake|local]``
or ``python bench/kuberay.py --process``, ``--rayservice`` or ``--autoscaler [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from pumice.api import Obj, scheme
from pumice.api.scheme import Scheme
from pumice.controllers.ray import setup
from pumice.runtime.manager import Manager


def raycluster(name: str, workers: int) -> Obj:
    def tmpl(image_name: str) -> Obj:
        return {"spec": {"containers": [{"name": image_name, "image": "rayproject/ray:2.52.0",
                                         "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                                       "limits": {"cpu": "1", "memory": "1Gi"}}}]}}

    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"rayVersion": "2.52.0",
                     "headGroupSpec": {"rayStartParams": {}, "template": tmpl("ray-head")},
                     "workerGroupSpecs": [{"groupName": "workers", "replicas": workers, "minReplicas": 0,
                                           "maxReplicas": workers, "rayStartParams": {},
                                           "template": tmpl("ray-worker")}]}}


async def kubelet(client: Any) -> None:
    """Mark each new Pod Running/Ready, as a kubelet with instant containers would."""
    rv = ""
    while True:
        try:
            async for ev in client.watch(scheme.POD, None, resource_version=rv or None):
                obj = ev.object
                rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                if ev.type != "ADDED" or (obj.get("status") or {}).get("phase") == "Running":
                    continue
                obj = dict(obj)
                obj["apiVersion"], obj["kind"] = "v1", "Pod"
                obj["status"] = {"phase": "Running", "podIP": "10.244.0.2",
                                 "conditions": [{"type": "Ready", "status": "True"}]}
                with contextlib.suppress(Exception):
                    await client.update_status(obj)
        except asyncio.CancelledError:
            raise
        except Exception:
            rv = ""
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def api(backend: str) -> AsyncIterator[Any]:
    if backend == "local":
        from pumice.testing.cluster import local_cluster

        async with local_cluster() as lc:
            yield lc.client
        return
    from pumice.testing.fake_client import FakeClient

    served = Scheme.builtin()
    for rk in (scheme.RAY_CLUSTER, scheme.RAY_JOB, scheme.POD_GROUP):
        served.add(rk)
    yield FakeClient(served)



def reconciles() -> float:
    """RayCluster reconciles so far (controller_runtime_reconcile_total, all results)."""
    from prometheus_client import REGISTRY

    return sum(REGISTRY.get_sample_value("controller_runtime_reconcile_total",
                                         {"controller": "raycluster", "result": r}) or 0.0
               for r in ("success", "error", "requeue_after", "requeue"))

async def run(n: int, workers: int, concurrency: int, backend: str) -> dict[str, float]:
    async with api(backend) as client:
        mgr = Manager(client)
        setup(mgr, reconcile_concurrency=concurrency, seed=0)
        reconciles0 = reconciles()
        mgr_task = asyncio.create_task(mgr.start())
        kl = asyncio.create_task(kubelet(client))
        await mgr.wait_started()
        t0 = time.perf_counter()
        for i in range(n):
            await client.create(raycluster(f"rc-{i:05d}", workers))
        created = time.perf_counter() - t0
        store = mgr.informers.informer(scheme.RAY_CLUSTER).store
        while True:
            ready = sum(1 for cl in store.list() if (cl.get("status") or {}).get("state") == "ready")
            if ready >= n:
                break
            await asyncio.sleep(0.05)
        wall = time.perf_counter() - t0
        pods = len(mgr.informers.informer(scheme.POD).store)
        mgr.stop()
        kl.cancel()
        await asyncio.gather(mgr_task, kl, return_exceptions=True)
        return {"clusters": n, "pods": pods, "create_s": created, "wall_s": wall,
                "reconciles": reconciles() - reconciles0, "reconciles_per_s": (reconciles() - reconciles0) / wall}


def _t(ts: str | None) -> float:
    from pumice._util.clock import parse_rfc3339

    return parse_rfc3339(ts) if ts else float("nan")


def _root_ca() -> str:
    """A CA certificate for the ``kube-root-ca.crt`` ConfigMap every Pod's ServiceAccount volume
    projects (the in-process API here is not reached by Pods)."""
    import datetime

    from pumice._util.tls import self_signed

    return self_signed("pumice-bench-ca", ["127.0.0.1"], now=datetime.datetime.now(datetime.UTC))[0].decode()


@contextlib.asynccontextmanager
async def process_stack(**agent_kwargs: Any) -> AsyncIterator[Any]:
    """The real stack in this process: in-process API server, kube controllers, default scheduler,
    one node agent with the process runtime and the KubeRay operator. Yields the API client and
    the node agent."""
    import shutil
    import tempfile
    from pathlib import Path

    from pumice.controllers import kube
    from pumice.node.agent import NodeAgent
    from pumice.scheduler.default.scheduler import run_scheduler
    from pumice.testing.cluster import local_cluster

    data = Path(tempfile.mkdtemp(prefix="pumice-kuberay-bench-", dir="/var/tmp"))
    stop = asyncio.Event()
    try:
        async with local_cluster() as lc:
            kmgr = Manager(lc.new_client())
            kube.setup(kmgr, root_ca=_root_ca())
            agent = NodeAgent(lc.new_client(), runtime="process", data_dir=data / "node", stop_grace=10.0,
                              **agent_kwargs)
            tasks = [asyncio.create_task(kmgr.start()),
                     asyncio.create_task(run_scheduler(lc.new_client(), stop_event=stop)),
                     asyncio.create_task(agent.run(stop_event=stop))]
            op = Manager(lc.new_client())
            setup(op)
            tasks.append(asyncio.create_task(op.start()))
            await kmgr.wait_started()
            await op.wait_started()
            try:
                yield lc.client, agent
            finally:
                op.stop()
                kmgr.stop()
                stop.set()
                await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        shutil.rmtree(data, ignore_errors=True)


async def run_process_sample() -> None:
    import yaml

    from pumice.testing.paths import shared_dir

    docs = [d for d in yaml.safe_load_all((shared_dir() / "samples/kuberay/ray-job.sample.yaml").read_text()) if d]
    async with process_stack() as (client, _agent):
        for d in docs:
            d.setdefault("metadata", {}).setdefault("namespace", "default")
            await client.create(d)
        t0 = time.perf_counter()
        while True:
            job = await client.get(scheme.RAY_JOB, "rayjob-sample", "default")
            st = job.get("status") or {}
            if st.get("jobDeploymentStatus") in ("Complete", "Failed"):
                break
            await asyncio.sleep(1)
        wall = time.perf_counter() - t0
        cl_name = st["rayClusterName"]
        pods = (await client.list(scheme.POD, "default", label_selector=f"ray.io/cluster={cl_name}")).items

        def cond(p: Obj, t: str) -> float:
            for c in (p.get("status") or {}).get("conditions") or []:
                if c.get("type") == t:
                    return _t(c.get("lastTransitionTime"))
            return float("nan")

        created = _t(job["metadata"]["creationTimestamp"])
        scheduled = max(cond(p, "PodScheduled") for p in pods)
        running = max(_t((p.get("status") or {}).get("startTime")) for p in pods)
        ready = max(cond(p, "Ready") for p in pods)
        info = st.get("rayJobInfo") or {}
        ray_start, ray_end = _t(info.get("startTime")), _t(info.get("endTime"))
        end = _t(st.get("endTime"))
        print(f"sample RayJob: {st['jobDeploymentStatus']} / {st.get('jobStatus')} in {wall:.0f} s wall "
              f"({end - created:.0f} s by the RayJob's timestamps, 1 s resolution)")
        if st.get("jobStatus") != "SUCCEEDED":
            print(f"  reason={st.get('reason')} message={st.get('message', '')[:300]!r}")
        restarts = {p["metadata"]["name"]: sum(int(cs.get("restartCount") or 0) for cs in
                                               (p.get("status") or {}).get("containerStatuses") or [])
                    for p in pods}
        print(f"  container restarts: {restarts}; machine load average {os.getloadavg()[0]:.1f}")
        for label, a, b in (("cluster + scheduling", created, scheduled), ("Pod start", scheduled, running),
                            ("Ray start (Pods ready)", running, ready), ("submission", ready, ray_start),
                            ("job run (incl. pip runtime_env)", ray_start, ray_end),
                            ("completion", ray_end, end)):
            print(f"  {label:32s} {b - a:6.0f} s")


RAYSERVICE_READY_TIMEOUT = 600
"""Seconds the RayService gets to answer; past that the bench stops with the diagnosis."""


async def run_rayservice() -> None:
    """ray-service.sample.yaml as the acceptance test runs it (:mod:`pumice.testing.rayservice`:
    our own Serve apps from a ConfigMap, the Router at 0.1 CPU) on real Ray: apply -> cluster
    ready (the baseline: what a plain RayCluster of the same spec costs) -> RayService Ready ->
    first answered request; then a cluster-spec change under a client sending requests (one fresh
    connection each, through the serve Service) until the new cluster serves: upgrade duration and
    failed requests. A RayService not answering within :data:`RAYSERVICE_READY_TIMEOUT` s, or an
    upgrade not done within it, stops the bench with the objects' status and Ray's log digest."""
    import httpx2

    from pumice.testing.ray_logs import diagnosis
    from pumice.testing.rayservice import sample_rayservice, serve_apps_configmap

    cm = serve_apps_configmap()
    rs = sample_rayservice()
    name = rs["metadata"]["name"]
    url = f"http://{name}-serve-svc.default.svc.cluster.local:8000/fruit/"

    def ready_cond(r: Obj) -> bool:
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (r.get("status") or {}).get("conditions") or [])

    async with process_stack(node_cpu="8", node_memory="24Gi") as (client, agent):
        async def ask() -> bool:
            proxy = f"http://{agent.network.gateway}:{agent._proxy.port}"  # the agent's proxy, up once it runs
            try:
                async with httpx2.AsyncClient(proxy=proxy, timeout=10) as http:
                    r = await http.post(url, json=["MANGO", 2])
                return r.status_code == 200 and float(r.text) == 6
            except (httpx2.HTTPError, ValueError):
                return False

        await client.create(cm)
        t0 = time.perf_counter()
        await client.create(rs)
        t_cluster = t_ready = t_first = None
        while t_first is None:
            if time.perf_counter() - t0 > RAYSERVICE_READY_TIMEOUT:
                raise SystemExit(f"the RayService did not answer within {RAYSERVICE_READY_TIMEOUT} s\n"
                                 f"{await diagnosis(client, agent.data_dir / 'pods')}")
            cur = await client.get(scheme.RAY_SERVICE, name, "default")
            pend = ((cur.get("status") or {}).get("pendingServiceStatus") or {})
            act = ((cur.get("status") or {}).get("activeServiceStatus") or {})
            cstate = ((pend.get("rayClusterStatus") or act.get("rayClusterStatus") or {}).get("head") or {})
            if t_cluster is None and cstate.get("podIP"):
                cl_name = pend.get("rayClusterName") or act.get("rayClusterName")
                cl = await client.get(scheme.RAY_CLUSTER, cl_name, "default")
                if any(c.get("type") == "HeadPodReady" and c.get("status") == "True"
                       for c in (cl.get("status") or {}).get("conditions") or []):
                    t_cluster = time.perf_counter() - t0
            if t_ready is None and ready_cond(cur):
                t_ready = time.perf_counter() - t0
            if t_ready is not None and await ask():
                t_first = time.perf_counter() - t0
            await asyncio.sleep(0.5)
        assert t_cluster is not None and t_ready is not None
        print(f"RayService sample: head Pod ready {t_cluster:.0f} s (baseline), Ready {t_ready:.0f} s "
              f"({t_ready / t_cluster:.1f}x the baseline), first answered request {t_first:.0f} s")

        ok = failed = 0
        stop = asyncio.Event()

        async def load() -> None:
            nonlocal ok, failed
            while not stop.is_set():
                if await ask():
                    ok += 1
                else:
                    failed += 1
                await asyncio.sleep(0.2)

        task = asyncio.create_task(load())
        await asyncio.sleep(5)
        cur = await client.get(scheme.RAY_SERVICE, name, "default")
        old = cur["status"]["activeServiceStatus"]["rayClusterName"]
        for g in [cur["spec"]["rayClusterConfig"]["headGroupSpec"], *cur["spec"]["rayClusterConfig"]["workerGroupSpecs"]]:
            g["template"]["spec"]["containers"][0].setdefault("env", []).append({"name": "BENCH_UPGRADE", "value": "1"})
        t1 = time.perf_counter()
        await client.update(cur)
        while True:
            cur = await client.get(scheme.RAY_SERVICE, name, "default")
            act = (cur.get("status") or {}).get("activeServiceStatus") or {}
            if act.get("rayClusterName") not in (None, "", old):
                break
            if time.perf_counter() - t1 > RAYSERVICE_READY_TIMEOUT:
                stop.set()
                raise SystemExit(f"the upgrade was not done within {RAYSERVICE_READY_TIMEOUT} s\n"
                                 f"{await diagnosis(client, agent.data_dir / 'pods')}")
            await asyncio.sleep(0.5)
        upgrade = time.perf_counter() - t1
        await asyncio.sleep(5)
        stop.set()
        await task
        print(f"upgrade (cluster spec change -> traffic on the new cluster): {upgrade:.0f} s, requests {ok} ok / "
              f"{failed} failed; the old cluster is deleted rayClusterDeletionDelaySeconds (KubeRay default 60 s) "
              f"later; machine load average {os.getloadavg()[0]:.1f}")


async def run_autoscaler(rounds: int) -> None:
    """``--autoscaler``: see the module docstring."""
    import shutil
    import statistics
    import tempfile
    from pathlib import Path

    import yaml

    from pumice.client.kubeconfig import connect
    from pumice.testing.autoscaler import (
        AutoscalerTimings,
        autoscaler_log,
        scale_up_and_down,
        wait_head_ready,
    )
    from pumice.testing.paths import shared_dir
    from pumice.testing.up import start_up, stop_up

    docs = [d for d in yaml.safe_load_all((shared_dir() / "samples/kuberay/ray-cluster.autoscaler.yaml").read_text())
            if d]
    name = next(d for d in docs if d["kind"] == "RayCluster")["metadata"]["name"]
    data = Path(tempfile.mkdtemp(prefix="pumice-autoscaler-bench-", dir="/var/tmp"))
    proc, up = start_up(data, "--batch-scheduler", "none", "--node-cpu", "8", "--node-memory", "24Gi")
    client = connect(up.kubeconfig)
    got: list[AutoscalerTimings] = []
    try:
        for d in sorted(docs, key=lambda d: d["kind"] != "ConfigMap"):
            d.setdefault("metadata", {})["namespace"] = "default"
            await client.create(d)
        t0 = time.perf_counter()
        head = await wait_head_ready(client, name)
        print(f"head Pod Ready with its autoscaler and dashboard: {time.perf_counter() - t0:.0f} s after create")
        for i in range(rounds):
            try:
                t = await scale_up_and_down(client, name, head["status"]["podIP"], job_id=f"bench-{i}")
            except BaseException:
                print(await autoscaler_log(client, name))
                raise
            got.append(t)
            print(f"round {i + 1}: queued -> Pod created {t.queued_to_pod_created:.1f} s, Running "
                  f"{t.queued_to_pod_running:.1f} s, task started {t.queued_to_task_started:.1f} s "
                  f"(Pod's own start {t.pod_created_to_running:.1f} s); task ended -> replicas 0 "
                  f"{t.task_ended_to_scaled_down:.1f} s, Pod gone {t.task_ended_to_pod_gone:.1f} s")
    finally:
        await client.close()
        stop_up(proc, timeout=120)
        shutil.rmtree(data, ignore_errors=True)

    def med(f: Any) -> float:
        return statistics.median(f(t) for t in got)

    up_total, pod_start = med(lambda t: t.queued_to_task_started), med(lambda t: t.pod_created_to_running)
    down, idle = med(lambda t: t.task_ended_to_pod_gone), got[0].idle_timeout_seconds
    print(f"median of {len(got)}: scale-up queued -> worker Pod created {med(lambda t: t.queued_to_pod_created):.1f} s "
          f"-> Running {med(lambda t: t.queued_to_pod_running):.1f} s -> task started {up_total:.1f} s "
          f"({up_total / pod_start:.1f}x the Pod's own start, {pod_start:.1f} s); scale-down task ended -> replicas 0 "
          f"{med(lambda t: t.task_ended_to_scaled_down):.1f} s -> Pod gone {down:.1f} s "
          f"({down / idle:.2f}x idleTimeoutSeconds {idle:.0f} s)")
    print("KubeRay's documented defaults: autoscaler period AUTOSCALER_UPDATE_INTERVAL_S 5 s, idleTimeoutSeconds "
          "60 s, upscalingMode Default (upscaling_speed 1000); machine load average "
          f"{os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--baseline", type=int, default=20, help="clusters in the baseline run")
    ap.add_argument("--backend", choices=["fake", "local"], default="fake")
    ap.add_argument("--process", action="store_true", help="time the sample RayJob on real Ray instead")
    ap.add_argument("--rayservice", action="store_true",
                    help="time the sample RayService on real Ray Serve: Ready, first request, upgrade")
    ap.add_argument("--autoscaler", action="store_true",
                    help="time the in-tree autoscaler on real Ray: scale-up and scale-down latency")
    ap.add_argument("--rounds", type=int, default=3, help="scale-up/scale-down cycles with --autoscaler")
    args = ap.parse_args()
    if args.autoscaler:
        asyncio.run(run_autoscaler(args.rounds))
        return
    if args.process:
        asyncio.run(run_process_sample())
        return
    if args.rayservice:
        asyncio.run(run_rayservice())
        return

    base = asyncio.run(run(args.baseline, args.workers, args.concurrency, args.backend))
    res = asyncio.run(run(args.clusters, args.workers, args.concurrency, args.backend))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_base = base["wall_s"] / base["clusters"]
    per = res["wall_s"] / res["clusters"]
    print(f"backend={args.backend} concurrency={args.concurrency} python={sys.version.split()[0]}")
    print(f"baseline: {base['clusters']} clusters ready in {base['wall_s']:.2f} s ({per_base * 1000:.1f} ms/cluster)")
    print(f"run:      {res['clusters']} clusters x (1 head + {args.workers} workers) = {res['pods']} pods")
    print(f"  created in {res['create_s']:.2f} s; all ready after {res['wall_s']:.2f} s "
          f"({per * 1000:.1f} ms/cluster, {per / per_base:.2f}x the baseline per cluster)")
    print(f"  RayCluster reconciles: {res['reconciles']} ({res['reconciles_per_s']:.0f}/s, "
          f"{res['reconciles'] / res['clusters']:.1f} per cluster)")
    print(f"  peak RSS (operator + in-process API + kubelet): {rss_mb:.0f} MB "
          f"(anchor: KubeRay ~500 MB per 500 Ray Pods; 10,000 clusters ready in ~25 min on GKE)")


if __name__ == "__main__":
    main()
