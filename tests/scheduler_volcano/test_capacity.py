"""capacity: ported from volcano pkg/scheduler/plugins/capacity/capacity_test.go
(Test_capacityPlugin_OnSessionOpenWithoutHierarchy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.testing.volcano import Case, node, plugin, pod, podgroup, queue

from .conftest import run_both, upstream_params

ORIGIN = "volcano pkg/scheduler/plugins/capacity/capacity_test.go"

TIERS = [
    [
        plugin("capacity", enabledAllocatable=True, enablePreemptive=True, enableReclaimable=True, enableQueueOrder=True),
        plugin("predicates", enablePredicate=True),
        plugin("gang", enableJobStarving=True),
    ]
]


def run(name: str, group: str, req: str, n: str, *, preemptable: bool | None = None) -> dict:
    return pod(name, namespace="ns1", group=group, requests=req, node=n, phase="Running", preemptable=preemptable)


def pend(name: str, group: str, req: str, **kw) -> dict:
    return pod(name, namespace="ns1", group=group, requests=req, **kw)


def pg(name: str, q: str, phase: str) -> dict:
    return podgroup(name, namespace="ns1", queue=q, min_member=1, phase=phase)


def q(name: str, deserved: str | None, capability: str | None, **kw) -> dict:
    return queue(name, deserved=deserved, capability=capability, **kw)


N1 = node("n1", "2,4Gi,pods=10", labels={"selector": "worker"})
N2 = node("n2", "2,4Gi,pods=10")
N3 = node("n3", "2,4Gi,nvidia.com/A100=10,pods=10", labels={"selector": "worker"})
N4 = node("n4", "2,4Gi,nvidia.com/A100=10,pods=10")
N5, N6 = node("n5", "2,4Gi,pods=10"), node("n6", "2,4Gi,pods=10")
N7 = node("n7", "4,8Gi,nvidia.com/gpu=4,pods=10")
N8 = node("n8", "4,8Gi,nvidia.com/gpu=1,pods=10")
N9, N10 = node("n9", "8,100Gi,pods=10"), node("n10", "8,100Gi,pods=10")


def c(name: str, objects: list, **expect) -> Case:
    return Case(name, objects, ["allocate", "reclaim"], TIERS, **expect)


CASES = [
    c(
        "case0: Pod allocatable when queue has not exceed capability",
        [N1, N2, run("p1", "pg1", "1,1Gi", "n1"), pend("p2", "pg2", "1,1Gi", node_selector={"selector": "worker"}),
         pg("pg1", "q1", "Running"), pg("pg2", "q1", "Inqueue"), q("q1", None, "2,2Gi")],
        binds={"ns1/p2": "n1"},
    ),
    c(
        "case1: Pod not allocatable when queue exceed queue capability",
        [N1, N2, run("p3", "pg3", "1,1Gi", "n1"), pend("p4", "pg4", "1,1Gi"),
         pg("pg3", "q2", "Running"), pg("pg4", "q2", "Inqueue"), q("q2", None, "1.5,1.5Gi")],
        binds={},
    ),
    c(
        "case2: Can reclaim from other queues when allocated < deserved",
        [N1, N2, run("p5", "pg5", "2,4Gi", "n1", preemptable=False), run("p6", "pg5", "2,4Gi", "n2"), pend("p7", "pg6", "2,4Gi"),
         pg("pg5", "q3", "Running"), pg("pg6", "q4", "Inqueue"), q("q3", "2,4Gi", None), q("q4", "2,4Gi", None)],
        pipelined={"ns1/pg6": ["n2"]},
        evictions=["ns1/p6"],
    ),
    c(
        "case3: CPU & Memory are overused, scalar resource is not overused, but candidate pod has not request CPU & Memory, reclaim should happen",
        [N3, N4,
         run("p8", "pg7", "0,0Gi,nvidia.com/A100=10", "n3", preemptable=False), run("p9", "pg7", "0,0Gi,nvidia.com/A100=10", "n4"),
         run("p10", "pg8", "2,4Gi", "n3"), run("p11", "pg8", "2,4Gi", "n4"), pend("p12", "pg9", "0,0Gi,nvidia.com/A100=10"),
         pg("pg7", "q5", "Running"), pg("pg8", "q6", "Running"), pg("pg9", "q6", "Inqueue"),
         q("q5", "2,4Gi,nvidia.com/A100=10", None), q("q6", "2,4Gi,nvidia.com/A100=10", None)],
        pipelined={"ns1/pg9": ["n4"]},
        evictions=["ns1/p9"],
    ),
    c(
        "case4: Pods are assigned according to the order of Queue Priority in which PGs are placed",
        [N5, N6, run("p13", "pg10", "2,4Gi", "n5"), pend("p14", "pg11", "2,4Gi"), pend("p15", "pg12", "2,4Gi"),
         pg("pg10", "q7", "Running"), pg("pg11", "q8", "Inqueue"), pg("pg12", "q9", "Inqueue"),
         q("q7", None, "2,4Gi", priority=5), q("q8", None, "2,4Gi", priority=1), q("q9", None, "2,4Gi", priority=10)],
        binds={"ns1/p15": "n6"},
    ),
    c(
        "case5: Can reclaim from other queues when allocated + req <= deserved on one dimension",
        [N1, run("p16", "pg16", "1,3Gi", "n1"), pend("p17", "pg17", "1,1Gi"), run("p18", "pg18", "1,1Gi", "n1"),
         pg("pg16", "q10", "Running"), pg("pg17", "q10", "Inqueue"), pg("pg18", "q11", "Running"),
         q("q10", "2,2Gi", "4,4Gi"), q("q11", "0,0Gi", "2,2Gi")],
        pipelined={"ns1/pg17": ["n1"]},
        evictions=["ns1/p18"],
    ),
    c(
        "case6: Can not reclaim from other queues when allocated + req > deserved",
        [N1, run("p19", "pg19", "1,1Gi", "n1"), pend("p20", "pg20", "1,2Gi"), run("p21", "pg21", "1,1Gi", "n1"),
         pg("pg19", "q12", "Running"), pg("pg20", "q12", "Inqueue"), pg("pg21", "q13", "Running"),
         q("q12", "1,2Gi", "4,4Gi"), q("q13", "0,0Gi", "2,2Gi")],
        evictions=[],
    ),
    c(
        "case7: allocated does not contain scalar dimension (GPU), deserved does; should not reclaim",
        [N7, run("p22", "pg22", "2,4Gi", "n7"), run("p23", "pg23", "0,0Gi,nvidia.com/gpu=1", "n7"),
         run("p24", "pg24", "2,1Gi,nvidia.com/gpu=1", "n7"), pend("p25", "pg25", "2,3Gi,nvidia.com/gpu=1"),
         pg("pg22", "queue14", "Running"), pg("pg23", "queue15", "Running"), pg("pg24", "queue16", "Running"), pg("pg25", "queue16", "Inqueue"),
         q("queue14", "2,4Gi,nvidia.com/gpu=2", None), q("queue15", None, None), q("queue16", "2,4Gi,nvidia.com/gpu=2", None)],
        evictions=[],
    ),
    c(
        "case8: reclaimer dimensions are considered properly while evicting reclaimees",
        [N8, run("p26", "pg26", "0,4Gi", "n8"), run("p27", "pg27", "1,0Gi", "n8"), run("p28", "pg28", "0,0Gi,nvidia.com/gpu=1", "n8"),
         run("p29", "pg29", "2,4Gi", "n8"), pend("p30", "pg30", "1,0Gi,nvidia.com/gpu=1"),
         pg("pg26", "queue17", "Running"), pg("pg27", "queue17", "Running"), pg("pg28", "queue17", "Running"),
         pg("pg29", "queue18", "Running"), pg("pg30", "queue18", "Inqueue"),
         q("queue17", "2,2Gi", None), q("queue18", "2,4Gi,nvidia.com/gpu=1", None)],
        pipelined={"ns1/pg30": ["n8"]},
        evictions=["ns1/p28"],
    ),
    c(
        "case9: reclaimee has intersecting scalar dimensions with deserved shouldn't be reclaimed on cpu/memory",
        [N8, run("p31", "pg31", "4,4Gi,nvidia.com/gpu=1", "n8"), pend("p32", "pg32", "1,1Gi"),
         pg("pg31", "queue19", "Running"), pg("pg32", "queue20", "Inqueue"),
         q("queue19", "nvidia.com/gpu=1", None), q("queue20", "2,2Gi", None)],
        evictions=[],
    ),
    c(
        "case10: PreemptiveFn respects capability — no reclaim when futureUsed would exceed capability",
        [N9, N10, run("p33", "pg33", "7,90Gi", "n9"), pend("p34", "pg34", "2,5Gi"), run("p35", "pg35", "2,5Gi", "n10"),
         pg("pg33", "queue21", "Running"), pg("pg34", "queue21", "Inqueue"), pg("pg35", "queue22", "Running"),
         q("queue21", "8,100Gi", "8,100Gi"), q("queue22", None, "2,5Gi")],
        evictions=[],
    ),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, CASES))
def test_capacity_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)
