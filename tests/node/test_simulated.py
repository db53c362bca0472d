"""Simulated runtime: lifecycles on virtual time, deterministic, thousands of Nodes."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from pumice._util.clock import LoopClock
from pumice.api.scheme import POD
from pumice.node.agent import NodeAgent
from pumice.testing.fake_client import FakeClient
from pumice.testing.node import get_pod, phase_is, pod, simulated_scale, wait_for


def sim_pod(name: str, duration: float | None, exit_code: int = 0, **kw: Any) -> dict[str, Any]:
    ann = {"pumice.io/sim-exit-code": str(exit_code)}
    if duration is not None:
        ann["pumice.io/sim-duration-seconds"] = str(duration)
    p = pod(name, node="sim-0", annotations=ann, **kw)
    return p


async def _agent(client: FakeClient, clock: LoopClock, **kw: Any) -> NodeAgent:
    a = NodeAgent(client, runtime="simulated", data_dir="/nonexistent", nodes=2, node_name_prefix="sim",
                  node_cpu="4", node_memory="8Gi", clock=clock, sim_start_latency=2.0, **kw)
    await a.start()
    return a


@pytest.mark.looptime
async def test_a_simulated_pod_runs_for_its_annotated_duration_and_exits_with_its_code() -> None:
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    t0 = clock.monotonic()
    await client.create(sim_pod("ok", 60))
    await client.create(sim_pod("bad", 30, exit_code=3))
    await wait_for(lambda: phase_is(client, "ok", "Running"), timeout=10, interval=0.5)
    assert 2.0 <= clock.monotonic() - t0 <= 2.5
    await wait_for(lambda: phase_is(client, "bad", "Failed"), timeout=100, interval=0.5)
    bad = await get_pod(client, "bad")
    assert bad["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    await wait_for(lambda: phase_is(client, "ok", "Succeeded"), timeout=100, interval=0.5)
    assert 62.0 <= clock.monotonic() - t0 <= 63.0
    await agent.stop()


@pytest.mark.looptime
async def test_a_simulated_pod_without_duration_runs_until_deleted() -> None:
    from pumice.api.scheme import POD

    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    t0 = clock.monotonic()
    await client.create(sim_pod("forever", None, readinessProbe={"exec": {"command": ["true"]},
                                                                  "initialDelaySeconds": 5, "periodSeconds": 1}))
    await wait_for(lambda: _ready(client, "forever"), timeout=20, interval=0.25)
    assert clock.monotonic() - t0 >= 7.0  # 2 s start latency + 5 s initial delay
    await clock.sleep(600)
    assert await phase_is(client, "forever", "Running")
    await client.delete(POD, "forever", "default")
    await wait_for(lambda: _gone(client, "forever"), timeout=60, interval=0.5)
    await agent.stop()


@pytest.mark.looptime
async def test_simulated_nodes_register_with_capacity_and_leases() -> None:
    from pumice.api.scheme import LEASE, NODE

    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock, node_gpus=2, labels={"pool": "a"})
    node = await client.get(NODE, "sim-1")
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "2"
    assert node["status"]["allocatable"]["cpu"] == "4"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "sim-1"
    assert node["metadata"]["labels"]["pool"] == "a"
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    lease = await client.get(LEASE, "sim-1", "kube-node-lease")
    first = lease["spec"]["renewTime"]
    await clock.sleep(25)
    lease = await client.get(LEASE, "sim-1", "kube-node-lease")
    assert lease["spec"]["renewTime"] > first
    await agent.stop()


@pytest.mark.looptime
async def test_a_new_node_is_created_with_its_status_and_an_existing_one_is_patched() -> None:
    """As the kubelet's registerWithAPIServer: the Node is created with its status (one write);
    a Node that exists already gets the agent's labels and a status patch."""
    from pumice.api.scheme import NODE

    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    await client.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "sim-0", "labels": {"old": "x"}}})
    before = len(client.writes())
    agent = await _agent(client, clock, labels={"pool": "a"}, lease_renew_interval=None)
    node_writes = [(w[0], w[1], w[3]) for w in client.writes()[before:] if w[1] == "nodes"]
    assert node_writes == [("create", "nodes", "sim-0"), ("patch", "nodes", "sim-0"), ("patch", "nodes", "sim-0"),
                           ("create", "nodes", "sim-1")]
    for name in ("sim-0", "sim-1"):
        node = await client.get(NODE, name)
        assert node["status"]["allocatable"]["cpu"] == "4"
        assert node["metadata"]["labels"]["pool"] == "a"
        assert next(c for c in node["status"]["conditions"] if c["type"] == "Ready")["status"] == "True"
    await agent.stop()


@pytest.mark.looptime
async def test_simulated_admission_rejects_what_does_not_fit() -> None:
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    await client.create(sim_pod("a", 100, requests="3"))
    await client.create(sim_pod("b", 100, requests="3"))
    await wait_for(lambda: phase_is(client, "b", "Failed"), timeout=10, interval=0.5)
    assert (await get_pod(client, "b"))["status"]["reason"] == "OutOfcpu"
    await wait_for(lambda: phase_is(client, "a", "Running"), timeout=10, interval=0.5)
    await agent.stop()


