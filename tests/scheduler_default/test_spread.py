"""PodTopologySpread in the default scheduler: Kubernetes' system-default constraints (hostname
maxSkew 3, zone maxSkew 5, ScheduleAnyway) for Pods a Service, ReplicationController, ReplicaSet
or StatefulSet selects, and a Pod's own ScheduleAnyway constraints."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from typing import Any

import pytest

from pumice.api import scheme
from pumice.api.selectors import from_label_selector
from pumice.scheduler.default.core import LoopCore
from pumice.scheduler.default.podinfo import PodInfo
from pumice.scheduler.default.scheduler import DefaultScheduler
from pumice.scheduler.default.spread import (
    HOSTNAME_KEY,
    ZONE_KEY,
    SpreadNode,
    default_selector,
    soft_constraints,
    spread_scores,
)
from pumice.scheduler.default.vector import VectorCore
from pumice.testing.cluster import local_cluster

from .builders import node, pod


def labelled(name: str, labels: dict[str, str], *, owner: tuple[str, str, str] | None = None, **kw: Any) -> dict:
    p = pod(name, **kw)
    p["metadata"]["labels"] = labels
    if owner:
        p["metadata"]["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2],
                                              "uid": f"uid-{owner[2]}", "controller": True}]
    return p


def service(name: str, selector: dict[str, str] | None) -> dict:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


# ----- which Pods get the system defaults, with which selector --------------------------------

def test_the_default_selector_merges_every_service_that_selects_the_pod() -> None:
    p = labelled("p", {"app": "web", "tier": "front"})
    sel = default_selector(p, [service("a", {"app": "web"}), service("b", {"tier": "front"}),
                               service("other", {"app": "db"}), service("headless", None)], None)
    assert str(sel) == "app=web,tier=front"


def test_a_service_without_a_selector_selects_nothing_and_no_selector_means_no_default_constraints() -> None:
    p = labelled("p", {"app": "web"})
    assert default_selector(p, [service("headless", None)], None).empty
    assert soft_constraints(p, default_selector(p, [service("headless", None)], None)) is None


def test_a_replicaset_controller_adds_its_selector_to_the_services() -> None:
    p = labelled("p", {"app": "web", "pod-template-hash": "abc"}, owner=("apps/v1", "ReplicaSet", "web-abc"))
    rs = {"spec": {"selector": {"matchLabels": {"pod-template-hash": "abc"},
                                "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}}}
    sel = default_selector(p, [service("s", {"app": "web"})], rs)
    assert sel.matches({"app": "web", "pod-template-hash": "abc"})
    assert not sel.matches({"app": "web", "pod-template-hash": "other"})
    assert not sel.matches({"pod-template-hash": "abc"})


def test_a_replicationcontroller_selector_is_a_plain_map_merged_with_the_services() -> None:
    p = labelled("p", {"app": "web", "rc": "one"}, owner=("v1", "ReplicationController", "one"))
    sel = default_selector(p, [], {"spec": {"selector": {"rc": "one"}}})
    assert str(sel) == "rc=one"


def test_an_owner_that_is_not_a_controller_of_a_selecting_kind_adds_nothing() -> None:
    p = labelled("p", {"app": "web"}, owner=("batch/v1", "Job", "j"))
    assert default_selector(p, [], {"spec": {"selector": {"matchLabels": {"app": "web"}}}}).empty


def test_the_system_defaults_are_hostname_3_and_zone_5_schedule_anyway() -> None:
    p = labelled("p", {"app": "web"})
    spread = soft_constraints(p, default_selector(p, [service("s", {"app": "web"})], None))
    assert spread is not None and spread.system_defaulted
    assert [(c.topology_key, c.max_skew, c.node_affinity_policy, c.node_taints_policy) for c in spread.constraints] == [
        (HOSTNAME_KEY, 3, "Honor", "Ignore"), (ZONE_KEY, 5, "Honor", "Ignore")]


def test_a_pod_with_its_own_constraints_gets_no_defaults_and_only_its_schedule_anyway_ones_score() -> None:
    p = labelled("p", {"app": "web", "rev": "7"})
    p["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}},
        {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["rev"]}]
    spread = soft_constraints(p, default_selector(p, [service("s", {"app": "web"})], None))
    assert spread is not None and not spread.system_defaulted
    (c,) = spread.constraints
    assert (c.topology_key, c.max_skew, str(c.selector)) == ("rack", 2, "rev=7,app=web")
    p["spec"]["topologySpreadConstraints"] = p["spec"]["topologySpreadConstraints"][:1]
    assert soft_constraints(p, from_label_selector({"matchLabels": {"app": "web"}})) is None


# ----- the score ------------------------------------------------------------------------------

def _node(name: str, zone: str | None, pods: int, **kw: Any) -> SpreadNode:
    labels = {HOSTNAME_KEY: name, **({ZONE_KEY: zone} if zone else {})}
    return SpreadNode(name, labels, kw.get("affinity_ok", True), kw.get("taints_ok", True), [{"app": "web"}] * pods)


def test_scores_follow_upstream_arithmetic() -> None:
    p = labelled("p", {"app": "web"})
    spread = soft_constraints(p, default_selector(p, [service("s", {"app": "web"})], None))
    assert spread is not None
    a, b, c = _node("a", "z1", 2), _node("b", "z2", 0), _node("c", "z2", 1)
    # hostname weight log(3+2), zone weight log(2+2); a: 2*1.609+2 + 2*1.386+4 = 11.99 -> 12;
    # b: 0+2 + 1*1.386+4 = 7.39 -> 7; c: 1.609+2 + 1.386+4 = 9.0 -> 9; 100*(12+7-s)/12
    assert spread_scores(spread, [a, b, c], [a, b, c]) == [58, 100, 83]


def test_a_node_without_a_zone_label_still_gets_its_hostname_score_under_system_defaults() -> None:
    p = labelled("p", {"app": "web"})
    spread = soft_constraints(p, default_selector(p, [service("s", {"app": "web"})], None))
    assert spread is not None
    a, b = _node("a", None, 3), _node("b", None, 0)
    # the zone constraint adds nothing where the label is missing: a: 3*log(2+2)+2 = 6.2 -> 6, b: 2
    assert spread_scores(spread, [a, b], [a, b]) == [33, 100]


def test_pods_on_nodes_the_pod_may_not_go_to_by_affinity_do_not_count_for_the_zone() -> None:
    p = labelled("p", {"app": "web"})
    spread = soft_constraints(p, default_selector(p, [service("s", {"app": "web"})], None))
    assert spread is not None
    a, b = _node("a", "z1", 0), _node("b", "z2", 0)
    excluded = _node("x", "z1", 5, affinity_ok=False)
    assert spread_scores(spread, [a, b], [a, b, excluded]) == [100, 100]
    counted = _node("x", "z1", 5)
    assert spread_scores(spread, [a, b], [a, b, counted])[0] < 100


# ----- placement ----------------------------------------------------------------------------

def _cluster(core: Any) -> None:
    core.set_node(node("big", cpu="16", memory="32Gi", labels={ZONE_KEY: "z1"}))
    core.set_node(node("small", cpu="4", memory="8Gi", labels={ZONE_KEY: "z2"}))


def _with_default_spread(p: dict, services: list[dict]) -> PodInfo:
    return dataclasses.replace(PodInfo.from_pod(p), spread=soft_constraints(p, default_selector(p, services, None)))


@pytest.mark.parametrize("core_type", [LoopCore, VectorCore])
def test_spreading_sends_a_service_pod_away_from_the_node_its_siblings_are_on(core_type: type) -> None:
    """Without spreading, LeastAllocated keeps choosing the big node; the default constraints
    send the third replica of a Service to the other node and zone."""
    svc = [service("web", {"app": "web"})]
    core = core_type(seed=1)
    _cluster(core)
    for i in range(2):
        core.add_pod(PodInfo.from_pod(labelled(f"web-{i}", {"app": "web"}, cpu="100m", memory="128Mi")), "big")
    third = labelled("web-2", {"app": "web"}, cpu="100m", memory="128Mi")
    assert core.schedule(PodInfo.from_pod(third)).node == "big"  # scored without spread
    assert core.schedule(_with_default_spread(third, svc)).node == "small"
    lone = labelled("batch-0", {"app": "batch"}, cpu="100m", memory="128Mi")  # no Service selects it
    assert _with_default_spread(lone, svc).spread is None
    assert core.schedule(_with_default_spread(lone, svc)).node == "big"


@pytest.mark.parametrize("seed", [4, 5, 6, 7])
def test_both_cores_agree_with_spreading(seed: int) -> None:
    rng = random.Random(seed)
    loop, vec = LoopCore(seed), VectorCore(seed)
    for i in range(12):
        labels = {ZONE_KEY: rng.choice(["z1", "z2", "z3"])} if rng.random() < 0.8 else {}
        n = node(f"n{i}", cpu=str(rng.choice([2, 4, 8])), labels={**labels, "rack": str(i % 3)},
                 taints=[{"key": "t", "value": "x", "effect": "NoSchedule"}] if rng.random() < 0.2 else None)
        loop.set_node(n)
        vec.set_node(n)
    svcs = [service("a", {"app": "a"}), service("b", {"app": "b"})]
    for j in range(120):
        p = labelled(f"p{j}", {"app": rng.choice(["a", "b", "c"]), "rev": str(rng.randrange(2))},
                     cpu=rng.choice(["100m", "250m"]), memory="64Mi")
        if rng.random() < 0.3:
            p["spec"]["topologySpreadConstraints"] = [
                {"maxSkew": rng.choice([1, 2]), "topologyKey": rng.choice(["rack", ZONE_KEY]),
                 "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "a"}},
                 "nodeTaintsPolicy": rng.choice(["Honor", "Ignore"]), "matchLabelKeys": ["rev"]}]
        if rng.random() < 0.2:
            p["spec"]["nodeSelector"] = {"rack": str(rng.randrange(3))}
        if rng.random() < 0.1:
            p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # counted for resources, not spread
        info = _with_default_spread(p, svcs)
        a, b = loop.schedule(info), vec.schedule(info)
        assert a == b, j
        if a.node:
            loop.add_pod(info, a.node)
            vec.add_pod(info, a.node)
        if j % 17 == 3:  # a Pod goes away
            uid = f"uid-default-p{rng.randrange(j + 1)}"
            loop.remove_pod(uid)
            vec.remove_pod(uid)
        if j % 23 == 7 and a.node:  # a Pod's labels change (re-added under the same uid)
            relabelled = dataclasses.replace(info, labels={"app": rng.choice(["a", "b"])})
            loop.add_pod(relabelled, a.node)
            vec.add_pod(relabelled, a.node)
        if j == 60:
            loop.remove_node("n3")
            vec.remove_node("n3")
        if j == 90:
            back = node("n3", cpu="8", labels={ZONE_KEY: "z1", "rack": "0"})
            loop.set_node(back)
            vec.set_node(back)


async def test_the_scheduler_spreads_a_service_s_pods_across_nodes_it_reads_from_the_api() -> None:
    async with local_cluster(install_crds=False) as cluster:
        client = cluster.client
        for n in (node("big", cpu="16", memory="32Gi", labels={ZONE_KEY: "z1"}),
                  node("small", cpu="4", memory="8Gi", labels={ZONE_KEY: "z2"})):
            await client.create(n)
        await client.create(service("web", {"app": "web"}))
        for i in range(2):
            p = labelled(f"web-{i}", {"app": "web"}, cpu="100m", memory="128Mi", node_name="big")
            p["metadata"].pop("uid")
            await client.create(p)
        sched = DefaultScheduler(cluster.new_client(), seed=1)
        await sched.start()
        try:
            for name, app in (("web-2", "web"), ("batch-0", "batch")):
                p = labelled(name, {"app": app}, cpu="100m", memory="128Mi")
                p["metadata"].pop("uid")
                await client.create(p)
            placed: dict[str, str] = {}
            for _ in range(200):
                for name in ("web-2", "batch-0"):
                    got = await client.get(scheme.POD, name, "default")
                    if got["spec"].get("nodeName"):
                        placed[name] = got["spec"]["nodeName"]
                if len(placed) == 2:
                    break
                await asyncio.sleep(0.05)
            assert placed == {"web-2": "small", "batch-0": "big"}
        finally:
            await sched.stop()
