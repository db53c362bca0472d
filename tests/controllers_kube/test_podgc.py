"""The pod garbage collector (kube-controller-manager's podgc) in the chain, on virtual time.

Ports the cases of kubernetes pkg/controller/podgc/gc_controller_test.go: TestGCOrphaned
(quarantine, then deletion with DisruptionTarget), TestGCUnscheduledTerminating, TestGCTerminated
(threshold, evicted first, oldest first) and TestGCTerminating (out-of-service taint).
"""

from __future__ import annotations

import asyncio
import logging

import prometheus_client
import pytest

from pumice._util.clock import LoopClock
from pumice.api import Obj
from pumice.api.scheme import NODE, POD
from pumice.client.base import get_or_none
from pumice.controllers.kube import SETUPS
from pumice.controllers.kube.podgc import (
    DELETING_PODS_ERROR_TOTAL,
    eviction_and_creation_order,
    is_pod_terminated,
)
from pumice.node.agent import NodeAgent
from pumice.simulate.runner import KUBE_CONTROLLERS

from .conftest import Env, chain, eventually

HOLD = "example.com/hold"


def pod(name: str, *, node: str | None = None, finalizer: bool = False, scheduler: str | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    if scheduler:
        spec["schedulerName"] = scheduler
    md: Obj = {"name": name, "namespace": "default"}
    if finalizer:
        md["finalizers"] = [HOLD]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def node(name: str, *, ready: str = "True", taints: list[Obj] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady"}]}}


def forced(reason: str, *, errors: bool = False) -> float:
    """The podgc counter of namespace default and ``reason`` (0 before its first increment)."""
    name = "pod_gc_collector_force_delete_pod_errors_total" if errors else "pod_gc_collector_force_delete_pods_total"
    value = prometheus_client.REGISTRY.get_sample_value(name, {"namespace": "default", "reason": reason})
    return value or 0.0


async def release(env: Env, name: str) -> None:
    p = await env.client.get(POD, name, "default")
    p["metadata"]["finalizers"] = []
    await env.client.update(p)


def test_podgc_runs_in_the_controller_manager_and_in_simulate() -> None:
    assert "podgc" in SETUPS
    assert "podgc" in KUBE_CONTROLLERS


@pytest.mark.looptime
async def test_pod_bound_to_a_missing_node_is_failed_with_disruption_target_and_force_deleted() -> None:
    async with chain(nodes=1) as env:
        orphaned0 = forced("orphaned")
        await env.client.create(pod("orphan", node="ghost", finalizer=True))
        loop = asyncio.get_running_loop()
        start = loop.time()

        async def deleting() -> bool:
            return bool((await env.client.get(POD, "orphan", "default"))["metadata"].get("deletionTimestamp"))

        await eventually(deleting, timeout=120, interval=1.0, what="orphan deleted by podgc")
        waited = loop.time() - start
        assert 40 <= waited <= 62, waited  # the 40 s quarantine, then the next 20 s pass at the latest
        got = await env.client.get(POD, "orphan", "default")
        assert got["status"]["phase"] == "Failed"
        cond = next(c for c in got["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert (cond["status"], cond["reason"], cond["message"]) == ("True", "DeletionByPodGC",
                                                                      "PodGC: node no longer exists")
        assert got["metadata"]["deletionGracePeriodSeconds"] == 0
        assert forced("orphaned") - orphaned0 >= 1
        await release(env, "orphan")
        assert await get_or_none(env.client, POD, "orphan", "default") is None


@pytest.mark.looptime
async def test_pods_of_a_deleted_node_go_and_pods_of_live_nodes_stay() -> None:
    async with chain(nodes=1) as env:
        await env.client.create(node("hand-made"))
        await env.client.create(pod("gone-with-node", node="hand-made"))
        await env.client.create(pod("kept", node="fake-node-0"))

        async def kept_runs() -> bool:
            return (await env.client.get(POD, "kept", "default"))["status"].get("phase") == "Running"

        await eventually(kept_runs)
        await asyncio.sleep(100)
        assert await get_or_none(env.client, POD, "gone-with-node", "default") is not None  # its Node exists
        # the Pod is graceful-deleting for ever without a kubelet (the trial's Terminating Pods)
        await env.client.delete(POD, "gone-with-node", "default")
        await env.client.delete(NODE, "hand-made")

        async def gone() -> bool:
            return await get_or_none(env.client, POD, "gone-with-node", "default") is None

        await eventually(gone, timeout=120, interval=1.0, what="orphaned terminating Pod force-deleted")
        assert await get_or_none(env.client, POD, "kept", "default") is not None


@pytest.mark.looptime
async def test_event_driven_mode_collects_after_a_node_deletion_without_a_periodic_pass() -> None:
    async with chain(nodes=1, pod_gc_check_period=None) as env:
        await env.client.create(node("hand-made"))
        await env.client.create(pod("on-it", node="hand-made"))
        await asyncio.sleep(1)
        await env.client.delete(NODE, "hand-made")
        loop = asyncio.get_running_loop()
        start = loop.time()

        async def gone() -> bool:
            return await get_or_none(env.client, POD, "on-it", "default") is None

        await eventually(gone, timeout=120, interval=0.5, what="Pod of the deleted Node collected")
        assert 40 <= loop.time() - start <= 42


@pytest.mark.looptime
async def test_a_node_recreated_during_the_quarantine_keeps_its_pods() -> None:
    async with chain(nodes=1) as env:
        await env.client.create(node("flaky"))
        await env.client.create(pod("p", node="flaky"))
        await asyncio.sleep(1)
        await env.client.delete(NODE, "flaky")
        await asyncio.sleep(10)
        await env.client.create(node("flaky"))
        await asyncio.sleep(120)
        assert await get_or_none(env.client, POD, "p", "default") is not None


def _sim_agent(env: Env) -> NodeAgent:
    return NodeAgent(env.cluster.new_client(), runtime="simulated", data_dir="/nonexistent", node_names=["sim-0"],
                     node_cpu="4", node_memory="8Gi", clock=LoopClock())


@pytest.mark.looptime
async def test_a_node_deleted_under_its_agent_stays_gone_and_its_pods_are_force_deleted(
        caplog: pytest.LogCaptureFixture) -> None:
    """Trial 12 F-7: the kubelet registers once (registrationCompleted); its later status updates
    fail, and the pod garbage collector deletes the Pods after the quarantine."""
    async with chain(nodes=1) as env:
        agent = _sim_agent(env)
        await agent.start()
        try:
            await env.client.create(pod("on-sim", node="sim-0"))

            async def runs() -> bool:
                return (await env.client.get(POD, "on-sim", "default"))["status"].get("phase") == "Running"

            await eventually(runs, timeout=30, interval=0.5, what="Pod running on the agent's Node")
            await env.client.delete(NODE, "sim-0")
            loop = asyncio.get_running_loop()
            start = loop.time()

            async def pod_gone() -> bool:
                return await get_or_none(env.client, POD, "on-sim", "default") is None

            with caplog.at_level(logging.WARNING, logger="pumice.node.agent"):
                await eventually(pod_gone, timeout=120, interval=1.0, what="Pod of the deleted Node collected")
                assert 40 <= loop.time() - start <= 62
                await asyncio.sleep(310)  # past the agent's 5-minute status update
                assert await get_or_none(env.client, NODE, "sim-0") is None
            assert "Error updating node status, will retry: node sim-0" in caplog.text
        finally:
            await agent.stop()
        again = _sim_agent(env)  # the agent restarted (pumice up restart) registers it again
        await again.start()
        try:
            assert await get_or_none(env.client, NODE, "sim-0") is not None
        finally:
            await again.stop()


@pytest.mark.looptime
async def test_unscheduled_terminating_pod_is_failed_and_force_deleted() -> None:
    async with chain(nodes=1) as env:
        unscheduled0, errors0 = forced("unscheduled"), forced("unscheduled", errors=True)
        await env.client.create(pod("unscheduled", finalizer=True, scheduler="nobody"))
        await env.client.delete(POD, "unscheduled", "default")

        async def failed() -> bool:
            return (await env.client.get(POD, "unscheduled", "default"))["status"].get("phase") == "Failed"

        await eventually(failed, timeout=30, interval=1.0, what="unscheduled terminating Pod marked Failed")
        got = await env.client.get(POD, "unscheduled", "default")
        assert not any(c["type"] == "DisruptionTarget" for c in got["status"].get("conditions") or [])
        assert forced("unscheduled") - unscheduled0 >= 1
        assert forced("unscheduled", errors=True) == errors0
        await release(env, "unscheduled")


@pytest.mark.looptime
async def test_terminated_pods_over_the_threshold_go_evicted_first_then_oldest() -> None:
    async with chain(nodes=1, terminated_pod_gc_threshold=2) as env:
        terminated0 = forced("terminated")
        for i, (phase, reason) in enumerate([("Succeeded", None), ("Failed", None), ("Failed", "Evicted"),
                                             ("Succeeded", None), ("Pending", None)]):
            await env.client.create(pod(f"t{i}", scheduler="nobody"))
            status: Obj = {"phase": phase}
            if reason:
                status["reason"] = reason
            await env.client.patch(POD, f"t{i}", {"status": status}, "default", subresource="status")
            await asyncio.sleep(1)  # distinct creationTimestamps

        async def names() -> set[str]:
            return {p["metadata"]["name"] for p in (await env.client.list(POD, "default")).items}

        async def collected() -> bool:
            return await names() == {"t1", "t3", "t4"}

        await eventually(collected, timeout=60, interval=1.0, what="t2 (evicted) and t0 (oldest) collected")
        await asyncio.sleep(60)
        assert await names() == {"t1", "t3", "t4"}
        assert forced("terminated") - terminated0 == 2


@pytest.mark.looptime
async def test_terminating_pod_on_a_not_ready_out_of_service_node_is_force_deleted() -> None:
    async with chain(nodes=1) as env:
        oos0 = forced("out-of-service")
        await env.client.create(node("oos", ready="False"))
        await env.client.create(node("down", ready="False"))
        await env.client.create(pod("on-oos", node="oos"))
        await env.client.create(pod("on-down", node="down"))
        await env.client.delete(POD, "on-oos", "default")
        await env.client.delete(POD, "on-down", "default")
        oos = await env.client.get(NODE, "oos")
        oos["spec"]["taints"] = [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
                                  "effect": "NoExecute"}]
        await env.client.update(oos)

        async def gone() -> bool:
            return await get_or_none(env.client, POD, "on-oos", "default") is None

        await eventually(gone, timeout=30, interval=1.0, what="terminating Pod on the out-of-service Node deleted")
        assert forced("out-of-service") - oos0 == 1
        # no taint: the Pod waits for its kubelet (its 30 s grace is not podgc's business)
        assert (await env.client.get(POD, "on-down", "default"))["metadata"].get("deletionTimestamp")


def test_terminated_means_not_pending_running_or_unknown_and_evicted_sort_first() -> None:
    assert [is_pod_terminated({"status": {"phase": p}}) for p in ("Pending", "Running", "Unknown", "Succeeded", "Failed")] \
        == [False, False, False, True, True]
    pods = [{"metadata": {"name": n, "creationTimestamp": ts}, "status": st} for n, ts, st in [
        ("b", "2026-01-01T00:00:01Z", {"phase": "Succeeded"}),
        ("a", "2026-01-01T00:00:01Z", {"phase": "Succeeded"}),
        ("old", "2026-01-01T00:00:00Z", {"phase": "Failed"}),
        ("ev", "2026-01-01T00:00:09Z", {"phase": "Failed", "reason": "Evicted"})]]
    assert [p["metadata"]["name"] for p in eviction_and_creation_order(pods)] == ["ev", "old", "a", "b"]


def test_podgc_metrics_have_upstreams_names_labels_and_help() -> None:
    """pkg/controller/podgc/metrics/metrics.go, as component-base exposes an ALPHA metric."""
    text = prometheus_client.generate_latest().decode()
    assert ("# HELP pod_gc_collector_force_delete_pods_total [ALPHA] Number of pods that are being forcefully "
            "deleted since the Pod GC Controller started.") in text
    assert ("# HELP pod_gc_collector_force_delete_pod_errors_total [ALPHA] Number of errors encountered when "
            "forcefully deleting the pods since the Pod GC Controller started.") in text
    assert "# TYPE pod_gc_collector_force_delete_pods_total counter" in text
    DELETING_PODS_ERROR_TOTAL.labels("ns-x", "orphaned").inc()
    sample = prometheus_client.REGISTRY.get_sample_value(
        "pod_gc_collector_force_delete_pod_errors_total", {"namespace": "ns-x", "reason": "orphaned"})
    assert sample is not None and sample >= 1