@pytest.mark.looptime
async def test_a_rejection_whose_status_write_fails_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """The agent's rejection status (OutOfcpu) that the API server refuses with a 5xx is said in a
    WARNING naming the Pod (was: every ApiError suppressed without a word; a 404, the Pod gone
    meanwhile, is still quiet)."""
    import logging

    from pumice.client.base import ApiError

    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    real_patch = client.patch

    async def patch(kind: Any, name: str, body: Any, namespace: str | None = None, **kw: Any) -> Any:
        if name == "b" and kw.get("subresource") == "status" and (body.get("status") or {}).get("phase") == "Failed":
            raise ApiError(500, "InternalError", "etcdserver: request timed out")
        return await real_patch(kind, name, body, namespace, **kw)

    client.patch = patch  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="pumice.node.agent"):
        await client.create(sim_pod("a", 100, requests="3"))
        await client.create(sim_pod("b", 100, requests="3"))
        await wait_for(lambda: phase_is(client, "a", "Running"), timeout=10, interval=0.5)
        await clock.sleep(1)
    assert "Pod default/b rejected (OutOfcpu) but its status was not written: etcdserver: request timed out" \
        in caplog.text
    await agent.stop()


@pytest.mark.looptime
async def test_the_same_seed_gives_the_same_run() -> None:
    first = await simulated_scale(20, 200, seed=7)
    second = await simulated_scale(20, 200, seed=7)
    assert first == second
    assert first["succeeded"] == 180 and first["failed"] == 20


@pytest.mark.looptime(noop_cycles=1)
@pytest.mark.timeout(300)
async def test_two_hundred_nodes_run_two_thousand_short_pods() -> None:
    # The full acceptance size (5,000 Nodes, 50,000 Pods) runs in bench/node_agent.py (minutes of
    # CPU); a twenty-fifth of it keeps this suite fast.
    result = await simulated_scale(200, 2000)
    assert result["succeeded"] + result["failed"] == 2000
    assert result["failed"] == 200


async def _ready(client: FakeClient, name: str) -> bool:
    p = await get_pod(client, name)
    return any(c["type"] == "Ready" and c["status"] == "True" for c in ((p or {}).get("status") or {}).get("conditions") or [])


async def _gone(client: FakeClient, name: str) -> bool:
    return await get_pod(client, name) is None


@pytest.mark.looptime
async def test_active_deadline_fails_a_pod_that_runs_too_long() -> None:
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    p = sim_pod("slow", 600)
    p["spec"]["activeDeadlineSeconds"] = 30
    t0 = clock.monotonic()
    await client.create(p)
    await wait_for(lambda: phase_is(client, "slow", "Failed"), timeout=100, interval=0.5)
    got = await get_pod(client, "slow")
    assert got["status"]["reason"] == "DeadlineExceeded"
    assert 30 <= clock.monotonic() - t0 <= 32
    await agent.stop()


@pytest.mark.looptime
@pytest.mark.parametrize(("latency", "written"), [(0.0, ["Running", "Succeeded"]),
                                                  (2.0, ["Pending", "Running", "Succeeded"])])
async def test_a_pod_that_starts_at_once_gets_no_zero_second_pending_status(latency: float, written: list[str]) -> None:
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    phases: list[str] = []
    patch = client.patch

    async def recording_patch(kind: Any, name: str, body: Any, *a: Any, **kw: Any) -> Any:
        if name == "p" and kw.get("subresource") == "status":
            phases.append(body["status"].get("phase"))
        return await patch(kind, name, body, *a, **kw)

    client.patch = recording_patch  # type: ignore[method-assign]
    a = NodeAgent(client, runtime="simulated", data_dir="/nonexistent", node_names=["sim-0"], node_cpu="4",
                  node_memory="8Gi", clock=clock, sim_start_latency=latency)
    await a.start()
    t0 = clock.monotonic()
    await client.create(sim_pod("p", 10))
    await wait_for(lambda: phase_is(client, "p", "Succeeded"), timeout=30, interval=0.5)
    assert latency + 10 <= clock.monotonic() - t0 <= latency + 10.5
    assert phases == written
    await a.stop()


@pytest.mark.looptime
async def test_a_container_that_ran_its_duration_leaves_no_reference_cycle() -> None:
    """A fired timer keeps its arguments; the runtime drops it once fired, so a container that
    ended is freed by reference counting (a simulation runs tens of thousands of them)."""
    from pathlib import Path

    from pumice.node.runtime.base import StartRequest
    from pumice.node.runtime.simulated import SimulatedRuntime

    clock = LoopClock()
    rt = SimulatedRuntime(clock, start_latency=0)
    p = sim_pod("short", 5)
    p["metadata"]["uid"] = "u-short"
    sandbox = await rt.create_sandbox(p, Path("/nonexistent"))
    c = await rt.start(sandbox, p, StartRequest(p["spec"]["containers"][0], ["true"], {}, [], 0))
    assert await rt.wait(sandbox, p, c) == 0 and rt.timers == 0
    fut, holder = c.state
    assert holder[0] is None  # the fired handle is not kept
    await rt.remove_sandbox(sandbox)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        gone = weakref.ref(fut)
        del c, fut, holder
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()


