"""Fidelity to the newest Volcano (ed72c7c8, Kubernetes 1.36 vendored): node scores read the
Kubernetes node view (Pipelined Pods, BestEffort non-zero requests), BalancedAllocation rates
the improvement in balance, capacity reclaim walks victims in victim-priority order; and the
upstream nodeorder cases."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.conf import build_conf
from pumice.scheduler.volcano.framework import RecordingCache, Statement, open_session
from pumice.scheduler.volcano.plugins.nodeorder import NodeOrderArgs, balanced_score, resource_scores
from pumice.testing.volcano import Case, node, plugin, pod, podgroup, queue, taint

from .conftest import run_both, upstream_params

GI = 1024**3
DEFAULT_TIERS = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder"]]


def test_balanced_allocation_scores_the_improvement_in_balance() -> None:
    alloc_cpu, alloc_mem = np.array([4000.0]), np.array([4.0 * GI])
    # without the Pod: 1000m/3Gi of 4/4Gi -> fractions .25/.75, std .25, balance 75;
    # with 1000m more: .5/.75, std .125, balance 87 -> 50 + (50 + 87 - 75) // 2 = 81
    got = balanced_score(1000.0, 0.0, np.array([1000.0]), np.array([3.0 * GI]), alloc_cpu, alloc_mem)
    assert got.tolist() == [81.0]
    # a Pod that makes the node less balanced scores below 75
    worse = balanced_score(0.0, 1.0 * GI, np.array([1000.0]), np.array([3.0 * GI]), alloc_cpu, alloc_mem)
    assert worse.tolist() == [50 + (50 + 62 - 75) // 2]


def test_a_node_without_allocatable_memory_is_balanced_on_cpu_alone() -> None:
    got = balanced_score(1000.0, 1.0 * GI, np.array([0.0]), np.array([0.0]), np.array([4000.0]), np.array([0.0]))
    assert got.tolist() == [75.0]


def _kube_scores(task_req: tuple[float, float], nz: tuple[float, float], used: tuple[float, float],
                 cap: tuple[float, float], least: int, most: int, bal: int) -> float:
    """One node's Least/Most/Balanced sum, node by node as kube writes it (floats, floor/trunc)."""
    u = (used[0] + nz[0], used[1] + nz[1])

    def frac(x: float, c: float) -> float:
        return min(x / c, 1.0)

    def balance(a: float, b: float) -> float:
        std = abs(frac(a, cap[0]) - frac(b, cap[1])) / 2 if cap[0] > 0 and cap[1] > 0 else 0.0
        return math.trunc((1 - std) * 100)

    ls = [0.0 if x > c or c <= 0 else math.floor((c - x) * 100 / c) for x, c in zip(u, cap, strict=True)]
    ms = [0.0 if c <= 0 else math.floor(min(x, c) * 100 / c) for x, c in zip(u, cap, strict=True)]
    total = math.floor((ls[0] + ls[1]) / 2) * least + math.floor((ms[0] + ms[1]) / 2) * most
    if bal and (task_req[0] > 0 or task_req[1] > 0):
        b0 = balance(used[0], used[1])
        b1 = balance(used[0] + task_req[0], used[1] + task_req[1])
        total += (50 + math.trunc((50 + b1 - b0) / 2)) * bal
    return total


@pytest.mark.parametrize("with_empty_node", [False, True])
@pytest.mark.parametrize("weights", [(1, 0, 1), (3, 2, 2)])
def test_vectorized_resource_scores_equal_kube_node_by_node(with_empty_node: bool, weights: tuple[int, int, int]) -> None:
    """resource_scores over arrays (its shortcut when every node has cpu and memory, and its
    general path when one has none) gives each node's kube score exactly."""
    rng = np.random.default_rng(5)
    n = 40
    cap = np.column_stack([rng.choice([4000.0, 64000.0, 96000.0], n), rng.choice([8.0 * GI, 512.0 * GI], n)])
    if with_empty_node:
        cap[3] = (0.0, 0.0)
        cap[7, 1] = 0.0
    used = np.floor(cap * rng.random((n, 2)) * 1.2)
    args = NodeOrderArgs(least_requested=weights[0], most_requested=weights[1], balanced_resource=weights[2])
    for req in ((4000.0, 32.0 * GI), (0.0, 0.0), (100.0, 0.0)):
        nz = (max(req[0], 100.0), max(req[1], 200.0 * 2**20))
        task = SimpleNamespace(nonzero_request=nz, resreq=Resource(*req))
        got = resource_scores(args, task, used, used, cap[:, 0], cap[:, 1])  # type: ignore[arg-type]
        want = [_kube_scores(req, nz, (used[i, 0], used[i, 1]), (cap[i, 0], cap[i, 1]), *weights) for i in range(n)]
        assert got.tolist() == want


