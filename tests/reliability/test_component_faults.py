"""Component faults: the API server, controller-manager, Volcano scheduler, default scheduler and a
node agent (simulated runtime) run as separate processes; during a workload of vcjobs (gangs),
RayClusters and RayJobs (both gang-scheduled through Volcano) one component after another is
killed with SIGKILL at random moments and started again. Everything must converge: every vcjob
Completed, every RayCluster ready with exactly its head and workers, every RayJob Complete with
its Ray job SUCCEEDED, no duplicate Pods, no second RayCluster, submitter Job or Ray job id for a
RayJob (from a watch of the whole run, and from the Ray dashboards' own job lists), and no gang
left partly bound.

The RayJobs' Ray dashboards are the simulated ones the node agent serves
(``--sim-ray-dashboard``); the controller manager reaches them through ``--ray-dashboard-proxy``.
Killing the node agent therefore also restarts every "head Pod" and its dashboard, as a node
reboot would.

Short: 4 kills (``make test``); full: 24 kills (``make reliability``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2

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
    # its own readiness probe (1 s period): KubeRay's injected one waits 10 s, in real time under
    # the simulated runtime, at every start, and every node agent kill restarts the Pods
    c = {"name": "ray", "image": "rayproject/ray:2.60.0", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
         "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": NS, "labels": {"ray.io/scheduler-name": "volcano"}},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{**c, "name": "ray-head"}]}}},
                     "workerGroupSpecs": [{"groupName": "w", "replicas": 2, "minReplicas": 2, "maxReplicas": 2,
                                           "rayStartParams": {}, "template": {"spec": {"containers": [c]}}}]}}


def _rayjob(name: str) -> dict[str, Any]:
    cluster = _raycluster(name)
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "namespace": NS, "labels": {"ray.io/scheduler-name": "volcano"},
                         "annotations": {"pumice.io/sim-duration-seconds": "5"}},
            # a node agent kill fails the submitter Pod (restartPolicy Never, as upstream builds
            # it); the Job makes another one, within this budget
            "spec": {"entrypoint": "python -c 'print(42)'", "submitterConfig": {"backoffLimit": 30},
                     "rayClusterSpec": cluster["spec"]}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Components:
    def __init__(self, tmp: Path, kubeconfig: Path, dashboard: str) -> None:
        self.tmp = tmp
        self.args = {
            "controller-manager": ["controller-manager", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
                                   "--batch-scheduler", "volcano", "--ray-dashboard-proxy", f"http://{dashboard}"],
            "volcano-scheduler": ["scheduler", "--kubeconfig", str(kubeconfig), "--name", "volcano",
                                  "--schedule-period", "0.5s"],
            "default-scheduler": ["scheduler", "--kubeconfig", str(kubeconfig)],
            "node-agent": ["node-agent", "--kubeconfig", str(kubeconfig), "--runtime", "simulated", "--nodes", str(size(3, 6)),
                           "--node-cpu", "8", "--node-memory", "24Gi", "--sim-start-latency", "0.3",
                           "--data-dir", str(tmp / "node"), "--sim-ray-dashboard", dashboard],
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


class Births:
    """Every RayCluster, submitter Job and RayJob ``status.jobId`` the API ever showed, per owning
    RayJob, from watches over the whole run (a duplicate created and deleted again counts too)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.clusters: dict[str, set[str]] = {}
        self.submitters: dict[str, set[str]] = {}
        self.job_ids: dict[str, set[str]] = {}
        self.tasks: list[asyncio.Task[None]] = []

    def start(self, rv: str) -> None:
        self.tasks = [asyncio.create_task(self._watch(kind, rv))
                      for kind in (scheme.RAY_CLUSTER, scheme.JOB, scheme.RAY_JOB)]

    async def _watch(self, kind: Any, rv: str) -> None:
        while True:  # the API server is never killed here; a watch that ends is opened again
            try:
                async for ev in self.client.watch(kind, NS, resource_version=rv):
                    obj = ev.object
                    md = obj.get("metadata") or {}
                    rv = md.get("resourceVersion") or rv
                    if ev.type not in ("ADDED", "MODIFIED"):
                        continue
                    if kind is scheme.RAY_JOB:
                        job_id = (obj.get("status") or {}).get("jobId")
                        if job_id:
                            self.job_ids.setdefault(md["name"], set()).add(job_id)
                        continue
                    owner = next((r["name"] for r in md.get("ownerReferences") or [] if r.get("kind") == "RayJob"), None)
                    if owner is not None:
                        into = self.clusters if kind is scheme.RAY_CLUSTER else self.submitters
                        into.setdefault(owner, set()).add(md["uid"])
            except asyncio.CancelledError:
                raise
            except Exception:
                await asyncio.sleep(0.5)

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        for t in self.tasks:
            with contextlib.suppress(BaseException):
                await t


