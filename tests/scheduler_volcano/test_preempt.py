"""preempt: ported from volcano pkg/scheduler/actions/preempt/preempt_test.go (TestPreempt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.testing.volcano import Case, node, plugin, pod, podgroup, priority_class, queue

from .conftest import run_both, upstream_params

ORIGIN = "volcano pkg/scheduler/actions/preempt/preempt_test.go"

TIERS = [
    [
        plugin("conformance", enablePreemptable=True),
        plugin("gang", enablePreemptable=True, enableJobPipelined=True, enableJobStarving=True),
        plugin(
            "priority",
            enableTaskOrder=True,
            enableJobOrder=True,
            enablePreemptable=True,
            enableJobPipelined=True,
            enableJobStarving=True,
        ),
        plugin("proportion", enabledOverused=True, enabledAllocatable=True, enableQueueOrder=True),
    ]
]
PRIO = [priority_class("high-priority", 100000), priority_class("low-priority", 10)]
CONF = {"preempt": {"enableTopologyAwarePreemption": False}}
R1 = "1,1G"


def pg(name: str, min_member: int, tmin: dict | None, prio: str | None = None, q: str = "q1") -> dict:
    return podgroup(name, queue=q, min_member=min_member, min_task_member=tmin, priority_class=prio)


def running(name: str, group: str, req: str = R1, *, node_name: str = "n1", preemptable: bool | None = None, **kw) -> dict:
    return pod(name, group=group, requests=req, node=node_name, phase="Running", preemptable=preemptable, **kw)


def pending(name: str, group: str, req: str = R1, **kw) -> dict:
    return pod(name, group=group, requests=req, **kw)


def case(name: str, objects: list, *, evictions: list[str] | None = None, evict_num: int = 0) -> Case:
    return Case(
        name, PRIO + objects, ["preempt"], TIERS, evictions=evictions if evictions is not None else [], evict_num=evict_num, configurations=CONF
    )


CASES = [
    case(
        "do not preempt if there are enough idle resources",
        [
            pg("pg1", 3, {"": 3}),
            running("preemptee1", "pg1"),
            running("preemptee2", "pg1"),
            pending("preemptor1", "pg1"),
            node("n1", "10,10G,pods=10"),
            queue("q1"),
        ],
    ),
    case(
        "do not preempt if job is pipelined",
        [
            pg("pg1", 1, {"": 2}),
            pg("pg2", 1, {"": 2}),
            running("preemptee1", "pg1"),
            running("preemptee2", "pg1"),
            running("preemptee3", "pg2"),
            pending("preemptor2", "pg2"),
            node("n1", "3,3G,pods=10"),
            queue("q1"),
        ],
    ),
    case(
        "preempt one task of different job to fit both jobs on one node",
        [
            pg("pg1", 1, {"": 2}, "low-priority"),
            pg("pg2", 1, {"": 2}, "high-priority"),
            running("preemptee1", "pg1", preemptable=True),
            running("preemptee2", "pg1", preemptable=False),
            pending("preemptor1", "pg2"),
            pending("preemptor2", "pg2"),
            node("n1", "2,2G,pods=10"),
            queue("q1"),
        ],
        evictions=["c1/preemptee1"],
        evict_num=1,
    ),
    case(
        "preempt enough tasks to fit large task of different job",
        [
            pg("pg1", 1, {"": 3}, "low-priority"),
            pg("pg2", 1, {"": 1}, "high-priority"),
            running("preemptee1", "pg1", preemptable=True),
            running("preemptee2", "pg1", preemptable=True),
            running("preemptee3", "pg1", preemptable=False),
            pending("preemptor1", "pg2", "5,5G"),
            node("n1", "6,6G,pods=10"),
            queue("q1"),
        ],
        evictions=["c1/preemptee2", "c1/preemptee1"],
        evict_num=2,
    ),
    case(
        "preempt low priority job in same queue",
        [
            pg("pg1", 0, {}, "low-priority"),
            pg("pg2", 1, {"": 1}, "high-priority"),
            running("preemptee1", "pg1", "3,3G", preemptable=True),
            pending("preemptor1", "pg2", "3,3G"),
            node("n1", "12,12G,pods=10"),
            queue("q1", capability="4,4G"),
        ],
        evictions=["c1/preemptee1"],
        evict_num=1,
    ),
    case(
        "preempt low priority job in same queue: allocatable and has enough resource, don't preempt",
        [
            pg("pg1", 1, {}, "low-priority"),
            pg("pg2", 1, {"": 1}, "high-priority"),
            running("preemptee1", "pg1", "3,3G", preemptable=True),
            pending("preemptor1", "pg2", "3,3G"),
            node("n1", "12,12G,pods=10"),
            queue("q1", capability="6,6G"),
        ],
    ),
    case(
        "preempt low priority job in same queue but not pod with preemptable=false or higher priority",
        [
            pg("pg1", 1, {}, "low-priority"),
            pg("pg2", 1, {"": 1}, "high-priority"),
            running("preemptee1", "pg1", preemptable=False),
            running("preemptee2", "pg1", preemptable=True),
            running("preemptee3", "pg1", preemptable=True, priority=100000),
            pending("preemptor1", "pg2"),
            node("n1", "12,12G,pods=10"),
            queue("q1", capability="3,3G"),
        ],
        evictions=["c1/preemptee2"],
        evict_num=1,
    ),
    case(
        "unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        [
            pg("pg1", 0, {}, "low-priority"),
            pg("pg2", 1, {"": 1}, "high-priority"),
            running("preemptee1", "pg1", "", preemptable=True),
            pending("preemptor1", "pg2", "3,3G"),
            node("n1", "12,12G,pods=1"),
            queue("q1", capability="6,6G"),
        ],
        evictions=["c1/preemptee1"],
        evict_num=1,
    ),
    case(
        "BestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        [
            pg("pg1", 0, {}, "low-priority"),
            pg("pg2", 1, {"": 1}, "high-priority"),
            running("preemptee1", "pg1", "", preemptable=True),
            pending("preemptor1", "pg2", ""),
            node("n1", "12,12G,pods=1"),
            queue("q1", capability="6,6G"),
        ],
        evictions=["c1/preemptee1"],
        evict_num=1,
    ),
    case(
        "can not preempt resources when task preemption policy is never",
        [
            pg("pg1", 0, None, "low-priority"),
            pg("pg2", 1, None, "high-priority"),
            running("preemptee1", "pg1", preemptable=True),
            pending("preemptor1", "pg2", preemption_policy="Never"),
            node("n1", "1,1Gi,pods=1"),
            queue("q1"),
        ],
    ),
    case(
        "rollback evictions when preemptor exceeds queue capacity after evicting victims",
        [
            pg("pg1", 1, {"": 2}, "low-priority"),
            pg("pg2", 1, {"": 1}, "high-priority"),
            running("preemptee1", "pg1", preemptable=True),
            running("preemptee2", "pg1", preemptable=True),
            pending("preemptor1", "pg2", "4,4G"),
            node("n1", "10,10G,pods=10"),
            queue("q1", capability="3,3G"),
        ],
    ),
    case(
        "only commit evictions on the node where preemption succeeds",
        [
            pg("pg1", 0, {}, "low-priority"),
            pg("pg2", 1, {"": 1}, "high-priority"),
            pg("pg3", 0, {}, "low-priority"),
            running("preemptee1", "pg1", preemptable=True),
            running("preemptee2", "pg3", "4,4G", node_name="n2", preemptable=True),
            pending("preemptor1", "pg2", "3,3G"),
            node("n1", "3,3G,pods=10"),
            node("n2", "4,4G,pods=10"),
            queue("q1", capability="6,6G"),
        ],
        evictions=["c1/preemptee2"],
        evict_num=1,
    ),
    case(
        "multi-queue: preemptorTasks must not be overwritten by intra-job preemption of another queue",
        [
            podgroup("pg1", queue="q1", min_member=1, min_task_member={"": 1}),
            pg("pg2", 0, {}, "low-priority", q="q2"),
            pg("pg3", 1, {"": 1}, "high-priority", q="q2"),
            running("q1-runner1", "pg1"),
            running("q2-preemptee1", "pg2", preemptable=True),
            pending("q2-preemptor1", "pg3"),
            node("n1", "2,2G,pods=10"),
            queue("q1"),
            queue("q2", capability="4,4G"),
        ],
        evictions=["c1/q2-preemptee1"],
        evict_num=1,
    ),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, CASES))
def test_preempt_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def _reprieve_case(topology_aware: bool, evictions: list[str]) -> Case:
    return Case(
        f"topology-aware={topology_aware}",
        [
            *PRIO,
            pg("pg1", 0, {}, "low-priority"),
            pg("pg2", 1, {"": 1}, "high-priority"),
            running("low-p-1", "pg1", "3,1G", preemptable=True),
            running("low-p-2", "pg1", "1,1G", preemptable=True),
            pending("high-p-1", "pg2", "3,1G"),
            node("n1", "4,4G,pods=10"),
            queue("q1"),
        ],
        ["preempt"],
        TIERS,
        evictions=evictions,
        pipelined={"c1/pg2": ["n1"]},
        configurations={"preempt": {"enableTopologyAwarePreemption": topology_aware}},
    )


def test_normal_preemption_evicts_in_victim_order_until_the_preemptor_fits(tmp_path: Path) -> None:
    run_both(_reprieve_case(False, ["c1/low-p-1", "c1/low-p-2"]), tmp_path)


def test_topology_aware_preemption_reprieves_victims_it_does_not_need(tmp_path: Path) -> None:
    run_both(_reprieve_case(True, ["c1/low-p-1"]), tmp_path)
