"""nodeorder's ImageLocality, InterPodAffinity (preferred terms) and PodTopologySpread
(ScheduleAnyway) scores, with Kubernetes' formulas (pumice's own scenarios; the upstream
nodeorder cases are in test_fidelity.py). Scenario cases run twice, on the vectorised and the
plain path, and through ``pumice volcano session`` (``run_both``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.scheduler.volcano.api.node_info import NodeInfo
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.plugins._k8s_scores import (
    image_locality_scores,
    image_states,
    inter_pod_affinity_scores,
    normalized_image_name,
    pod_topology_spread_scores,
)
from pumice.testing.volcano import Case, node, plugin, pod, podgroup, queue, run_case

from .conftest import run_both

MB = 1024 * 1024
HOST = "kubernetes.io/hostname"
ALL_ZERO = {k: 0 for k in ("leastrequested.weight", "mostrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
                           "tainttoleration.weight", "podaffinity.weight", "podtopologyspread.weight", "imagelocality.weight")}


def case(name: str, objects: list[dict], binds: dict[str, str], **weights: int) -> Case:
    args = dict(ALL_ZERO, **{k.replace("_", ".", 1): v for k, v in weights.items()})
    tiers = [[plugin("gang", enableJobReady=True), plugin("nodeorder", args, enableNodeOrder=True)]]
    return Case(name, [queue("c1"), podgroup("pg1", queue="c1", min_member=0), *objects], ["allocate"], tiers, binds=binds)


def hosts(n: int, cpu: str = "4,8Gi,pods=10", **extra: dict[str, str]) -> list[dict]:
    return [node(f"n{i}", cpu, labels={HOST: f"n{i}", **extra.get(f"n{i}", {})}) for i in range(1, n + 1)]


def preferred(kind: str, weight: int, match: dict[str, str], key: str = HOST, **term: object) -> dict:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": {"labelSelector": {"matchLabels": match}, "topologyKey": key, **term}}]}}


def running(name: str, on: str, labels: dict[str, str], namespace: str = "c1", affinity: dict | None = None) -> dict:
    return pod(name, namespace=namespace, group="pg1" if namespace == "c1" else None, requests="1,1G", node=on,
               phase="Running", labels=labels, affinity=affinity)


CASES = [
    case("preferred pod affinity draws the Pod to the node of the matching Pod (not the first node)",
         [running("a", "n3", {"app": "db"}), running("noise", "n1", {"app": "web"}), pod("p", group="pg1", requests="1,1G", affinity=preferred("podAffinity", 50, {"app": "db"})), *hosts(3)],
         {"c1/p": "n3"}, podaffinity_weight=2),
    case("preferred pod anti-affinity keeps the Pod away from the matching Pods",
         [running("a1", "n1", {"app": "db"}), running("a2", "n2", {"app": "db"}), pod("p", group="pg1", requests="1,1G", affinity=preferred("podAntiAffinity", 50, {"app": "db"})), *hosts(3)],
         {"c1/p": "n3"}, podaffinity_weight=2),
    case("an existing Pod's preferred anti-affinity repels a matching incoming Pod (symmetry)",
         [running("lonely", "n1", {"app": "x"}, affinity=preferred("podAntiAffinity", 80, {"app": "web"})), running("other", "n2", {"app": "y"}), pod("p", group="pg1", requests="1,1G", labels={"app": "web"}), *hosts(2)],
         {"c1/p": "n2"}, podaffinity_weight=2),
    case("an affinity term matches only Pods in its namespaces",
         [running("elsewhere", "n1", {"app": "db"}, namespace="other"), running("here", "n2", {"app": "db"}), pod("p", group="pg1", requests="1,1G", affinity=preferred("podAffinity", 50, {"app": "db"})), *hosts(2)],
         {"c1/p": "n2"}, podaffinity_weight=2),
    case("a zone-level affinity term scores every node of the zone",
         [running("a", "n3", {"app": "db"}), pod("p", group="pg1", requests="3,1G", affinity=preferred("podAffinity", 50, {"app": "db"}, key="zone")), *hosts(4, n1={"zone": "a"}, n2={"zone": "a"}, n3={"zone": "b"}, n4={"zone": "b"})],
         {"c1/p": "n4"}, podaffinity_weight=2, leastrequested_weight=1),
    case("a gang with preferred anti-affinity to itself spreads over the hosts (in-session placements count)",
         [pod(f"g{i}", group="pg1", requests="1,1G", labels={"app": "g"}, affinity=preferred("podAntiAffinity", 100, {"app": "g"}))
          for i in range(3)] + hosts(3),
         {"c1/g0": "n1", "c1/g1": "n2", "c1/g2": "n3"}, podaffinity_weight=2),
    case("hostname spread: the Pod goes to the node with fewest matching Pods",
         [running("a1", "n1", {"app": "s"}), running("a2", "n2", {"app": "s"}), pod("p", group="pg1", requests="1,1G", labels={"app": "s"}), *hosts(3)],
         {"c1/p": "n3"}, podtopologyspread_weight=2),
    case("a node missing the topology key scores 0 for spread",
         [running("a1", "n1", {"app": "s"}), pod("p", group="pg1", requests="1,1G", labels={"app": "s"}), node("n1", "4,8Gi,pods=10", labels={"zone": "a"}), node("n2", "4,8Gi,pods=10"), node("n3", "4,8Gi,pods=10", labels={"zone": "b"})],
         {"c1/p": "n3"}, podtopologyspread_weight=2),
    case("image locality: the node that already holds the image wins",
         [pod("p", group="pg1", requests="1,1G"), node("n1", "4,8Gi,pods=10"), node("n2", "4,8Gi,pods=10")],
         {"c1/p": "n2"}, imagelocality_weight=1),
]
# the spread constraints and node images of the cases above
CASES[6].objects[-4]["spec"]["topologySpreadConstraints"] = [
    {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "s"}}}]
CASES[7].objects[-4]["spec"]["topologySpreadConstraints"] = [
    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "s"}}}]
CASES[8].objects[-1]["status"]["images"] = [{"names": ["busybox:latest", "docker.io/library/busybox:latest"], "sizeBytes": 500 * MB}]


@pytest.mark.parametrize("c", CASES, ids=str)
def test_cluster_scores(c: Case, tmp_path: Path) -> None:
    run_both(c, tmp_path)


def test_the_scores_change_placement_only_with_their_weight() -> None:
    # the anti-affinity case with podaffinity.weight 0: nothing scores, the first node wins
    off = case("off", CASES[1].objects[2:], {"c1/p": "n1"})
    assert run_case(off)["binds"] == {"c1/p": "n1"}


# ----- the formulas, number by number ----------------------------------------------------------
def _task(p: dict) -> TaskInfo:
    return TaskInfo.from_pod(p)


def _nodes(objs: list[dict]) -> list[NodeInfo]:
    return [NodeInfo.from_node(o) for o in objs]


def test_image_locality_numbers() -> None:
    n1, n2, n3 = _nodes([node("n1"), node("n2"), node("n3")])
    n2.node["status"]["images"] = [{"names": ["busybox:latest"], "sizeBytes": 500 * MB}]
    n3.node["status"]["images"] = [{"names": ["busybox:latest"], "sizeBytes": 500 * MB},
                                   {"names": ["init:1"], "sizeBytes": 2000 * MB}]
    states = image_states([n1, n2, n3])
    assert states["n2"]["busybox:latest"] == (500 * MB, 2)
    t = _task(pod("p", requests="1,1G"))
    got = image_locality_scores(t, [n1, n2, n3], states, 3)
    # 500 MiB x 2/3 nodes = 333.33 MiB -> 100 * (349525333 - 23 MiB) // (1000 MiB - 23 MiB) = 31
    assert got is not None and list(got) == [0, 31, 31]
    p = pod("q", requests="1,1G", init_requests="1,1G")
    p["spec"]["initContainers"][0]["image"] = "init:1"
    # two containers: max 2000 MiB; n3 holds both: 333.33 MiB + 2000 MiB x 1/3 = 1000 MiB
    got = image_locality_scores(_task(p), [n1, n2, n3], states, 3)
    assert got is not None and list(got) == [0, 15, 49]
    assert normalized_image_name("busybox") == "busybox:latest"
    assert normalized_image_name("registry:5000/busybox") == "registry:5000/busybox:latest"
    assert normalized_image_name("busybox:1.36") == "busybox:1.36"
    assert image_locality_scores(t, [n1], {}, 1) is None


def test_inter_pod_affinity_numbers() -> None:
    n1, n2, n3 = _nodes(hosts(3))
    for n, labels in ((n1, {"app": "db"}), (n2, {"app": "db"}), (n2, {"app": "db"})):
        t = _task(running(f"x{len(n.tasks)}{n.name}", n.name, labels))
        n.tasks[t.key] = t
    inc = _task(pod("p", requests="1,1G", affinity=preferred("podAffinity", 30, {"app": "db"})))
    # raw: n1 30, n2 60, n3 0 -> min-max onto 0..100
    got = inter_pod_affinity_scores(inc, [n1, n2, n3], [n1, n2, n3], {}, False)
    assert got is not None and list(got) == [50, 100, 0]
    plain = _task(pod("q", requests="1,1G"))
    assert inter_pod_affinity_scores(plain, [n1, n2, n3], [n1, n2, n3], {}, False) is None


def test_pod_topology_spread_numbers() -> None:
    n1, n2, n3 = _nodes(hosts(3, n1={"zone": "a"}, n2={"zone": "a"}, n3={"zone": "b"}))
    for i in range(3):
        t = _task(running(f"s{i}", "n1", {"app": "s"}))
        n1.tasks[t.key] = t
    p = pod("p", requests="1,1G", labels={"app": "s"})
    p["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "s"}}},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "s"}}}]
    # zone a holds 3, b 0; two domains: weight ln(4); raw a = round(3 ln 4 + 1) = 5, b = round(1) = 1
    # normalized: 100 * (5 + 1 - s) // 5 -> a 20, b 100
    got = pod_topology_spread_scores(_task(p), [n1, n2, n3], [n1, n2, n3])
    assert got is not None and list(got) == [20, 20, 100]
    p["spec"]["topologySpreadConstraints"] = p["spec"]["topologySpreadConstraints"][1:]
    assert pod_topology_spread_scores(_task(p), [n1, n2, n3], [n1, n2, n3]) is None
