"""Acceptance (issue 4): real Ray in three Pods on one Node, each in its own network namespace.

A head Pod runs ``ray start --head --block`` (KubeRay's command shape and fixed ports), a worker
Pod joins through the head's headless Service name after an init container waited for the GCS with
``ray health-check``, and a driver Pod runs a script over Ray Client that runs tasks on both nodes
and an actor and exits 0. ``kubectl logs`` (through the API server's log proxy, when the real API
server is available) shows its output; deleting the Pods leaves no process, namespace or veth.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pumice.api.scheme import POD
from pumice.node.agent import NodeAgent
from pumice.node.network import netns_name, veth_name
from pumice.testing.cluster import serve_http
from pumice.testing.node import get_pod, phase_is, wait_for
from pumice.testing.ray_logs import diagnosis

pytestmark = [
    pytest.mark.ray,
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for Pod network namespaces"),
    pytest.mark.skipif(not (Path(sys.executable).parent / "ray").exists(), reason="ray is not installed"),
]

SVC = "raycluster-head-svc"
FQDN = f"{SVC}.default.svc.cluster.local"
IMAGE = "rayproject/ray:2.60.0"
RAY_ENV = [{"name": "RAY_USAGE_STATS_ENABLED", "value": "0"},
           {"name": "RAY_START_ULIMIT_OPEN_FILES", "value": "20000"}]
PROBE = {
    "exec": {"command": ["bash", "-c",
                         "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"]},
    "initialDelaySeconds": 2, "periodSeconds": 2, "timeoutSeconds": 3, "failureThreshold": 120,
}
DRIVER = """
import socket, time, ray
for attempt in range(5):  # a loaded CI machine may be slow to start the per-client server
    try:
        ray.init("ray://FQDN:10001")
        break
    except Exception as e:
        print("ray.init failed, retrying:", e)
        time.sleep(2)
deadline = time.time() + 120
while len([n for n in ray.nodes() if n["Alive"]]) < 2 and time.time() < deadline:
    time.sleep(0.5)

@ray.remote(num_cpus=1)
def where():
    time.sleep(0.5)
    return socket.gethostname()

@ray.remote
class Counter:
    def __init__(self):
        self.n = 0
    def incr(self, k):
        self.n += k
        return self.n

hosts = sorted(set(ray.get([where.options(scheduling_strategy="SPREAD").remote() for _ in range(8)])))
c = Counter.remote()
total = ray.get([c.incr.remote(i) for i in range(1, 11)])[-1]
print("HOSTS", " ".join(hosts))
print("ACTOR", total)
assert hosts == ["ray-head", "ray-worker"], hosts
assert total == 55
""".replace("FQDN", FQDN)


def head_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "ray-head", "namespace": "default", "labels": {"ray.io/node-type": "head", "ray.io/cluster": "rc"}},
        "spec": {
            "nodeName": "node-0", "restartPolicy": "Always", "terminationGracePeriodSeconds": 35,
            "containers": [{
                "name": "ray-head", "image": IMAGE,
                "command": ["/bin/bash", "-c", "--"],
                "args": ["ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start --head --block "
                         "--dashboard-agent-listen-port=52365 --dashboard-host=0.0.0.0 --memory=2147483648 "
                         "--metrics-export-port=8080 --num-cpus=1"],
                "env": [*RAY_ENV, {"name": "RAY_ADDRESS", "value": "127.0.0.1:6379"},
                        {"name": "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S", "value": "120"}],
                "ports": [{"containerPort": 6379, "name": "gcs-server"}, {"containerPort": 8265, "name": "dashboard"},
                          {"containerPort": 10001, "name": "client"}],
                "resources": {"limits": {"cpu": "1", "memory": "4Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}},
                "readinessProbe": PROBE,
            }],
        },
    }


def worker_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "ray-worker", "namespace": "default", "labels": {"ray.io/node-type": "worker", "ray.io/cluster": "rc"}},
        "spec": {
            "nodeName": "node-0", "restartPolicy": "Always", "terminationGracePeriodSeconds": 35,
            "initContainers": [{
                "name": "wait-gcs-ready", "image": IMAGE, "command": ["/bin/bash", "-c", "--"],
                "args": [f"until ray health-check --address {FQDN}:6379 > /dev/null 2>&1; do "
                         "echo waiting for GCS; sleep 1; done; echo GCS ready"],
                "env": RAY_ENV,
            }],
            "containers": [{
                "name": "ray-worker", "image": IMAGE, "command": ["/bin/bash", "-c", "--"],
                "args": [f"ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; ray start --address={FQDN}:6379 --block "
                         "--dashboard-agent-listen-port=52365 --memory=1073741824 --metrics-export-port=8080 --num-cpus=1"],
                "env": [*RAY_ENV, {"name": "RAY_ADDRESS", "value": f"{FQDN}:6379"}],
                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
                "readinessProbe": PROBE,
            }],
        },
    }


def driver_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "ray-driver", "namespace": "default"},
        "spec": {
            "nodeName": "node-0", "restartPolicy": "Never",
            "containers": [{"name": "driver", "image": IMAGE, "command": ["python", "-c", DRIVER], "env": RAY_ENV,
                            "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}}],
        },
    }


HEAD_SVC = {
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": SVC, "namespace": "default"},
    "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"ray.io/node-type": "head"},
             "ports": [{"name": "gcs-server", "port": 6379}, {"name": "dashboard", "port": 8265},
                       {"name": "client", "port": 10001}]},
}


def _proxy_logs(url: str, token: str, name: str) -> str:
    import ssl
    import urllib.request

    req = urllib.request.Request(f"{url}/api/v1/namespaces/default/pods/{name}/log",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30, context=ssl._create_unverified_context()) as resp:
        return resp.read().decode()


def _pod_processes(netns: list[str]) -> set[int]:
    pids: set[int] = set()
    for ns in netns:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
        pids.update(int(x) for x in out.split())
    return pids


def _leftovers(netns: list[str], veths: list[str], pids: set[int]) -> dict[str, list[str]]:
    """What is left of this test's Pods (other agents may run Pods on this machine meanwhile)."""
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    alive = [str(p) for p in sorted(pids) if Path(f"/proc/{p}").exists()
             and "Z" not in Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]]
    return {"links": [v for v in veths if v in links], "netns": [n for n in netns if n in names], "procs": alive}


