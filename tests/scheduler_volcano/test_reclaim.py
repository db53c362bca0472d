"""reclaim: ported from volcano pkg/scheduler/actions/reclaim/reclaim_test.go (TestReclaim).

Upstream runs every case with one tier but builds only the plugins a case lists; the tier here
is filtered the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.testing.volcano import Case, node, plugin, pod, podgroup, priority_class, queue

from .conftest import run_both, upstream_params

ORIGIN = "volcano pkg/scheduler/actions/reclaim/reclaim_test.go"

FULL_TIER = [
    plugin("conformance", enableReclaimable=True),
    plugin("gang", enableReclaimable=True, enableJobStarving=True),
    plugin("proportion", enableReclaimable=True, enableQueueOrder=True, enablePreemptive=True),
    plugin("capacity", enableReclaimable=True, enableQueueOrder=True, enablePreemptive=True),
    plugin("priority", enableReclaimable=True, enableJobOrder=True, enableTaskOrder=True),
]
R1 = "1,1G"


def tiers(*names: str) -> list:
    return [[p for p in FULL_TIER if p.name in names]]


def running(name: str, group: str, req: str = R1, *, preemptable: bool, node_name: str = "n1") -> dict:
    return pod(name, group=group, requests=req, node=node_name, phase="Running", preemptable=preemptable)


def case(name: str, plugins: tuple[str, ...], objects: list, evictions: list[str]) -> Case:
    return Case(name, objects, ["reclaim"], tiers(*plugins), evictions=evictions, evict_num=len(evictions))


CGP = ("conformance", "gang", "proportion")
CGPP = ("conformance", "gang", "priority", "proportion")
PRIO3 = [priority_class("low-priority", 100), priority_class("mid-priority", 500), priority_class("high-priority", 1000)]

CASES = [
    case(
        "Two Queue with one Queue overusing resource, should reclaim",
        CGP,
        [
            podgroup("pg1", queue="q1", min_member=1, priority_class="low-priority"),
            podgroup("pg2", queue="q2", min_member=1, priority_class="high-priority"),
            running("preemptee1", "pg1", preemptable=False),
            running("preemptee2", "pg1", preemptable=True),
            running("preemptee3", "pg1", preemptable=False),
            pod("preemptor1", group="pg2", requests=R1),
            node("n1", "3,3Gi,pods=10"),
            queue("q1"),
            queue("q2"),
        ],
        ["c1/preemptee2"],
    ),
    case(
        "sort reclaimees when reclaiming from overusing queue",
        CGPP,
        [
            *PRIO3,
            podgroup("pg1", queue="q1", min_member=1, priority_class="mid-priority"),
            podgroup("pg2", queue="q2", min_member=1, priority_class="low-priority"),
            podgroup("pg3", queue="q3", min_member=1, priority_class="high-priority"),
            running("preemptee1-1", "pg1", preemptable=True),
            running("preemptee1-2", "pg1", preemptable=True),
            running("preemptee2-1", "pg2", preemptable=True),
            running("preemptee2-2", "pg2", preemptable=False),
            pod("preemptor1", group="pg3", requests=R1),
            node("n1", "4,4Gi,pods=10"),
            queue("q1"),
            queue("q2"),
            queue("q3"),
        ],
        ["c1/preemptee2-1"],
    ),
    case(
        "sort reclaimees when reclaiming from overusing queues with different queue priority",
        CGP,
        [
            podgroup("pg1", queue="q1", min_member=1, priority_class="mid-priority"),
            podgroup("pg2", queue="q2", min_member=1, priority_class="mid-priority"),
            podgroup("pg3", queue="q3", min_member=1, priority_class="mid-priority"),
            running("preemptee1-1", "pg1", preemptable=True),
            running("preemptee1-2", "pg1", preemptable=False),
            running("preemptee2-1", "pg2", preemptable=True),
            running("preemptee2-2", "pg2", preemptable=False),
            pod("preemptor1", group="pg3", requests=R1),
            node("n1", "4,4Gi,pods=10"),
            queue("q1", priority=5),
            queue("q2", priority=10),
            queue("q3", priority=1),
        ],
        ["c1/preemptee1-1"],
    ),
    case(
        "can not reclaim resources when task preemption policy is never",
        CGP,
        [
            priority_class("low-priority", 100),
            priority_class("high-priority", 1000),
            podgroup("pg1", queue="q1", min_member=0, priority_class="low-priority"),
            podgroup("pg2", queue="q2", min_member=0, priority_class="high-priority"),
            running("preemptee1", "pg1", preemptable=True),
            pod("preemptor1", group="pg2", requests=R1, preemption_policy="Never"),
            node("n1", "1,1Gi,pods=1"),
            queue("q1", weight=5),
            queue("q2", weight=10),
        ],
        [],
    ),
    case(
        "can not reclaim resources when queue is not open(proportion plugin)",
        CGP,
        [
            podgroup("pg1", queue="q1", min_member=1, phase="Running", priority_class="low-priority"),
            podgroup("pg2", queue="q2", min_member=1, priority_class="high-priority"),
            running("preemptee1", "pg1", preemptable=False),
            running("preemptee2", "pg1", preemptable=True),
            running("preemptee3", "pg1", preemptable=False),
            pod("preemptor1", group="pg2", requests=R1),
            node("n1", "3,3Gi,pods=10"),
            queue("q1"),
            queue("q2", state="Closed"),
        ],
        [],
    ),
    case(
        "can not reclaim resources when queue is not open(capacity plugin)",
        ("conformance", "gang", "capacity"),
        [
            podgroup("pg1", queue="q1", min_member=1, phase="Running", priority_class="low-priority"),
            podgroup("pg2", queue="q2", min_member=1, priority_class="high-priority"),
            running("preemptee1", "pg1", preemptable=False),
            running("preemptee2", "pg1", preemptable=True),
            running("preemptee3", "pg1", preemptable=False),
            pod("preemptor1", group="pg2", requests=R1),
            node("n1", "3,3Gi,pods=10"),
            queue("q1"),
            queue("q2", state="Closed"),
        ],
        [],
    ),
    case(
        "Node available resources should be included in reclaimed resources",
        CGPP,
        [
            *PRIO3,
            podgroup("pg1", queue="q1", min_member=0, phase="Running", priority_class="mid-priority"),
            podgroup("pg2", queue="q2", min_member=0, phase="Running", priority_class="mid-priority"),
            podgroup("pg3", queue="q3", min_member=1, priority_class="mid-priority"),
            running("preemptee1-1", "pg1", preemptable=True),
            running("preemptee2-1", "pg2", preemptable=True),
            pod("preemptor1", group="pg3", requests="2,1G"),
            node("n1", "10,2Gi,pods=10"),
            queue("q1", priority=1),
            queue("q2", priority=2),
            queue("q3", weight=3),
        ],
        ["c1/preemptee1-1"],
    ),
    case(
        "Reclaim succeeds for second task when first task has PreemptionPolicy=Never",
        CGPP,
        [
            priority_class("low-priority", 100),
            priority_class("high-priority-no-preempt", 1000),
            priority_class("high-priority-can-preempt", 900),
            podgroup("pg-victim", queue="q1", min_member=1, phase="Running", priority_class="low-priority"),
            podgroup("pg-preemptor", queue="q2", min_member=2, priority_class="high-priority-no-preempt"),
            running("victim-pod-no", "pg-victim", preemptable=False),
            running("victim-pod", "pg-victim", preemptable=True),
            pod("preemptor-task1-non-preemptable", group="pg-preemptor", requests=R1, preemption_policy="Never"),
            pod("preemptor-task2-preemptable", group="pg-preemptor", requests=R1),
            node("n1", "2,2G,pods=10"),
            queue("q1"),
            queue("q2"),
        ],
        ["c1/victim-pod"],
    ),
    case(
        "only commit evictions on the node where reclaim succeeds",
        CGP,
        [
            podgroup("pg-victim", queue="q1", min_member=0, phase="Running", priority_class="low-priority"),
            podgroup("pg-preemptor", queue="q2", min_member=1, priority_class="low-priority"),
            running("victim-n1", "pg-victim", "2,2G", preemptable=True),
            pod("preemptor1", group="pg-preemptor", requests="3,3G"),
            node("n1", "10,10G,pods=10"),
            queue("q1"),
            queue("q2", weight=9),
        ],
        [],
    ),
]


@pytest.mark.parametrize("case", upstream_params(ORIGIN, CASES))
def test_reclaim_upstream_case(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)