@pytest.mark.looptime
@pytest.mark.parametrize("pre_stop", [None, {"exec": {"command": ["ray", "stop"]}}, {"sleep": {"seconds": 1}}])
async def test_a_stop_and_start_of_the_simulated_agent_leaves_running_pods_as_they_were(pre_stop: Any) -> None:
    """trial 12 F-2: at shutdown the agent stopped every Pod's containers while its API client
    was open, so a two-container ``restartPolicy: Never`` Pod (a KubeRay head with its autoscaler
    or job submitter) could get one container's exit 143 written, and KubeRay then deleted the
    head. On the simulated runtime nothing runs, so a stop writes nothing: the Pod resumes as it
    was at the next start, as every other Pod did."""
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock, lease_renew_interval=None)
    p = sim_pod("head", None)
    p["spec"]["containers"].append({**p["spec"]["containers"][0], "name": "autoscaler"})
    if pre_stop is not None:
        p["spec"]["containers"][0]["lifecycle"] = {"preStop": pre_stop}
    await client.create(p)

    async def both_running() -> bool:
        cs = ((await get_pod(client, "head")) or {}).get("status", {}).get("containerStatuses") or []
        return len(cs) == 2 and all("running" in c["state"] for c in cs)

    await wait_for(both_running, timeout=20, interval=0.25)
    before = await get_pod(client, "head")
    n = len(client.writes())
    await agent.stop()
    await clock.sleep(60)
    assert [w[:2] for w in client.writes()[n:]] == []
    assert await get_pod(client, "head") == before
    agent = await _agent(client, clock, lease_renew_interval=None)
    await clock.sleep(60)
    after = await get_pod(client, "head")
    assert after["status"]["phase"] == "Running"
    assert [(c["name"], c["restartCount"], list(c["state"]), c.get("lastState", {})) for c in
            sorted(after["status"]["containerStatuses"], key=lambda c: c["name"])] == [
        ("autoscaler", 0, ["running"], {}), ("c0", 0, ["running"], {})]
    await agent.stop()


@pytest.mark.looptime
@pytest.mark.parametrize(("annotation", "value", "message"), [
    ("pumice.io/sim-exit-code", "abc",
     "pumice.io/sim-exit-code: expected a whole number or a comma-separated list of them, got 'abc'"),
    ("pumice.io/sim-duration-seconds", "abc", "pumice.io/sim-duration-seconds: expected a number of seconds, got 'abc'"),
    ("pumice.io/sim-gang-size", "x", "pumice.io/sim-gang-size: expected a whole number, got 'x'"),
])
async def test_a_bad_simulator_annotation_is_a_waiting_container_an_event_and_a_log_line(
        annotation: str, value: str, message: str, caplog: pytest.LogCaptureFixture) -> None:
    # trial 12 F-8: the Pod went Failed with no reason, no Event and no log line; a kubelet keeps a
    # restartPolicy Always Pod whose container cannot start Pending, the container waiting
    from pumice.api.scheme import EVENT

    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    ann = {annotation: value, "pumice.io/sim-gang": "g"}
    await client.create(pod("pbad", node="sim-0", annotations=ann, restart_policy="Always"))

    async def waiting() -> Any:
        p = await get_pod(client, "pbad")
        cs = ((p or {}).get("status") or {}).get("containerStatuses") or []
        return cs and (cs[0].get("state") or {}).get("waiting", {}).get("reason") == "RunContainerError" and p

    p = await wait_for(waiting, timeout=30, interval=0.5)
    assert p["status"]["containerStatuses"][0]["state"]["waiting"]["message"] == message
    assert p["status"]["phase"] == "Pending"
    await clock.sleep(60)
    assert (await get_pod(client, "pbad") or {})["status"]["phase"] == "Pending"
    events = (await client.list(EVENT, "default")).items
    assert any(e.get("reason") == "Failed" and e.get("type") == "Warning" and e.get("message") == f"Error: {message}"
               and e["involvedObject"]["name"] == "pbad" for e in events), events
    assert any("pbad" in r.getMessage() and message in r.getMessage() and r.levelname == "WARNING"
               for r in caplog.records)
    await agent.stop()


