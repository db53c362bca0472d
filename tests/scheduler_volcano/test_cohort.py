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
from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.plugins.cohort import cap_of, member_of, reclaim_victims
from pumice.testing.volcano import Case, node, pod, podgroup, priority_class, queue, run_scenario

from .conftest import run_both

TIERS = [["priority", "gang", "conformance", "cohort"], ["predicates", "nodeorder"]]
BASE = [["priority", "gang", "conformance"], ["predicates", "nodeorder"]]
ACTIONS = ["enqueue", "allocate"]


def cq(name: str, nominal: str, cohort: str | None = "c", *, borrow: str | None = None, lend: str | None = None,
       reclaim: str | None = None) -> dict[str, Any]:
    q = queue(name, deserved={"cpu": nominal})
    ann = q["metadata"]["annotations"]
    if reclaim is not None:
        ann["scheduling.pumice.io/reclaim-within-cohort"] = reclaim
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


# Reclaim of lent quota (Kueue reclaimWithinCohort). One 8-cpu node; the borrower qa runs four
# 2-cpu Pods of one elastic job (minMember 1), so it uses 8 of the cohort's quota; the lender qb
# wants 2-cpu Pods of its own back.
RECLAIM_ACTIONS = ["enqueue", "allocate", "reclaim"]


def lent(qa: dict[str, Any], qb: dict[str, Any], *, b_pods: int = 2, b_min: int = 2, b_min_cpu: str | None = None,
         a_priority: str | None = None, b_priority: str | None = None, cpus: int = 8) -> list[dict[str, Any]]:
    objs = [node("n0", f"{cpus},64Gi,pods=40"), qa, qb, priority_class("low", 10), priority_class("high", 100),
            podgroup("a", queue="qa", min_member=1, phase="Running", priority_class=a_priority),
            *(pod(f"a-{i}", group="a", requests="2,1Gi", node="n0", phase="Running") for i in range(4)),
            podgroup("b", queue="qb", min_member=b_min, priority_class=b_priority,
                     phase="Inqueue" if b_min_cpu is None else "Pending",
                     min_resources=None if b_min_cpu is None else f"{b_min_cpu},1Gi"),
            *(pod(f"b-{i}", group="b", requests="2,1Gi") for i in range(b_pods))]
    return objs


RECLAIM_CASES = [
    Case("a lender with reclaim-within-cohort Any takes back what its tasks need from the borrower",
         lent(cq("qa", "2"), cq("qb", "6", reclaim="Any")), RECLAIM_ACTIONS, TIERS, evict_num=2,
         pipelined={"c1/b": ["n0"]}),
    Case("the lender gets its quota back although the node has room (reclaim is quota-driven, as Kueue's)",
         lent(cq("qa", "2"), cq("qb", "6", reclaim="Any"), cpus=16), RECLAIM_ACTIONS, TIERS, evict_num=2,
         pipelined={"c1/b": ["n0"]}),
    Case("reclaim-within-cohort Never (Kueue's default) reclaims nothing",
         lent(cq("qa", "2"), cq("qb", "6")), RECLAIM_ACTIONS, TIERS, evict_num=0),
    Case("a lender reclaims only up to its own nominal quota",
         lent(cq("qa", "6"), cq("qb", "2", reclaim="Any"), b_min=1), RECLAIM_ACTIONS, TIERS, evict_num=1,
         pipelined={"c1/b": ["n0"]}),
    Case("a borrower's use within its own nominal quota is not reclaimed",
         lent(cq("qa", "8"), cq("qb", "6", reclaim="Any")), RECLAIM_ACTIONS, TIERS, evict_num=0),
    Case("a queue of another cohort is never a victim",
         lent(cq("qa", "2", cohort="x"), cq("qb", "6", reclaim="Any")), RECLAIM_ACTIONS, TIERS, evict_num=0),
    Case("LowerPriority reclaims from a lower-priority borrower",
         lent(cq("qa", "2"), cq("qb", "6", reclaim="LowerPriority"), a_priority="low", b_priority="high"),
         RECLAIM_ACTIONS, TIERS, evict_num=2),
    Case("LowerPriority spares a borrower of the same or higher priority",
         lent(cq("qa", "2"), cq("qb", "6", reclaim="LowerPriority"), a_priority="high", b_priority="low"),
         RECLAIM_ACTIONS, TIERS, evict_num=0),
    Case("enqueue admits a lender's job within its nominal quota although borrowers hold it, then reclaims",
         lent(cq("qa", "2"), cq("qb", "6", reclaim="Any"), b_min_cpu="4"), RECLAIM_ACTIONS, TIERS, evict_num=2,
         phases={"c1/b": "Inqueue"}),
    Case("without reclaim the same job is not admitted",
         lent(cq("qa", "2"), cq("qb", "6"), b_min_cpu="4"), RECLAIM_ACTIONS, TIERS, evict_num=0,
         phases={"c1/b": "Pending"}),
]


@pytest.mark.parametrize("case", RECLAIM_CASES, ids=str)
def test_cohort_reclaim(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_reclaim_victims_stop_once_the_borrower_is_back_at_nominal() -> None:
    a = member_of(QueueInfo.from_queue(cq("qa", "2")))
    b = member_of(QueueInfo.from_queue(cq("qb", "6", reclaim="Any")))
    assert a is not None and b is not None
    a.used = Resource(8000, 0)
    cluster = build_snapshot(lent(cq("qa", "2"), cq("qb", "6")))
    tasks = sorted((t for j in cluster.jobs.values() if j.queue == "qa" for t in j.tasks.values()), key=lambda t: t.name)
    victims = reclaim_victims(b, {"qa": a, "qb": b}, Resource(2000, 0), [(t, "qa", 0) for t in tasks], 0)
    # 8 -> 6 -> 4 -> 2: three of the four Pods are above qa's nominal 2
    assert len(victims) == 3


def test_a_bad_reclaim_policy_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="reclaim-within-cohort: want one of Never, LowerPriority, Any, got 'Sometimes'"):
        member_of(QueueInfo.from_queue(cq("qa", "2", reclaim="Sometimes")))
