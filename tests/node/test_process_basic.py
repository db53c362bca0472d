from __future__ import annotations

from pathlib import Path

from pumice.node.agent import NodeAgent
from pumice.testing.fake_client import FakeClient
from pumice.testing.node import get_pod, phase_is, pod, wait_for


async def test_a_pod_that_exits_zero_succeeds_and_its_output_is_logged(client: FakeClient, agent: NodeAgent) -> None:
    await client.create(pod("hello", "echo hello from $HOSTNAME; echo oops >&2", node="node-0"))
    await wait_for(lambda: phase_is(client, "hello", "Succeeded"))
    p = await get_pod(client, "hello")
    cs = p["status"]["containerStatuses"][0]
    assert cs["state"]["terminated"]["exitCode"] == 0
    assert cs["state"]["terminated"]["reason"] == "Completed"
    log = (agent.pod_dir(p) / "c0" / "0.log").read_text()
    assert " stdout F hello from hello" in log
    assert " stderr F oops" in log


async def test_a_pod_that_exits_nonzero_with_restart_never_fails(client: FakeClient, agent: NodeAgent) -> None:
    await client.create(pod("bad", "exit 3", node="node-0"))
    await wait_for(lambda: phase_is(client, "bad", "Failed"))
    p = await get_pod(client, "bad")
    term = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (3, "Error")


def test_data_dir_fixture_is_outside_tmp(data_dir: Path) -> None:
    assert not str(data_dir).startswith("/tmp/")
