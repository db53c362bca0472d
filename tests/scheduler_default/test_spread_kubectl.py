"""A user's view of PodTopologySpread's DoNotSchedule filter with real kubectl: apply a Deployment
whose replicas must spread over hostnames, cordon a Node, scale, and read why the last replica
waits in ``kubectl describe``."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pumice.controllers.kube import setup
from pumice.runtime import Manager
from pumice.scheduler.default.scheduler import DefaultScheduler
from pumice.testing.cluster import HttpServer, running, serve_http
from pumice.testing.fake_kubelet import FakeKubelet
from pumice.testing.kubectl import run_kubectl

pytestmark = pytest.mark.kubectl

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels: {app: web}
      containers:
      - name: web
        image: nginx:1
        resources: {requests: {cpu: 100m}}
"""


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[HttpServer]:
    """API server over HTTPS, a fake kubelet with three Nodes, the default scheduler and the
    Deployment and ReplicaSet controllers."""
    async with serve_http(tmp_path) as srv:
        clients = [srv.client() for _ in range(3)]
        kubelet = FakeKubelet(clients[0], nodes=3)
        await kubelet.start()
        sched = DefaultScheduler(clients[1])
        await sched.start()
        mgr = Manager(clients[2], graceful_shutdown_timeout=2.0)
        setup(mgr, controllers=["deployment", "replicaset"])
        try:
            async with running(mgr, start_timeout=30, stop_timeout=30):
                yield srv
        finally:
            await sched.stop()
            await kubelet.stop()
            for c in clients:
                await c.close()


async def kubectl(srv: HttpServer, *args: str) -> str:
    code, out, _ = await run_kubectl(srv.kubeconfig, *args, timeout=90, merge_stderr=True)
    assert code == 0, f"kubectl {' '.join(args)}: {out}"
    return out


async def placements(srv: HttpServer) -> list[str]:
    out = json.loads(await kubectl(srv, "get", "pods", "-l", "app=web", "-o", "json"))
    return [p["spec"].get("nodeName") or "" for p in out["items"]]


async def test_kubectl_shows_a_replica_held_by_its_spread_constraint(server: HttpServer, tmp_path: Path) -> None:
    srv = server
    manifest = tmp_path / "web.yaml"
    manifest.write_text(MANIFEST)
    await kubectl(srv, "apply", "-f", str(manifest))
    await kubectl(srv, "rollout", "status", "deployment/web", "--timeout=60s")
    assert sorted(await placements(srv)) == ["fake-node-0", "fake-node-1", "fake-node-2"]

    await kubectl(srv, "cordon", "fake-node-2")
    await kubectl(srv, "scale", "deployment/web", "--replicas=6")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        placed = await placements(srv)
        if len(placed) == 6 and placed.count("") == 1:
            break
        assert loop.time() < deadline, f"not 5 bound and 1 pending: {placed}"
        await asyncio.sleep(0.2)
    # 2-2-1: a sixth replica on either schedulable Node would make 3 - 1 > maxSkew
    assert Counter(placed) == Counter({"fake-node-0": 2, "fake-node-1": 2, "fake-node-2": 1, "": 1})

    want = ("0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match pod topology spread "
            "constraints. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
            "2 No preemption victims found for incoming pod.")
    pending = json.loads(await kubectl(srv, "get", "pods", "-l", "app=web", "--field-selector",
                                       "spec.nodeName=", "-o", "json"))["items"]
    assert len(pending) == 1
    name = pending[0]["metadata"]["name"]
    deadline = loop.time() + 30
    while True:
        described = await kubectl(srv, "describe", "pod", name)
        if "FailedScheduling" in described:
            break
        assert loop.time() < deadline, described
        await asyncio.sleep(0.2)
    assert " ".join(want.split()) in " ".join(described.split())

    await kubectl(srv, "uncordon", "fake-node-2")
    await kubectl(srv, "rollout", "status", "deployment/web", "--timeout=60s")
    assert Counter(await placements(srv)) == Counter({"fake-node-0": 2, "fake-node-1": 2, "fake-node-2": 2})
