"""Pod behaviours of the process runtime on small shell containers: restart policies and
CrashLoopBackOff, probes, downward API, ConfigMap/Secret env and volumes, init containers,
graceful deletion, admission."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from pumice.api.scheme import POD
from pumice.node.agent import NodeAgent
from pumice.testing.fake_client import FakeClient
from pumice.testing.node import get_pod, phase_is, pod, wait_for


def log_lines(agent: NodeAgent, p: dict[str, Any], container: str = "c0", n: int = 0) -> list[str]:
    path = agent.pod_dir(p) / container / f"{n}.log"
    raw = path.read_text() if path.exists() else ""
    return [line.split(" ", 3)[3] if line.count(" ") >= 3 else "" for line in raw.splitlines()]


def cstatus(p: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return p["status"]["containerStatuses"][i]


async def status_of(client: FakeClient, name: str) -> dict[str, Any]:
    p = await get_pod(client, name)
    assert p is not None
    return p


# -- restart policies ------------------------------------------------------------------------------


async def test_on_failure_restarts_a_failing_container_until_it_succeeds(client: FakeClient, agent: NodeAgent) -> None:
    counter = agent.data_dir / "onfailure-count"
    script = f"n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; echo run $n; [ $n -ge 3 ]"
    await client.create(pod("flaky", script, restart_policy="OnFailure"))
    await wait_for(lambda: phase_is(client, "flaky", "Succeeded"), timeout=30)
    p = await status_of(client, "flaky")
    cs = cstatus(p)
    assert cs["restartCount"] == 2
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert log_lines(agent, p, n=2) == ["run 3"]


async def test_always_puts_a_crashing_container_in_crash_loop_back_off(client: FakeClient, agent: NodeAgent) -> None:
    await client.create(pod("crasher", "echo boom; exit 2", restart_policy="Always"))

    async def backing_off() -> bool:
        p = await get_pod(client, "crasher")
        cs = (p or {}).get("status", {}).get("containerStatuses") or [{}]
        return (cs[0].get("state", {}).get("waiting", {}).get("reason") == "CrashLoopBackOff"
                and cs[0].get("restartCount", 0) >= 2)

    await wait_for(backing_off, timeout=30)
    p = await status_of(client, "crasher")
    assert p["status"]["phase"] == "Running"
    assert cstatus(p)["lastState"]["terminated"]["exitCode"] == 2
    assert "back-off" in cstatus(p)["state"]["waiting"]["message"]
    # While it waits to restart, its log is the last instance's, as the kubelet serves it.
    found = agent._log_source("default", "crasher", "c0", False)
    assert not isinstance(found, str), found
    assert "boom" in Path(found[0]).read_text()


async def test_a_restart_logs_what_of_the_previous_tmp_it_could_not_remove(
        client: FakeClient, agent: NodeAgent, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Each start gets a fresh private /tmp; an entry of the old one that cannot be removed is
    # logged with the Pod, the container and the reason (it used to be ignored).
    await client.create(pod("retmp", "sleep 1; exit 1", restart_policy="Always"))
    await wait_for(lambda: phase_is(client, "retmp", "Running"))
    tmp = agent.pod_dir(await status_of(client, "retmp")) / "c0" / "tmp"
    await wait_for(tmp.is_dir)
    (tmp / "stuck").write_text("x")
    real_unlink = os.unlink

    def unlink(path: Any, *a: Any, **kw: Any) -> None:
        if os.path.basename(os.fsdecode(path)) == "stuck":
            raise PermissionError(1, "Operation not permitted")
        real_unlink(path, *a, **kw)

    monkeypatch.setattr(os, "unlink", unlink)
    caplog.set_level(logging.WARNING, logger="pumice.node.runtime.process")

    async def restarted() -> bool:
        return cstatus(await status_of(client, "retmp")).get("restartCount", 0) >= 1

    await wait_for(restarted, timeout=20)
    msgs = [r.getMessage() for r in caplog.records if r.name == "pumice.node.runtime.process"]
    assert any("Pod default/retmp container c0" in m and "stuck: Operation not permitted" in m for m in msgs), msgs


# -- probes ----------------------------------------------------------------------------------------


async def test_readiness_exec_probe_makes_the_pod_ready_once_it_passes(client: FakeClient, agent: NodeAgent) -> None:
    probe = {"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 1}
    await client.create(pod("ready-later", "sleep 1; touch /tmp/ready; sleep 60", readinessProbe=probe))
    await wait_for(lambda: phase_is(client, "ready-later", "Running"))
    p = await status_of(client, "ready-later")
    assert not cstatus(p)["ready"]
    await wait_for(lambda: _ready(client, "ready-later"), timeout=15)
    p = await status_of(client, "ready-later")
    assert cstatus(p)["ready"] is True


async def test_failing_liveness_probe_restarts_the_container(client: FakeClient, agent: NodeAgent) -> None:
    probe = {"exec": {"command": ["/bin/sh", "-c", "exit 1"]}, "periodSeconds": 1, "failureThreshold": 1,
             "terminationGracePeriodSeconds": 1}
    await client.create(pod("unhealthy", "echo started; sleep 60", restart_policy="Always", livenessProbe=probe))

    async def restarted() -> bool:
        p = await get_pod(client, "unhealthy")
        cs = (p or {}).get("status", {}).get("containerStatuses") or [{}]
        return cs[0].get("restartCount", 0) >= 1

    await wait_for(restarted, timeout=20)


async def test_http_get_and_tcp_socket_probes_reach_the_pod_ip(client: FakeClient, agent: NodeAgent) -> None:
    server = "cd /tmp && echo ok > healthz && exec python3 -m http.server 8080"
    await client.create(pod(
        "web", server, image="python:3.11", ports=[{"containerPort": 8080, "name": "http"}],
        readinessProbe={"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1},
        livenessProbe={"tcpSocket": {"port": 8080}, "periodSeconds": 1, "initialDelaySeconds": 1},
    ))
    await wait_for(lambda: _ready(client, "web"), timeout=20)
    await _sleep(2.5)
    p = await status_of(client, "web")
    assert cstatus(p)["restartCount"] == 0


async def test_startup_probe_gates_liveness(client: FakeClient, agent: NodeAgent) -> None:
    startup = {"exec": {"command": ["test", "-f", "/tmp/up"]}, "periodSeconds": 1, "failureThreshold": 30}
    liveness = {"exec": {"command": ["test", "-f", "/tmp/up"]}, "periodSeconds": 1, "failureThreshold": 1}
    await client.create(pod("slow-start", "sleep 2; touch /tmp/up; sleep 60", restart_policy="Always",
                            startupProbe=startup, livenessProbe=liveness))
    await wait_for(lambda: _started(client, "slow-start"), timeout=20)
    p = await status_of(client, "slow-start")
    assert cstatus(p)["restartCount"] == 0
    assert cstatus(p)["ready"] is True


# -- environment and volumes -----------------------------------------------------------------------


async def test_downward_api_env_and_volume(client: FakeClient, agent: NodeAgent) -> None:
    env = [
        {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "MY_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "MY_APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
        {"name": "CPU_M", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
        {"name": "GREETING", "value": "hi $(MY_NAME) in $(MY_NS), $$(escaped)"},
    ]
    p = pod("downward", "echo $MY_NAME $MY_NS $MY_NODE $MY_APP $MEM_MI $CPU_M; echo $MY_IP; echo $GREETING; "
            "cat /etc/podinfo/labels; echo; cat /etc/podinfo/name", labels={"app": "demo", "tier": "x"}, env=env,
            resources={"limits": {"memory": "64Mi"}, "requests": {"cpu": "250m", "memory": "32Mi"}},
            volumeMounts=[{"name": "podinfo", "mountPath": "/etc/podinfo"}])
    p["spec"]["volumes"] = [{"name": "podinfo", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}}]
    await client.create(p)
    await wait_for(lambda: phase_is(client, "downward", "Succeeded"))
    got = await status_of(client, "downward")
    lines = log_lines(agent, got)
    assert lines[0] == "downward default node-0 demo 64 250"
    assert lines[1] == got["status"]["podIP"]
    assert lines[2] == "hi downward in default, $(escaped)"
    assert lines[3:6] == ['app="demo"', 'tier="x"', "downward"]
    await wait_for(lambda: not Path("/etc/podinfo").exists())  # the mount point made on the host is removed


async def test_configmap_and_secret_env_and_volumes(client: FakeClient, agent: NodeAgent) -> None:
    await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"},
                         "data": {"mode": "fast", "app.conf": "threads=4\n"}})
    await client.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec", "namespace": "default"},
                         "data": {"password": "czNjcjN0"}})
    p = pod("configured", "echo $MODE $CFG_mode $PASSWORD; cat /etc/cfg/app.conf; cat /etc/sec/password; echo",
            env=[{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
                 {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}}}],
            envFrom=[{"prefix": "CFG_", "configMapRef": {"name": "cfg"}}],
            volumeMounts=[{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True},
                          {"name": "sec", "mountPath": "/etc/sec"}])
    p["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "cfg"}},
                            {"name": "sec", "secret": {"secretName": "sec"}}]
    await client.create(p)
    await wait_for(lambda: phase_is(client, "configured", "Succeeded"))
    assert log_lines(agent, await status_of(client, "configured")) == ["fast fast s3cr3t", "threads=4", "s3cr3t"]


async def test_a_missing_configmap_keeps_the_container_waiting(client: FakeClient, agent: NodeAgent) -> None:
    await client.create(pod("needs-cfg", "echo never", env=[
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}]))

    async def waiting() -> bool:
        p = await get_pod(client, "needs-cfg")
        cs = (p or {}).get("status", {}).get("containerStatuses") or [{}]
        return cs[0].get("state", {}).get("waiting", {}).get("reason") == "CreateContainerConfigError"

    await wait_for(waiting)
    await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "absent", "namespace": "default"},
                         "data": {"k": "v"}})
    await wait_for(lambda: phase_is(client, "needs-cfg", "Succeeded"), timeout=15)


async def test_init_containers_run_in_order_before_the_containers(client: FakeClient, agent: NodeAgent) -> None:
    p = pod("with-init", "cat /work/steps", volumeMounts=[{"name": "work", "mountPath": "/work"}])
    p["spec"]["initContainers"] = [
        {"name": f"init{i}", "image": "busybox", "command": ["/bin/sh", "-c", f"echo step{i} >> /work/steps"],
         "volumeMounts": [{"name": "work", "mountPath": "/work"}]} for i in (1, 2)]
    p["spec"]["volumes"] = [{"name": "work", "emptyDir": {}}]
    await client.create(p)
    await wait_for(lambda: phase_is(client, "with-init", "Succeeded"))
    got = await status_of(client, "with-init")
    assert log_lines(agent, got) == ["step1", "step2"]
    assert [s["state"]["terminated"]["reason"] for s in got["status"]["initContainerStatuses"]] == ["Completed"] * 2
    assert _cond(got, "Initialized") == "True"


async def test_a_failing_init_container_fails_a_never_restart_pod(client: FakeClient, agent: NodeAgent) -> None:
    p = pod("init-fails", "echo never")
    p["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "command": ["/bin/sh", "-c", "exit 7"]}]
    await client.create(p)
    await wait_for(lambda: phase_is(client, "init-fails", "Failed"))
    got = await status_of(client, "init-fails")
    assert got["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 7
    assert not (agent.pod_dir(got) / "c0").exists()


async def test_an_unsupported_volume_fails_the_pod_with_a_clear_message(client: FakeClient, agent: NodeAgent) -> None:
    p = pod("nfs", "echo never")
    p["spec"]["volumes"] = [{"name": "data", "nfs": {"server": "x", "path": "/"}}]
    await client.create(p)
    await wait_for(lambda: phase_is(client, "nfs", "Failed"))
    got = await status_of(client, "nfs")
    assert "unsupported volume type 'nfs'" in got["status"]["message"]


# -- deletion --------------------------------------------------------------------------------------


async def test_graceful_deletion_sends_sigterm_runs_pre_stop_and_deletes_the_pod(client: FakeClient, agent: NodeAgent) -> None:
    marker = agent.data_dir / "prestop-ran"
    script = "trap 'echo got TERM; exit 0' TERM; echo up; while true; do sleep 0.1; done"
    await client.create(pod("polite", script, grace=10, lifecycle={"preStop": {"exec": {"command": [
        "/bin/sh", "-c", f"echo prestop > {marker}"]}}}))
    await wait_for(lambda: phase_is(client, "polite", "Running"))
    p = await status_of(client, "polite")
    await wait_for(lambda: "up" in log_lines(agent, p))
    await client.delete(POD, "polite", "default")
    await wait_for(lambda: _gone(client, "polite"), timeout=15)
    assert marker.read_text().strip() == "prestop"


async def test_a_container_ignoring_sigterm_is_killed_after_the_grace_period(client: FakeClient, agent: NodeAgent) -> None:
    script = "trap '' TERM; echo stubborn; while true; do sleep 0.1; done"
    await client.create(pod("stubborn", script, grace=1))
    await wait_for(lambda: phase_is(client, "stubborn", "Running"))
    p = await status_of(client, "stubborn")
    await wait_for(lambda: "stubborn" in log_lines(agent, p))
    seen: list[dict[str, Any]] = []

    async def final_status() -> bool:
        cur = await get_pod(client, "stubborn")
        if cur is None:
            return True
        seen.append(cur)
        return False

    await client.delete(POD, "stubborn", "default")
    await wait_for(final_status, timeout=15, interval=0.02)
    terminated = [s["status"]["containerStatuses"][0]["state"].get("terminated") for s in seen]
    codes = {t["exitCode"] for t in terminated if t}
    assert codes <= {137}


# -- admission -------------------------------------------------------------------------------------


async def test_a_pod_that_does_not_fit_is_rejected_with_out_of_cpu(client: FakeClient, agent: NodeAgent) -> None:
    await client.create(pod("huge", "echo never", requests="8"))
    await wait_for(lambda: phase_is(client, "huge", "Failed"))
    got = await status_of(client, "huge")
    assert got["status"]["reason"] == "OutOfcpu"
    assert "requested: 8000, used: 0, capacity: 4000" in got["status"]["message"]


async def test_a_node_selector_mismatch_is_rejected(client: FakeClient, agent: NodeAgent) -> None:
    p = pod("picky", "echo never")
    p["spec"]["nodeSelector"] = {"disk": "ssd"}
    await client.create(p)
    await wait_for(lambda: phase_is(client, "picky", "Failed"))
    assert (await status_of(client, "picky"))["status"]["reason"] == "NodeAffinity"


# -- helpers ---------------------------------------------------------------------------------------


def _cond(p: dict[str, Any], ctype: str) -> str:
    return next((c["status"] for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == ctype), "")


async def _ready(client: FakeClient, name: str) -> bool:
    p = await get_pod(client, name)
    return p is not None and _cond(p, "Ready") == "True"


async def _started(client: FakeClient, name: str) -> bool:
    p = await get_pod(client, name)
    cs = (p or {}).get("status", {}).get("containerStatuses") or [{}]
    return bool(cs[0].get("started")) and _cond(p or {"status": {}}, "Ready") == "True"


async def _gone(client: FakeClient, name: str) -> bool:
    return await get_pod(client, name) is None


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def _init_looping(name: str) -> dict[str, Any]:
    """A Pod whose init container loops forever (as KubeRay's wait-gcs-ready does once the head is gone)."""
    p = pod(name, "echo never", grace=2)
    p["spec"]["initContainers"] = [{"name": "wait-gcs-ready", "image": "busybox",
                                    "command": ["/bin/sh", "-c", "echo waiting; while true; do sleep 0.2; done"]}]
    return p


async def _init_pid(client: FakeClient, agent: NodeAgent, name: str) -> tuple[str, int]:
    await wait_for(lambda: _init_running(client, name))
    uid = (await status_of(client, name))["metadata"]["uid"]
    await wait_for(lambda: agent.workers[uid].records["wait-gcs-ready"].current is not None)
    cur = agent.workers[uid].records["wait-gcs-ready"].current
    assert cur is not None
    return uid, cur.pid


async def _init_running(client: FakeClient, name: str) -> bool:
    p = await get_pod(client, name)
    st = ((p or {}).get("status") or {}).get("initContainerStatuses") or [{}]
    return "running" in (st[0].get("state") or {})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_graceful_deletion_during_an_init_container_stops_it_and_deletes_the_pod(
        client: FakeClient, agent: NodeAgent) -> None:
    await client.create(_init_looping("init-loop"))
    uid, pid = await _init_pid(client, agent, "init-loop")
    await client.delete(POD, "init-loop", "default")
    await wait_for(lambda: _gone(client, "init-loop"), timeout=15)
    await wait_for(lambda: not _alive(pid), timeout=5)
    await wait_for(lambda: uid not in agent.workers, timeout=5)


async def test_force_deletion_during_an_init_container_still_kills_it_and_removes_the_sandbox(
        client: FakeClient, agent: NodeAgent) -> None:
    await client.create(_init_looping("init-force"))
    uid, pid = await _init_pid(client, agent, "init-force")
    w = agent.workers[uid]
    assert w.sandbox is not None
    ns = w.sandbox.netns
    await client.delete(POD, "init-force", "default", grace_period_seconds=0)
    assert await get_pod(client, "init-force") is None
    await wait_for(lambda: not _alive(pid), timeout=5)
    await wait_for(lambda: uid not in agent.workers, timeout=5)
    if ns:
        assert not Path("/run/netns", ns).exists()
