"""Endpoints/EndpointSlice, Namespace deletion and node lifecycle in the chain."""

from __future__ import annotations

import asyncio

import pytest

from pumice.api import Obj
from pumice.api.scheme import ENDPOINT_SLICE, ENDPOINTS, NAMESPACE, NODE, POD
from pumice.controllers.kube.endpoints import build_subsets
from pumice.controllers.kube.nodelifecycle import eviction_delay

from .conftest import Env, chain, deployment, eventually
from .test_deployment import rollout_complete


def service(name: str, *, headless: bool = False, publish: bool = False, ns: str = "default") -> Obj:
    spec: Obj = {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    if headless:
        spec["clusterIP"] = "None"
    if publish:
        spec["publishNotReadyAddresses"] = True
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


async def test_endpoints_list_ready_pods_of_the_service(env: Env) -> None:
    await env.client.create(deployment("web", 3))
    await env.client.create(service("web", headless=True))
    await eventually(lambda: rollout_complete(env, "web", 3))

    async def three_addresses() -> bool:
        try:
            ep = await env.client.get(ENDPOINTS, "web", "default")
        except Exception:
            return False
        subsets = ep.get("subsets") or []
        return len(subsets) == 1 and len(subsets[0].get("addresses") or []) == 3

    await eventually(three_addresses, what="3 ready addresses")
    ep = await env.client.get(ENDPOINTS, "web", "default")
    assert ep["subsets"][0]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert ep["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
    pods = {p["status"]["podIP"] for p in (await env.client.list(POD, "default")).items}
    assert {a["ip"] for a in ep["subsets"][0]["addresses"]} == pods

    async def slice_ready() -> bool:
        slices = (await env.client.list(ENDPOINT_SLICE, "default")).items
        return len(slices) == 1 and sum(1 for e in slices[0]["endpoints"] if e["conditions"]["ready"]) == 3

    await eventually(slice_ready, what="endpoint slice with 3 ready endpoints")
    s = (await env.client.list(ENDPOINT_SLICE, "default")).items[0]
    assert s["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    assert s["addressType"] == "IPv4"


def _pod(name: str, ip: str, ready: bool) -> Obj:
    return {"metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"app": "x"}},
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running", "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_not_ready_pods_go_to_not_ready_addresses_unless_published() -> None:
    pods = [_pod("a", "10.0.0.2", True), _pod("b", "10.0.0.1", False)]
    subsets = build_subsets(service("x"), pods)
    assert [a["ip"] for a in subsets[0]["addresses"]] == ["10.0.0.2"]
    assert [a["ip"] for a in subsets[0]["notReadyAddresses"]] == ["10.0.0.1"]
    published = build_subsets(service("x", publish=True), pods)
    assert [a["ip"] for a in published[0]["addresses"]] == ["10.0.0.1", "10.0.0.2"]


async def test_deleting_a_namespace_deletes_its_contents_then_the_namespace(env: Env) -> None:
    await env.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    await env.client.create(deployment("web", 2, ns="team"))
    await env.client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "team"}})

    async def running() -> bool:
        pods = (await env.client.list(POD, "team")).items
        return len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)

    await eventually(running)
    await env.client.delete(NAMESPACE, "team")

    async def ns_gone() -> bool:
        return not [n for n in (await env.client.list(NAMESPACE)).items if n["metadata"]["name"] == "team"]

    await eventually(ns_gone, timeout=30, what="namespace finalized and deleted")
    assert not (await env.client.list(POD, "team")).items


def test_eviction_delay_honours_toleration_seconds_and_adds_no_default() -> None:
    """taint_eviction.go processPodOnNode: the 300 s come from the DefaultTolerationSeconds
    admission plugin; a Pod without tolerations (admitted without it) goes at once."""
    taints = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]
    assert eviction_delay({"spec": {}}, taints) == 0
    tol = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
    assert eviction_delay({"spec": {"tolerations": [tol]}}, taints) == 5
    forever = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    assert eviction_delay({"spec": {"tolerations": [forever]}}, taints) is None
    other = [{"key": "dedicated", "value": "x", "effect": "NoExecute"}]
    assert eviction_delay({"spec": {}}, other) == 0


