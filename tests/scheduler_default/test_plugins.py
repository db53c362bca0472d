"""Filters, scores and the FitError message of the default scheduler, on pure values."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pumice.scheduler.default import plugins
from pumice.scheduler.default.core import LoopCore
from pumice.scheduler.default.podinfo import NodeInfo, PodInfo
from pumice.scheduler.default.resources import pod_nonzero_requests, pod_requests
from pumice.scheduler.default.vector import VectorCore

from .builders import node, pod


def info(**kw: object) -> PodInfo:
    return PodInfo.from_pod(pod("p", **kw))  # type: ignore[arg-type]


def test_pod_requests_take_the_larger_of_containers_and_the_biggest_init_container() -> None:
    p = pod("p", cpu="500m", memory="1Gi", init=[{"cpu": "2"}, {"memory": "512Mi"}])
    assert pod_requests(p) == {"cpu": 2000, "memory": 2**30}


def test_pod_overhead_is_added_to_requests() -> None:
    p = pod("p", cpu="1", overhead={"cpu": "250m", "memory": "64Mi"})
    assert pod_requests(p) == {"cpu": 1250, "memory": 64 * 2**20}


def test_sidecar_init_containers_add_to_the_running_containers() -> None:
    p = pod("p", cpu="1")
    p["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "1200m"}}},
    ]
    # init step: 500m sidecar + 1200m = 1700m; steady state: 1 + 500m = 1500m
    assert pod_requests(p)["cpu"] == 1700


def test_missing_requests_count_as_100m_and_200mi_for_scoring_only() -> None:
    p = pod("p")
    assert pod_requests(p) == {}
    assert pod_nonzero_requests(p) == (100, 200 * 2**20)


def test_resource_fit_reports_every_short_resource_in_upstream_order() -> None:
    n = NodeInfo.from_node(node("n", cpu="1", memory="1Gi", pods=0))
    assert plugins.node_resources_fit(info(cpu="2", memory="2Gi"), n) == [
        "Too many pods", "Insufficient cpu", "Insufficient memory"]


def test_extended_resources_must_be_allocatable() -> None:
    gpu = NodeInfo.from_node(node("g", extra={"nvidia.com/gpu": "2"}))
    plain = NodeInfo.from_node(node("c"))
    want = info(cpu="1", extra={"nvidia.com/gpu": "1"})
    assert plugins.node_resources_fit(want, gpu) == []
    assert plugins.node_resources_fit(want, plain) == ["Insufficient nvidia.com/gpu"]


@pytest.mark.parametrize(("op", "values", "label", "fits"), [
    ("In", ["a", "b"], "a", True),
    ("In", ["b"], "a", False),
    ("NotIn", ["b"], "a", True),
    ("NotIn", ["a"], None, True),
    ("Exists", [], "a", True),
    ("Exists", [], None, False),
    ("DoesNotExist", [], None, True),
    ("Gt", ["3"], "5", True),
    ("Gt", ["5"], "5", False),
    ("Lt", ["5"], "3", True),
    ("Lt", ["5"], "x", False),
])
def test_required_node_affinity_operators(op: str, values: list[str], label: str | None, fits: bool) -> None:
    n = NodeInfo.from_node(node("n", labels={"k": label} if label is not None else {}))
    p = info(affinity_terms=[[{"key": "k", "operator": op, "values": values}]])
    assert (plugins.node_affinity(p, n) == []) is fits


def test_node_selector_and_affinity_terms_are_ored_across_terms() -> None:
    n = NodeInfo.from_node(node("n", labels={"zone": "a"}))
    p = info(affinity_terms=[[{"key": "zone", "operator": "In", "values": ["b"]}],
                             [{"key": "zone", "operator": "In", "values": ["a"]}]])
    assert plugins.node_affinity(p, n) == []
    assert plugins.node_affinity(info(node_selector={"zone": "b"}), n) == [plugins.REASON_NODE_AFFINITY]


def test_untolerated_noschedule_taint_is_named_in_the_reason() -> None:
    n = NodeInfo.from_node(node("n", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))
    assert plugins.taint_toleration(info(), n) == ["node(s) had untolerated taint {dedicated: gpu}"]
    tolerant = info(tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
    assert plugins.taint_toleration(tolerant, n) == []


def test_prefer_no_schedule_only_lowers_the_score() -> None:
    tainted = NodeInfo.from_node(node("t", taints=[{"key": "x", "value": "", "effect": "PreferNoSchedule"}]))
    p = info(cpu="1")
    assert plugins.run_filters(p, tainted) == []
    assert plugins.intolerable_prefer_no_schedule(p, tainted) == 1
    assert plugins.normalize_reverse([1, 0]) == [0, 100]


def test_not_ready_node_is_filtered_as_tainted_not_ready() -> None:
    n = NodeInfo.from_node(node("n", ready="False"))
    assert plugins.run_filters(info(), n) == ["node(s) had untolerated taint {node.kubernetes.io/not-ready: }"]


def test_unschedulable_node_is_filtered_unless_tolerated() -> None:
    n = NodeInfo.from_node(node("n", unschedulable=True))
    assert plugins.run_filters(info(), n) == [plugins.REASON_UNSCHEDULABLE]
    tol = info(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}])
    assert plugins.run_filters(tol, n) == []


def test_host_port_conflicts_only_with_overlapping_ip() -> None:
    n = NodeInfo.from_node(node("n"))
    n.add_pod(info(host_port=8080))
    assert plugins.node_ports(info(host_port=8080), n) == [plugins.REASON_NODE_PORTS]
    assert plugins.node_ports(info(host_port=8081), n) == []


def test_least_allocated_and_balanced_scores_follow_upstream_arithmetic() -> None:
    n = NodeInfo.from_node(node("n", cpu="4", memory="8Gi"))
    p = info(cpu="1", memory="2Gi")
    # cpu (4000-1000)*100/4000 = 75, memory 75 -> 75
    assert plugins.least_allocated(p, n) == 75
    # fractions 0.25 and 0.25 -> std 0 -> 100
    assert plugins.balanced_allocation(p, n) == 100
    skewed = info(cpu="2", memory="1Gi")
    # fractions 0.5, 0.125 -> std 0.1875 -> 81
    assert plugins.balanced_allocation(skewed, n) == 81


def test_fit_error_message_has_the_upstream_form() -> None:
    msg = plugins.fit_error_message(
        3, Counter({"Insufficient cpu": 2, "node(s) had untolerated taint {node-role: master}": 1}), 1)
    assert msg == ("0/3 nodes are available: 1 node(s) had untolerated taint {node-role: master}, "
                   "2 Insufficient cpu. preemption: 0/3 nodes are available: "
                   "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.")


def test_a_pod_that_fits_nowhere_gets_the_histogram_of_reasons() -> None:
    core = VectorCore()
    core.set_node(node("a", cpu="1"))
    core.set_node(node("b", cpu="1"))
    core.set_node(node("c", cpu="8", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]))
    d = core.schedule(info(cpu="2"))
    assert d.node is None
    assert d.message == ("0/3 nodes are available: 1 node(s) had untolerated taint {gpu: true}, "
                         "2 Insufficient cpu. preemption: 0/3 nodes are available: "
                         "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.")


def test_no_nodes_message() -> None:
    assert VectorCore().schedule(info()).message == "no nodes available to schedule pods"


def test_assumed_pods_count_against_their_node_so_nothing_is_double_booked() -> None:
    core = VectorCore()
    core.set_node(node("a", cpu="1"))
    first = PodInfo.from_pod(pod("p1", cpu="1"))
    d = core.schedule(first)
    assert d.node == "a"
    core.add_pod(first, "a")
    assert core.schedule(PodInfo.from_pod(pod("p2", cpu="1"))).node is None
    core.remove_pod(first.uid)
    assert core.schedule(PodInfo.from_pod(pod("p2", cpu="1"))).node == "a"


def test_least_allocated_spreads_pods() -> None:
    core = VectorCore()
    core.set_node(node("a", cpu="4"))
    core.set_node(node("b", cpu="4"))
    placed = Counter()
    for i in range(4):
        p = PodInfo.from_pod(pod(f"p{i}", cpu="1", memory="1Gi"))
        d = core.schedule(p)
        assert d.node
        core.add_pod(p, d.node)
        placed[d.node] += 1
    assert placed == Counter({"a": 2, "b": 2})


def _random_cluster(rng: random.Random) -> list[dict[str, object]]:
    out = []
    for i in range(30):
        taints = []
        if rng.random() < 0.2:
            taints.append({"key": "dedicated", "value": rng.choice(["gpu", "db"]),
                           "effect": rng.choice(["NoSchedule", "PreferNoSchedule"])})
        out.append(node(f"n{i}", cpu=str(rng.choice([2, 4, 8])), memory=rng.choice(["4Gi", "8Gi"]),
                        pods=rng.choice([3, 110]), labels={"zone": rng.choice("abc"), "rank": str(rng.randrange(10))},
                        taints=taints, unschedulable=rng.random() < 0.05, ready=rng.choice(["True"] * 9 + ["False"]),
                        extra={"nvidia.com/gpu": "2"} if rng.random() < 0.3 else None))
    return out


def _random_pod(j: int, rng: random.Random) -> PodInfo:
    kw: dict[str, object] = {}
    if rng.random() < 0.3:
        kw["node_selector"] = {"zone": rng.choice("abcd")}
    if rng.random() < 0.2:
        kw["affinity_terms"] = [[{"key": "rank", "operator": rng.choice(["Gt", "Lt", "NotIn"]),
                                  "values": [str(rng.randrange(10))]}]]
    if rng.random() < 0.2:
        kw["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if rng.random() < 0.1:
        kw["host_port"] = rng.choice([80, 443])
    if rng.random() < 0.1:
        kw["extra"] = {"nvidia.com/gpu": "1"}
    return PodInfo.from_pod(pod(f"p{j}", cpu=rng.choice([None, "100m", "500m", "1"]),
                                memory=rng.choice([None, "256Mi", "1Gi"]), **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorized_core_answers_exactly_like_the_plain_loop(seed: int) -> None:
    rng = random.Random(seed)
    loop, vec = LoopCore(seed), VectorCore(seed)
    for n in _random_cluster(rng):
        loop.set_node(n)
        vec.set_node(n)
    for j in range(300):
        p = _random_pod(j, rng)
        a, b = loop.schedule(p), vec.schedule(p)
        assert a == b
        if a.node:
            loop.add_pod(p, a.node)
            vec.add_pod(p, a.node)
        if j % 37 == 5:
            loop.remove_node("n3")
            vec.remove_node("n3")
        if rng.random() < 0.1:
            uid = f"uid-default-p{rng.randrange(j + 1)}"
            loop.remove_pod(uid)
            vec.remove_pod(uid)


def test_same_seed_same_placements() -> None:
    def run() -> list[str | None]:
        core = VectorCore(seed=5)
        for i in range(10):
            core.set_node(node(f"n{i}"))
        out = []
        for j in range(20):
            p = PodInfo.from_pod(pod(f"p{j}", cpu="100m"))
            d = core.schedule(p)
            out.append(d.node)
            if d.node:
                core.add_pod(p, d.node)
        return out

    assert run() == run()


def test_a_node_with_a_quantity_beyond_int64_saturates_as_quantity_milli_value() -> None:
    """trial-10 F-9: ``cpu: 1e400`` broke the node table (OverflowError). kube-scheduler holds
    allocatable as Quantity.MilliValue()/Value(), which saturate at the int64 maximum."""
    huge = node("big", cpu="1e400", memory="1e400")
    for core in (VectorCore(), LoopCore()):
        core.set_node(huge)
        core.set_node(node("small", cpu="1"))
        p = PodInfo.from_pod(pod("p", cpu="2", memory="1Gi"))
        d = core.schedule(p)
        assert d.node == "big"
        core.add_pod(p, "big")
        # a request beyond int64 too: the saturated amounts compare, nothing overflows
        assert core.schedule(PodInfo.from_pod(pod("q", cpu="1e400"))).node is None
    assert pod_requests(pod("p", cpu="1e400", overhead={"cpu": "1e400"})) == {"cpu": 2**63 - 1}
