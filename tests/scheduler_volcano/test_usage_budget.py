"""usage-budget (quota over time, pumice's own): a queue that spent its GPU-hours of the period
admits and allocates no more GPU work. Sessions run at epoch 0, so Pod times are given before
``1970-01-01T00:00:00Z``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pumice.scheduler.volcano.framework.arguments import ArgumentError
from pumice.scheduler.volcano.plugins import PLUGINS
from pumice.testing.volcano import Case, node, plugin, pod, podgroup, queue, run_scenario

from .conftest import run_both

ACTIONS = ["enqueue", "allocate"]
TIERS = [["priority", "gang", "conformance", plugin("usage-budget", {"usageBudget.periodSeconds": 86400}, all=True)],
         ["predicates", "nodeorder"]]
BASE = [["priority", "gang", "conformance"], ["predicates", "nodeorder"]]


def budgeted(name: str, gpu_hours: float) -> dict[str, Any]:
    q = queue(name)
    q["metadata"]["annotations"]["scheduling.pumice.io/usage-budget"] = json.dumps({"nvidia.com/gpu": gpu_hours})
    return q


def used(name: str, *, start: str, end: str | None) -> list[dict[str, Any]]:
    """A job of one 1-GPU Pod that ran from ``start`` to ``end`` (None: still running)."""
    p = pod(name + "-0", group=name, requests="1,1Gi,nvidia.com/gpu=1", node="n0",
            phase="Running" if end is None else "Succeeded")
    p["status"]["startTime"] = start
    if end is not None:
        p["status"]["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": 0, "finishedAt": end}}}]
    return [podgroup(name, queue="qa", min_member=1, phase="Running" if end is None else "Completed"), p]


def cluster(history: list[dict[str, Any]], *, requests: str = "1,1Gi,nvidia.com/gpu=1", phase: str = "Inqueue") -> list[dict[str, Any]]:
    """One node with 4 GPUs; queue qa has a 2 GPU-hour budget per day and a waiting job."""
    return [node("n0", "8,32Gi,pods=20,nvidia.com/gpu=4"), budgeted("qa", 2), *history,
            podgroup("a", queue="qa", min_member=1, phase=phase, min_resources=requests if phase == "Pending" else None),
            pod("a-0", group="a", requests=requests)]


TWO_HOURS_AGO = used("old", start="1969-12-31T21:00:00Z", end="1969-12-31T23:00:00Z")  # 2 GPU-hours, within the day
THREE_DAYS_AGO = used("old", start="1969-12-28T21:00:00Z", end="1969-12-28T23:00:00Z")  # outside the window
STRADDLING = used("old", start="1969-12-30T22:00:00Z", end="1970-01-01T00:00:00Z")  # 26 h, 24 of them in the window
RUNNING_90_MIN = used("old", start="1969-12-31T22:30:00Z", end=None)  # 1.5 GPU-hours so far

CASES = [
    Case("without the plugin the spent queue still runs GPU work", cluster(TWO_HOURS_AGO), ACTIONS, BASE, binds={"c1/a-0": "n0"}),
    Case("a queue that spent its GPU-hours allocates no GPU task", cluster(TWO_HOURS_AGO), ACTIONS, TIERS, binds={}),
    Case("usage before the period does not count", cluster(THREE_DAYS_AGO), ACTIONS, TIERS, binds={"c1/a-0": "n0"}),
    Case("only the part of a run inside the period counts", cluster(STRADDLING), ACTIONS, TIERS, binds={}),
    Case("a running Pod counts up to now and leaves budget", cluster(RUNNING_90_MIN), ACTIONS, TIERS, binds={"c1/a-0": "n0"}),
    Case("a job asking no GPU is not held by the GPU budget", cluster(TWO_HOURS_AGO, requests="1,1Gi"), ACTIONS, TIERS,
         binds={"c1/a-0": "n0"}),
    Case("enqueue keeps a GPU job of a spent queue Pending", cluster(TWO_HOURS_AGO, phase="Pending"), ACTIONS, TIERS,
         binds={}, phases={"c1/a": "Pending"}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_usage_budget(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_refusal_says_how_much_was_used() -> None:
    res = run_scenario(cluster(TWO_HOURS_AGO, phase="Pending"), actions=ACTIONS, tiers=TIERS)
    assert ("c1/a", "Normal", "Unschedulable",
            "queue qa used 2 of its 2 nvidia.com/gpu-hours budget in the last 24h") in res.events


def test_a_bad_budget_admits_nothing_and_says_why() -> None:
    objs = cluster([], phase="Pending")
    objs[1]["metadata"]["annotations"]["scheduling.pumice.io/usage-budget"] = '{"nvidia.com/gpu": "lots"}'
    res = run_scenario(objs, actions=ACTIONS, tiers=TIERS)
    assert res.binds == {}
    assert any(e[2] == "InvalidQueueAnnotation" and "want a JSON object of non-negative hours" in e[3] for e in res.events)


def test_arguments() -> None:
    parse = PLUGINS["usage-budget"].parse
    assert parse({}).period_seconds == 2592000
    with pytest.raises(ArgumentError, match="must be positive"):
        parse({"usageBudget.periodSeconds": 0})
