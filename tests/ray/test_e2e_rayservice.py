"""RayService on real Ray Serve (issue 10 acceptance): KubeRay's ray-service.sample.yaml with our
own Serve applications and the Router at 0.1 CPU (:mod:`pumice.testing.rayservice` says why: as
published the sample can deadlock on its own 2 + 1 CPU cluster).

The Node publishes 8 CPUs / 24 Gi so that the sample's requests fit twice (an upgrade runs two
clusters); Ray itself runs on the machine's real cores.

Requests from the host go through the node agent's HTTP proxy to the Service name (it resolves
Service names as the Pods' hosts files do: the serve Service's ready endpoints); requests from a Pod
use the Service's cluster DNS name through the Pod's hosts file.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from pumice.api import Obj, scheme
from pumice.testing.rayservice import NAME, sample_rayservice, serve_apps_configmap

from .test_e2e_ray import Stack, stack

pytestmark = [
    pytest.mark.ray,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(not (Path(sys.executable).parent / "ray").exists(), reason="ray is not installed"),
]

SERVE_FQDN = f"{NAME}-serve-svc.default.svc.cluster.local"
NODE = {"node_cpu": "8", "node_memory": "24Gi"}


async def get_rs(s: Stack) -> Obj:
    return await s.client.get(scheme.RAY_SERVICE, NAME, "default")


def condition(rs: Obj, ctype: str) -> tuple[str, str]:
    for x in (rs.get("status") or {}).get("conditions") or []:
        if x["type"] == ctype:
            return x["status"], x["reason"]
    return "", ""


def summary(rs: Obj) -> str:
    st = rs.get("status") or {}
    apps = {side: {a: v.get("status") for a, v in ((st.get(side) or {}).get("applicationStatuses") or {}).items()}
            for side in ("activeServiceStatus", "pendingServiceStatus")}
    return (f"Ready={condition(rs, 'Ready')} Upgrade={condition(rs, 'UpgradeInProgress')} "
            f"active={(st.get('activeServiceStatus') or {}).get('rayClusterName')} "
            f"pending={(st.get('pendingServiceStatus') or {}).get('rayClusterName')} "
            f"endpoints={st.get('numServeEndpoints')} apps={apps}")


async def world(s: Stack) -> str:
    """RayClusters and Pods in one line, for progress output."""
    parts = []
    for cl in (await s.client.list(scheme.RAY_CLUSTER, "default")).items:
        st = cl.get("status") or {}
        conds = {x["type"]: x["status"] for x in st.get("conditions") or []}
        parts.append(f"{cl['metadata']['name']}:{st.get('state')}:HeadPodReady={conds.get('HeadPodReady')}")
    for p in (await s.client.list(scheme.POD, "default")).items:
        pst = p.get("status") or {}
        ready = next((x["status"] for x in pst.get("conditions") or [] if x["type"] == "Ready"), "")
        parts.append(f"{p['metadata']['name']}:{pst.get('phase')}:ready={ready}:"
                     f"serve={(p['metadata'].get('labels') or {}).get('ray.io/serve')}")
    return " ".join(parts)


async def wait_rs(s: Stack, pred: Callable[[Obj], bool], timeout: float = 300) -> Obj:
    """Poll the RayService until ``pred``, printing each new state line. ``timeout``: the sample
    is Ready in 30-60 s on 2 loaded cores; a wait past 300 s is a hang, reported by
    :meth:`Stack.until` with the Ray logs' digest."""
    loop = asyncio.get_running_loop()
    last = ""

    async def probe() -> Obj | None:
        nonlocal last
        rs = await get_rs(s)
        line = f"{summary(rs)} | {await world(s)}"
        if line != last:
            print(f"[{loop.time():.0f}] {line}", flush=True)
            last = line
        return rs if pred(rs) else None

    return await s.until(lambda: f"the RayService; last state: {last}", probe, timeout)


def host_proxy(s: Stack) -> str:
    """The node agent's HTTP proxy on the bridge (it resolves cluster Service names)."""
    return f"http://{s.agent.network.gateway}:{s.agent._proxy.port}"


async def post_from_host(s: Stack, route: str, body: Any, timeout: float = 10.0) -> str:
    """POST through the serve Service from the host: a fresh connection each time, so every
    request resolves the Service anew (as a client behind kube-proxy would)."""
    async with httpx2.AsyncClient(proxy=host_proxy(s), timeout=timeout) as http:
        r = await http.post(f"http://{SERVE_FQDN}:8000{route}", json=body)
    r.raise_for_status()
    return r.text


