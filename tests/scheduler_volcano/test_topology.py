"""Network-topology-aware scheduling: HyperNode trees, hard and soft ``networkTopology``, the
gradient search, the HyperNode and node scores, ``volcano.sh/job-allocated-hypernode``.

The ``upstream`` cases port volcano pkg/scheduler/actions/allocate/allocate_test.go
TestAllocateWithNetWorkTopologies (plugins predicates, gang, network-topology-aware; one tier);
the rest are pumice's own scenarios. Every case runs twice, on the vectorised and the plain
path, and through ``pumice volcano session`` (``run_both``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pumice.scheduler.volcano.api.hyper_node_info import CLUSTER_TOP_HYPERNODE, build_hypernodes
from pumice.testing.volcano import Case, hypernode, node, plugin, pod, podgroup, queue, run_case

from .conftest import run_both, upstream_params

ORIGIN = "volcano pkg/scheduler/actions/allocate/allocate_test.go TestAllocateWithNetWorkTopologies"
UPSTREAM_TIERS = [[
    plugin("predicates", enablePredicate=True),
    plugin("gang", enableJobReady=True, enableJobPipelined=True),
    plugin("network-topology-aware", enabledHyperNodeOrder=True, enabledHyperNodeGradient=True, enableNodeOrder=True),
]]
TIERS = [["priority", "gang", "conformance"],
         ["drf", "predicates", "proportion", "nodeorder", "network-topology-aware"]]
N = "2,4Gi,pods=10"


def two_leaves(tier_of_leaves: int = 1) -> list[dict]:
    """s0 = {s0-n1, s0-n2}, s1 = {s1-n3, s1-n4} under s2."""
    return [
        node("s0-n1", N), node("s0-n2", N), node("s1-n3", N), node("s1-n4", N),
        hypernode("s0", tier_of_leaves, nodes=["s0-n1", "s0-n2"]),
        hypernode("s1", tier_of_leaves, nodes=["s1-n3", "s1-n4"]),
        hypernode("s2", tier_of_leaves + 1, hypernodes=["s0", "s1"]),
    ]


def three_tiers() -> list[dict]:
    out = [node(f"s{i}-n{j}", N) for i in (3, 4, 5, 6) for j in (1, 2)]
    out += [hypernode(f"s{i}", 1, nodes=[f"s{i}-n1", f"s{i}-n2"]) for i in (3, 4, 5, 6)]
    out += [hypernode("s1", 2, hypernodes=["s3", "s4"]), hypernode("s2", 2, hypernodes=["s5", "s6"]),
            hypernode("s0", 3, hypernodes=["s1", "s2"])]
    return out


def pg(min_member: int, mode: str, tier: int | None, allocated: str | None = None) -> dict:
    return podgroup("pg1", queue="q1", min_member=min_member, topology=mode, tier=tier, allocated_hypernode=allocated)


def p(name: str, role: str, *, node_name: str = "", selector: dict | None = None) -> dict:
    return pod(name, group="pg1", requests="2,4G", role=role, node=node_name, phase="Running" if node_name else "Pending",
               node_selector=selector)


def upstream_case(name: str, objects: list[dict], *, binds: int, bind_map: dict[str, str] | None = None) -> Case:
    c = Case(name, [queue("q1"), *objects], ["allocate"], UPSTREAM_TIERS, binds=bind_map)
    c.bind_num = binds  # type: ignore[attr-defined]
    return c


THREE = [p("p1", "master"), p("p2", "worker"), p("p3", "worker")]
UPSTREAM = [
    upstream_case("soft network topology constrain, can allocate job when resources are enough",
                  [pg(3, "soft", 0), *THREE, *two_leaves(0)], binds=3),
    upstream_case("soft network topology constrain, can allocate job when minavailable < replicas",
                  [pg(1, "soft", 0), p("p1", "master"), p("p2", "worker"), *two_leaves()], binds=2),
    upstream_case("soft network topology constrain, two available hyperNodes, can allocate job to nodes with affinity",
                  [pg(1, "soft", 0), p("p1", "master", selector={"nodeRole": "master"}),
                   node("s0-n1", N), node("s1-n2", N, labels={"nodeRole": "master"}),
                   hypernode("s0", 0, nodes=["s0-n1"]), hypernode("s1", 0, nodes=["s1-n2"])],
                  binds=1, bind_map={"c1/p1": "s1-n2"}),
    upstream_case("soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough",
                  [pg(2, "soft", 0, "s0"), p("p1", "master", node_name="s0-n1"), p("p2", "worker", node_name="s0-n2"),
                   p("p3", "worker"), *two_leaves()], binds=1),
    upstream_case("soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough "
                  "and minavailable = replicas",
                  [pg(3, "soft", 0, "s0"), p("p1", "master", node_name="s0-n1"), p("p2", "worker", node_name="s0-n2"),
                   p("p3", "worker"), *two_leaves()], binds=1),
    upstream_case("soft network topology constrain and tasks in job rescheduled, can allocate job when cross "
                  "highestTierAllowed tier and hyperNodesInfo has three tier",
                  [pg(2, "soft", 0, "s3"), p("p1", "master", node_name="s3-n1"), p("p2", "worker", node_name="s3-n2"),
                   p("p3", "worker"), *three_tiers()], binds=1),
    upstream_case("hard network topology constrain, can not allocate job when cross highestTierAllowed tier",
                  [pg(3, "hard", 1), *THREE, *two_leaves()], binds=0),
    upstream_case("hard network topology constrain, can allocate job when highestTierAllowed not reached",
                  [pg(3, "hard", 2), *THREE, *two_leaves()], binds=3),
    upstream_case("hard network topology constrain, can allocate job when multi hyperNodes are available",
                  [pg(2, "hard", 1), p("p1", "master"), p("p2", "worker"), *two_leaves()], binds=2),
    upstream_case("hard network topology constrain, can allocate job when minavailable < replicas",
                  [pg(1, "hard", 1), p("p1", "master"), p("p2", "worker"), *two_leaves()], binds=2),
    upstream_case("hard network topology constrain, two available hyperNodes, can allocate job to nodes with affinity",
                  [pg(1, "hard", 1), p("p1", "master", selector={"nodeRole": "master"}),
                   node("s0-n1", N), node("s1-n2", N, labels={"nodeRole": "master"}),
                   hypernode("s0", 1, nodes=["s0-n1"]), hypernode("s1", 1, nodes=["s1-n2"])],
                  binds=1, bind_map={"c1/p1": "s1-n2"}),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, UPSTREAM))
def test_upstream_network_topology_allocate(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)
    assert len(run_case(case)["binds"]) == case.bind_num  # type: ignore[attr-defined]


# ----- pumice's own scenarios ------------------------------------------------------------------
def rack_cluster(busy_node: str | None = "n0") -> list[dict]:
    """8 nodes of 4 cpu: leaves s0..s3 (2 nodes each, tier 1), spines p0 = {s0, s1}, p1 = {s2, s3}
    (tier 2, tierName spine); optionally a 2-cpu Pod running on ``busy_node``."""
    out = [queue("q1"), *(node(f"n{i}", "4,8Gi,pods=10") for i in range(8))]
    out += [hypernode(f"s{i}", 1, nodes=[f"n{2 * i}", f"n{2 * i + 1}"], tier_name="leaf") for i in range(4)]
    out += [hypernode("p0", 2, hypernodes=["s0", "s1"], tier_name="spine"),
            hypernode("p1", 2, hypernodes=["s2", "s3"], tier_name="spine")]
    if busy_node:
        out += [podgroup("busy", queue="q1", min_member=1, phase="Running"),
                pod("busy-0", group="busy", requests="2,2Gi", node=busy_node, phase="Running")]
    return out


def gang(name: str, n: int, cpu: str, **topology: object) -> list[dict]:
    return [podgroup(name, queue="q1", min_member=n, min_resources=f"{n * int(cpu)},{n}Gi", **topology),  # type: ignore[arg-type]
            *(pod(f"{name}-{i}", group=name, requests=f"{cpu},1Gi") for i in range(n))]


OWN = [
    Case("a hard tier-2 gang of four full nodes lands in the spine whose idle holds it",
         [*rack_cluster(), *gang("topo", 4, "4", topology="hard", tier=2)], ["enqueue", "allocate"], TIERS,
         binds={"c1/topo-0": "n4", "c1/topo-1": "n5", "c1/topo-2": "n6", "c1/topo-3": "n7"}),
    Case("a hard tier-1 gang packs into the leaf already in use (HyperNode binpack)",
         [*rack_cluster(), *gang("small", 2, "2", topology="hard", tier=1)], ["enqueue", "allocate"], TIERS,
         binds={"c1/small-0": "n1", "c1/small-1": "n1"}),
    Case("a hard gang that no HyperNode within its tier can hold waits",
         [*rack_cluster(), *gang("wide", 3, "4", topology="hard", tier=1)], ["enqueue", "allocate"], TIERS, binds={}),
    Case("highestTierName names the tier by the HyperNodes' tierName",
         [*rack_cluster(), *gang("named", 3, "4", topology="hard", tier_name="spine")], ["enqueue", "allocate"], TIERS,
         binds={"c1/named-0": "n1", "c1/named-1": "n2", "c1/named-2": "n3"}),
    Case("a soft gang stays inside one leaf when one can hold it, where least-allocated would spread it",
         [*rack_cluster(None), *gang("soft", 2, "1", topology="soft")], ["enqueue", "allocate"], TIERS,
         binds={"c1/soft-0": "n0", "c1/soft-1": "n1"}),
    Case("a soft gang too big for any spine still runs across the cluster",
         [*rack_cluster(None), *gang("huge", 6, "4", topology="soft")], ["enqueue", "allocate"], TIERS,
         binds={f"c1/huge-{i}": f"n{i}" for i in range(6)}),
    # the HyperNode score counts the whole job's request: s2 (holding grow-0) would overflow, s3 not
    Case("a job already placed grows only under the highest ancestor its tier allows (spine p1)",
         [*rack_cluster(None),
          podgroup("grow", queue="q1", min_member=1, phase="Running", topology="hard", tier=2, allocated_hypernode="s2"),
          pod("grow-0", group="grow", requests="4,1Gi", node="n4", phase="Running"),
          pod("grow-1", group="grow", requests="4,1Gi")],
         ["allocate"], TIERS, binds={"c1/grow-1": "n6"}),
]


@pytest.mark.parametrize("case", OWN, ids=str)
def test_topology_scenarios(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_the_allocated_hypernode_is_written_as_the_podgroup_annotation() -> None:
    from pumice.testing.volcano import run_scenario

    res = run_scenario([*rack_cluster(), *gang("topo", 4, "4", topology="hard", tier=2), *gang("small", 2, "2", topology="hard", tier=1)],
                       actions=["enqueue", "allocate"], tiers=TIERS)
    assert res.close is not None
    assert res.close.pod_group_annotations == {
        "c1/topo": {"volcano.sh/job-allocated-hypernode": "p1"},
        "c1/small": {"volcano.sh/job-allocated-hypernode": "s0"},
    }


def test_a_running_topology_job_without_the_annotation_recovers_it_from_its_pods() -> None:
    from pumice.testing.volcano import run_scenario

    objs = [*rack_cluster(None), podgroup("r", queue="q1", min_member=2, phase="Running", topology="hard", tier=2),
            pod("r-0", group="r", requests="1,1Gi", node="n2", phase="Running"),
            pod("r-1", group="r", requests="1,1Gi", node="n3", phase="Running")]
    res = run_scenario(objs, actions=["allocate"], tiers=TIERS)
    assert res.close is not None and res.close.pod_group_annotations == {"c1/r": {"volcano.sh/job-allocated-hypernode": "s1"}}


# ----- the tree ---------------------------------------------------------------------------------
def test_tree_resolves_exact_regex_and_label_members_and_adds_the_virtual_root() -> None:
    objs = [hypernode("a", 1, nodes=["n0"], regex="^r1-"), hypernode("b", 1, labels_match={"rack": "b"}),
            hypernode("top", 2, hypernodes=["a", "b"])]
    labels = {"n0": {}, "r1-x": {}, "r1-y": {}, "z": {"rack": "b"}, "w": {}}
    t = build_hypernodes(objs, list(labels), labels)
    assert t["a"].nodes == ["n0", "r1-x", "r1-y"]
    assert t["b"].nodes == ["z"]
    assert t["top"].nodes == ["n0", "r1-x", "r1-y", "z"]
    assert t.root.tier == 3 and t.root.children == ["top"] and t.root.nodes == list(labels)
    assert t.lca("a", "b") == "top" and t.lca("a", "") == "a"
    assert t.leaf_of("z") == "b" and t.leaf_of("w") == ""
    assert t.lowest_containing(["r1-x", "z"]) == "top"
    assert t.lowest_containing(["w"]) == CLUSTER_TOP_HYPERNODE
    assert t.tier_names == {}


def test_a_hypernode_claimed_by_a_second_parent_keeps_its_first() -> None:
    objs = [hypernode("leaf", 1, nodes=["n0"]), hypernode("p1", 2, hypernodes=["leaf"]), hypernode("p2", 2, hypernodes=["leaf"])]
    t = build_hypernodes(objs, ["n0"], {"n0": {}})
    assert t["leaf"].parent == "p1"
    assert t["p2"].nodes == [] and t["p1"].nodes == ["n0"]


def test_explain_names_the_tier_a_hard_topology_job_waits_for() -> None:
    from pumice.scheduler.volcano.conf import build_conf
    from pumice.scheduler.volcano.explain import explain

    objs = [*rack_cluster(), *gang("wide", 3, "4", topology="hard", tier=1)]
    ex = explain(objs, "podgroup", "wide", "c1", build_conf(["enqueue", "allocate", "backfill"], TIERS))
    assert ex.gate == "topology"
    # trial-13 F-7: a leaf of two 4-cpu Nodes never holds three 4-cpu Pods, whatever is free
    assert ex.reason == ("networkTopology is hard with highestTierAllowed 1: the gang (3 Pods of cpu 4, memory 1Gi) must "
                         "fit in one HyperNode of tier 1 or lower, and none can ever hold it: the largest, s0 (tier 1), "
                         "holds 2 of them even when empty")
    assert ex.remedy == "highestTierAllowed is raised to 2"
    assert ex.details[-1].startswith("waiting for tier 1: HyperNodes of tier <= 1: s0 cpu 6, memory 14Gi, s1 cpu 8")


def test_explain_asks_for_free_room_only_where_a_hypernode_could_hold_the_gang() -> None:
    """The leaves could hold a gang of two 4-cpu Pods once free: room is the remedy there (the
    wider tier, whose HyperNodes also hold the gang Node by Node, stays offered)."""
    from pumice.scheduler.volcano.conf import build_conf
    from pumice.scheduler.volcano.explain import explain

    busy = [pod(f"busy-{i}", group="busy", requests="2,2Gi", node=f"n{i}", phase="Running") for i in range(1, 8)]
    objs = [*rack_cluster(), *busy, *gang("pair", 2, "4", topology="hard", tier=1)]
    ex = explain(objs, "podgroup", "pair", "c1", build_conf(["enqueue", "allocate", "backfill"], TIERS))
    assert ex.gate == "topology", ex.render()
    assert "none has room" in ex.reason and "can ever" not in ex.reason, ex.render()
    assert ex.remedy == ("one HyperNode of tier 1 or lower has cpu 8, memory 2Gi free, or highestTierAllowed is raised "
                         "to 2"), ex.render()


# ----- upstream TestNodeLevelScoreWithNetWorkTopologies / TestHyperNodeBinpackWithNetWorkTopologies ----
SCORE_ORIGIN = "volcano pkg/scheduler/actions/allocate/allocate_test.go"
GANG_ALL = plugin("gang", enableJobOrder=True, enableJobReady=True, enableJobPipelined=True, enableJobStarving=True)
NTA = plugin("network-topology-aware", enableNodeOrder=True, enabledHyperNodeOrder=True, enabledHyperNodeGradient=True)


@pytest.mark.upstream(f"{SCORE_ORIGIN} TestNodeLevelScoreWithNetWorkTopologies: hard network topology constrain, allocate job to "
                      "highest score hypeNode with node level binpack")
def test_upstream_node_level_binpack_picks_the_busy_hypernode(tmp_path: Path) -> None:
    objs = [queue("q1"),
            podgroup("pg1", queue="q1", min_member=2, topology="hard", tier=1, allocated_hypernode=""),
            podgroup("pg2", queue="q1", min_member=2, phase="Running"),
            pod("p1", group="pg1", requests="2,4Gi", role="master"), pod("p2", group="pg1", requests="4,8Gi", role="worker"),
            pod("p3", group="pg2", requests="2,4Gi", role="master", node="s0-n1", phase="Running"),
            pod("p4", group="pg2", requests="4,8Gi", role="worker", node="s0-n2", phase="Running"),
            node("s0-n1", "4,8Gi,pods=10"), node("s0-n2", "8,16Gi,pods=10"),
            node("s1-n3", "4,8Gi,pods=10"), node("s1-n4", "8,16Gi,pods=10"),
            hypernode("s0", 1, nodes=["s0-n1", "s0-n2"]), hypernode("s1", 1, nodes=["s1-n3", "s1-n4"]),
            hypernode("s2", 2, hypernodes=["s0", "s1"])]
    tiers = [[GANG_ALL, plugin("predicates", enablePredicate=True), plugin("binpack", enableNodeOrder=True), NTA]]
    run_both(Case("node level binpack", objs, ["allocate"], tiers, binds={"c1/p1": "s0-n1", "c1/p2": "s0-n2"}), tmp_path)


@pytest.mark.upstream(f"{SCORE_ORIGIN} TestHyperNodeBinpackWithNetWorkTopologies: hard network topology constrain, allocate task "
                      "to node under LCAHyperNode")
def test_upstream_hypernode_binpack_fills_two_leaves(tmp_path: Path) -> None:
    objs = [queue("q1"), podgroup("pg1", queue="q1", min_member=4, topology="hard", tier=2, allocated_hypernode=""),
            *(pod(f"p{i}", group="pg1", requests="4,8Gi", role="master" if i == 1 else "worker") for i in range(1, 5)),
            *(node(f"s{(i - 1) // 2}-n{i}", "4,8Gi,pods=10") for i in range(1, 7)),
            hypernode("s0", 1, nodes=["s0-n1", "s0-n2"]), hypernode("s1", 1, nodes=["s1-n3", "s1-n4"]),
            hypernode("s2", 1, nodes=["s2-n5", "s2-n6"]), hypernode("s3", 2, hypernodes=["s0", "s1", "s2"])]
    tiers = [[GANG_ALL, plugin("predicates", enablePredicate=True), NTA]]
    c = Case("hypernode binpack", objs, ["allocate"], tiers)
    run_both(c, tmp_path)
    binds = run_case(c)["binds"]
    per_leaf = Counter(n.split("-")[0] for n in binds.values())
    assert len(binds) == 4 and sorted(per_leaf.values()) == [2, 2], binds
