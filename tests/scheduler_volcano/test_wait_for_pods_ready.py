"""wait-for-pods-ready (Kueue's waitForPodsReady as a pumice plugin): a bound gang whose Pods are
not all Ready within the timeout is evicted and requeued with exponential backoff, then
deactivated past the requeue limit.

Sessions run at the project clock's epoch 0 (the harness' ``now``), so condition times are given
relative to ``1970-01-01T00:00:00Z``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pumice.scheduler.volcano.framework.arguments import ArgumentError
from pumice.scheduler.volcano.plugins import PLUGINS
from pumice.scheduler.volcano.plugins.wait_for_pods_ready import backoff_seconds
from pumice.testing.volcano import Case, node, plugin, pod, podgroup, queue, run_case, run_scenario

from .conftest import run_both

WFPR = plugin("wait-for-pods-ready", {"waitForPodsReady.timeout": 300, "waitForPodsReady.backoffBaseSeconds": 60,
                                       "waitForPodsReady.backoffLimitCount": 2}, all=True)
TIERS = [[WFPR, "priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder"]]
BASE = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder"]]
ACTIONS = ["enqueue", "allocate", "backfill"]


def ready(p: dict[str, Any]) -> dict[str, Any]:
    p["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return p


def waiting_since(pg: dict[str, Any], when: str) -> dict[str, Any]:
    pg["status"]["conditions"] = [{"type": "PodsReady", "status": "False", "reason": "WaitForStart",
                                   "message": "Not all pods are ready or succeeded", "lastTransitionTime": when}]
    return pg


def running_gang(*, since: str | None, n_ready: int = 0, annotations: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """A gang of two on n0/n1, Running, ``n_ready`` of them Ready; PodsReady False since ``since``."""
    pg = podgroup("g", queue="q1", min_member=2, phase="Running", annotations=annotations)
    if since is not None:
        waiting_since(pg, since)
    pods = [pod(f"g-{i}", group="g", requests="2,1Gi", node=f"n{i}", phase="Running") for i in range(2)]
    for p in pods[:n_ready]:
        ready(p)
    return [node("n0", "4,8Gi,pods=10"), node("n1", "4,8Gi,pods=10"), queue("q1"), pg, *pods]


def pending_gang(annotations: dict[str, str]) -> list[dict[str, Any]]:
    """An Inqueue gang of two, earlier evicted (requeue annotations), on two empty nodes."""
    return [node("n0", "4,8Gi,pods=10"), node("n1", "4,8Gi,pods=10"), queue("q1"),
            podgroup("g", queue="q1", min_member=2, phase="Inqueue", annotations=annotations),
            *(pod(f"g-{i}", group="g", requests="2,1Gi") for i in range(2))]


CASES = [
    Case("a gang not ready 10 minutes after binding is evicted whole",
         running_gang(since="1969-12-31T23:50:00Z"), ACTIONS, TIERS, binds={}, evictions=["c1/g-0", "c1/g-1"]),
    Case("without the plugin the same gang is left alone",
         running_gang(since="1969-12-31T23:50:00Z"), ACTIONS, BASE, binds={}, evictions=[]),
    Case("a gang not ready for 2 minutes of a 5-minute timeout is left alone",
         running_gang(since="1969-12-31T23:58:00Z"), ACTIONS, TIERS, binds={}, evictions=[]),
    Case("a gang with one of two Pods Ready past the timeout is evicted",
         running_gang(since="1969-12-31T23:50:00Z", n_ready=1), ACTIONS, TIERS, evictions=["c1/g-0", "c1/g-1"]),
    Case("a gang whose Pods are all Ready is never evicted",
         running_gang(since="1969-12-31T23:50:00Z", n_ready=2), ACTIONS, TIERS, evictions=[]),
    Case("a requeued gang still in backoff is not scheduled",
         pending_gang({"scheduling.pumice.io/requeue-count": "1", "scheduling.pumice.io/requeue-at": "1970-01-01T00:01:00Z"}),
         ACTIONS, TIERS, binds={}, evictions=[]),
    Case("a requeued gang whose backoff is over is scheduled again",
         pending_gang({"scheduling.pumice.io/requeue-count": "1", "scheduling.pumice.io/requeue-at": "1969-12-31T23:59:00Z"}),
         ACTIONS, TIERS, binds={"c1/g-0": "n0", "c1/g-1": "n1"}, evictions=[]),
    Case("a deactivated gang is never scheduled",
         pending_gang({"scheduling.pumice.io/deactivated": "true"}), ACTIONS, TIERS, binds={}, evictions=[]),
    Case("the timeout past the requeue limit deactivates the gang and evicts it",
         running_gang(since="1969-12-31T23:50:00Z", annotations={"scheduling.pumice.io/requeue-count": "2"}),
         ACTIONS, TIERS, evictions=["c1/g-0", "c1/g-1"]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_wait_for_pods_ready(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def conditions(objects: list[dict[str, Any]]) -> dict[str, tuple[str, str, str]]:
    out = run_case(Case("c", objects, ACTIONS, TIERS))
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in out["podGroups"]["c1/g"]["conditions"]}


def test_first_bound_session_starts_the_clock() -> None:
    conds = conditions(running_gang(since=None))
    assert conds["PodsReady"] == ("False", "WaitForStart", "Not all pods are ready or succeeded")


def test_all_ready_turns_pods_ready_true() -> None:
    conds = conditions(running_gang(since="1969-12-31T23:50:00Z", n_ready=2))
    assert conds["PodsReady"] == ("True", "Started", "All pods reached readiness and the workload is running")


def test_timeout_records_condition_event_and_backoff() -> None:
    res = run_scenario(running_gang(since="1969-12-31T23:50:00Z", annotations={"scheduling.pumice.io/requeue-count": "1"}),
                       actions=ACTIONS, tiers=TIERS)
    conds = {c["type"]: c for c in res.pod_groups["c1/g"]["conditions"]}
    assert (conds["Evicted"]["status"], conds["Evicted"]["reason"], conds["Evicted"]["message"]) == (
        "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout c1/g")
    assert "PodsReady" not in conds  # the clock restarts at the next admission
    assert ("c1/g", "Warning", "EvictedDueToPodsReadyTimeout", "Exceeded the PodsReady timeout c1/g") in res.events
    assert res.close is not None
    # second requeue: 60 * 2^(2-1) = 120 s after now (epoch 0)
    assert res.close.pod_group_annotations["c1/g"] == {
        "scheduling.pumice.io/requeue-count": "2", "scheduling.pumice.io/requeue-at": "1970-01-01T00:02:00Z"}


def test_requeue_limit_deactivates_with_condition_and_event() -> None:
    res = run_scenario(running_gang(since="1969-12-31T23:50:00Z", annotations={"scheduling.pumice.io/requeue-count": "2"}),
                       actions=ACTIONS, tiers=TIERS)
    conds = {c["type"]: c for c in res.pod_groups["c1/g"]["conditions"]}
    msg = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    assert (conds["Evicted"]["reason"], conds["Evicted"]["message"]) == ("DeactivatedDueToRequeuingLimitExceeded", msg)
    assert ("c1/g", "Warning", "DeactivatedDueToRequeuingLimitExceeded", msg) in res.events
    assert res.close is not None
    assert res.close.pod_group_annotations["c1/g"] == {"scheduling.pumice.io/deactivated": "true"}


def test_backoff_finished_is_recorded() -> None:
    conds = conditions(pending_gang({"scheduling.pumice.io/requeue-count": "1",
                                     "scheduling.pumice.io/requeue-at": "1969-12-31T23:59:00Z"}))
    assert conds["Requeued"] == ("True", "BackoffFinished", "The workload backoff was finished")


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [backoff_seconds(c, 60, 300) for c in (1, 2, 3, 4)] == [60, 120, 240, 300]


def test_arguments_parse_once_and_reject_bad_input() -> None:
    parse = PLUGINS["wait-for-pods-ready"].parse
    a = parse({"waitForPodsReady.timeout": "120", "waitForPodsReady.backoffLimitCount": 3})
    assert (a.timeout, a.backoff_limit_count, a.backoff_base_seconds, a.backoff_max_seconds) == (120, 3, 60, 3600)
    assert parse({"waitForPodsReady.tmeout": 1}) == parse({})  # an unknown key is ignored (a warning)
    with pytest.raises(ArgumentError, match=r"waitForPodsReady\.timeout"):
        parse({"waitForPodsReady.timeout": "soon"})
    with pytest.raises(ArgumentError, match="must not be negative"):
        parse({"waitForPodsReady.timeout": -1})


async def test_live_scheduler_evicts_and_annotates_a_gang_not_ready_in_time(tmp_path: Path) -> None:
    """Through the live scheduler and the in-process API server, on a FakeClock: bind, start the
    PodsReady clock, pass the timeout, and see the eviction and the requeue annotations written."""

    from pumice._util.clock import FakeClock
    from pumice.scheduler.volcano.scheduler import Scheduler
    from pumice.testing.cluster import local_cluster

    from .test_live import _seed, _wait

    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: wait-for-pods-ready\n    arguments:\n'
                    '      waitForPodsReady.timeout: 60\n  - name: gang\n- plugins:\n  - name: predicates\n')
    clock = FakeClock(1_700_000_000.0)
    async with local_cluster() as c:
        client = c.client
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        await _seed(client, [node("n1", "4,8Gi,pods=10"), queue("q1"), podgroup("g", queue="q1", min_member=1, phase="Inqueue"),
                             pod("g-0", group="g", requests="1,1Gi")])
        sched = Scheduler(client, conf_path=str(conf), clock=clock)
        await sched.cache.start(timeout=5)
        pg_kind = client.scheme.resolve("podgroups.scheduling.volcano.sh")
        pod_kind = client.scheme.resolve("pods")
        try:
            async def step(pred: Any) -> None:
                async def ok() -> bool:
                    sched.run_once()
                    await sched.cache.flush()
                    return bool(await pred())

                await _wait(ok)

            async def bound() -> bool:
                return bool((await client.get(pod_kind, "g-0", "c1"))["spec"].get("nodeName"))

            async def waiting() -> bool:
                pg = await client.get(pg_kind, "g", "c1")
                return any(x["type"] == "PodsReady" and x["reason"] == "WaitForStart" for x in pg["status"].get("conditions", []))

            await step(bound)
            await step(waiting)
            clock.advance(61)

            async def evicted() -> bool:
                pg = await client.get(pg_kind, "g", "c1")
                return (pg["metadata"].get("annotations") or {}).get("scheduling.pumice.io/requeue-count") == "1"

            await step(evicted)
            pg = await client.get(pg_kind, "g", "c1")
            assert pg["metadata"]["annotations"]["scheduling.pumice.io/requeue-at"] == "2023-11-14T22:15:21Z"  # now + 60 s
            conds = {x["type"]: x for x in pg["status"]["conditions"]}
            assert conds["Evicted"]["reason"] == "PodsReadyTimeout"
            lst = await client.list(pod_kind, "c1")
            assert all(p["metadata"].get("deletionTimestamp") or p["metadata"]["name"] != "g-0" for p in lst.items)
        finally:
            await sched.cache.stop()


@pytest.mark.parametrize(("annotations", "reason", "why"), [
    ({"scheduling.pumice.io/deactivated": "true"}, "DeactivatedDueToRequeuingLimitExceeded",
     "The workload is deactivated due to exceeding the maximum number of re-queuing retries"),
    ({"scheduling.pumice.io/requeue-count": "1", "scheduling.pumice.io/requeue-at": "1970-01-01T00:01:00Z"},
     "PodsReadyTimeout", "requeued after the PodsReady timeout; backoff until 1970-01-01T00:01:00Z"),
])
def test_a_held_gang_says_why_instead_of_blaming_resources(annotations: dict[str, str], reason: str, why: str) -> None:
    """Trial 5 F-16 (a): a deactivated (or backing-off) gang on empty Nodes also got gang's
    ``Unschedulable`` ``NotEnoughResources`` condition and a Warning "2/2 tasks in gang
    unschedulable: pod group is not ready, 2 Pending..." (read as a capacity problem)."""
    res = run_scenario(pending_gang(annotations), actions=ACTIONS, tiers=TIERS)
    conds = {c["type"]: c for c in res.pod_groups["c1/g"]["conditions"]}
    assert (conds["Unschedulable"]["status"], conds["Unschedulable"]["reason"], conds["Unschedulable"]["message"]) == (
        "True", reason, f"2/2 tasks in gang unschedulable: {why}")
    warnings = [e for e in res.events if e[1] == "Warning"]
    assert warnings == [("c1/g", "Warning", "Unschedulable", f"2/2 tasks in gang unschedulable: {why}")]
    assert res.close is not None
    assert {k: v[1] for k, v in res.close.pod_conditions.items()} == {"c1/g-0": why, "c1/g-1": why}
    # the same gang not held (backoff over) is scheduled; a gang short of room still says NotEnoughResources
    short = pending_gang({})
    short[0]["status"]["allocatable"]["cpu"] = short[0]["status"]["capacity"]["cpu"] = "1"
    short[1]["status"]["allocatable"]["cpu"] = short[1]["status"]["capacity"]["cpu"] = "1"
    res = run_scenario(short, actions=ACTIONS, tiers=TIERS)
    assert {c["type"]: c["reason"] for c in res.pod_groups["c1/g"]["conditions"]}["Unschedulable"] == "NotEnoughResources"
