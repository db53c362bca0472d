"""Peers' queueing features as opt-in pumice extensions: single-node-fit admission and the queue
position in ``pumice explain``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pumice.scheduler.volcano.conf import build_conf
from pumice.scheduler.volcano.explain import explain
from pumice.testing.volcano import Case, node, pod, podgroup, queue, run_scenario

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
