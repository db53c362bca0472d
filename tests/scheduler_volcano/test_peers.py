"""Peers' queueing features as opt-in pumice extensions: single-node-fit admission and the queue
position in ``pumice explain``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.scheduler.volcano.conf import build_conf
from pumice.scheduler.volcano.explain import explain
from pumice.testing.volcano import Case, node, pod, podgroup, priority_class, queue, run_scenario

from .conftest import run_both

BASE = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder"]]
WITH = [["single-node-fit", "priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder"]]


def objects() -> list[dict]:
    """Three 4-cpu nodes; an older gang of two 5-cpu tasks (fits the cluster's total, never one
    node) and a newer 4-cpu job in the same queue."""
    return [*(node(f"n{i}", "4,8Gi,pods=10") for i in range(3)), queue("q1"),
            podgroup("huge", queue="q1", min_member=2, min_resources="10,2Gi", phase="Pending", created="2024-01-01T00:00:00Z"),
            pod("huge-0", group="huge", requests="5,1Gi"), pod("huge-1", group="huge", requests="5,1Gi"),
            podgroup("small", queue="q1", min_member=1, min_resources="4,1Gi", phase="Pending", created="2024-01-01T00:01:00Z"),
            pod("small-0", group="small", requests="4,1Gi")]


CASES = [
    Case("without single-node-fit the impossible gang is admitted and its reservation keeps the small job out",
         objects(), ["enqueue", "allocate"], BASE, binds={}, phases={"c1/huge": "Inqueue", "c1/small": "Pending"}),
    Case("with single-node-fit the impossible gang stays Pending and the small job runs",
         objects(), ["enqueue", "allocate"], WITH, binds={"c1/small-0": "n0"}, phases={"c1/huge": "Pending"}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_single_node_fit(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_single_node_fit_says_which_task_never_fits() -> None:
    res = run_scenario(objects(), actions=["enqueue", "allocate"], tiers=WITH)
    assert ("c1/huge", "Warning", "Unschedulable",
            "task huge-0 requests cpu 5000, more than any node's allocatable (largest: 4000)") in res.events


def test_explain_gives_the_queue_position() -> None:
    ex = explain(objects(), "podgroup", "small", "c1", build_conf(["enqueue", "allocate"], BASE))
    assert "queue position: 2 of 2 waiting jobs in queue q1 (the session's job order)" in ex.details


# queue-position: status.positionInQueue (pumice's extension field)
POS_TIERS = [["priority", "gang", "conformance", "queue-position"], ["drf", "predicates", "nodeorder"]]
POS_BASE = [["priority", "gang", "conformance"], ["drf", "predicates", "nodeorder"]]


def waiting_line(*, old_position_on_running: bool = False) -> list[dict]:
    """One 4-cpu node; queue q1 has four 4-cpu jobs (priorities low, high, mid, and a running one),
    queue q2 one; only one job can be placed in the session."""
    objs = [node("n0", "4,8Gi,pods=10"), queue("q1"), queue("q2"),
            priority_class("low", 1), priority_class("mid", 5), priority_class("high", 10)]
    for name, prio, created in (("j-low", "low", "00"), ("j-high", "high", "01"), ("j-mid", "mid", "02")):
        objs += [podgroup(name, queue="q1", min_member=1, priority_class=prio, created=f"2024-01-01T00:{created}:00Z"),
                 pod(f"{name}-0", group=name, requests="4,1Gi")]
    objs += [podgroup("other", queue="q2", min_member=1, created="2024-01-01T00:03:00Z"),
             pod("other-0", group="other", requests="4,1Gi")]
    if old_position_on_running:
        pg = podgroup("was-waiting", queue="q1", min_member=1, phase="Running")
        pg["status"]["positionInQueue"] = 3
        objs += [pg, pod("was-waiting-0", group="was-waiting", requests="0,1Gi", node="n0", phase="Running")]
    return objs


def positions(res) -> dict[str, int | None]:
    return {k: v.get("positionInQueue") for k, v in sorted(res.pod_groups.items())}


@pytest.mark.parametrize("vectorize", [True, False])
def test_queue_position_writes_each_waiting_jobs_place_in_its_queue_to_the_status(vectorize: bool) -> None:
    runs = [run_scenario(waiting_line(), actions=["enqueue", "allocate"], tiers=POS_TIERS, vectorize=vectorize)
            for _ in range(2)]
    assert positions(runs[0]) == positions(runs[1])
    # j-high (highest priority) took the node; j-mid then j-low wait in q1; other waits alone in q2
    assert runs[0].binds == {"c1/j-high-0": "n0"}
    assert positions(runs[0]) == {"c1/j-high": None, "c1/j-low": 2, "c1/j-mid": 1, "c1/other": 1}
    assert {"c1/j-low", "c1/j-mid", "c1/other"} <= set(runs[0].close.changed)


def test_a_job_that_stops_waiting_loses_its_position() -> None:
    res = run_scenario(waiting_line(old_position_on_running=True), actions=["enqueue", "allocate"], tiers=POS_TIERS)
    assert "positionInQueue" not in res.pod_groups["c1/was-waiting"]
    assert "c1/was-waiting" in res.close.changed


def test_without_the_plugin_no_position_is_written() -> None:
    res = run_scenario(waiting_line(), actions=["enqueue", "allocate"], tiers=POS_BASE)
    assert set(positions(res).values()) == {None}


def test_explain_and_the_status_give_the_same_position() -> None:
    conf = build_conf(["enqueue", "allocate"], POS_TIERS)
    res = run_scenario(waiting_line(), actions=["enqueue", "allocate"], tiers=POS_TIERS)
    ex = explain(waiting_line(), "podgroup", "j-low", "c1", conf)
    assert res.pod_groups["c1/j-low"]["positionInQueue"] == 2
    assert "queue position: 2 of 2 waiting jobs in queue q1 (the session's job order)" in ex.details