def test_eviction_delay_takes_the_first_toleration_of_each_taint() -> None:
    """GetMatchingTolerations keeps the first toleration per taint; getMinTolerationTime the
    smallest tolerationSeconds among those kept (a later forever toleration does not count)."""
    taints = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
              {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
    first = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 30}
    forever = {"operator": "Exists"}
    assert eviction_delay({"spec": {"tolerations": [first, forever]}}, taints) == 30
    assert eviction_delay({"spec": {"tolerations": [forever, first]}}, taints) is None
    assert eviction_delay({"spec": {"tolerations": [{**first, "tolerationSeconds": -5}, forever]}}, taints) == 0


async def test_node_whose_lease_expires_becomes_unknown_tainted_and_its_pods_are_evicted() -> None:
    async with chain(nodes=2, kubelet={"heartbeat_period": 0.1}, node_grace_period=0.5,
                     node_monitor_period=0.1) as env:
        tol = [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 1}]
        for i in range(2):
            await env.client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
                                     "spec": {"nodeName": f"fake-node-{i}", "tolerations": tol,
                                              "containers": [{"name": "c", "image": "busybox"}]}})

        async def running() -> bool:
            phases = [(await env.client.get(POD, f"p{i}", "default"))["status"].get("phase") for i in range(2)]
            return phases == ["Running", "Running"]

        await eventually(running)
        env.kubelet.stop_heartbeat("fake-node-1")

        async def unknown() -> bool:
            node = await env.client.get(NODE, "fake-node-1")
            ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
            keys = {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}
            return ready["status"] == "Unknown" and ready["reason"] == "NodeStatusUnknown" and (
                "node.kubernetes.io/unreachable", "NoExecute") in keys

        await eventually(unknown, what="Ready=Unknown and unreachable taint")
        node0 = await env.client.get(NODE, "fake-node-0")
        assert not node0["spec"].get("taints")

        async def evicted() -> bool:
            names = {p["metadata"]["name"] for p in (await env.client.list(POD, "default")).items}
            return names == {"p0"}

        await eventually(evicted, what="p1 evicted after its 1 s toleration")
        env.kubelet.resume_heartbeat("fake-node-1")

        async def recovered() -> bool:
            node = await env.client.get(NODE, "fake-node-1")
            return not node["spec"].get("taints")

        await eventually(recovered, what="taints removed once the heartbeat is back")


@pytest.mark.looptime
async def test_default_grace_50s_and_default_toleration_300s_on_virtual_time() -> None:
    from pumice._util.clock import parse_rfc3339

    async with chain(nodes=2) as env:
        await env.client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                                 "spec": {"nodeName": "fake-node-1", "containers": [{"name": "c", "image": "busybox"}]}})

        async def running() -> bool:
            return (await env.client.get(POD, "p", "default"))["status"].get("phase") == "Running"

        await eventually(running)
        loop = asyncio.get_running_loop()
        env.kubelet.stop_heartbeat("fake-node-1")
        stopped = loop.time()

        async def unreachable() -> Obj | None:
            node = await env.client.get(NODE, "fake-node-1")
            return next((t for t in node["spec"].get("taints") or []
                         if t["key"] == "node.kubernetes.io/unreachable" and t["effect"] == "NoExecute"), None)

        await eventually(unreachable, timeout=200, what="unreachable taint", interval=1.0)
        assert loop.time() - stopped >= 50
        taint = await unreachable()
        assert taint is not None

        async def evicted() -> bool:
            return not (await env.client.list(POD, "default")).items

        await eventually(evicted, timeout=600, what="evicted after 300 s", interval=1.0)
        assert env.cluster.server.clock.now() - parse_rfc3339(taint["timeAdded"]) >= 300