@pytest.mark.looptime
async def test_simulated_nodes_report_ephemeral_storage_as_a_kubelet_does(tmp_path: Any) -> None:
    """Trial 15 F-5: a Pod requesting ephemeral-storage stayed Pending for ever on `pumice up
    --runtime simulated`, whose Nodes had none; a kubelet always reports its node filesystem."""
    import os

    from pumice.api.quantity import parse_quantity
    from pumice.api.scheme import NODE

    clock = LoopClock()
    client = FakeClient(clock=clock)
    agent = NodeAgent(client, runtime="simulated", data_dir=str(tmp_path), nodes=2, node_name_prefix="sim",
                      node_cpu="4", node_memory="8Gi", clock=clock)
    await agent.start()
    try:
        st = os.statvfs(tmp_path)
        for name in ("sim-0", "sim-1"):
            node = await client.get(NODE, name)
            for field in ("capacity", "allocatable"):
                assert parse_quantity(node["status"][field]["ephemeral-storage"]) == st.f_blocks * st.f_frsize
    finally:
        await agent.stop()


def _seconds(ts: str) -> float:
    from pumice._util.clock import parse_rfc3339

    return parse_rfc3339(ts)


@pytest.mark.looptime
async def test_a_restarted_simulated_agent_resumes_a_running_pod_and_ends_it_on_its_first_schedule() -> None:
    """trial 15 F-7: after a restart every Pod got a new startTime, startedAt and Ready time and ran
    its whole ``sim-duration-seconds`` again from the restart. A Pod that was running resumes as it
    was: nothing in its status changes, and it ends at its first start + its duration."""
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock, lease_renew_interval=None)
    await client.create(sim_pod("timed", 45, readinessProbe={"exec": {"command": ["true"]}, "periodSeconds": 1}))

    async def ready() -> Any:
        p = await get_pod(client, "timed")
        cs = ((p or {}).get("status") or {}).get("containerStatuses") or [{}]
        return cs[0].get("ready") and p

    await wait_for(ready, timeout=20, interval=0.25)
    await clock.sleep(10)
    before = await get_pod(client, "timed")
    await agent.stop()
    await clock.sleep(20)
    agent = await _agent(client, clock, lease_renew_interval=None)
    await clock.sleep(5)  # past the start latency and a readiness period of the new agent
    assert await get_pod(client, "timed") == before
    await wait_for(lambda: phase_is(client, "timed", "Succeeded"), timeout=60, interval=0.25)
    status = (await get_pod(client, "timed"))["status"]
    ended = status["containerStatuses"][0]["state"]["terminated"]
    assert ended["startedAt"] == before["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    assert 44 <= _seconds(ended["finishedAt"]) - _seconds(ended["startedAt"]) <= 45
    assert status["startTime"] == before["status"]["startTime"]
    assert status["containerStatuses"][0]["restartCount"] == 0
    await agent.stop()


@pytest.mark.looptime
async def test_a_restarted_simulated_agent_resumes_a_gang_from_its_rendezvous() -> None:
    """A rendezvous gang that had started before the restart does not wait again: each member
    ends at the gang's start + its duration."""
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock, lease_renew_interval=None)
    gang = {"pumice.io/sim-gang": "g", "pumice.io/sim-gang-size": "2"}
    first = sim_pod("w0", 30)
    first["metadata"]["annotations"].update(gang)
    await client.create(first)
    await clock.sleep(8)  # w0 waits at the rendezvous for 8 s
    second = sim_pod("w1", 30)
    second["metadata"]["annotations"].update(gang)
    await client.create(second)
    await wait_for(lambda: phase_is(client, "w1", "Running"), timeout=20, interval=0.25)
    met = _seconds((await get_pod(client, "w1"))["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
    await clock.sleep(10)
    await agent.stop()
    await clock.sleep(5)
    agent = await _agent(client, clock, lease_renew_interval=None)
    for name in ("w0", "w1"):
        await wait_for(lambda n=name: phase_is(client, n, "Succeeded"), timeout=60, interval=0.25)
        ended = (await get_pod(client, name))["status"]["containerStatuses"][0]["state"]["terminated"]
        assert 29 <= _seconds(ended["finishedAt"]) - met <= 30, (name, ended)
    await agent.stop()


@pytest.mark.looptime
async def test_a_restarted_simulated_agent_keeps_ended_init_and_main_containers_and_runs_the_sidecar_on() -> None:
    """An init container that ended is not run again, a container that ended stays ended, and a
    sidecar is supervised again: when the last main container ends, the Pod completes."""
    from pumice.node.runtime.simulated import SimulatedRuntime

    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock, lease_renew_interval=None)
    p = sim_pod("mixed", None)
    p["spec"]["containers"].append({**p["spec"]["containers"][0], "name": "c1"})
    base = {"image": "busybox", "command": ["true"]}
    p["spec"]["initContainers"] = [{**base, "name": "init"}, {**base, "name": "side", "restartPolicy": "Always"}]
    await client.create(p)
    uid = (await get_pod(client, "mixed"))["metadata"]["uid"]

    async def states() -> dict[str, str]:
        st = (await get_pod(client, "mixed")).get("status") or {}
        return {c["name"]: next(iter(c["state"])) for c in
                [*st.get("initContainerStatuses", []), *st.get("containerStatuses", [])]}

    await wait_for(lambda: _equal(states(), {"init": "terminated", "side": "running", "c0": "running",
                                             "c1": "running"}), timeout=20, interval=0.25)
    assert isinstance(agent.runtime, SimulatedRuntime) and agent.runtime.finish_pod(uid, 0, "c1")
    await wait_for(lambda: _equal(states(), {"init": "terminated", "side": "running", "c0": "running",
                                             "c1": "terminated"}), timeout=20, interval=0.25)
    before = await get_pod(client, "mixed")
    await agent.stop()
    await clock.sleep(30)
    agent = await _agent(client, clock, lease_renew_interval=None)
    await clock.sleep(10)
    assert await get_pod(client, "mixed") == before
    assert isinstance(agent.runtime, SimulatedRuntime) and agent.runtime.finish_pod(uid, 0, "c0")
    await wait_for(lambda: phase_is(client, "mixed", "Succeeded"), timeout=60, interval=0.25)
    after = (await get_pod(client, "mixed"))["status"]
    assert [c["restartCount"] for c in after["initContainerStatuses"] + after["containerStatuses"]] == [0, 0, 0, 0]
    assert after["initContainerStatuses"][0] == before["status"]["initContainerStatuses"][0]
    assert after["containerStatuses"][1] == before["status"]["containerStatuses"][1]
    await agent.stop()


async def _equal(got: Any, want: Any) -> bool:
    return bool(await got == want)


@pytest.mark.looptime
async def test_a_gang_member_resumed_running_ends_though_another_member_ended_before_the_restart() -> None:
    """A resumed member re-forms its gang's rendezvous; a member that had ended before the
    restart (its Pod Succeeded, so it gets no worker) still counts there, or the rest would wait
    for it for ever (review 14 F4)."""
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock, lease_renew_interval=None)
    gang = {"pumice.io/sim-gang": "g", "pumice.io/sim-gang-size": "2"}
    for name, duration in (("w0", 10), ("w1", 60)):
        member = sim_pod(name, duration)
        member["metadata"]["annotations"].update(gang)
        await client.create(member)
    await wait_for(lambda: phase_is(client, "w0", "Succeeded"), timeout=30, interval=0.25)
    running = (await get_pod(client, "w1"))["status"]["containerStatuses"][0]["state"]["running"]
    await agent.stop()
    await clock.sleep(5)
    agent = await _agent(client, clock, lease_renew_interval=None)
    await wait_for(lambda: phase_is(client, "w1", "Succeeded"), timeout=120, interval=0.25)
    ended = (await get_pod(client, "w1"))["status"]["containerStatuses"][0]["state"]["terminated"]
    assert ended["startedAt"] == running["startedAt"]
    assert 59 <= _seconds(ended["finishedAt"]) - _seconds(ended["startedAt"]) <= 60
    await agent.stop()


