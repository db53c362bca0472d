"""cohort (Kueue's ClusterQueue cohorts as a pumice plugin): a queue borrows the idle nominal
quota (``spec.deserved``) of its cohort, at most its borrowing limit, and lends at most its
lending limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.plugins.cohort import cap_of, member_of
from pumice.testing.volcano import Case, node, pod, podgroup, queue, run_scenario

from .conftest import run_both

TIERS = [["priority", "gang", "conformance", "cohort"], ["predicates", "nodeorder"]]
BASE = [["priority", "gang", "conformance"], ["predicates", "nodeorder"]]
ACTIONS = ["enqueue", "allocate"]


def cq(name: str, nominal: str, cohort: str | None = "c", *, borrow: str | None = None, lend: str | None = None) -> dict[str, Any]:
    q = queue(name, deserved={"cpu": nominal})
    ann = q["metadata"]["annotations"]
    if cohort:
        ann["scheduling.pumice.io/cohort"] = cohort
    if borrow is not None:
        ann["scheduling.pumice.io/borrowing-limit"] = json.dumps({"cpu": borrow})
    if lend is not None:
        ann["scheduling.pumice.io/lending-limit"] = json.dumps({"cpu": lend})
    return q


def cluster(qa: dict[str, Any], qb: dict[str, Any], *, b_running: int = 0, min_cpu: str | None = None) -> list[dict[str, Any]]:
    """One 16-cpu node; qa's job asks for four 2-cpu Pods (any number may run); qb runs
    ``b_running`` 2-cpu Pods."""
    objs = [node("n0", "16,64Gi,pods=40"), qa, qb,
            podgroup("a", queue="qa", min_member=1, phase="Inqueue" if min_cpu is None else "Pending",
                     min_resources=None if min_cpu is None else f"{min_cpu},1Gi"),
            *(pod(f"a-{i}", group="a", requests="2,1Gi") for i in range(4))]
    if b_running:
        objs += [podgroup("b", queue="qb", min_member=1, phase="Running"),
                 *(pod(f"b-{i}", group="b", requests="2,1Gi", node="n0", phase="Running") for i in range(b_running))]
    return objs


def bound(n: int) -> dict[str, str]:
    return {f"c1/a-{i}": "n0" for i in range(n)}


CASES = [
    Case("a queue borrows all of its idle cohort peer's quota",
         cluster(cq("qa", "4"), cq("qb", "4")), ACTIONS, TIERS, binds=bound(4)),
    Case("a borrowing limit of 2 cpu stops the queue at nominal plus 2",
         cluster(cq("qa", "4", borrow="2"), cq("qb", "4")), ACTIONS, TIERS, binds=bound(3)),
    Case("a lending limit of 2 cpu on the peer lends only 2",
         cluster(cq("qa", "4"), cq("qb", "4", lend="2")), ACTIONS, TIERS, binds=bound(3)),
    Case("a lending limit of 0 keeps the peer's whole quota",
         cluster(cq("qa", "4"), cq("qb", "4", lend="0")), ACTIONS, TIERS, binds=bound(2)),
    Case("quota the peer uses is not lent",
         cluster(cq("qa", "4"), cq("qb", "4"), b_running=2), ACTIONS, TIERS, binds=bound(2)),
    Case("queues of different cohorts lend nothing to each other",
         cluster(cq("qa", "4", cohort="x"), cq("qb", "4", cohort="y")), ACTIONS, TIERS, binds=bound(2)),
    Case("a queue outside any cohort is not limited by the plugin",
         cluster(cq("qa", "4", cohort=None), cq("qb", "4")), ACTIONS, TIERS, binds=bound(4)),
    Case("without the plugin nothing limits the queue",
         cluster(cq("qa", "4", borrow="0"), cq("qb", "4", lend="0")), ACTIONS, BASE, binds=bound(4)),
    Case("enqueue refuses a job whose minResources exceed nominal plus what may be borrowed",
         cluster(cq("qa", "4", borrow="2"), cq("qb", "4"), min_cpu="8"), ACTIONS, TIERS, binds={}, phases={"c1/a": "Pending"}),
    Case("enqueue admits a job within nominal plus the borrowing limit",
         cluster(cq("qa", "4", borrow="2"), cq("qb", "4"), min_cpu="6"), ACTIONS, TIERS, binds=bound(3)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_cohort(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_refused_job_gets_an_event_naming_the_cohort() -> None:
    res = run_scenario(cluster(cq("qa", "4", borrow="2"), cq("qb", "4"), min_cpu="8"), actions=ACTIONS, tiers=TIERS)
    assert ("c1/a", "Normal", "Unschedulable", "cohort c quota insufficient for queue qa: insufficient cpu") in res.events


def test_a_bad_limit_annotation_admits_nothing_and_says_why() -> None:
    qa = cq("qa", "4")
    qa["metadata"]["annotations"]["scheduling.pumice.io/borrowing-limit"] = "cpu=2"
    res = run_scenario(cluster(qa, cq("qb", "4"), min_cpu="2"), actions=ACTIONS, tiers=TIERS)
    assert res.binds == {}
    assert any(e[0] == "c1/a" and e[2] == "InvalidQueueAnnotation" and "scheduling.pumice.io/borrowing-limit: not JSON" in e[3]
               for e in res.events)


def test_cap_is_guaranteed_plus_the_unborrowed_pool_within_the_ceiling() -> None:
    a = member_of(QueueInfo.from_queue(cq("qa", "4", lend="1", borrow="3")))
    b = member_of(QueueInfo.from_queue(cq("qb", "6", lend="4")))
    assert a is not None and b is not None
    assert (a.guaranteed.milli_cpu, b.guaranteed.milli_cpu) == (3000, 2000)
    # pool = 1 + 4 = 5; nobody borrows: a may use 3 + 5 = 8, but its ceiling is 4 + 3 = 7
    assert cap_of(a, [a, b], reserved=False).milli_cpu == 7000
    # b uses 5: 3 beyond its guarantee, so 2 of the pool is left for a: 3 + 2 = 5
    b.used = Resource(5000, 0)
    assert cap_of(a, [a, b], reserved=False).milli_cpu == 5000
    # b's cap: its guarantee 2 plus the whole pool 5 (a uses nothing), no borrowing limit
    assert cap_of(b, [a, b], reserved=False).milli_cpu == 7000
