"""capacity with hierarchy: ported from volcano pkg/scheduler/plugins/capacity/capacity_test.go
(Test_capacityPlugin_OnSessionOpenWithHierarchy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.testing.volcano import Case, node, plugin, pod, podgroup, queue

from .conftest import run_both, upstream_params

ORIGIN = "volcano pkg/scheduler/plugins/capacity/capacity_test.go"
TIERS = [
    [
        plugin("capacity", enabledAllocatable=True, enablePreemptive=True, enableReclaimable=True,
               enableQueueOrder=True, enableHierarchy=True, enableJobEnqueued=True),
        plugin("predicates", enablePredicate=True),
        plugin("gang", enableJobStarving=True),
    ]
]


def hq(name: str, parent: str, deserved: str | None, capability: str | None, **kw) -> dict:
    return queue(name, parent=parent or None, deserved=deserved, capability=capability, **kw)


def pend(name: str, group: str, req: str) -> dict:
    return pod(name, namespace="ns1", group=group, requests=req)


def run(name: str, group: str, req: str, n: str, **kw) -> dict:
    return pod(name, namespace="ns1", group=group, requests=req, node=n, phase="Running", **kw)


def pg(name: str, q: str, min_member: int, phase: str, min_resources: str | None = None) -> dict:
    return podgroup(name, namespace="ns1", queue=q, min_member=min_member, phase=phase, min_resources=min_resources)


N1 = node("n1", "8,8Gi,pods=11")
ROOT = hq("root", "", None, None)
Q1, Q2 = hq("q1", "root", None, "4,4Gi"), hq("q2", "root", None, "4,4Gi")
Q11, Q12 = hq("q11", "q1", None, "1,1Gi"), hq("q12", "q1", None, "3,3Gi")
Q3 = hq("q3", "root", "4,4Gi,pods=10", "4,4Gi,pods=10")
Q4 = hq("q4", "root", "2,2Gi,pods=1", "4,4Gi,pods=4")
Q31 = hq("q31", "q3", "2,2Gi,pods=2", "4,4Gi,pods=4")
Q32 = hq("q32", "q3", "2,2Gi,pods=2", "4,4Gi,pods=4")
Q33 = hq("q33", "q3", "0,0Gi,pods=2", "4,4Gi,pods=4")


def c(name: str, objects: list, **expect) -> Case:
    return Case(name, objects, ["enqueue", "reclaim", "allocate"], TIERS, **expect)


CASES = [
    c("case0: Pod allocatable when queue is leaf queue",
      [N1, pend("p1", "pg1", "1,1Gi"), pg("pg1", "q11", 1, "Inqueue"), ROOT, Q1, Q2, Q11, Q12], binds={"ns1/p1": "n1"}),
    c("case1: Pod not allocatable when queue is not leaf queue",
      [N1, pend("p2", "pg2", "1,1Gi"), pg("pg2", "q1", 1, "Pending"), ROOT, Q1, Q2, Q11, Q12], binds={}),
    c("case2: Pod allocatable when queue has not exceed capability",
      [N1, pend("p3", "pg3", "2,2Gi"), pend("p4", "pg3", "2,2Gi"), pg("pg3", "q31", 2, "Inqueue"), ROOT, Q3, Q4, Q31, Q32],
      binds={"ns1/p3": "n1", "ns1/p4": "n1"}),
    c("case3: Can reclaim from other queues when allocated < deserved",
      [N1, run("p5", "pg4", "4,4Gi", "n1"), run("p6", "pg5", "2,2Gi", "n1", preemptable=False), run("p7", "pg5", "2,2Gi", "n1"),
       pend("p8", "pg6", "2,2Gi"), pg("pg4", "q4", 1, "Running"), pg("pg5", "q31", 1, "Running"), pg("pg6", "q32", 1, "Inqueue"),
       ROOT, Q3, Q31, Q32, Q4],
      pipelined={"ns1/pg6": ["n1"]}, evictions=["ns1/p7"]),
    c("case4: Pod is not allocatable when ancestor queue's real capability not enough",
      [N1, run("p6", "pg5", "2,2Gi", "n1", preemptable=False), run("p9", "pg7", "2,2Gi", "n1"), pend("p10", "pg8", "3,3Gi"),
       pg("pg5", "q31", 1, "Running"), pg("pg7", "q32", 1, "Running"), pg("pg8", "q33", 1, "Inqueue"), ROOT, Q3, Q31, Q32, Q33],
      binds={}),
    c("case5: If the capability cpu or memory is not specified, the value should be inherited from parent queue",
      [N1, pend("p11", "pg9", "1"), pg("pg9", "q51", 1, "Running"), ROOT, hq("q5", "root", None, "memory=4Gi"), hq("q51", "q5", None, "memory=2Gi")],
      binds={"ns1/p11": "n1"}),
    c("case6: podgroup can't be enqueued when any ancestor queue's capability is not enough",
      [N1, pg("pg10", "q61", 1, "Pending", "2,4Gi"), pg("pg11", "q62", 1, "Pending", "2,4Gi"),
       ROOT, hq("q6", "root", None, "2,4Gi"), hq("q61", "q6", None, None), hq("q62", "q6", None, None)],
      phases={"ns1/pg10": "Inqueue", "ns1/pg11": "Pending"}),
    c("case8: When the queue's deserved value has a scalar resource set, the check can pass",
      [node("n-gpu", "8,8Gi,nvidia.com/gpu=8,pods=10"), pend("p12", "pg12", "2,2Gi,nvidia.com/gpu=1"), pg("pg12", "q81", 1, "Inqueue"),
       ROOT, hq("q8", "root", "4,4Gi,nvidia.com/gpu=8", None), hq("q81", "q8", "2,2Gi,nvidia.com/gpu=4", None),
       hq("q82", "q8", "2,2Gi,nvidia.com/gpu=4", None)],
      binds={"ns1/p12": "n-gpu"}),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, CASES))
def test_capacity_hierarchy_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


# ----- ancestorReclaimLevel (Test_capacityPlugin_AncestorReclaimLevel) -------------------------
def level_tiers(level: int) -> list:
    return [[
        plugin("capacity", {"ancestorReclaimLevel": level}, enabledAllocatable=True, enablePreemptive=True,
               enableReclaimable=True, enableQueueOrder=True, enableHierarchy=True, enableJobEnqueued=True),
        plugin("predicates", enablePredicate=True),
        plugin("gang", enableJobStarving=True),
        plugin("priority", enableJobOrder=True, enableTaskOrder=True),
    ]]


GPU_NODE = node("n1", "16,16Gi,nvidia.com/a100=4,rdma/hca=1001,pods=11")
GPU_ROOT = hq("root", "", "16,16Gi,nvidia.com/a100=4,rdma=1000", None)


def gpu(name: str, group: str, a100: int, *, node_name: str = "", priority: int | None = None) -> dict:
    req = f"1,1Gi,nvidia.com/a100={a100},rdma/hca=1"
    if node_name:
        return pod(name, namespace="ns1", group=group, requests=req, node=node_name, phase="Running", priority=priority)
    return pod(name, namespace="ns1", group=group, requests=req, priority=priority)


def project_tree() -> list[dict]:
    return [GPU_ROOT,
            hq("project1-root", "root", "nvidia.com/a100=1", "nvidia.com/a100=2"),
            hq("project1-non-preemptable", "project1-root", "nvidia.com/a100=1", "nvidia.com/a100=1"),
            hq("project1-preemptable", "project1-root", None, None),
            hq("project2-root", "root", "nvidia.com/a100=3", "nvidia.com/a100=4"),
            hq("project2-non-preemptable", "project2-root", "nvidia.com/a100=3", "nvidia.com/a100=3"),
            hq("project2-preemptable", "project2-root", None, None)]


ANCESTOR = [
    Case("case1: Can reclaim based on parent deserved when ancestorReclaimLevel is 1",
         [GPU_NODE, GPU_ROOT, hq("case1-queue1", "root", "nvidia.com/a100=1", None), hq("case1-queue11", "case1-queue1", None, None),
          hq("case1-queue2", "root", None, None),
          pg("pg1", "case1-queue2", 1, "Running"), pg("pg2", "case1-queue11", 1, "Inqueue"),
          gpu("p1", "pg1", 4, node_name="n1"), gpu("p2", "pg2", 1)],
         ["enqueue", "reclaim", "allocate"], level_tiers(1), evictions=["ns1/p1"], evict_num=1, pipelined={"ns1/pg2": ["n1"]}),
    Case("case2: Cross-parent reclaim pipelines project1 pending job when project2 child and parent are both over deserved",
         [GPU_NODE, *project_tree(),
          *(pg(f"pg{i}", "project2-preemptable", 1, "Running") for i in range(1, 5)), pg("pg5", "project1-preemptable", 1, "Pending"),
          gpu("p1", "pg1", 1, node_name="n1", priority=2), gpu("p2", "pg2", 1, node_name="n1", priority=2),
          gpu("p3", "pg3", 1, node_name="n1", priority=2), gpu("p4", "pg4", 1, node_name="n1", priority=1), gpu("p5", "pg5", 1)],
         ["enqueue", "reclaim", "allocate"], level_tiers(1), evictions=["ns1/p4"], evict_num=1, pipelined={"ns1/pg5": ["n1"]}),
]


@pytest.mark.parametrize("case", upstream_params(f"{ORIGIN} Test_capacityPlugin_AncestorReclaimLevel", ANCESTOR))
def test_capacity_ancestor_reclaim_level_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)