@pytest.mark.looptime
async def test_a_task_of_the_agent_that_fails_ends_its_run_with_that_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pumice up`` and ``pumice node-agent`` end when a component fails; the agent's own
    provisioner dying (here of MemoryError) left the agent running without it, unnoticed."""
    import asyncio

    from pumice.node.provisioner import LocalPathProvisioner

    async def dies(self: LocalPathProvisioner) -> None:
        await asyncio.sleep(5)
        raise MemoryError("injected")

    monkeypatch.setattr(LocalPathProvisioner, "run", dies)
    clock = LoopClock()
    agent = NodeAgent(FakeClient(clock=clock), runtime="simulated", data_dir="/nonexistent", nodes=1, clock=clock)
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(agent.run(asyncio.Event()), 60)
    assert not agent._started, "the agent stopped before the error was raised"


@pytest.mark.looptime
async def test_simulated_pods_report_their_annotated_usage_for_metrics() -> None:
    """The usage annotations feed metrics.k8s.io (kubectl top, the HPA) under pumice up: each
    running container at the annotated cpu and memory, the window the time since it started
    (at most the usage period), the Node at the sum; Pods without them, or not running yet,
    report nothing."""
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    assert agent.simulated_usage() == {"timestamp": clock.now(), "window": 15.0,
                                       "nodes": {"sim-0": {"cpu": 0.0, "memory": 0}, "sim-1": {"cpu": 0.0, "memory": 0}},
                                       "pods": []}
    busy = pod("busy", node="sim-0", annotations={"pumice.io/sim-cpu-usage": "250m",
                                                   "pumice.io/sim-memory-usage": "64Mi"})
    await client.create(busy)
    await client.create(pod("idle", node="sim-0"))
    await wait_for(lambda: phase_is(client, "busy", "Running"), timeout=10, interval=0.5)
    await wait_for(lambda: phase_is(client, "idle", "Running"), timeout=10, interval=0.5)
    doc = agent.simulated_usage()
    assert doc is not None
    (entry,) = doc["pods"]
    assert (entry["namespace"], entry["name"], entry["node"]) == ("default", "busy", "sim-0")
    assert entry["containers"] == [{"name": busy["spec"]["containers"][0]["name"], "cpu": 0.25,
                                    "memory": 64 * 2**20}]
    assert 0.0 <= entry["window"] <= 15.0
    assert doc["nodes"]["sim-0"] == {"cpu": 0.25, "memory": 64 * 2**20}
    await agent.stop()


@pytest.mark.looptime
async def test_a_memory_error_in_a_pod_worker_fails_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Pod worker that ran out of memory was logged ("pod worker ... failed") and the agent ran
    on; a MemoryError is fatal (FATAL_TYPES): the agent's ``node-agent pods`` task ends with it,
    so wait_stopped raises it (pumice up and simulate end)."""

    from pumice.node.worker import PodWorker

    async def out_of_memory(self: PodWorker) -> None:
        raise MemoryError("injected")

    monkeypatch.setattr(PodWorker, "_run_inner", out_of_memory)
    await _a_pod_stops_the_agent_with_memory_error()


