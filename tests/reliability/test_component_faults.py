"""Component faults: the API server, controller-manager, Volcano scheduler, default scheduler and a
node agent (simulated runtime) run as separate processes; during a workload of vcjobs (gangs) and
RayClusters (gang-scheduled through Volcano) one component after another is killed with SIGKILL
at random moments and started again. Everything must converge: every vcjob Completed, every
RayCluster ready with exactly its head and workers, no duplicate Pods, and no gang left partly
bound.

Short: 4 kills (``make test``); full: 24 kills (``make reliability``).

Not covered here: RayJobs (their Ray job submission needs a Ray dashboard, which the simulated
runtime does not have; real-Ray RayJob restarts are tested in tests/ray).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import subprocess
import time
from pathlib import Path
from typing import Any

from pumice.api import scheme
from pumice.client.kubeconfig import connect

from ._procs import kill9, start_apiserver, start_component, stop
from .conftest import size

NS = "default"
GROUP = "scheduling.k8s.io/group-name"


def _vcjob(name: str) -> dict[str, Any]:
    tmpl = {"metadata": {"annotations": {"pumice.io/sim-duration-seconds": "4"}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"minAvailable": 3, "schedulerName": "volcano", "queue": "default",
                     "tasks": [{"name": "ps", "replicas": 1, "template": tmpl},
                               {"name": "worker", "replicas": 2, "template": tmpl}]}}


def _raycluster(name: str) -> dict[str, Any]:
    c = {"name": "ray", "image": "rayproject/ray:2.60.0", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": NS, "labels": {"ray.io/scheduler-name": "volcano"}},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{**c, "name": "ray-head"}]}}},
                     "workerGroupSpecs": [{"groupName": "w", "replicas": 2, "minReplicas": 2, "maxReplicas": 2,
                                           "rayStartParams": {}, "template": {"spec": {"containers": [c]}}}]}}


class Components:
    def __init__(self, tmp: Path, kubeconfig: Path) -> None:
        self.tmp = tmp
        self.args = {
            "controller-manager": ["controller-manager", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
                                   "--batch-scheduler", "volcano"],
            "volcano-scheduler": ["scheduler", "--kubeconfig", str(kubeconfig), "--name", "volcano",
                                  "--schedule-period", "0.5s"],
            "default-scheduler": ["scheduler", "--kubeconfig", str(kubeconfig)],
            "node-agent": ["node-agent", "--kubeconfig", str(kubeconfig), "--runtime", "simulated", "--nodes", "3",
                           "--node-cpu", "6", "--node-memory", "24Gi", "--sim-start-latency", "0.3",
                           "--data-dir", str(tmp / "node")],
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        self.procs[name] = start_component(self.args[name], self.tmp / f"{name}.log")

    def start_all(self) -> None:
        for n in self.args:
            self.start(n)

    def kill(self, name: str) -> None:
        kill9(self.procs[name])

    def stop_all(self) -> None:
        for p in self.procs.values():
            stop(p)


async def _partly_bound(client: Any) -> list[str]:
    pgs = (await client.list(scheme.POD_GROUP, NS)).items
    pods = (await client.list(scheme.POD, NS)).items
    out = []
    for pg in pgs:
        name = pg["metadata"]["name"]
        mm = int((pg.get("spec") or {}).get("minMember") or 1)
        members = [p for p in pods if (p["metadata"].get("annotations") or {}).get(GROUP) == name
                   and not p["metadata"].get("deletionTimestamp")]
        bound = sum(1 for p in members if (p.get("spec") or {}).get("nodeName"))
        if 0 < bound < mm and bound < len(members):
            out.append(f"{name}: {bound} of minMember {mm} bound")
    return out


async def test_components_killed_with_sigkill_converge(tmp_path: Path, report: Any) -> None:
    kills = size(4, 24)
    n_jobs, n_clusters = size(3, 12), size(1, 4)
    rng = random.Random(1414)
    server, _ = start_apiserver(tmp_path)
    comps = Components(tmp_path, tmp_path / "kubeconfig")
    comps.start_all()
    client = connect(tmp_path / "kubeconfig")
    killed: dict[str, int] = {}
    partial_seen: list[str] = []
    try:
        for i in range(n_jobs):
            await client.create(_vcjob(f"job{i}"))
        for i in range(n_clusters):
            await client.create(_raycluster(f"rc{i}"))
        order = sorted(comps.args)
        rng.shuffle(order)
        for k in range(kills):  # every component in turn, at random moments
            await asyncio.sleep(rng.uniform(1.0, 4.0))
            name = order[k % len(order)]
            comps.kill(name)
            killed[name] = killed.get(name, 0) + 1
            await asyncio.sleep(rng.uniform(0.2, 1.5))
            comps.start(name)

        async def converged() -> bool:
            jobs = (await client.list(scheme.VCJOB, NS)).items
            rcs = (await client.list(scheme.RAY_CLUSTER, NS)).items
            done = all(((j.get("status") or {}).get("state") or {}).get("phase") == "Completed" for j in jobs)
            ready = all((rc.get("status") or {}).get("state") == "ready" for rc in rcs)
            return done and ready and len(jobs) == n_jobs and len(rcs) == n_clusters

        t0 = time.monotonic()
        deadline = t0 + size(240, 900)
        while not await converged():
            partial_seen += await _partly_bound(client)  # noted; only the final state must be whole
            assert time.monotonic() < deadline, "did not converge; see the component logs in " + str(tmp_path)
            await asyncio.sleep(1)
        settle_s = time.monotonic() - t0
        pods = (await client.list(scheme.POD, NS)).items
        for i in range(n_clusters):
            mine = [p for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/cluster") == f"rc{i}"
                    and not p["metadata"].get("deletionTimestamp")]
            kinds = sorted((p["metadata"].get("labels") or {}).get("ray.io/node-type", "?") for p in mine)
            assert kinds == ["head", "worker", "worker"], (f"rc{i}", kinds)
        for i in range(n_jobs):
            mine = [p for p in pods if (p["metadata"].get("annotations") or {}).get("volcano.sh/job-name") == f"job{i}"]
            names = [p["metadata"]["name"] for p in mine]
            assert len(names) == len(set(names)) == 3, (f"job{i}", names)
        final_partial = await _partly_bound(client)
        assert not final_partial, final_partial
    finally:
        with contextlib.suppress(Exception):
            await client.close()
        comps.stop_all()
        stop(server)
    report(kills=sum(killed.values()), killed=killed, vcjobs=n_jobs, rayclusters=n_clusters,
           converged_after_last_kill_s=round(settle_s, 1), gangs_partly_bound_at_end=0,
           transient_partial_observations=len(partial_seen))
