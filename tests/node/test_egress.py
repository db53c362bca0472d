"""Pods reach the package index through the agent's egress proxy (and nothing else), and the API
server through the forwarder on the bridge address (netns mode, root only)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from pumice.node.agent import NodeAgent
from pumice.testing.fake_client import FakeClient
from pumice.testing.node import get_pod, phase_is, pod, wait_for

pytestmark = [pytest.mark.netns, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


def _out(agent: NodeAgent, p: dict, container: str = "c0") -> list[str]:
    raw = (agent.pod_dir(p) / container / "0.log").read_text()
    return [line.split(" ", 3)[3] for line in raw.splitlines() if line.count(" ") >= 3]


@pytest.mark.skipif(not _pypi_reachable(), reason="pypi.org is not reachable from this machine")
async def test_pip_in_a_pod_downloads_through_the_proxy_and_other_hosts_are_refused(
        client: FakeClient, agent: NodeAgent) -> None:
    script = ("pip download --no-deps --no-cache-dir --disable-pip-version-check pendulum==2.1.2 -d /tmp/w "
              ">/dev/null 2>&1 && echo PIP_OK; "
              "python3 -c \"import urllib.request as u; u.urlopen('https://example.com', timeout=5)\" 2>&1 "
              "| grep -o 'Tunnel connection failed: 403' | head -1")
    await client.create(pod("pip", script, image="python:3.11"))
    await wait_for(lambda: phase_is(client, "pip", "Succeeded"), timeout=300, interval=0.5)
    assert _out(agent, await get_pod(client, "pip")) == ["PIP_OK", "Tunnel connection failed: 403"]


async def test_pods_reach_the_api_server_at_kubernetes_service_host(data_dir: Path) -> None:
    from pumice.testing.cluster import serve_http

    async with serve_http(data_dir / "apiserver") as srv:
        client = srv.client()
        agent = NodeAgent(client, data_dir=data_dir / "agent", node_names=["node-0"], node_cpu="4",
                          node_memory="8Gi", lease_renew_interval=None, apiserver_url_for_pods=srv.url)
        await agent.start()
        try:
            scheme = srv.url.split(":", 1)[0]
            script = ("echo $KUBERNETES_SERVICE_HOST; python3 -c \"import os, ssl, urllib.request as u; "
                      "p = os.environ['KUBERNETES_SERVICE_PORT']; ctx = ssl._create_unverified_context(); "
                      f"print(u.urlopen(f'{scheme}://kubernetes.default.svc:{{p}}/version', timeout=5, context=ctx).status)\"")
            await client.create(pod("api", script, image="python:3.11"))
            await wait_for(lambda: _terminal(client, "api"), timeout=60, interval=0.5)
            p = await get_pod(client, "api")
            assert _out(agent, p) == [agent.host_ip(), "200"]
        finally:
            await agent.stop()
            await client.close()


async def _terminal(client: object, name: str) -> bool:
    return await phase_is(client, name, "Succeeded") or await phase_is(client, name, "Failed")


async def test_python_in_a_pod_reaches_a_service_by_short_name_through_the_proxy(
        client: FakeClient, agent: NodeAgent) -> None:
    # urllib ignores the Pod CIDR in NO_PROXY, so a request for a bare Service name goes to the
    # egress proxy, which must pass cluster destinations through rather than refuse them.
    await client.create(pod("web", "python3 -m http.server 8080", image="python:3.11", restart_policy="Always",
                            labels={"app": "web"}))
    await client.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                         "spec": {"selector": {"app": "web"}, "ports": [{"port": 8080}]}})
    await wait_for(lambda: phase_is(client, "web", "Running"), timeout=60, interval=0.5)
    script = ("echo proxy=${HTTP_PROXY:+set}; python3 -c \"import time, urllib.request as u\n"
              "for i in range(50):\n"
              "    try:\n"
              "        print(u.urlopen('http://web:8080/', timeout=5).status); break\n"
              "    except Exception as e:\n"
              "        err = e; time.sleep(0.2)\n"
              "else:\n"
              "    print(err)\"")
    await client.create(pod("curl", script, image="python:3.11"))
    await wait_for(lambda: _terminal(client, "curl"), timeout=60, interval=0.5)
    assert _out(agent, await get_pod(client, "curl")) == ["proxy=set", "200"]