async def _ray_job_lists(dashboard: str, rayjobs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each RayJob's cluster's own job list (``GET /api/jobs/`` of its simulated dashboard)."""
    out = {}
    async with httpx2.AsyncClient(timeout=10) as http:
        for rj in rayjobs:
            rc = (rj.get("status") or {}).get("rayClusterName")
            r = await http.get(f"http://{dashboard}/{NS}/{rc}/api/jobs/")
            assert r.status_code == 200, (rj["metadata"]["name"], r.status_code, r.text)
            out[rj["metadata"]["name"]] = r.json()
    return out


async def test_components_killed_with_sigkill_converge(tmp_path: Path, report: Any) -> None:
    kills = size(4, 24)
    n_jobs, n_clusters, n_rayjobs = size(3, 12), size(1, 4), size(2, 6)
    rng = random.Random(1414)
    server, _ = start_apiserver(tmp_path)
    dashboard = f"127.0.0.1:{_free_port()}"
    comps = Components(tmp_path, tmp_path / "kubeconfig", dashboard)
    comps.start_all()
    client = connect(tmp_path / "kubeconfig")
    births = Births(client)
    killed: dict[str, int] = {}
    partial_seen: list[str] = []
    try:
        births.start((await client.list(scheme.RAY_JOB, NS)).resource_version)
        for i in range(n_jobs):
            await client.create(_vcjob(f"job{i}"))
        for i in range(n_clusters):
            await client.create(_raycluster(f"rc{i}"))
        for i in range(n_rayjobs):
            await client.create(_rayjob(f"rj{i}"))
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
            rjs = (await client.list(scheme.RAY_JOB, NS)).items
            done = all(((j.get("status") or {}).get("state") or {}).get("phase") == "Completed" for j in jobs)
            ready = all((rc.get("status") or {}).get("state") == "ready" for rc in rcs)
            complete = all((rj.get("status") or {}).get("jobDeploymentStatus") == "Complete" for rj in rjs)
            return (done and ready and complete and len(jobs) == n_jobs and len(rcs) == n_clusters + n_rayjobs
                    and len(rjs) == n_rayjobs)

        t0 = time.monotonic()
        deadline = t0 + size(240, 900)
        while not await converged():
            partial_seen += await _partly_bound(client)  # noted; only the final state must be whole
            assert time.monotonic() < deadline, "did not converge; see the component logs in " + str(tmp_path)
            await asyncio.sleep(1)
        settle_s = time.monotonic() - t0
        pods = (await client.list(scheme.POD, NS)).items
        rayjobs = (await client.list(scheme.RAY_JOB, NS)).items
        cluster_names = [f"rc{i}" for i in range(n_clusters)]
        cluster_names += [(rj.get("status") or {}).get("rayClusterName") for rj in rayjobs]
        for name in cluster_names:
            mine = [p for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/cluster") == name
                    and not p["metadata"].get("deletionTimestamp")]
            kinds = sorted((p["metadata"].get("labels") or {}).get("ray.io/node-type", "?") for p in mine)
            assert kinds == ["head", "worker", "worker"], (name, kinds)
        for rj in rayjobs:
            name, st = rj["metadata"]["name"], rj.get("status") or {}
            assert st.get("jobStatus") == "SUCCEEDED", (name, st)
            assert len(births.clusters.get(name, ())) == 1, (name, "RayClusters", births.clusters.get(name))
            assert len(births.submitters.get(name, ())) == 1, (name, "submitter Jobs", births.submitters.get(name))
            assert births.job_ids.get(name) == {st["jobId"]}, (name, "Ray job ids", births.job_ids.get(name))
        ray_lists = await _ray_job_lists(dashboard, rayjobs)
        for rj in rayjobs:
            listed = ray_lists[rj["metadata"]["name"]]
            # a node agent kill restarts the simulated head, whose dashboard forgets finished jobs
            # (no GCS fault tolerance): at most the one job, never a second submission
            assert len(listed) <= 1, listed
            assert all(j["submission_id"] == rj["status"]["jobId"] and j["status"] == "SUCCEEDED" for j in listed), listed
        for i in range(n_jobs):
            mine = [p for p in pods if (p["metadata"].get("annotations") or {}).get("volcano.sh/job-name") == f"job{i}"]
            names = [p["metadata"]["name"] for p in mine]
            assert len(names) == len(set(names)) == 3, (f"job{i}", names)
        final_partial = await _partly_bound(client)
        assert not final_partial, final_partial
    finally:
        await births.stop()
        with contextlib.suppress(Exception):
            await client.close()
        comps.stop_all()
        stop(server)
    report(kills=sum(killed.values()), killed=killed, vcjobs=n_jobs, rayclusters=n_clusters, rayjobs=n_rayjobs,
           converged_after_last_kill_s=round(settle_s, 1), gangs_partly_bound_at_end=0,
           transient_partial_observations=len(partial_seen))
