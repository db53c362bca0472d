"""The vcjob framework plugins for real: two Pods as processes on the process runtime (each in its
own network namespace), rendezvousing through exactly the env, ports, Services and hostfiles the
plugins inject.

- pytorch: ``torch.distributed`` with the gloo backend when torch is installed, else a TCP
  rendezvous that reads the same ``MASTER_ADDR``/``MASTER_PORT``/``RANK``/``WORLD_SIZE`` (rank 0
  listens, the others connect, everyone learns the sum of the ranks + 1);
- mpi: the master reads the ``svc`` plugin's hostfile ``/etc/volcano/worker.host`` and
  ``MPI_HOST``, connects to every worker on the ``mpijob-port`` and collects their hostnames.

Run with the machine lock: ``flock /tmp/pumice-realray.lock pytest tests/e2e_volcano/test_framework_real.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pumice.api import scheme
from pumice.controllers.volcano import admission_plugins
from pumice.testing.cluster import local_cluster
from pumice.testing.node import wait_for
from pumice.testing.volcano_controllers import running_controllers

pytestmark = [pytest.mark.netns, pytest.mark.timeout(600),
              pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime's network namespaces need root")]

RENDEZVOUS = r'''
import os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
try:
    import torch, torch.distributed as dist
except ImportError:
    torch = None
if torch is not None:
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
    t = torch.tensor([rank + 1.0]); dist.all_reduce(t); total = int(t.item()); how = "torch.distributed gloo"
elif rank == 0:
    srv = socket.create_server(("0.0.0.0", port)); total = 1; peers = []
    while len(peers) < world - 1:
        c, _ = srv.accept(); total += int(c.recv(16)); peers.append(c)
    for c in peers: c.sendall(str(total).encode()); c.close()
    how = "tcp rendezvous"
else:
    deadline = time.time() + 120
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=5); break
        except OSError:
            if time.time() > deadline: raise
            time.sleep(0.5)
    c.sendall(str(rank + 1).encode()); total = int(c.recv(16)); how = "tcp rendezvous"
print(f"rank {rank} of {world} via {how}: sum {total}", flush=True)
sys.exit(0 if total == world * (world + 1) // 2 else 3)
'''

MPI_MASTER = r'''
import os, socket, sys, time
hosts = [h.strip() for h in open("/etc/volcano/worker.host").read().split() if h.strip()]
assert ",".join(hosts) == os.environ["MPI_HOST"], (hosts, os.environ["MPI_HOST"])
seen = []
for h in hosts:
    deadline = time.time() + 120
    while True:
        try:
            c = socket.create_connection((h, 22), timeout=5); break
        except OSError:
            if time.time() > deadline: raise
            time.sleep(0.5)
    seen.append(c.recv(256).decode()); c.close()
print("master reached", seen, flush=True)
sys.exit(0 if len(seen) == len(hosts) else 3)
'''

MPI_WORKER = r'''
import socket
srv = socket.create_server(("0.0.0.0", 22)); c, _ = srv.accept(); c.sendall(socket.gethostname().encode()); c.close()
'''


def task(name: str, script: str, replicas: int = 1) -> dict:
    return {"name": name, "replicas": replicas, "template": {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "python", "command": [sys.executable, "-c", script],
         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}


def vcjob(name: str, plugins: dict, tasks: list[dict]) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": sum(t["replicas"] for t in tasks), "schedulerName": "volcano", "plugins": plugins,
                     "tasks": tasks}}


@contextlib.asynccontextmanager
async def process_stack() -> AsyncIterator[Any]:
    from pumice.node.agent import NodeAgent
    from pumice.scheduler.volcano import run as run_volcano

    data = Path(tempfile.mkdtemp(prefix="pumice-vc-framework-", dir="/var/tmp"))
    stop = asyncio.Event()
    mutating, validating = admission_plugins()
    tasks: list[asyncio.Task[Any]] = []
    try:
        async with local_cluster(admission=[*mutating, *validating]) as lc, running_controllers(lc.client):
            tasks.append(asyncio.create_task(run_volcano(lc.new_client(), schedule_period=0.2, stop_event=stop)))
            agent = NodeAgent(lc.new_client(), runtime="process", data_dir=data / "node", stop_grace=5.0, node_cpu="4",
                              node_memory="8Gi")
            tasks.append(asyncio.create_task(agent.run(stop_event=stop)))
            try:
                yield lc
            finally:
                stop.set()
                for t in tasks:
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await asyncio.wait_for(t, 60)
    finally:
        shutil.rmtree(data, ignore_errors=True)


async def _phase(c: Any, name: str) -> str:
    j = await c.get(scheme.VCJOB, name, "default")
    return str(((j.get("status") or {}).get("state") or {}).get("phase") or "")


async def _logs(c: Any, job: str) -> dict[str, str]:
    out = {}
    for p in (await c.list(scheme.POD, "default", label_selector=f"volcano.sh/job-name={job}")).items:
        try:
            out[p["metadata"]["name"]] = b"".join([b async for b in c.logs("default", p["metadata"]["name"])]).decode()
        except Exception as e:
            out[p["metadata"]["name"]] = f"<no log: {type(e).__name__}: {e}>"
    return out


async def test_pytorch_plugin_env_lets_two_processes_rendezvous() -> None:
    async with process_stack() as lc:
        c = lc.client
        await c.create(vcjob("pt", {"pytorch": ["--port=23456"]}, [task("master", RENDEZVOUS), task("worker", RENDEZVOUS)]))

        async def done() -> str | None:
            ph = await _phase(c, "pt")
            return ph if ph in ("Completed", "Failed", "Aborted") else None

        assert await wait_for(done, timeout=300) == "Completed", await _logs(c, "pt")
        pods = (await c.list(scheme.POD, "default", label_selector="volcano.sh/job-name=pt")).items
        assert sorted(p["metadata"]["name"] for p in pods) == ["pt-master-0", "pt-worker-0"]
        env = {e["name"]: e.get("value") for e in next(p for p in pods if p["metadata"]["name"] == "pt-worker-0")["spec"]["containers"][0]["env"]}
        assert (env["MASTER_ADDR"], env["RANK"], env["WORLD_SIZE"]) == ("pt-master-0.pt", "1", "2")
        logs = await _logs(c, "pt")
        assert "rank 0 of 2 via" in logs["pt-master-0"] and "sum 3" in logs["pt-master-0"], logs
        assert "rank 1 of 2 via" in logs["pt-worker-0"] and "sum 3" in logs["pt-worker-0"], logs


async def test_mpi_plugin_hostfile_and_port_let_the_master_reach_every_worker() -> None:
    async with process_stack() as lc:
        c = lc.client
        await c.create(vcjob("mpi", {"mpi": []}, [task("master", MPI_MASTER), task("worker", MPI_WORKER, replicas=2)]))

        async def done() -> str | None:
            ph = await _phase(c, "mpi")
            return ph if ph in ("Completed", "Failed", "Aborted") else None

        assert await wait_for(done, timeout=300) == "Completed", await _logs(c, "mpi")
        job = await c.get(scheme.VCJOB, "mpi", "default")
        assert set(job["spec"]["plugins"]) == {"mpi", "ssh", "svc"}
        logs = await _logs(c, "mpi")
        assert "master reached ['mpi-worker-0', 'mpi-worker-1']" in logs["mpi-master-0"], logs
