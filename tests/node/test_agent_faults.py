"""Node agent faults a new user hit (issue 14): a deleted Node, long Pod names, Pod files left
behind, an image changed in place."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from pumice.api.scheme import EVENT, NODE, POD
from pumice.node.agent import NodeAgent, pod_dir_name
from pumice.testing.fake_client import FakeClient
from pumice.testing.node import get_pod, phase_is, pod, wait_for


def _agent(client: FakeClient, data_dir: Path, **kw: Any) -> NodeAgent:
    return NodeAgent(client, runtime="process", data_dir=data_dir, node_names=["node-0"], node_cpu="4",
                     node_memory="8Gi", backoff_base=0.2, backoff_max=1.0, lease_renew_interval=None,
                     stop_grace=2.0, **kw)


async def _node_exists(client: FakeClient) -> bool:
    try:
        n = await client.get(NODE, "node-0")
    except Exception:
        return False
    return any(c.get("type") == "Ready" for c in (n.get("status") or {}).get("conditions") or [])


async def test_a_deleted_node_is_registered_again_only_when_the_agent_starts_again(
        client: FakeClient, data_dir: Path) -> None:
    a = _agent(client, data_dir)
    await a.start()
    uid = (await client.get(NODE, "node-0"))["metadata"]["uid"]
    await client.delete(NODE, "node-0")
    await a.stop()
    assert not await _node_exists(client)  # registered once, as the kubelet (trial 12 F-7)
    b = _agent(client, data_dir)
    await b.start()
    try:
        again = await client.get(NODE, "node-0")
        assert again["metadata"]["uid"] != uid
        assert again["status"]["capacity"]["cpu"] == "4"
    finally:
        await b.stop()


def test_pod_dir_names_fit_the_file_system_for_any_valid_pod_name() -> None:
    name = "a" * 253
    d = pod_dir_name("n" * 63, name, str(uuid.uuid4()))
    assert len(d) <= 255
    assert pod_dir_name("default", "short", "u") == "default_short_u"
    assert pod_dir_name("ns", "b" * 240, "u") != pod_dir_name("ns", "b" * 239 + "c", "u")


async def test_a_pod_with_a_240_character_name_runs(client: FakeClient, agent: NodeAgent) -> None:
    name = "x" * 240
    await client.create(pod(name, "echo long-name-ok"))
    await wait_for(lambda: phase_is(client, name, "Succeeded"))
    p = await get_pod(client, name)
    assert p is not None
    assert "long-name-ok" in (agent.pod_dir(p) / "c0" / "0.log").read_text()


async def test_pod_files_are_removed_with_the_pod(client: FakeClient, agent: NodeAgent) -> None:
    script = "dd if=/dev/zero of=/tmp/runtime_env bs=1M count=2 2>/dev/null; echo ok; exec sleep 300"
    await client.create(pod("ray-like", script, grace=1))
    await wait_for(lambda: phase_is(client, "ray-like", "Running"))
    p = await get_pod(client, "ray-like")
    assert p is not None
    d = agent.pod_dir(p)
    await wait_for(lambda: any(d.rglob("runtime_env")))
    await client.delete(POD, "ray-like", "default")
    await wait_for(lambda: _gone(client, "ray-like"), timeout=15)
    await wait_for(lambda: not d.exists(), timeout=10)


async def test_files_of_pods_deleted_while_the_agent_was_down_are_removed_at_start(
        client: FakeClient, data_dir: Path) -> None:
    a = _agent(client, data_dir, keep_pods=True)
    await a.start()
    await client.create(pod("gone-while-down", "echo hi"))
    await wait_for(lambda: phase_is(client, "gone-while-down", "Succeeded"))
    p = await get_pod(client, "gone-while-down")
    assert p is not None
    d = a.pod_dir(p)
    assert d.exists()
    await a.stop()
    await client.delete(POD, "gone-while-down", "default", grace_period_seconds=0)
    b = _agent(client, data_dir)
    await b.start()
    try:
        await wait_for(lambda: not d.exists(), timeout=10)
    finally:
        await b.stop()


async def test_changing_the_image_restarts_the_container(client: FakeClient, agent: NodeAgent) -> None:
    await client.create(pod("img", "echo started; exec sleep 300", grace=1, restart_policy="Never"))
    await wait_for(lambda: phase_is(client, "img", "Running"))
    cur = await get_pod(client, "img")
    assert cur is not None
    cur["spec"]["containers"][0]["image"] = "busybox:2"
    await client.update(cur)

    async def restarted() -> bool:
        p = await get_pod(client, "img")
        cs = ((p or {}).get("status") or {}).get("containerStatuses") or [{}]
        return cs[0].get("restartCount") == 1 and "running" in cs[0].get("state", {})

    await wait_for(restarted, timeout=15)
    p = await get_pod(client, "img")
    assert p is not None
    cs = p["status"]["containerStatuses"][0]
    assert cs["image"] == "busybox:2"
    assert "terminated" in cs["lastState"]
    assert p["status"]["phase"] == "Running"


async def _gone(client: FakeClient, name: str) -> bool:
    return await get_pod(client, name) is None



async def test_a_data_dir_and_an_image_env_under_tmp_are_visible_inside_pods(client: FakeClient) -> None:
    """A checkout under /tmp: the interpreter prefix (here an image env bin dir) and the data dir
    are bound into each Pod's private /tmp."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="pumice-checkout-", dir="/tmp"))
    bin_dir = base / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    tool = bin_dir / "hello-from-tmp"
    tool.write_text("#!/bin/sh\necho hello-from-tmp\n")
    tool.chmod(0o755)
    a = _agent(client, base / "data", image_envs={"tmpimg": str(bin_dir)})
    await a.start()
    try:
        await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
                             "data": {"k": "from-configmap"}})
        p = pod("in-tmp", "hello-from-tmp; cat /cfg/k; echo; touch /tmp/private-file", image="tmpimg",
                volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}])
        p["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "cm"}}]
        await client.create(p)
        await wait_for(lambda: phase_is(client, "in-tmp", "Succeeded"), timeout=20)
        got = await get_pod(client, "in-tmp")
        assert got is not None
        text = (a.pod_dir(got) / "c0" / "0.log").read_text()
        assert "hello-from-tmp" in text and "from-configmap" in text
        assert not Path("/tmp/private-file").exists()
    finally:
        await a.stop()
        shutil.rmtree(base, ignore_errors=True)


async def test_a_stop_and_start_of_the_agent_restarts_containers_like_a_node_reboot(
        client: FakeClient, data_dir: Path) -> None:
    p = pod("survivor", "echo up; exec sleep 300", grace=1, restart_policy="Always")
    p["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "command": ["/bin/sh", "-c", "echo init"]}]
    a = _agent(client, data_dir)
    await a.start()
    await client.create(p)
    await wait_for(lambda: phase_is(client, "survivor", "Running"))
    before = await get_pod(client, "survivor")
    assert before is not None
    await a.stop()
    b = _agent(client, data_dir)
    await b.start()
    try:
        async def restarted() -> bool:
            cur = await get_pod(client, "survivor")
            cs = ((cur or {}).get("status") or {}).get("containerStatuses") or [{}]
            return cs[0].get("restartCount") == 1 and "running" in cs[0].get("state", {})

        await wait_for(restarted, timeout=15)
        after = await get_pod(client, "survivor")
        assert after is not None
        assert after["status"]["podIP"] == before["status"]["podIP"]
        assert after["status"]["startTime"] == before["status"]["startTime"]
        assert after["status"]["initContainerStatuses"][0]["restartCount"] == 1
        assert "terminated" in after["status"]["containerStatuses"][0]["lastState"]

        async def sandbox_changed() -> bool:  # the agent writes Events from a background task
            events = (await client.list(EVENT, "default")).items
            return any(e["reason"] == "SandboxChanged" and e["involvedObject"]["name"] == "survivor" for e in events)

        await wait_for(sandbox_changed, timeout=15)
    finally:
        await b.stop()
