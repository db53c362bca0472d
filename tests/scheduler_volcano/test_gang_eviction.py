"""Topology-aware gang preemption and reclaim (actions ``gangpreempt`` / ``gangreclaim``):
victims are chosen bundle by bundle inside one HyperNode domain so that the starving gang fits
there, its sub-groups each inside one HyperNode of their own tier.

The ``upstream`` cases port volcano pkg/scheduler/actions/utils/bundle_test.go,
gangpreempt/gangpreempt_test.go and gangreclaim/gangreclaim_test.go (the unit functions, on
pumice's JobInfo/TaskInfo and sessions); the scenarios are pumice's own and run twice, on the
vectorised and plain paths, and through ``pumice volcano session`` (``run_both``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.scheduler.volcano.actions._gang_eviction import (
    SAFE,
    WHOLE,
    Bundle,
    apply_allowed,
    create_job_bundles,
    flatten,
    pick_domains,
    select_preempt,
    select_reclaim,
    sort_for_preempt,
    sort_for_reclaim,
)
from pumice.scheduler.volcano.actions.gangpreempt import GangPreemptAction
from pumice.scheduler.volcano.api.job_info import JobInfo
from pumice.scheduler.volcano.api.queue_info import QueueInfo
from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.api.task_info import TaskInfo
from pumice.scheduler.volcano.api.types import TaskStatus
from pumice.scheduler.volcano.cache.snapshot import build_snapshot
from pumice.scheduler.volcano.conf import build_conf
from pumice.scheduler.volcano.framework.interface import RecordingCache
from pumice.scheduler.volcano.framework.session import open_session
from pumice.testing.volcano import (
    Case,
    hypernode,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    run_case,
)

from .conftest import run_both

BUNDLE = "volcano pkg/scheduler/actions/utils/bundle_test.go"
GANGPREEMPT = "volcano pkg/scheduler/actions/gangpreempt/gangpreempt_test.go"
GANGRECLAIM = "volcano pkg/scheduler/actions/gangreclaim/gangreclaim_test.go"


def cpu(m: float) -> Resource:
    return Resource(milli_cpu=m)


def task(uid: str, *, job: str = "ns/j", role: str = "", prio: int = 0, status: TaskStatus = TaskStatus.Running,
         m: float = 1000) -> TaskInfo:
    return TaskInfo(uid=uid, name=uid, namespace="ns", job=job, role=role, resreq=cpu(m), status=status, priority=prio)


def job_with(uid: str, tasks: list[TaskInfo], *, min_available: int = 0, task_min: dict[str, int] | None = None,
             queue_name: str = "q", priority: int = 0) -> JobInfo:
    j = JobInfo(uid=uid, name=uid, namespace="ns", queue=queue_name, min_available=min_available,
                task_min_available=dict(task_min or {}), priority=priority)
    for t in tasks:
        j.add_task(t)
    return j


# ----- upstream bundle_test.go -----------------------------------------------------------------
@pytest.mark.upstream(f"{BUNDLE}: TestCreateJobBundles_SafeAndWhole")
def test_create_job_bundles_safe_and_whole() -> None:
    ts = [task(chr(ord("a") + i), role="worker", prio=i) for i in range(5)]
    job = job_with("ns/j", ts, min_available=3, task_min={"worker": 3})
    bundles = create_job_bundles(job, ts)
    assert [(b.kind, len(b.tasks)) for b in bundles] == [(SAFE, 2), (WHOLE, 3)]
    assert [t.uid for t in bundles[0].tasks] == ["a", "b"]


@pytest.mark.upstream(f"{BUNDLE}: TestCreateJobBundles_JobNotReadyShortCircuitsAllSafe")
def test_create_job_bundles_job_not_ready_all_safe() -> None:
    ts = [task(f"t{i}") for i in range(2)]
    job = job_with("ns/j", ts, min_available=3)
    bundles = create_job_bundles(job, ts)
    assert [(b.kind, len(b.tasks)) for b in bundles] == [(SAFE, 2)]


@pytest.mark.upstream(f"{BUNDLE}: TestCreateJobBundles_NoTaskMinAvailableTreatsAllRolesAsUnconstrained")
def test_create_job_bundles_no_task_min() -> None:
    ts = [task(f"t{i}", role=r) for i, r in enumerate(["a", "b", "c"])]
    job = job_with("ns/j", ts, min_available=1)
    bundles = create_job_bundles(job, ts)
    assert [(b.kind, len(b.tasks)) for b in bundles] == [(SAFE, 2), (WHOLE, 1)]


@pytest.mark.upstream(f"{BUNDLE}: TestApplyAllowedTasks_WholeAtomicAndSafeShrink")
def test_apply_allowed_whole_atomic_and_safe_shrink() -> None:
    t1, t2, t3 = task("t1"), task("t2"), task("t3")
    job = job_with("ns/j", [])
    bundles = [Bundle(SAFE, job, [t1, t2], cpu(2000)), Bundle(WHOLE, job, [t3], cpu(1000), cpu(3000))]
    valid = apply_allowed(bundles, {"t1", "t3x"})
    assert len(valid) == 1 and valid[0].kind == SAFE and [t.uid for t in valid[0].tasks] == ["t1"]
    assert valid[0].local == cpu(1000)


@pytest.mark.upstream(f"{BUNDLE}: TestSortBundlesForPreempt_TypePriorityAndROI")
def test_sort_for_preempt_type_then_roi() -> None:
    low, high = job_with("", [], priority=1), job_with("", [], priority=10)
    safe = Bundle(SAFE, high, [task("s1")], cpu(1000))
    low_roi = Bundle(WHOLE, low, [task("w1")], cpu(1000), cpu(4000))
    high_roi = Bundle(WHOLE, low, [task("w2")], cpu(1000), cpu(2000))
    bundles = [low_roi, safe, high_roi]
    sort_for_preempt(bundles, cpu(1000), lambda a, b: a.priority < b.priority)
    assert [b.tasks[0].uid for b in bundles] == ["s1", "w2", "w1"]


@pytest.mark.upstream(f"{BUNDLE}: TestSortBundlesForPreempt_UsesVictimJobOrder")
def test_sort_for_preempt_victim_job_order() -> None:
    a = Bundle(WHOLE, job_with("ja", []), [task("a")], cpu(1000), cpu(2000))
    b = Bundle(WHOLE, job_with("jb", []), [task("b")], cpu(1000), cpu(2000))
    bundles = [a, b]
    sort_for_preempt(bundles, cpu(1000), lambda x, y: x.uid > y.uid)
    assert bundles[0].tasks[0].uid == "b"


@pytest.mark.upstream(f"{BUNDLE}: TestSortBundlesForReclaim_UsesQueueOrderThenROI")
def test_sort_for_reclaim_queue_order_then_roi() -> None:
    queues = {q: QueueInfo(uid=q, name=q) for q in ("qa", "qb", "qc", "qd")}
    ba = Bundle(WHOLE, job_with("ja", [], queue_name="qa"), [task("a")], cpu(1000), cpu(4000))
    bb = Bundle(WHOLE, job_with("jb", [], queue_name="qb"), [task("b")], cpu(1000), cpu(2000))
    bundles = [bb, ba]
    sort_for_reclaim(bundles, cpu(1000), lambda l, r: l.name < r.name, queues)  # noqa: E741
    assert bundles[0].tasks[0].uid == "a"
    bc = Bundle(WHOLE, job_with("jc", [], queue_name="qc"), [task("c")], cpu(1000), cpu(4000))
    bd = Bundle(WHOLE, job_with("jd", [], queue_name="qd"), [task("d")], cpu(1000), cpu(2000))
    bundles = [bc, bd]
    sort_for_reclaim(bundles, cpu(1000), None, queues)
    assert bundles[0].tasks[0].uid == "d"


@pytest.mark.upstream(f"{BUNDLE}: TestSortBundlesForReclaim_DeterministicTieBreaker")
def test_sort_for_reclaim_tie_breaker() -> None:
    queues = {"q": QueueInfo(uid="q", name="q")}
    a = Bundle(WHOLE, job_with("ja", []), [task("a")], cpu(1000), cpu(2000))
    b = Bundle(WHOLE, job_with("jb", []), [task("b")], cpu(1000), cpu(2000))
    bundles = [b, a]
    sort_for_reclaim(bundles, cpu(1000), None, queues)
    assert [x.tasks[0].uid for x in bundles] == ["a", "b"]


# ----- upstream gangpreempt_test.go / gangreclaim_test.go ---------------------------------------
@pytest.mark.upstream(f"{GANGPREEMPT}: TestPickDomainsFromGradients_MaxDomainsAndDedup")
def test_pick_domains_cap_and_dedup() -> None:
    assert pick_domains([["d1", "d2"], ["d2", "d3"]], 2, "") == ["d1", "d2"]


@pytest.mark.upstream(f"{GANGPREEMPT}: TestPickDomainsFromGradients_Fallback")
def test_pick_domains_fallback() -> None:
    assert pick_domains([], 8, "<cluster-top-hypernode>") == ["<cluster-top-hypernode>"]


@pytest.mark.upstream(f"{GANGPREEMPT}: TestParseArguments, TestParseArguments_InvalidMaxDomainsFallsBackToDefault")
def test_parse_arguments() -> None:
    args = GangPreemptAction.parse_arguments({"maxDomains": 3, "allowWholeBundle": False})
    assert (args.domains, args.allow_whole_bundle) == (3, False)
    for bad in (0, -1):
        assert GangPreemptAction.parse_arguments({"maxDomains": bad}).domains == 8


def _session(objs: list[dict], tiers: list[list]) -> object:
    return open_session(build_snapshot(objs), build_conf(["gangpreempt"], tiers), RecordingCache())


def _victim_world(preemptable: str | None, *, other_queue: bool = False) -> list[dict]:
    ann = {"volcano.sh/preemptable": preemptable} if preemptable is not None else {}
    return [
        queue("q1"), queue("q2", reclaimable=True), priority_class("high", 100), priority_class("low", 10), node("n1", "1,4Gi,pods=10"),
        podgroup("preemptor", queue="q1", min_member=1, priority_class="high"),
        pod("p", group="preemptor", requests="1,1Gi", priority_class="high", priority=100),
        podgroup("victim", queue="q2" if other_queue else "q1", min_member=1, priority_class="low", phase="Running", annotations=ann),
        pod("v", group="victim", requests="1,1Gi", node="n1", phase="Running", priority_class="low", priority=10),
    ]


@pytest.mark.upstream(f"{GANGPREEMPT}: TestSelectDomainVictims_RespectAllowWholeBundle")
def test_select_preempt_whole_bundle_only() -> None:
    ssn = _session(_victim_world(None), [["priority", "gang", "conformance"]])
    job = ssn.jobs["c1/preemptor"]  # type: ignore[attr-defined]
    bundles = select_preempt(ssn, job, cpu(1000), "<cluster-top-hypernode>")  # type: ignore[arg-type]
    assert [(b.kind, [t.name for t in b.tasks]) for b in bundles] == [(WHOLE, ["v"])]


@pytest.mark.upstream(f"{GANGPREEMPT}: TestSelectDomainVictims_RespectVictimJobPreemptable")
def test_select_preempt_respects_victim_job_preemptable_false() -> None:
    ssn = _session(_victim_world("false"), [["priority", "gang", "conformance"]])
    assert select_preempt(ssn, ssn.jobs["c1/preemptor"], cpu(1000), "<cluster-top-hypernode>") == []  # type: ignore[attr-defined,arg-type]


@pytest.mark.upstream(f"{GANGPREEMPT}: TestSelectDomainVictims_AllowVictimJobWhenPreemptableUnset")
def test_select_preempt_allows_victim_job_when_unset() -> None:
    ssn = _session(_victim_world(None), [["priority", "gang", "conformance"]])
    victims = flatten(select_preempt(ssn, ssn.jobs["c1/preemptor"], cpu(1000), "<cluster-top-hypernode>"))  # type: ignore[attr-defined,arg-type]
    assert [t.name for t in victims] == ["v"]


@pytest.mark.upstream(f"{GANGRECLAIM}: TestSelectDomainVictims_ReclaimableCrossQueueOnly")
def test_select_reclaim_cross_queue_only() -> None:
    same = _session(_victim_world(None), [["priority", "gang", "conformance"], ["proportion"]])
    assert select_reclaim(same, same.jobs["c1/preemptor"], cpu(1000), "<cluster-top-hypernode>") == []  # type: ignore[attr-defined,arg-type]
    other = _session(_victim_world(None, other_queue=True), [["priority", "gang", "conformance"], ["proportion"]])
    victims = flatten(select_reclaim(other, other.jobs["c1/preemptor"], cpu(1000), "<cluster-top-hypernode>"))  # type: ignore[attr-defined,arg-type]
    assert [t.name for t in victims] == ["v"]


# ----- pumice's own scenarios: topology-aware gang preemption and reclaim -----------------------
TIERS = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder", "network-topology-aware"]]


def racks(n_racks: int = 2, per_rack: int = 2, cpu_per_node: int = 4) -> list[dict]:
    out: list[dict] = []
    for r in range(n_racks):
        names = [f"r{r}-n{i}" for i in range(per_rack)]
        out += [node(n, f"{cpu_per_node},16Gi,pods=10") for n in names]
        out.append(hypernode(f"r{r}", 1, nodes=names))
    out.append(hypernode("spine", 2, hypernodes=[f"r{r}" for r in range(n_racks)]))
    return out


def running_job(name: str, q: str, nodes: list[str], *, min_member: int = 1, prio: str = "low", cpu_each: int = 4) -> list[dict]:
    out = [podgroup(name, queue=q, min_member=min_member, priority_class=prio, phase="Running")]
    out += [pod(f"{name}-{i}", group=name, requests=f"{cpu_each},1Gi", node=n, phase="Running", priority_class=prio,
                priority=10 if prio == "low" else 100) for i, n in enumerate(nodes)]
    return out


def gang(name: str, q: str, n: int, *, tier: int | None = 1, prio: str = "high") -> list[dict]:
    topo = {"topology": "hard", "tier": tier} if tier is not None else {}
    out = [podgroup(name, queue=q, min_member=n, priority_class=prio, phase="Inqueue", **topo)]  # type: ignore[arg-type]
    out += [pod(f"{name}-{i}", group=name, requests="4,1Gi", priority_class=prio, priority=100 if prio == "high" else 10)
            for i in range(n)]
    return out


def rack_of(pod_key: str, objs: list[dict]) -> str:
    name = pod_key.split("/", 1)[1]
    for o in objs:
        if o["kind"] == "Pod" and o["metadata"]["name"] == name:
            return str(o["spec"]["nodeName"]).split("-")[0]
    raise AssertionError(pod_key)


BASE = [queue("q1"), priority_class("high", 100), priority_class("low", 10)]


def test_gangpreempt_evicts_inside_one_rack_for_a_rack_bound_gang(tmp_path: Path) -> None:
    # four full nodes, each running a one-Pod low-priority job; a high-priority gang of two full
    # Pods bound to one rack (tier 1) evicts the two jobs of one rack, never one in each.
    objs = [*BASE, *racks(), *[o for i, n in enumerate(["r0-n0", "r0-n1", "r1-n0", "r1-n1"])
                                  for o in running_job(f"lo{i}", "q1", [n])], *gang("hi", "q1", 2)]
    c = Case("gangpreempt in one rack", objs, ["gangpreempt"], TIERS)
    run_both(c, tmp_path)
    out = run_case(c)
    assert len(out["evictions"]) == 2, out
    assert len({rack_of(v, objs) for v in out["evictions"]}) == 1, out["evictions"]
    assert sorted(out["pipelined"]) == ["c1/hi-0", "c1/hi-1"]
    assert len({out["pipelined"][k].split("-")[0] for k in out["pipelined"]}) == 1


def test_gangpreempt_prefers_a_safe_bundle_over_breaking_a_gang(tmp_path: Path) -> None:
    # rack r0 runs job "spare" (minMember 1, two Pods) and rack r1 the one-Pod gang "tight";
    # a one-Pod high-priority preemptor takes a Pod of "spare" (which stays ready), not "tight".
    objs = [*BASE, *racks(2, per_rack=1), *running_job("spare", "q1", ["r0-n0", "r0-n0"], cpu_each=2),
            *running_job("tight", "q1", ["r1-n0"]), *gang("hi", "q1", 1, tier=None)]
    objs[-1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    c = Case("safe bundle first", objs, ["gangpreempt"], TIERS)
    run_both(c, tmp_path)
    out = run_case(c)
    assert len(out["evictions"]) == 1 and out["evictions"][0].startswith("c1/spare-"), out


def test_gangpreempt_without_whole_bundles_breaks_no_gang(tmp_path: Path) -> None:
    objs = [*BASE, *racks(), *[o for i, n in enumerate(["r0-n0", "r0-n1", "r1-n0", "r1-n1"])
                                  for o in running_job(f"lo{i}", "q1", [n])], *gang("hi", "q1", 2)]
    c = Case("no whole bundles", objs, ["gangpreempt"], TIERS, configurations={"gangpreempt": {"allowWholeBundle": False}},
             evictions=[])
    run_both(c, tmp_path)


def test_gangpreempt_leaves_equal_priority_jobs_alone(tmp_path: Path) -> None:
    objs = [*BASE, *racks(), *[o for i, n in enumerate(["r0-n0", "r0-n1", "r1-n0", "r1-n1"])
                                  for o in running_job(f"lo{i}", "q1", [n], prio="high")], *gang("hi", "q1", 2)]
    run_both(Case("equal priority", objs, ["gangpreempt"], TIERS, evictions=[]), tmp_path)


def test_gangreclaim_takes_back_one_rack_from_another_queue(tmp_path: Path) -> None:
    # queue q2 (reclaimable) runs on all four nodes; a q1 gang of two full Pods bound to one rack
    # reclaims both nodes of one rack.
    objs = [*BASE, queue("q2", reclaimable=True), *racks(),
            *[o for i, n in enumerate(["r0-n0", "r0-n1", "r1-n0", "r1-n1"]) for o in running_job(f"lent{i}", "q2", [n])],
            *gang("claim", "q1", 2, prio="low")]
    c = Case("gangreclaim in one rack", objs, ["gangreclaim"], TIERS)
    run_both(c, tmp_path)
    out = run_case(c)
    assert len(out["evictions"]) == 2, out
    assert len({rack_of(v, objs) for v in out["evictions"]}) == 1, out["evictions"]


def test_gangreclaim_spares_a_queue_that_is_not_reclaimable(tmp_path: Path) -> None:
    objs = [*BASE, queue("q2", reclaimable=False), *racks(),
            *[o for i, n in enumerate(["r0-n0", "r0-n1", "r1-n0", "r1-n1"]) for o in running_job(f"lent{i}", "q2", [n])],
            *gang("claim", "q1", 2, prio="low")]
    run_both(Case("not reclaimable", objs, ["gangreclaim"], TIERS, evictions=[]), tmp_path)