async def apply_sample(s: Stack) -> None:
    await s.client.create(serve_apps_configmap())
    await s.client.create(sample_rayservice())


def ready(rs: Obj) -> bool:
    return condition(rs, "Ready")[0] == "True"


async def test_sample_rayservice_becomes_ready_and_answers_from_the_host_and_from_a_pod() -> None:
    async with stack(**NODE) as s:
        await apply_sample(s)
        rs = await wait_rs(s, ready)
        st = rs["status"]
        assert st["serviceStatus"] == "Running"
        assert {a: v["status"] for a, v in st["activeServiceStatus"]["applicationStatuses"].items()} == {
            "fruit_app": "RUNNING", "math_app": "RUNNING"}
        assert st["numServeEndpoints"] >= 1
        assert float(await post_from_host(s, "/fruit/", ["MANGO", 2])) == 6
        assert float(await post_from_host(s, "/calc/", ["MUL", 3])) == 15

        script = (
            "import json, urllib.request\n"
            "def post(route, body):\n"
            f"    req = urllib.request.Request('http://{SERVE_FQDN}:8000' + route, data=json.dumps(body).encode(),\n"
            "                                 headers={'Content-Type': 'application/json'})\n"
            "    return float(urllib.request.urlopen(req, timeout=20).read())\n"
            "assert post('/fruit/', ['PEAR', 3]) == 3, 'fruit'\n"
            "assert post('/calc/', ['ADD', 4]) == 7, 'calc'\n"
            "print('served')\n")
        await s.client.create({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "serve-client", "namespace": "default"},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "client", "image": "python:3", "command": [sys.executable, "-c", script]}]}})

        async def client_ended() -> Obj | None:
            pod = await s.client.get(scheme.POD, "serve-client", "default")
            return pod if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") else None

        pod = await s.until("Pod serve-client to end", client_ended, 120)
        assert pod["status"]["phase"] == "Succeeded", pod.get("status")

        events = [e for e in (await s.client.list(scheme.EVENT, "default")).items
                  if (e.get("involvedObject") or {}).get("kind") == "RayService"]
        reasons = {e["reason"] for e in events}
        assert {"CreatedRayCluster", "UpdatedServeApplications", "CreatedService", "UpdatedHeadPodServeLabel"} <= reasons


class Client:
    """Sends one request after another from the host through the serve Service, counting answers."""

    def __init__(self, s: Stack) -> None:
        self.s = s
        self.ok = 0
        self.failed: list[str] = []
        self.stop = asyncio.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            try:
                answer = float(await post_from_host(self.s, "/fruit/", ["MANGO", 2]))
                if answer == 6:
                    self.ok += 1
                else:
                    self.failed.append(f"wrong answer {answer}")
            except Exception as e:
                self.failed.append(repr(e))
            await asyncio.sleep(0.2)


@pytest.mark.ray_long
async def test_cluster_spec_change_upgrades_with_zero_failed_requests() -> None:
    async with stack(budget=1000, **NODE) as s:
        await apply_sample(s)
        rs = await wait_rs(s, ready)
        old = rs["status"]["activeServiceStatus"]["rayClusterName"]
        client = Client(s)
        task = asyncio.create_task(client.run())
        try:
            await asyncio.sleep(5)
            rs = await get_rs(s)
            for g in [rs["spec"]["rayClusterConfig"]["headGroupSpec"],
                      *rs["spec"]["rayClusterConfig"]["workerGroupSpecs"]]:
                g["template"]["spec"]["containers"][0].setdefault("env", []).append(
                    {"name": "PUMICE_UPGRADE", "value": "1"})
            await s.client.update(rs)
            rs = await wait_rs(s, lambda r: condition(r, "UpgradeInProgress") == ("True", "BothActivePendingClustersExist"))
            new = rs["status"]["pendingServiceStatus"]["rayClusterName"]
            assert new != old
            rs = await wait_rs(s, lambda r: (r["status"].get("activeServiceStatus") or {}).get("rayClusterName") == new
                               and condition(r, "UpgradeInProgress")[0] == "False")
            served_before_switch_end = client.ok
            await asyncio.sleep(10)
        finally:
            client.stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 30)
        print(f"requests: {client.ok} ok, {len(client.failed)} failed: {client.failed[:5]}", flush=True)
        assert client.failed == []
        assert client.ok > served_before_switch_end > 0
        serve = await s.client.get(scheme.SERVICE, f"{NAME}-serve-svc", "default")
        assert serve["spec"]["selector"]["ray.io/cluster"] == new
        assert ready(rs)