async def _run_scenario(client: Any, agent: NodeAgent, logs: Any) -> None:
    await client.create(HEAD_SVC)
    await client.create(head_pod())
    await client.create(worker_pod())
    await wait_for(lambda: _ready(client, "ray-head"), timeout=300, interval=0.5)
    await wait_for(lambda: _ready(client, "ray-worker"), timeout=300, interval=0.5)
    await client.create(driver_pod())
    await wait_for(lambda: _terminal(client, "ray-driver"), timeout=300, interval=0.5)
    driver = await get_pod(client, "ray-driver")
    text = await logs("ray-driver")
    assert driver["status"]["phase"] == "Succeeded", text
    assert "HOSTS ray-head ray-worker" in text
    assert "ACTOR 55" in text
    uids = [(await get_pod(client, n))["metadata"]["uid"] for n in ("ray-driver", "ray-worker", "ray-head")]
    scope = str(agent.data_dir)
    netns, veths = [netns_name(u, scope) for u in uids], [veth_name(u, scope) for u in uids]
    pids = _pod_processes(netns)
    assert len(pids) >= 10  # head and worker: raylet, gcs_server, dashboard, agents ...
    for name in ("ray-driver", "ray-worker", "ray-head"):
        await client.delete(POD, name, "default")
    for name in ("ray-driver", "ray-worker", "ray-head"):
        await wait_for(lambda n=name: _gone(client, n), timeout=90, interval=0.5)
    assert _leftovers(netns, veths, pids) == {"links": [], "netns": [], "procs": []}


async def _ready(client: Any, name: str) -> bool:
    p = await get_pod(client, name)
    if p is None:
        return False
    assert p["status"].get("phase") not in ("Failed", "Succeeded"), p["status"]
    return any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])


async def _terminal(client: Any, name: str) -> bool:
    return await phase_is(client, name, "Succeeded") or await phase_is(client, name, "Failed")


async def _gone(client: Any, name: str) -> bool:
    return await get_pod(client, name) is None


SCENARIO_BUDGET = 480
"""Seconds the scenario may take (about 60 on an idle machine); the test's pytest timeout is 600."""


@pytest.mark.timeout(600)
async def test_two_ray_nodes_and_a_driver_pod_run_on_one_node(data_dir: Path) -> None:
    kubectl = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))
    async with serve_http(data_dir / "apiserver") as srv:
        client = srv.client()
        agent = NodeAgent(client, data_dir=data_dir / "agent", node_names=["node-0"], node_cpu="4",
                          node_memory="16Gi", apiserver_url_for_pods=srv.url)
        await agent.start()

        async def logs(name: str) -> str:
            """``kubectl logs``; when kubectl is missing or refuses the server (it sends no bearer
            token over plain HTTP), the same request through the API server's log proxy."""
            if kubectl is not None:
                proc = await asyncio.create_subprocess_exec(
                    kubectl, "--kubeconfig", str(srv.kubeconfig), "logs", name,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
                out, _ = await proc.communicate()
                if proc.returncode == 0:
                    return out.decode()
            return await asyncio.to_thread(_proxy_logs, srv.url, srv.token, name)

        try:
            # Bounded here, below the pytest timeout: its SIGALRM can land in one of the agent's
            # tasks and be kept there, and the test would wait on; and a failure carries the Pods'
            # states and Ray's log digest.
            async with asyncio.timeout(SCENARIO_BUDGET):
                await _run_scenario(client, agent, logs)
        except (AssertionError, TimeoutError) as e:
            raise AssertionError(f"{e!r}\n{await diagnosis(client, agent.data_dir / 'pods')}") from e
        finally:
            await agent.stop()
            await client.close()
