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
    with pytest.raises(ArgumentError, match=r"waitForPodsReady\.tmeout"):
        parse({"waitForPodsReady.tmeout": 1})
    with pytest.raises(ArgumentError, match="must not be negative"):
        parse({"waitForPodsReady.timeout": -1})