def test_a_pipelined_pod_counts_in_the_node_view_the_scores_read() -> None:
    objs = [node("n1", "4,8Gi,pods=10"), node("n2", "4,8Gi,pods=10"), queue("q1"), podgroup("pg", queue="q1", min_member=1)]
    objs += [pod("a", group="pg", requests="2,4Gi"), pod("b", group="pg", requests="1,1Gi")]
    for vectorize in (True, False):
        ssn = open_session(build_snapshot(objs), build_conf(["allocate"], [["nodeorder"]]), RecordingCache(), vectorize=vectorize)
        a, b = (ssn.jobs["c1/pg"].tasks[f"c1-{n}"] for n in ("a", "b"))
        before = ssn.prioritize(b, ssn.node_list)
        assert before[0] == before[1]
        Statement(ssn).pipeline(a, "n1")
        after = ssn.prioritize(b, ssn.node_list)
        assert after[1] > after[0], (vectorize, after)


@pytest.mark.parametrize("vectorize", [True, False])
def test_best_effort_pods_count_as_100m_200mi_so_a_best_effort_gang_spreads(vectorize: bool) -> None:
    objs = [node(f"n{i}", "4,8Gi,pods=10") for i in range(1, 7)]
    objs += [queue("q1"), podgroup("be", queue="q1", min_member=2)]
    objs += [pod(f"be-{i}", group="be") for i in range(2)]
    conf = build_conf(["enqueue", "allocate", "backfill"], DEFAULT_TIERS)
    cache = RecordingCache()
    ssn = open_session(build_snapshot(objs), conf, cache, vectorize=vectorize)
    from pumice.scheduler.volcano.framework import run_actions

    run_actions(ssn, conf.actions)
    assert cache.binds == {"c1/be-0": "n1", "c1/be-1": "n2"}