@pytest.mark.looptime
async def test_a_memory_error_in_the_pod_informer_fails_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:

    def out_of_memory(self: NodeAgent, type_: str, obj: Any) -> None:
        raise MemoryError("injected")

    monkeypatch.setattr(NodeAgent, "_on_pod", out_of_memory)
    await _a_pod_stops_the_agent_with_memory_error()


async def _a_pod_stops_the_agent_with_memory_error() -> None:
    """Start an agent, create one Pod, and expect wait_stopped to raise the injected MemoryError."""
    import asyncio

    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    await client.create(sim_pod("p", 60))
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(agent.wait_stopped(asyncio.Event()), 30)
    await agent.stop()


@pytest.mark.looptime
async def test_a_negative_or_bad_usage_annotation_is_warned_of_once_and_reports_no_usage() -> None:
    """``pumice.io/sim-cpu-usage: -500m`` became -0.5 cores in metrics.k8s.io (kubectl top, the
    HPA). Now a negative or unparsable value counts as absent and the Pod gets one Warning Event
    naming the annotation and the value."""
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    await client.create(pod("negative", node="sim-0", annotations={"pumice.io/sim-cpu-usage": "-500m",
                                                                    "pumice.io/sim-memory-usage": "64Mi"}))
    await client.create(pod("garbled", node="sim-0", annotations={"pumice.io/sim-memory-usage": "lots"}))
    for name in ("negative", "garbled"):
        await wait_for(lambda name=name: phase_is(client, name, "Running"), timeout=10, interval=0.5)
    doc = agent.simulated_usage()
    assert doc is not None
    assert [(p["name"], [(c["cpu"], c["memory"]) for c in p["containers"]]) for p in doc["pods"]] == [
        ("negative", [(0.0, 64 * 2**20)])]
    assert doc["nodes"]["sim-0"] == {"cpu": 0.0, "memory": 64 * 2**20}
    await wait_for(lambda: _warnings(client), timeout=10, interval=0.5)
    await clock.sleep(30)  # status updates of both Pods came in since: no second Event
    assert await _warnings(client) == [
        ("garbled", "annotation pumice.io/sim-memory-usage: 'lots' is not a quantity; its usage is not reported", 1),
        ("negative", "annotation pumice.io/sim-cpu-usage: '-500m' is negative; its usage is not reported", 1),
    ]
    await agent.stop()


@pytest.mark.looptime
async def test_a_usage_annotation_too_large_or_spaced_is_warned_of_and_the_others_still_report() -> None:
    """Trial 18 F-8: ``pumice.io/sim-cpu-usage: "1e400"`` parsed, then overflowed the agent's
    float, and every metrics.k8s.io read (kubectl top, the HPA) answered 500. A value beyond
    int64 nanocores / bytes is refused as a negative one is; ``" 100m"`` is no quantity
    (ParseQuantity takes no spaces); a healthy Pod on the same Node still reports."""
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    await client.create(pod("huge", node="sim-0", annotations={"pumice.io/sim-cpu-usage": "1e400",
                                                                "pumice.io/sim-memory-usage": "1e400"}))
    await client.create(pod("spaced", node="sim-0", annotations={"pumice.io/sim-cpu-usage": " 100m"}))
    await client.create(pod("digits", node="sim-0", annotations={"pumice.io/sim-cpu-usage": "1e" + "9" * 5000}))
    await client.create(pod("fine", node="sim-0", annotations={"pumice.io/sim-cpu-usage": "9223372036",
                                                                "pumice.io/sim-memory-usage": "8Ei"}))
    for name in ("huge", "spaced", "digits", "fine"):
        await wait_for(lambda name=name: phase_is(client, name, "Running"), timeout=10, interval=0.5)
    doc = agent.simulated_usage()
    assert doc is not None
    assert [(p["name"], [(c["cpu"], c["memory"]) for c in p["containers"]]) for p in doc["pods"]] == [
        ("fine", [(9223372036.0, 0)])]
    await wait_for(lambda: _warnings(client), timeout=10, interval=0.5)
    await clock.sleep(30)
    assert await _warnings(client) == [
        ("digits", f"annotation pumice.io/sim-cpu-usage: '1e{'9' * 5000}' is not a quantity; its usage is not "
                   "reported", 1),
        ("fine", "annotation pumice.io/sim-memory-usage: '8Ei' is too large; its usage is not reported", 1),
        ("huge", "annotation pumice.io/sim-cpu-usage: '1e400' is too large; its usage is not reported", 1),
        ("huge", "annotation pumice.io/sim-memory-usage: '1e400' is too large; its usage is not reported", 1),
        ("spaced", "annotation pumice.io/sim-cpu-usage: ' 100m' is not a quantity; its usage is not reported", 1),
    ]
    await agent.stop()


