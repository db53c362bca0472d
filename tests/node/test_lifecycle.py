"""Agent lifecycle: logs endpoint, adoption after a restart, host network mode, agent stop."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pumice.api.scheme import NODE, POD
from pumice.node.agent import NodeAgent
from pumice.node.network import veth_name
from pumice.testing.fake_client import FakeClient
from pumice.testing.node import get_pod, phase_is, pod, wait_for


def agent_for(client: FakeClient, data_dir: Path, **kw: Any) -> NodeAgent:
    kw.setdefault("node_names", ["node-0"])
    return NodeAgent(client, runtime="process", data_dir=data_dir, node_cpu="4", node_memory="8Gi",
                     backoff_base=0.2, backoff_max=1.0, lease_renew_interval=None, stop_grace=2.0, **kw)


async def http_get(port: int, path: str, read_for: float | None = None) -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    data = b""
    try:
        async with asyncio.timeout(read_for or 10):
            while chunk := await reader.read(65536):
                data += chunk
    except TimeoutError:
        if read_for is None:
            raise
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    code = int(head.split()[1])
    if b"chunked" in head:
        out, rest = b"", body
        while rest:
            size_s, _, rest = rest.partition(b"\r\n")
            size = int(size_s or b"0", 16)
            if size == 0:
                break
            out, rest = out + rest[:size], rest[size + 2:]
        body = out
    return code, body.decode()


async def test_the_kubelet_log_endpoint_serves_tail_timestamps_previous_and_follow(client: FakeClient, agent: NodeAgent) -> None:
    node = await client.get(NODE, "node-0")
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    assert {"type": "InternalIP", "address": agent.host_ip()} in node["status"]["addresses"]
    counter = agent.data_dir / "logs-count"
    script = (f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n+1)) > {counter}; "
              "for i in 1 2 3; do echo run$n line$i; done; [ $n -ge 1 ] && exec sleep 60; exit 1")
    await client.create(pod("talker", script, restart_policy="Always"))

    async def second_run() -> bool:
        p = await get_pod(client, "talker")
        cs = (p or {}).get("status", {}).get("containerStatuses") or [{}]
        return cs[0].get("restartCount") == 1 and "running" in cs[0].get("state", {})

    await wait_for(second_run)
    await wait_for(lambda: _has(port, "/containerLogs/default/talker/c0", "run1 line3"))
    code, text = await http_get(port, "/containerLogs/default/talker/c0")
    assert (code, text) == (200, "run1 line1\nrun1 line2\nrun1 line3\n")
    code, text = await http_get(port, "/containerLogs/default/talker/c0?tailLines=1&timestamps=true")
    assert text.endswith("Z run1 line3\n") and text.count("\n") == 1
    code, text = await http_get(port, "/containerLogs/default/talker/c0?previous=true")
    assert text == "run0 line1\nrun0 line2\nrun0 line3\n"
    code, text = await http_get(port, "/containerLogs/default/talker/c0?follow=true", read_for=0.5)
    assert code == 200 and "run1 line3" in text
    code, text = await http_get(port, "/containerLogs/default/nobody/c0")
    assert code == 404


async def test_a_running_containers_log_is_served_before_its_file_exists(client: FakeClient, agent: NodeAgent) -> None:
    # Just after a start the shim may not have created the log file yet; the kubelet serves a
    # running container's log (empty), never "waiting to start".
    node = await client.get(NODE, "node-0")
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    await client.create(pod("quiet", "exec sleep 60"))
    await wait_for(lambda: phase_is(client, "quiet", "Running"))
    log_file = agent.pod_dir(await get_pod(client, "quiet")) / "c0" / "0.log"
    await wait_for(log_file.exists)
    log_file.rename(log_file.with_suffix(".moved"))  # the state of the race, made to last
    assert await http_get(port, "/containerLogs/default/quiet/c0") == (200, "")
    code, text = await http_get(port, "/containerLogs/default/quiet/c0?follow=true", read_for=0.5)
    assert (code, text) == (200, "")


async def _has(port: int, path: str, needle: str) -> bool:
    return needle in (await http_get(port, path))[1]


async def test_a_restarted_agent_adopts_running_pods_without_starting_them_twice(client: FakeClient, data_dir: Path) -> None:
    first = agent_for(client, data_dir, keep_pods=True)
    await first.start()
    await client.create(pod("long", "echo started; exec sleep 300", grace=1))
    await wait_for(lambda: phase_is(client, "long", "Running"))
    uid = (await get_pod(client, "long"))["metadata"]["uid"]
    await wait_for(lambda: first.workers[uid].records["c0"].current is not None)
    pid = first.workers[uid].records["c0"].current.pid
    await first.stop()
    os.kill(pid, 0)  # still alive
    second = agent_for(client, data_dir)
    await second.start()
    try:
        await wait_for(lambda: uid in second.workers and second.workers[uid].records["c0"].current is not None)
        assert second.workers[uid].records["c0"].current.pid == pid
        p = await get_pod(client, "long")
        assert p["status"]["containerStatuses"][0]["restartCount"] == 0
        log = second.pod_dir(p) / "c0" / "0.log"
        await wait_for(lambda: log.exists() and "started" in log.read_text())
        assert log.read_text().count("started") == 1
        await client.delete(POD, "long", "default")
        await wait_for(lambda: _gone(client, "long"), timeout=15)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        await second.stop()


async def test_an_adopted_container_that_ended_meanwhile_is_reported_and_restarted(client: FakeClient, data_dir: Path) -> None:
    first = agent_for(client, data_dir, keep_pods=True)
    await first.start()
    flag = data_dir / "go"
    await client.create(pod("ender", f"while [ ! -f {flag} ]; do sleep 0.1; done; exit 4", restart_policy="OnFailure"))
    await wait_for(lambda: phase_is(client, "ender", "Running"))
    await first.stop()
    flag.write_text("")
    await asyncio.sleep(0.5)
    second = agent_for(client, data_dir)
    await second.start()
    try:
        async def restarted() -> bool:
            p = await get_pod(client, "ender")
            cs = (p or {}).get("status", {}).get("containerStatuses") or [{}]
            return cs[0].get("restartCount", 0) >= 1 and cs[0]["lastState"]["terminated"]["exitCode"] == 4

        await wait_for(restarted)
    finally:
        await second.stop()


async def test_stopping_the_agent_stops_its_pods_and_removes_the_network(client: FakeClient, data_dir: Path) -> None:
    a = agent_for(client, data_dir)
    await a.start()
    await client.create(pod("victim", "exec sleep 300"))
    await wait_for(lambda: phase_is(client, "victim", "Running"))
    uid = (await get_pod(client, "victim"))["metadata"]["uid"]
    await wait_for(lambda: a.workers[uid].records["c0"].current is not None)
    pid = a.workers[uid].records["c0"].current.pid
    await a.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    assert veth_name(uid, str(a.data_dir)) not in links
    assert a.network is not None and getattr(a.network, "bridge", "") not in links.split()


async def test_host_network_mode_gives_loopback_ips_and_rejects_port_clashes(client: FakeClient, data_dir: Path) -> None:
    a = agent_for(client, data_dir, network="host")
    await a.start()
    try:
        await client.create(pod("h1", "echo $HOSTNAME; exec sleep 30", ports=[{"containerPort": 7777}]))
        await wait_for(lambda: phase_is(client, "h1", "Running"))
        p = await get_pod(client, "h1")
        assert p["status"]["podIP"].startswith("127.0.0.") and p["status"]["podIP"] != "127.0.0.1"
        await client.create(pod("h2", "exec sleep 30", ports=[{"containerPort": 7777}]))

        async def clash_reported() -> bool:
            q = await get_pod(client, "h2")
            status = (q or {}).get("status") or {}
            return (status.get("phase") == "Failed" and status.get("reason") == "PortConflict"
                    and "containerPort 7777 is already used by Pod default/h1" in status.get("message", ""))

        await wait_for(clash_reported)
    finally:
        await a.stop()


async def _gone(client: FakeClient, name: str) -> bool:
    return await get_pod(client, name) is None