CASES = [
    Case(
        "best-effort gang of 2 on 6 empty nodes is spread, as Volcano's non-zero requests spread it",
        [*(node(f"n{i}", "4,8Gi,pods=10") for i in range(1, 7)), queue("q1"), podgroup("be", queue="q1", min_member=2),
         pod("be-0", group="be"), pod("be-1", group="be")],
        ["enqueue", "allocate", "backfill"],
        DEFAULT_TIERS,
        binds={"c1/be-0": "n1", "c1/be-1": "n2"},
    ),
    Case(
        "capacity reclaim takes the newest replica of the over-deserved job, not the first on the node",
        [
            node("n1", "2,4Gi,pods=10"),
            queue("q1", deserved="1,2Gi", reclaimable=True),
            queue("q2", deserved="1,2Gi"),
            podgroup("old", queue="q1", min_member=1, phase="Running"),
            pod("old-first", group="old", requests="1,1Gi", node="n1", phase="Running", created="2024-01-01T00:00:00Z"),
            pod("old-second", group="old", requests="1,1Gi", node="n1", phase="Running", created="2024-01-01T00:05:00Z"),
            podgroup("new", queue="q2", min_member=1, phase="Inqueue"),
            pod("new-0", group="new", requests="1,1Gi"),
        ],
        ["reclaim"],
        [[plugin("gang", enableJobStarving=True), plugin("capacity", enableReclaimable=True, enablePreemptive=True, enableQueueOrder=True),
          plugin("predicates", enablePredicate=True)]],
        evictions=["c1/old-second"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_fidelity_scenarios(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


# ----- upstream nodeorder cases ---------------------------------------------------------------
ORIGIN = "volcano pkg/scheduler/plugins/nodeorder/nodeorder_test.go"
WEIGHT_KEYS = {
    "least": "leastrequested.weight",
    "most": "mostrequested.weight",
    "balanced": "balancedresource.weight",
    "affinity": "nodeaffinity.weight",
    "taint": "tainttoleration.weight",
    "pod_affinity": "podaffinity.weight",
    "spread": "podtopologyspread.weight",
    "image": "imagelocality.weight",
}


def spread(p: dict, *constraints: dict) -> dict:
    """``p`` with ``spec.topologySpreadConstraints`` (upstream BuildPodWithTopologySpreadConstraints)."""
    p["spec"]["topologySpreadConstraints"] = list(constraints)
    return p


def nodeorder_case(name: str, objects: list, binds: dict[str, str], **weights: int) -> Case:
    args = {k: 0 for k in ("leastrequested.weight", "mostrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
                           "tainttoleration.weight", "podaffinity.weight", "podtopologyspread.weight", "imagelocality.weight")}
    args.update({WEIGHT_KEYS[k]: v for k, v in weights.items()})
    tiers = [[plugin("gang", enableJobReady=True), plugin("nodeorder", args, enableNodeOrder=True)]]
    base = [queue("c1"), podgroup("pg1", queue="c1", min_member=0, phase="Inqueue")]
    return Case(name, base + objects, ["allocate"], tiers, binds=binds)


ZONE1 = {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone1"]}]}}]}
NODEORDER = [
    nodeorder_case("leastAllocated strategy", [pod("p1", group="pg1", requests="1,1G"), node("n1", "2,4Gi,pods=10"),
                                               node("n2", "4,8Gi,pods=10")], {"c1/p1": "n2"}, least=1),
    nodeorder_case("mostAllocated strategy", [pod("p1", group="pg1", requests="1,1G"), node("n1", "2,4Gi,pods=10"),
                                              node("n2", "4,8Gi,pods=10")], {"c1/p1": "n1"}, most=1),
    nodeorder_case("balanced allocation prefers balanced node", [pod("p1", group="pg1", requests="1,1Gi"),
                   node("n1", "2,2Gi,pods=10"), node("n2", "4,2Gi,pods=10")], {"c1/p1": "n1"}, balanced=10),
    nodeorder_case("node affinity prefers labeled node", [pod("p1", group="pg1", requests="1,1G", affinity={"nodeAffinity": ZONE1}),
                   node("n1", "2,4Gi,pods=10", labels={"zone": "zone1"}), node("n2", "2,4Gi,pods=10", labels={"zone": "zone2"})],
                   {"c1/p1": "n1"}, affinity=10),
    nodeorder_case("taint toleration prefers non-tainted node", [pod("p1", group="pg1", requests="1,1G"), node("n1", "2,4Gi,pods=10"),
                   node("n2", "2,4Gi,pods=10", taints=[taint("key1", "value1", "PreferNoSchedule")])], {"c1/p1": "n1"}, taint=10),
    nodeorder_case("inter-pod affinity prefers node with matching pod", [
        pod("p1", group="pg1", requests="1,1G", node="n1", phase="Running", labels={"service": "s1"}),
        pod("p-noise", group="pg1", requests="1,1G", node="n3", phase="Running", labels={"service": "s2"}),
        pod("p2", group="pg1", requests="1,1G", affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"service": "s1"}},
                                                "topologyKey": "kubernetes.io/hostname"}}]}}),
        *(node(f"n{i}", "2,4Gi,pods=10", labels={"kubernetes.io/hostname": f"n{i}"}) for i in (1, 2, 3))],
        {"c1/p2": "n1"}, pod_affinity=10),
    nodeorder_case("pod topology spread prefers node to reduce skew", [
        pod("p1", group="pg1", requests="1,1G", node="n1", phase="Running", labels={"app": "foo"}),
        pod("p2", group="pg1", requests="1,1G", node="n1", phase="Running", labels={"app": "foo"}),
        pod("p3", group="pg1", requests="1,1G", node="n2", phase="Running", labels={"app": "foo"}),
        spread(pod("p4", group="pg1", requests="1,1G", labels={"app": "foo"}),
               {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "foo"}}}),
        *(node(f"n{i}", "4,4Gi,pods=10", labels={"zone": f"zone{i}"}) for i in (1, 2, 3))],
        {"c1/p4": "n3"}, spread=10),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, NODEORDER))
def test_upstream_nodeorder(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)