async def test_a_failing_usage_source_leaves_only_its_own_pods_out() -> None:
    """One in-process agent whose usage document raises no longer makes every metrics.k8s.io
    read a 500: its Nodes and Pods are left out (logged), as an agent that does not answer."""
    from pumice.api.selectors import parse_label_selector
    from pumice.testing.cluster import local_cluster

    def broken() -> None:
        raise OverflowError("integer division result too large for a float")

    async with local_cluster() as c:
        await c.client.create(pod("ok", node="sim-0"))
        metrics = c.server.metrics
        metrics.add_source(broken)
        metrics.add_source(lambda: {"timestamp": 0.0, "window": 15.0, "nodes": {}, "pods": [
            {"namespace": "default", "name": "ok", "node": "sim-0",
             "containers": [{"name": "c", "cpu": 0.1, "memory": 1024}]}]})
        got = await metrics.serve(["pods"], parse_label_selector(""))
    assert [(i["metadata"]["name"], i["containers"][0]["usage"]) for i in got["items"]] == [
        ("ok", {"cpu": "100000000n", "memory": "1Ki"})]


async def _warnings(client: FakeClient) -> list[tuple[str, str, int]]:
    from pumice.api.scheme import EVENT

    evs = (await client.list(EVENT, "default")).items
    return sorted((e["involvedObject"]["name"], e["message"], e.get("count", 1)) for e in evs
                  if e["reason"] == "InvalidSimulatedUsage")


def _rejected_pod_with_timeout(client: FakeClient, failures: int) -> tuple[dict[str, Any], list[str]]:
    """A Pod too large for its Node (the agent rejects it, :meth:`NodeAgent._reject`) and a client
    whose first ``failures`` status patches for it raise httpx2.ReadTimeout; the list gets the
    Pod's name per try."""
    import httpx2

    real_patch = client.patch
    tries: list[str] = []

    async def patch(kind: Any, name: str, body: Any, ns: str | None = None, **kw: Any) -> Any:
        if name == "big" and kw.get("subresource") == "status":
            tries.append(name)
            if len(tries) <= failures:
                raise httpx2.ReadTimeout("timed out (transient)")
        return await real_patch(kind, name, body, ns, **kw)

    client.patch = patch  # type: ignore[method-assign]
    big = pod("big", node="sim-0")
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100"}}
    return big, tries


async def _still_runs(agent: NodeAgent, client: FakeClient) -> None:
    """wait_stopped does not return or raise for 30 s of loop time, and a later Pod runs."""
    import asyncio

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(agent.wait_stopped(asyncio.Event()), 30)
    await client.create(sim_pod("later", 1))
    await wait_for(lambda: phase_is(client, "later", "Succeeded"), timeout=30, interval=0.5)


@pytest.mark.looptime
async def test_a_timeout_writing_a_rejected_pods_status_is_logged_retried_and_the_agent_runs_on(
        caplog: pytest.LogCaptureFixture) -> None:
    """Review 18 R-1: since cc7b9dc any exception ending an agent task failed the whole agent;
    _reject caught only ApiError, so an API timeout while rejecting a Pod ended ``pumice up``. A
    transport error is logged and the agent runs on; only FATAL_TYPES end the agent. Review 19
    R-2: the write was then never tried again (the Pod stayed Pending for ever); as the kubelet's
    status manager, the agent retries it every 10 s until the API has it."""
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    big, tries = _rejected_pod_with_timeout(client, failures=2)
    agent = await _agent(client, clock)
    await client.create(big)
    await wait_for(lambda: tries, timeout=30, interval=0.5)
    await _still_runs(agent, client)
    assert "Pod default/big rejected (OutOfcpu) but its status was not written: timed out" in caplog.text
    await wait_for(lambda: phase_is(client, "big", "Failed"), timeout=60, interval=0.5)
    assert len(tries) == 3
    assert (await get_pod(client, "big"))["status"]["reason"] == "OutOfcpu"
    await agent.stop()


@pytest.mark.looptime
async def test_a_rejected_pods_status_write_is_not_retried_once_the_pod_is_deleted(
        caplog: pytest.LogCaptureFixture) -> None:
    """Review 19 R-2: the retries stop when the Pod's DELETED event comes."""
    import asyncio

    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    big, tries = _rejected_pod_with_timeout(client, failures=100)
    agent = await _agent(client, clock)
    await client.create(big)
    await wait_for(lambda: tries, timeout=30, interval=0.5)
    await client.delete(POD, "big", "default", grace_period_seconds=0)
    await asyncio.sleep(15)
    n = len(tries)
    await asyncio.sleep(60)
    assert len(tries) == n <= 2
    await agent.stop()


