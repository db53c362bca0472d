"""Pod sandbox isolation in netns mode (root only): own IP, hostname, /tmp, hosts file with
Service names, and nothing left behind."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pumice.api.scheme import POD
from pumice.node.agent import NodeAgent
from pumice.node.network import veth_name
from pumice.testing.fake_client import FakeClient
from pumice.testing.node import get_pod, phase_is, pod, wait_for

pytestmark = [pytest.mark.netns, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]


def _links() -> str:
    return subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout


def _netns() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


async def test_a_pod_has_its_own_ip_hostname_tmp_and_default_route(client: FakeClient, agent: NodeAgent) -> None:
    Path("/tmp/pumice-host-marker").write_text("host")
    script = ("hostname; ip -4 -o addr show dev eth0 | awk '{print $4}'; ip route show default; "
              "ls /tmp/pumice-host-marker 2>&1 || true; touch /tmp/inside; cat /etc/resolv.conf | head -1; "
              "echo KSH=$KUBERNETES_SERVICE_HOST")
    await client.create(pod("iso", script, node="node-0"))
    await wait_for(lambda: phase_is(client, "iso", "Succeeded"))
    p = await get_pod(client, "iso")
    ip = p["status"]["podIP"]
    assert ip.startswith("10.244.")
    out = [line.split(" ", 3)[3] for line in (agent.pod_dir(p) / "c0" / "0.log").read_text().splitlines()]
    assert out[0] == "iso"
    assert out[1] == f"{ip}/22"
    assert out[2].startswith("default dev eth0")
    assert "No such file" in out[3]
    assert out[4] == "nameserver 127.0.0.1"
    assert not Path("/tmp/inside").exists()
    Path("/tmp/pumice-host-marker").unlink()


async def test_service_names_resolve_to_the_pods_behind_the_service(client: FakeClient, agent: NodeAgent) -> None:
    await client.create(pod("backend", "sleep 30", node="node-0", labels={"app": "be"}))
    await wait_for(lambda: phase_is(client, "backend", "Running"))
    await client.create({"apiVersion": "v1", "kind": "Service",
                         "metadata": {"name": "be-svc", "namespace": "default"},
                         "spec": {"clusterIP": "None", "selector": {"app": "be"}, "publishNotReadyAddresses": True}})
    be = await get_pod(client, "backend")
    await client.create(pod("frontend", "getent hosts be-svc; getent hosts be-svc.default.svc.cluster.local; "
                            "python3 -c \"import socket; print(socket.gethostbyname('be-svc.default'))\"",
                            node="node-0"))
    await wait_for(lambda: phase_is(client, "frontend", "Succeeded"), timeout=30)
    fe = await get_pod(client, "frontend")
    text = (agent.pod_dir(fe) / "c0" / "0.log").read_text()
    ip = be["status"]["podIP"]
    assert text.count(f" {ip} ") >= 2 or text.count(ip) >= 3, text


async def test_hosts_files_follow_service_changes_in_place(client: FakeClient, agent: NodeAgent) -> None:
    await client.create(pod("watcher", "sleep 30", node="node-0", labels={"app": "w"}))
    await wait_for(lambda: phase_is(client, "watcher", "Running"))
    await client.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "late", "namespace": "default"},
                         "spec": {"selector": {"app": "w"}, "publishNotReadyAddresses": True}})
    w = agent.workers[(await get_pod(client, "watcher"))["metadata"]["uid"]]
    hosts = Path("/etc/netns") / w.sandbox.netns / "hosts"
    await wait_for(lambda: "late.default.svc.cluster.local" in hosts.read_text())


async def test_deleting_pods_leaves_no_process_netns_or_veth(client: FakeClient, agent: NodeAgent) -> None:
    await client.create(pod("sleeper", "sleep 300 & sleep 300", node="node-0", grace=1))
    await wait_for(lambda: phase_is(client, "sleeper", "Running"))
    p = await get_pod(client, "sleeper")
    w = agent.workers[p["metadata"]["uid"]]
    ns = w.sandbox.netns
    assert ns in _netns()
    await client.delete(POD, "sleeper", "default")
    await wait_for(lambda: _gone(client, "sleeper"), timeout=20)
    assert ns not in _netns()
    assert veth_name(p["metadata"]["uid"], str(agent.data_dir)) not in _links()
    assert not Path("/etc/netns", ns).exists()


async def _gone(client: FakeClient, name: str) -> bool:
    return await get_pod(client, name) is None
