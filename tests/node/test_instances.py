"""Several pumice instances on one machine: each gets its own bridge and Pod range, an explicit
overlapping range is refused with one line (issue 14 item 10)."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pumice.node.agent import AgentError, NodeAgent
from pumice.node.network import NetworkError, bridge_name, choose_instance_network, host_networks
from pumice.testing.fake_client import FakeClient
from pumice.testing.node import get_pod, phase_is, pod, wait_for

HOST = host_networks("1: lo    inet 127.0.0.1/8 scope host lo\\ valid_lft forever\n"
                     "4: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\ valid_lft forever\n")


def test_two_data_dirs_get_different_bridges_and_disjoint_ranges() -> None:
    b1, c1 = choose_instance_network("/var/lib/a", HOST)
    b2, c2 = choose_instance_network("/var/lib/b", [*HOST, (b1, ipaddress.IPv4Interface(
        str(ipaddress.ip_network(c1).network_address + 1) + "/22"))])
    assert b1 != b2 and b1.startswith("pumice-") and len(b1) <= 15
    assert not ipaddress.ip_network(c1).overlaps(ipaddress.ip_network(c2))
    assert ipaddress.ip_network(c1).subnet_of(ipaddress.ip_network("10.244.0.0/16"))


def test_the_range_is_derived_from_the_scope_and_stable() -> None:
    assert choose_instance_network("/d", HOST) == choose_instance_network("/d", HOST)
    assert bridge_name("/d") == choose_instance_network("/d", HOST)[0]


def test_a_taken_slot_moves_the_instance_to_the_next_free_one() -> None:
    _, cidr = choose_instance_network("/d", HOST)
    other = ("pumice-other", ipaddress.IPv4Interface(str(ipaddress.ip_network(cidr).network_address + 1) + "/22"))
    _, moved = choose_instance_network("/d", [*HOST, other])
    assert moved != cidr and not ipaddress.ip_network(moved).overlaps(ipaddress.ip_network(cidr))


def test_an_existing_bridge_keeps_its_range_across_restarts() -> None:
    own = (bridge_name("/d"), ipaddress.IPv4Interface("10.244.200.1/22"))
    assert choose_instance_network("/d", [*HOST, own]) == (own[0], "10.244.200.0/22")


def test_an_explicit_overlapping_range_is_refused_with_one_line() -> None:
    legacy = ("pumice0", ipaddress.IPv4Interface("10.244.0.1/16"))
    with pytest.raises(NetworkError) as e:
        choose_instance_network("/d", [*HOST, legacy], cidr="10.244.8.0/22")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("Pod CIDR 10.244.8.0/22 overlaps 10.244.0.1/16 on pumice0")
    assert "--pod-cidr" in msg


def test_sharing_a_bridge_by_name_is_allowed_but_not_with_another_range() -> None:
    shared = ("pumice-shared", ipaddress.IPv4Interface("10.250.0.1/24"))
    assert choose_instance_network("/x", [*HOST, shared], bridge="pumice-shared") == ("pumice-shared", "10.250.0.0/24")
    with pytest.raises(NetworkError, match=r"already has 10\.250\.0\.1/24"):
        choose_instance_network("/x", [*HOST, shared], bridge="pumice-shared", cidr="10.251.0.0/24")


def test_every_slot_taken_is_one_line() -> None:
    with pytest.raises(NetworkError, match="no free /22 Pod range"):
        choose_instance_network("/d", [*HOST, ("br-x", ipaddress.IPv4Interface("10.244.0.1/16"))])


# -- real network namespaces ----------------------------------------------------------------------

def _agent(client: FakeClient, d: Path, **kw: object) -> NodeAgent:
    return NodeAgent(client, runtime="process", data_dir=d, node_names=["node-0"], node_cpu="4", node_memory="8Gi",
                     lease_renew_interval=None, stop_grace=2.0, **kw)  # type: ignore[arg-type]


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root")
async def test_two_agents_at_once_run_pods_on_their_own_bridges() -> None:
    dirs = [Path(tempfile.mkdtemp(prefix="pumice-inst-", dir="/var/tmp")) for _ in range(2)]
    clients = [FakeClient(graceful_pod_deletion=True), FakeClient(graceful_pod_deletion=True)]
    agents = [_agent(c, d) for c, d in zip(clients, dirs, strict=True)]
    try:
        for a in agents:
            await a.start()
        nets = [a.network for a in agents]
        bridges = [getattr(n, "bridge", "") for n in nets]
        assert bridges[0] != bridges[1]
        ranges = [ipaddress.ip_network(a.pod_cidr or "") for a in agents]
        assert not ranges[0].overlaps(ranges[1])
        for c in clients:
            await c.create(pod("same-name", "exec sleep 30", node="node-0"))
        for c in clients:
            await wait_for(lambda c=c: phase_is(c, "same-name", "Running"))
        ips = [ipaddress.ip_address((await get_pod(c, "same-name"))["status"]["podIP"]) for c in clients]
        assert ips[0] in ranges[0] and ips[1] in ranges[1]
        links = subprocess.run(["ip", "-o", "link", "show", "master", bridges[1]], capture_output=True,
                               text=True).stdout
        assert links.count("@") == 1  # one veth, the other agent's Pod is on its own bridge

        third = _agent(FakeClient(graceful_pod_deletion=True), dirs[0] / "third", pod_cidr=str(ranges[0]))
        with pytest.raises(AgentError, match="^Pod CIDR " + re.escape(str(ranges[0])) + " overlaps"):
            await third.start()
        await third.stop()
    finally:
        for a in agents:
            await a.stop()
        for c in clients:
            await c.close()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    out = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout.split()
    assert bridges[0] not in out and bridges[1] not in out