@pytest.mark.looptime
async def test_an_ordinary_error_ending_an_agent_task_is_logged_and_the_agent_runs_on(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Review 18 R-1: a background task that ends with an error other than FATAL_TYPES (here the
    rejection task itself raising httpx2.ReadTimeout) is logged with its name; the agent runs on."""
    import httpx2

    async def _reject(self: NodeAgent, pod_: Any, reason: str, message: str) -> None:
        raise httpx2.ReadTimeout("timed out (transient)")

    monkeypatch.setattr(NodeAgent, "_reject", _reject)
    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    agent = await _agent(client, clock)
    big = pod("big", node="sim-0")
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100"}}
    await client.create(big)
    await wait_for(lambda: "node agent: node-agent _reject failed: ReadTimeout: timed out (transient)" in caplog.text,
                   timeout=30, interval=0.5)
    await _still_runs(agent, client)
    await agent.stop()


@pytest.mark.looptime
@pytest.mark.parametrize("finalizer", [False, True])
async def test_a_terminal_pod_deleted_with_grace_zero_gets_no_final_delete_from_the_agent(finalizer: bool) -> None:
    """A Succeeded Pod deleted (as the garbage collector deletes it) is marked with grace 0 by the
    API server, which removes it in the same request (MODIFIED, then DELETED) or, with a finalizer,
    when the finalizer goes: the agent sends no final delete for it (it would answer 404, or change
    nothing). A Pod being deleted with a grace period still gets one (needs_final_delete)."""
    from pumice.api.scheme import POD
    from pumice.apiserver.server import APIServer
    from pumice.client.base import is_not_found
    from pumice.client.kubeconfig import in_process
    from pumice.node.agent import needs_final_delete
    from pumice.testing.fake_client import CountingClient

    clock = LoopClock()
    server = APIServer(None, clock=clock, bookmark_interval=None)
    await server.start()
    api = in_process(server.app, scheme=server.scheme)
    counting = CountingClient(in_process(server.app, scheme=server.scheme))
    agent = await _agent(counting, clock)
    try:
        p = sim_pod("done", 5)
        if finalizer:
            p["metadata"]["finalizers"] = ["example.com/hold"]
        await api.create(p)
        await wait_for(lambda: phase_is(api, "done", "Succeeded"), timeout=30, interval=0.5)
        counting.reset()
        await api.delete(POD, "done", "default")
        if finalizer:
            held = await get_pod(api, "done")
            assert held["metadata"]["deletionGracePeriodSeconds"] == 0
            await clock.sleep(5)
            await api.patch(POD, "done", {"metadata": {"finalizers": None}}, "default")
        await clock.sleep(5)
        with pytest.raises(Exception) as gone:
            await api.get(POD, "done", "default")
        assert is_not_found(gone.value)
        assert [a for a in counting.actions if a[0] == "delete"] == []
    finally:
        await agent.stop()
        await api.close()
        await counting.close()
        server.store.close_watchers()
        server.close()
    assert needs_final_delete({"metadata": {"deletionTimestamp": "x", "deletionGracePeriodSeconds": 30}})
    assert not needs_final_delete({"metadata": {"deletionTimestamp": "x", "deletionGracePeriodSeconds": 0}})


@pytest.mark.looptime
async def test_a_timeout_sending_a_final_delete_is_retried_until_the_pod_is_gone(
        caplog: pytest.LogCaptureFixture) -> None:
    """Review 19 R-2: a terminal Pod being deleted whose final delete (grace 0) failed with a
    transport error was tried again only if another event of the Pod came; as the kubelet's
    status manager, the agent retries it every 10 s until the Pod is gone."""
    import httpx2

    from pumice.client.base import is_not_found

    clock = LoopClock()
    client = FakeClient(clock=clock, graceful_pod_deletion=True)
    real_delete, tries = client.delete, []

    async def delete(kind: Any, name: str, ns: str | None = None, **kw: Any) -> Any:
        if name == "done" and kw.get("grace_period_seconds") == 0:
            tries.append(clock.monotonic())
            if len(tries) == 1:
                raise httpx2.ReadTimeout("timed out (transient)")
        return await real_delete(kind, name, ns, **kw)

    client.delete = delete  # type: ignore[method-assign]
    agent = await _agent(client, clock)
    await client.create(sim_pod("done", 1000))
    await wait_for(lambda: phase_is(client, "done", "Running"), timeout=30, interval=0.5)
    await client.delete(POD, "done", "default", grace_period_seconds=30)  # stopped, then final delete
    await wait_for(lambda: len(tries) == 2, timeout=60, interval=0.5)
    assert 10 <= tries[1] - tries[0] <= 11
    with pytest.raises(Exception) as gone:
        await client.get(POD, "done", "default")
    assert is_not_found(gone.value)
    assert "final delete of default/done failed: timed out (transient); retrying" in caplog.text
    await agent.stop()
