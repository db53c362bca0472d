"""allocate: ported from volcano pkg/scheduler/actions/allocate/allocate_test.go."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.testing.volcano import Case, node, plugin, pod, podgroup, queue, run_scenario

from .conftest import run_both, upstream_params

ORIGIN = "volcano pkg/scheduler/actions/allocate/allocate_test.go"

ALLOCATE_TIERS = [
    [
        plugin("gang", enableJobOrder=True, enableJobReady=True, enableJobPipelined=True, enableJobStarving=True),
        plugin("drf", enablePreemptable=True, enableJobOrder=True),
        plugin("proportion", enableQueueOrder=True, enableReclaimable=True, enabledAllocatable=True),
        plugin("predicates", enablePredicate=True),
        plugin("nodeorder", enableNodeOrder=True),
    ]
]

FAIR_SHARE_TIERS = [
    [
        plugin("drf", enablePreemptable=True, enableJobOrder=True),
        plugin("proportion", enableQueueOrder=True, enableReclaimable=True, enabledAllocatable=False),
        plugin("predicates", enablePredicate=True),
        plugin("nodeorder", enableNodeOrder=True),
    ]
]


def _alloc(name: str, objects: list, binds: dict, tiers: list = ALLOCATE_TIERS) -> Case:
    return Case(name, objects, ["allocate"], tiers, binds=binds)


CASES = [
    _alloc(
        "prepredicate failed: node selector does not match",
        [
            podgroup("pg1", min_member=1),
            pod("p1", group="pg1", requests="1,1G", role="master", node_selector={"nodeRole": "master"}),
            pod("p2", group="pg1", requests="1,1G", role="worker", node_selector={"nodeRole": "worker"}),
            node("n1", "2,4Gi,pods=10", labels={"nodeRole": "worker"}),
            queue("c1"),
        ],
        {"c1/p2": "n1"},
    ),
    _alloc(
        "prepredicate failed and tasks are not used up, continue on until min member meet",
        [
            podgroup("pg1", min_member=2, min_task_member={"master": 1, "worker": 1}),
            pod("p0", group="pg1", requests="1,1G", role="master", node_selector={"nodeRole": "master"}),
            pod("p1", group="pg1", requests="1,1G", role="master", node_selector={"nodeRole": "master"}),
            pod("p2", group="pg1", requests="1,1G", role="worker", node_selector={"nodeRole": "worker"}),
            pod("p3", group="pg1", requests="1,1G", role="worker", node_selector={"nodeRole": "worker"}),
            node("n1", "1,2Gi,pods=10", labels={"nodeRole": "master"}),
            node("n2", "1,2Gi,pods=10", labels={"nodeRole": "worker"}),
            queue("c1"),
        ],
        {"c1/p0": "n1", "c1/p2": "n2"},
    ),
    _alloc(
        "master's min member can not be allocated, break from allocating",
        [
            podgroup("pg1", min_member=2, min_task_member={"master": 2, "worker": 0}),
            pod("p0", group="pg1", requests="1,1G", role="master", node_selector={"nodeRole": "master"}),
            pod("p1", group="pg1", requests="1,1G", role="master", node_selector={"nodeRole": "master"}),
            pod("p2", group="pg1", requests="1,1G", role="worker", node_selector={"nodeRole": "worker"}),
            pod("p3", group="pg1", requests="1,1G", role="worker", node_selector={"nodeRole": "worker"}),
            node("n1", "1,2Gi,pods=10", labels={"nodeRole": "master"}),
            node("n2", "2,2Gi,pods=10", labels={"nodeRole": "worker"}),
            queue("c1"),
        ],
        {},
    ),
    _alloc(
        "one Job with two Pods on one node",
        [
            podgroup("pg1"),
            pod("p1", group="pg1", requests="1,1G"),
            pod("p2", group="pg1", requests="1,1G"),
            node("n1", "2,4Gi,pods=10"),
            queue("c1"),
        ],
        {"c1/p1": "n1", "c1/p2": "n1"},
    ),
    _alloc(
        "two Jobs on one node",
        [
            podgroup("pg1", namespace="c1", queue="c1"),
            podgroup("pg2", namespace="c2", queue="c2"),
            pod("pg1-p-1", namespace="c1", group="pg1", requests="1,1G"),
            pod("pg1-p-2", namespace="c1", group="pg1", requests="1,1G"),
            pod("pg2-p-1", namespace="c2", group="pg2", requests="1,1G"),
            pod("pg2-p-2", namespace="c2", group="pg2", requests="1,1G"),
            node("n1", "2,4G,pods=10"),
            queue("c1"),
            queue("c2"),
        ],
        {"c2/pg2-p-1": "n1", "c1/pg1-p-1": "n1"},
    ),
    _alloc(
        "high priority queue should not block others",
        [
            podgroup("pg1", queue="c1"),
            podgroup("pg2", queue="c2"),
            pod("p1", group="pg1", requests="3,1G"),
            pod("p2", group="pg2", requests="1,1G"),
            node("n1", "2,4G,pods=10"),
            queue("c1"),
            queue("c2"),
        ],
        {"c1/p2": "n1"},
    ),
    _alloc(
        "queue with low DRF share value has high priority, should allocate first",
        [
            podgroup("pg-small-1", namespace="ns-1", queue="q-1", phase="Running"),
            podgroup("pg-large-1", namespace="ns-1", queue="q-1"),
            podgroup("pg-large-2", namespace="ns-1", queue="q-2"),
            pod("pod-small-1", namespace="ns-1", group="pg-small-1", requests="1,1G", node="node-1", phase="Running"),
            pod("pod-large-1", namespace="ns-1", group="pg-large-1", requests="2,2G"),
            pod("pod-large-2", namespace="ns-1", group="pg-large-2", requests="3,2G"),
            node("node-1", "5,5G,pods=10"),
            queue("q-1"),
            queue("q-2"),
        ],
        {"ns-1/pod-large-2": "node-1"},
        FAIR_SHARE_TIERS,
    ),
    _alloc(
        "queue's DRF share value will be updated and its priority will change before it is put back into the priority queue",
        [
            podgroup("pg-small-1", namespace="ns-1", queue="q-1", phase="Running"),
            podgroup("pg-large-1", namespace="ns-1", queue="q-1"),
            podgroup("pg-small-2", namespace="ns-1", queue="q-2"),
            podgroup("pg-large-2", namespace="ns-1", queue="q-2"),
            pod("pod-small-1", namespace="ns-1", group="pg-small-1", requests="1,1G", node="node-1", phase="Running"),
            pod("pod-large-1", namespace="ns-1", group="pg-large-1", requests="2,2G"),
            pod("pod-large-2", namespace="ns-1", group="pg-large-2", requests="2,2G"),
            pod("pod-small-2", namespace="ns-1", group="pg-small-2", requests="1,1G"),
            node("node-1", "5,5G,pods=10"),
            queue("q-1"),
            queue("q-2"),
        ],
        {"ns-1/pod-large-1": "node-1", "ns-1/pod-large-2": "node-1"},
        FAIR_SHARE_TIERS,
    ),
    _alloc(
        "queue's one jobs has no pending tasks, should be put back to queues for next job",
        [
            podgroup("pg-1", namespace="ns-1", queue="q-1", phase="Running"),
            podgroup("pg-2", namespace="ns-1", queue="q-1"),
            pod("pod-1", namespace="ns-1", group="pg-1", requests="1,1G", node="node-1", phase="Running"),
            pod("pod-2", namespace="ns-1", group="pg-2", requests="2,2G"),
            node("node-1", "5,5G,pods=10"),
            queue("q-1"),
        ],
        {"ns-1/pod-2": "node-1"},
        FAIR_SHARE_TIERS,
    ),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, CASES))
def test_allocate_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def _deadlock_objects() -> list:
    objs = [node("n1", "2,4Gi,pods=10"), node("n2", "2,4Gi,pods=10"), queue("c1")]
    for g in ("pg1", "pg2"):
        objs.append(podgroup(g, min_member=3, phase="Pending"))
    for g in ("pg1", "pg2"):
        for i in range(3):
            objs.append(pod(f"{g}-p-{i}", group=g, requests="1,1Gi"))
    return objs


def test_two_gangs_of_three_on_four_slots_bind_exactly_one_gang() -> None:
    from pumice.scheduler.volcano import build_snapshot, default_conf, run_session

    res = run_session(build_snapshot(_deadlock_objects()), default_conf())
    groups = {k.split("/")[1].rsplit("-p-", 1)[0] for k in res.binds}
    assert len(res.binds) == 3
    assert len(groups) == 1
    loser = ({"pg1", "pg2"} - groups).pop()
    cond = res.pod_groups[f"c1/{loser}"]["conditions"][0]
    assert cond["type"] == "Unschedulable" and cond["reason"] == "NotEnoughResources"
    assert cond["message"].startswith("2/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable")


def test_deadlock_example_is_deterministic() -> None:
    from pumice.scheduler.volcano import build_snapshot, default_conf, run_session

    a = run_session(build_snapshot(_deadlock_objects()), default_conf())
    b = run_session(build_snapshot(_deadlock_objects()), default_conf())
    assert a.to_json() == b.to_json()


def test_1g_is_not_1gi_so_a_1gi_pod_does_not_fit_a_1g_node() -> None:
    objs = [node("n1", "2,1G,pods=10"), queue("c1"), podgroup("pg1", min_member=1), pod("p1", group="pg1", requests="1,1Gi")]
    res = run_scenario(objs, actions=["allocate"], tiers=[["gang", "predicates", "nodeorder"]])
    assert res.binds == {}
    assert "Insufficient memory" in res.fit_errors["c1/pg1"]


def test_every_pod_takes_one_pods_slot_on_its_node() -> None:
    objs = [node("n1", "8,8Gi,pods=2"), queue("c1"), podgroup("pg1")]
    objs += [pod(f"p{i}", group="pg1", requests="1,1Gi") for i in range(3)]
    res = run_scenario(objs, actions=["allocate"], tiers=ALLOCATE_TIERS)
    assert len(res.binds) == 2


def test_pending_pod_group_is_promoted_when_enqueue_is_not_configured() -> None:
    objs = [node("n1", "2,4Gi,pods=10"), queue("c1"), podgroup("pg1", min_member=1, phase="Pending"), pod("p1", group="pg1", requests="1,1G")]
    res = run_scenario(objs, actions=["allocate"], tiers=ALLOCATE_TIERS)
    assert res.binds == {"c1/p1": "n1"}


def test_unschedulable_pod_reports_upstream_fit_error() -> None:
    objs = [node("n1", "1,4Gi,pods=10"), node("n2", "1,4Gi,pods=10"), queue("c1"), podgroup("pg1", min_member=1), pod("p1", group="pg1", requests="2,1G")]
    res = run_scenario(objs, actions=["allocate"], tiers=ALLOCATE_TIERS)
    assert res.fit_errors["c1/pg1"] == (
        "pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable. "
        "Origin reason is p1: 0/2 nodes are unavailable: 2 Insufficient cpu."
    )
    assert res.unschedulable["c1/p1"] == ("Unschedulable", "0/2 nodes are unavailable: 2 Insufficient cpu.")


def test_vectorized_and_plain_paths_agree_on_a_larger_cluster() -> None:
    objs: list = [queue("c1"), queue("c2")]
    objs += [node(f"n{i:02d}", "4,8Gi,pods=8", labels={"zone": "a" if i % 2 else "b"}) for i in range(30)]
    for j in range(12):
        q = "c1" if j % 2 else "c2"
        objs.append(podgroup(f"pg{j}", min_member=3, queue=q))
        for k in range(4):
            sel = {"zone": "a"} if j % 3 == 0 else None
            objs.append(pod(f"pg{j}-p-{k}", group=f"pg{j}", requests="1500m,2Gi", node_selector=sel))
    from pumice.testing.volcano import run_scenario as rs

    tiers = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder", "binpack"]]
    a = rs(objs, actions=["allocate", "backfill"], tiers=tiers).to_json()
    b = rs(objs, actions=["allocate", "backfill"], tiers=tiers, vectorize=False).to_json()
    assert a == b
    assert len(a["binds"]) > 20
