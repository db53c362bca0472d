"""PodTopologySpread's DoNotSchedule filter in the default scheduler: upstream's skew check
(matching Pods in the Node's domain + self-match - global minimum <= maxSkew), minDomains, node
inclusion policies, matchLabelKeys, a Node without the topology key, the FailedScheduling text;
both cores agree; a Deployment through the API server, its controllers and the scheduler."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from typing import Any

import pytest

from pumice.api import Obj
from pumice.api.scheme import DEPLOYMENT, EVENT, NODE, POD
from pumice.controllers.kube import setup
from pumice.runtime import Manager
from pumice.scheduler.default.core import LoopCore
from pumice.scheduler.default.podinfo import PodInfo
from pumice.scheduler.default.scheduler import DefaultScheduler
from pumice.scheduler.default.spread import (
    HOSTNAME_KEY,
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    ZONE_KEY,
    CriticalPaths,
    SpreadNode,
    hard_constraints,
    prefilter,
)
from pumice.scheduler.default.vector import VectorCore
from pumice.testing.cluster import local_cluster

from .builders import node, pod

CORES = [LoopCore, VectorCore]


def constraint(key: str = HOSTNAME_KEY, skew: int = 1, app: str = "web", **extra: Any) -> Obj:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}}, **extra}


def replica(name: str, *constraints: Obj, labels: dict[str, str] | None = None, **kw: Any) -> PodInfo:
    p = pod(name, **kw)
    p["metadata"]["labels"] = labels if labels is not None else {"app": "web"}
    p["spec"]["topologySpreadConstraints"] = list(constraints) or [constraint()]
    return dataclasses.replace(PodInfo.from_pod(p), spread_filter=hard_constraints(p))


def place(core: Any, info: PodInfo) -> str | None:
    d = core.schedule(info)
    if d.node:
        core.add_pod(info, d.node)
    return d.node


def message(n: int, reasons: str, unresolvable: int) -> str:
    post = []
    if unresolvable:
        post.append(f"{unresolvable} Preemption is not helpful for scheduling")
    if n - unresolvable:
        post.append(f"{n - unresolvable} No preemption victims found for incoming pod")
    return f"0/{n} nodes are available: {reasons}. preemption: 0/{n} nodes are available: {', '.join(sorted(post))}."


# ----- the state and the check, on plain values ---------------------------------------------

def _view(name: str, apps: list[str], **labels: str) -> SpreadNode:
    return SpreadNode(name, {HOSTNAME_KEY: name, **labels}, True, True, [{"app": a} for a in apps])


def test_the_skew_check_counts_the_pod_itself_against_the_least_loaded_domain() -> None:
    cons = hard_constraints({"metadata": {"labels": {"app": "web"}}, "spec": {"topologySpreadConstraints": [constraint()]}})
    state = prefilter(cons, {"app": "web"}, [_view("a", ["web"]), _view("b", ["web", "db"]), _view("c", [])])
    assert state.match_num == [{"a": 1, "b": 1, "c": 0}]
    assert state.min_match(0) == 0
    assert state.reason({HOSTNAME_KEY: "a"}) == REASON_CONSTRAINTS_NOT_MATCH  # 1 + 1 - 0 > 1
    assert state.reason({HOSTNAME_KEY: "c"}) is None
    assert state.reason({"other": "x"}) == REASON_NODE_LABEL_NOT_MATCH
    # a Pod its own selector does not match adds nothing to the domain it would join
    other = prefilter(cons, {"app": "db"}, [_view("a", ["web"]), _view("c", [])])
    assert other.self_match == (False,) and other.reason({HOSTNAME_KEY: "a"}) is None


def test_the_reason_strings_are_upstream_s() -> None:
    assert REASON_CONSTRAINTS_NOT_MATCH == "node(s) didn't match pod topology spread constraints"
    assert REASON_NODE_LABEL_NOT_MATCH == "node(s) didn't match pod topology spread constraints (missing required label)"


def test_critical_paths_keep_the_two_least_loaded_domains() -> None:
    paths = CriticalPaths()
    for value, count in (("a", 3), ("b", 1), ("c", 2), ("d", 5)):
        paths.update(value, count)
    assert paths.pairs() == [("b", 1), ("c", 2)] and paths.min == 1
    paths.update("b", 4)  # the minimum domain grows past the second: they swap
    assert paths.pairs() == [("c", 2), ("b", 4)]
    paths.update("e", 0)
    assert paths.pairs() == [("e", 0), ("c", 2)]


def test_nodes_without_every_topology_key_do_not_count_and_inclusion_policies_apply() -> None:
    cons = hard_constraints({"spec": {"topologySpreadConstraints": [
        constraint(ZONE_KEY, nodeAffinityPolicy="Ignore", nodeTaintsPolicy="Honor")]}})
    nodes = [SpreadNode("a", {ZONE_KEY: "z1"}, False, True, [{"app": "web"}]),  # affinity ignored: counts
             SpreadNode("b", {ZONE_KEY: "z2"}, True, False, [{"app": "web"}] * 5),  # untolerated: left out
             SpreadNode("c", {}, True, True, [{"app": "web"}] * 9)]  # no zone: left out
    state = prefilter(cons, {"app": "web"}, nodes)
    assert state.match_num == [{"z1": 1}]
    assert state.reason({ZONE_KEY: "z2"}) is None  # 0 + 1 - 1


# ----- placement, both cores ----------------------------------------------------------------

@pytest.mark.parametrize("core_type", CORES)
def test_replicas_spread_one_per_node_then_the_fourth_may_go_anywhere(core_type: type) -> None:
    core = core_type(seed=3)
    core.set_node(node("big", cpu="32", memory="64Gi"))  # LeastAllocated alone would stack on it
    core.set_node(node("n1"))
    core.set_node(node("n2"))
    first = [place(core, replica(f"web-{i}", cpu="500m")) for i in range(3)]
    assert sorted(first) == ["big", "n1", "n2"]
    assert place(core, replica("web-3", cpu="500m")) == "big"  # 2-1-1 is within maxSkew 1
    fifth = place(core, replica("web-4", cpu="500m"))
    assert fifth in ("n1", "n2")  # big at 2 would make 3 - 1 = 2


@pytest.mark.parametrize("core_type", CORES)
def test_a_replica_with_no_room_in_the_least_loaded_domain_stays_pending_with_upstream_s_message(
        core_type: type) -> None:
    core = core_type(seed=1)
    core.set_node(node("n0"))
    core.set_node(node("n1"))
    core.set_node(node("tiny", cpu="1"))
    placed = [place(core, replica(f"web-{i}", cpu="1")) for i in range(5)]
    assert placed[:3].count("tiny") == 1
    assert sorted(p for p in placed if p) == ["n0", "n0", "n1", "n1", "tiny"]
    d = core.schedule(replica("web-5", cpu="1"))
    assert d.node is None
    assert d.message == message(3, "1 Insufficient cpu, 2 node(s) didn't match pod topology spread constraints", 0)


@pytest.mark.parametrize("core_type", CORES)
def test_a_node_missing_the_topology_label_is_rejected_as_unresolvable(core_type: type) -> None:
    core = core_type(seed=1)
    core.set_node(node("z1", labels={ZONE_KEY: "a"}))
    core.set_node(node("bare"))
    info = replica("web-0", constraint(ZONE_KEY))
    assert place(core, info) == "z1"
    assert place(core, replica("web-1", constraint(ZONE_KEY))) == "z1"  # one domain: skew stays 1
    only_bare = replica("web-2", constraint(ZONE_KEY), node_selector={HOSTNAME_KEY: "bare"})
    d = core.schedule(only_bare)
    assert d.message == message(2, "1 node(s) didn't match Pod's node affinity/selector, "
                                   "1 node(s) didn't match pod topology spread constraints (missing required label)", 2)


@pytest.mark.parametrize("core_type", CORES)
def test_min_domains_treats_the_global_minimum_as_zero_until_enough_domains_exist(core_type: type) -> None:
    core = core_type(seed=1)
    for name, zone in (("a1", "za"), ("a2", "za"), ("b1", "zb")):
        core.set_node(node(name, labels={ZONE_KEY: zone}))
    spread = constraint(ZONE_KEY, minDomains=3)
    assert sorted([place(core, replica("w0", spread)), place(core, replica("w1", spread))])[0] in ("a1", "a2")
    d = core.schedule(replica("w2", spread))  # two zones of the three asked for, one Pod each
    assert d.message == message(3, "3 node(s) didn't match pod topology spread constraints", 0)
    core.set_node(node("c1", labels={ZONE_KEY: "zc"}))
    assert place(core, replica("w2", spread)) == "c1"
    assert place(core, replica("w3", spread)) is not None  # 1-1-1 over three domains: min is 1 now
    # without minDomains the same two-zone cluster keeps accepting Pods in turn
    plain = core_type(seed=1)
    for name, zone in (("a1", "za"), ("b1", "zb")):
        plain.set_node(node(name, labels={ZONE_KEY: zone}))
    assert [place(plain, replica(f"w{i}", constraint(ZONE_KEY))) is not None for i in range(4)] == [True] * 4


@pytest.mark.parametrize("core_type", CORES)
def test_node_affinity_policy_honor_leaves_pods_on_excluded_nodes_out_of_the_minimum(core_type: type) -> None:
    core = core_type(seed=1)
    core.set_node(node("gpu", labels={"pool": "gpu"}))
    core.set_node(node("c1", labels={"pool": "cpu"}))
    core.set_node(node("c2", labels={"pool": "cpu"}))
    core.add_pod(replica("old-0"), "c1")
    core.add_pod(replica("old-1"), "c2")
    honor = replica("w", node_selector={"pool": "cpu"})
    assert core.schedule(honor).node in ("c1", "c2")  # the empty gpu Node is not a domain
    ignore = replica("w", constraint(nodeAffinityPolicy="Ignore"), node_selector={"pool": "cpu"})
    d = core.schedule(ignore)  # the gpu Node's 0 is the minimum, and the Pod may not go there
    assert d.node is None and d.message == message(
        3, "1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't match pod topology spread constraints", 1)


@pytest.mark.parametrize("core_type", CORES)
def test_node_taints_policy_honor_leaves_untolerated_nodes_out(core_type: type) -> None:
    core = core_type(seed=1)
    core.set_node(node("tainted", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]))
    core.set_node(node("n1"))
    core.add_pod(replica("old-0"), "n1")
    assert core.schedule(replica("w")).node is None  # Ignore (default): tainted's 0 is the minimum
    assert core.schedule(replica("w", constraint(nodeTaintsPolicy="Honor"))).node == "n1"


@pytest.mark.parametrize("core_type", CORES)
def test_match_label_keys_count_only_pods_of_the_same_revision(core_type: type) -> None:
    core = core_type(seed=1)
    core.set_node(node("n1"))
    core.set_node(node("n2"))
    core.add_pod(replica("old", labels={"app": "web", "pod-template-hash": "v1"}), "n1")
    by_rev = constraint(matchLabelKeys=["pod-template-hash"])
    v2 = [place(core, replica(f"v2-{i}", by_rev, labels={"app": "web", "pod-template-hash": "v2"})) for i in range(2)]
    assert sorted(v2) == ["n1", "n2"]  # the v1 Pod on n1 is not counted
    d = core.schedule(replica("web", labels={"app": "web", "pod-template-hash": "v1"}))
    assert d.node == "n2"  # without matchLabelKeys all three count: n1 has 2, n2 has 1


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_both_cores_agree_with_do_not_schedule_constraints(seed: int) -> None:
    rng = random.Random(seed)
    loop, vec = LoopCore(seed), VectorCore(seed)
    for i in range(10):
        labels = {"rack": f"r{i % 3}"} if rng.random() < 0.85 else {}
        if rng.random() < 0.7:
            labels[ZONE_KEY] = rng.choice(["z1", "z2", "z3"])
        n = node(f"n{i}", cpu=str(rng.choice([2, 4, 8])), labels=labels,
                 taints=[{"key": "t", "value": "x", "effect": "NoSchedule"}] if rng.random() < 0.2 else None)
        loop.set_node(n)
        vec.set_node(n)
    outcomes = set()
    for j in range(150):
        cons = [{"maxSkew": rng.choice([1, 1, 2]), "topologyKey": rng.choice(["rack", ZONE_KEY, HOSTNAME_KEY]),
                 "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": rng.choice(["a", "b"])}},
                 "nodeTaintsPolicy": rng.choice(["Honor", "Ignore"]),
                 "nodeAffinityPolicy": rng.choice(["Honor", "Ignore"])}
                for _ in range(rng.choice([0, 1, 1, 2]))]
        for c in cons:
            if rng.random() < 0.3:
                c["minDomains"] = rng.choice([2, 3, 4])
            if rng.random() < 0.3:
                c["matchLabelKeys"] = ["rev"]
        p = pod(f"p{j}", cpu=rng.choice(["100m", "500m", "1"]), memory="64Mi",
                node_selector={"rack": f"r{rng.randrange(3)}"} if rng.random() < 0.2 else None,
                tolerations=[{"key": "t", "operator": "Exists"}] if rng.random() < 0.3 else None)
        p["metadata"]["labels"] = {"app": rng.choice(["a", "b", "c"]), "rev": str(rng.randrange(2))}
        if cons:
            p["spec"]["topologySpreadConstraints"] = cons
        if rng.random() < 0.1:
            p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # counted for resources, not spread
        info = dataclasses.replace(PodInfo.from_pod(p), spread_filter=hard_constraints(p))
        a, b = loop.schedule(info), vec.schedule(info)
        assert a == b, j
        outcomes.add(a.node is None)
        for r, _ in a.reasons:
            outcomes.add(r)
        if a.node:
            loop.add_pod(info, a.node)
            vec.add_pod(info, a.node)
        if j % 13 == 5:
            uid = f"uid-default-p{rng.randrange(j + 1)}"
            loop.remove_pod(uid)
            vec.remove_pod(uid)
        if j == 70:
            loop.remove_node("n4")
            vec.remove_node("n4")
        if j == 100:
            back = node("n4", cpu="8", labels={ZONE_KEY: "z3", "rack": "r1"})
            loop.set_node(back)
            vec.set_node(back)
    # the run exercised both verdicts and both reasons
    assert {True, False, REASON_CONSTRAINTS_NOT_MATCH, REASON_NODE_LABEL_NOT_MATCH} <= outcomes


# ----- through the API server --------------------------------------------------------------

def deployment(name: str, replicas: int) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "topologySpreadConstraints": [constraint(app=name)],
                         "containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": "100m"}}}]}}}}


async def _until(cond: Any, what: str, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await cond():
        if loop.time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)


async def test_a_deployment_spreads_over_hostnames_and_a_cordoned_node_holds_its_last_replica() -> None:
    """maxSkew 1 over hostname with three Nodes, one cordoned: the cordoned Node still is a
    domain (with 0 Pods, nodeTaintsPolicy Ignore), so after one replica on each schedulable Node
    the third stays Pending with upstream's message until the Node is uncordoned."""
    async with local_cluster(install_crds=False) as cluster:
        client = cluster.client
        for n in (node("n0"), node("n1"), node("n2", unschedulable=True)):
            await client.create(n)
        sched = DefaultScheduler(cluster.new_client(), seed=1)
        mgr = Manager(cluster.new_client(), graceful_shutdown_timeout=2.0)
        setup(mgr, controllers=["deployment", "replicaset"])
        mgr_task = asyncio.create_task(mgr.start())
        await sched.start()
        try:
            await client.create(deployment("web", 3))

            async def pods() -> list[Obj]:
                return list((await client.list(POD, "default", label_selector="app=web")).items)

            async def two_bound_one_refused() -> bool:
                ps = await pods()
                conds = [c for p in ps for c in (p.get("status") or {}).get("conditions") or []
                         if c["type"] == "PodScheduled" and c["status"] == "False"]
                return len(ps) == 3 and sum(bool(p["spec"].get("nodeName")) for p in ps) == 2 and bool(conds)

            await _until(two_bound_one_refused, "two replicas bound, the third refused")
            ps = await pods()
            assert sorted(p["spec"]["nodeName"] for p in ps if p["spec"].get("nodeName")) == ["n0", "n1"]
            (pending,) = [p for p in ps if not p["spec"].get("nodeName")]
            (cond,) = [c for c in pending["status"]["conditions"] if c["type"] == "PodScheduled"]
            want = ("0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match pod topology "
                    "spread constraints. preemption: 0/3 nodes are available: 1 Preemption is not helpful for "
                    "scheduling, 2 No preemption victims found for incoming pod.")
            assert (cond["reason"], cond["message"]) == ("Unschedulable", want)

            async def event() -> bool:
                evs = (await client.list(EVENT, "default")).items
                return any(e["reason"] == "FailedScheduling" and e["type"] == "Warning" and e["message"] == want
                           and e["involvedObject"]["name"] == pending["metadata"]["name"] for e in evs)

            await _until(event, "FailedScheduling event")
            n2 = await client.get(NODE, "n2")
            n2["spec"]["unschedulable"] = False
            await client.update(n2)

            async def spread_one_each() -> bool:
                return sorted(p["spec"].get("nodeName") or "" for p in await pods()) == ["n0", "n1", "n2"]

            await _until(spread_one_each, "the third replica on the uncordoned Node")
            dep = await client.get(DEPLOYMENT, "web", "default")
            dep["spec"]["replicas"] = 5
            await client.update(dep)

            async def five_bound() -> bool:
                ps = await pods()
                return len(ps) == 5 and all(p["spec"].get("nodeName") for p in ps)

            await _until(five_bound, "five replicas bound")
            placed = [p["spec"]["nodeName"] for p in await pods()]
            per_node = sorted(placed.count(n) for n in ("n0", "n1", "n2"))
            assert per_node == [1, 2, 2]
        finally:
            await sched.stop()
            mgr.stop()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(mgr_task, 30)
