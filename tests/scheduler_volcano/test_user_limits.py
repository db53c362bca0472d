"""user-limits (YuniKorn's per-user queue limits as a pumice plugin): maxApplications and
maxResources per user and queue."""

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
BASE = [["priority", "gang", "conformance"], ["predicates", "nodeorder"]]


def tiers(*limits: dict[str, Any]) -> list[list[Any]]:
    return [["priority", "gang", "conformance", plugin("user-limits", {"userLimits.limits": list(limits)}, all=True)],
            ["predicates", "nodeorder"]]


def job(name: str, user: str | None, *, cpu: str = "2", running: bool = False) -> list[dict[str, Any]]:
    pg = podgroup(name, queue="qa", min_member=1, phase="Running" if running else "Pending", min_resources=f"{cpu},1Gi",
                  created=f"2024-01-01T00:0{len(name)}:00Z")
    if user is not None:
        pg["metadata"]["annotations"]["yunikorn.apache.org/user.info"] = json.dumps({"user": user})
    p = pod(name + "-0", group=name, requests=f"{cpu},1Gi", node="n0" if running else "", phase="Running" if running else "Pending")
    return [pg, p]


def cluster(*jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [node("n0", "16,64Gi,pods=20"), queue("qa"), *(o for j in jobs for o in j)]


ONE_APP = {"users": ["*"], "maxApplications": 1}

CASES = [
    Case("without the plugin a user runs any number of applications",
         cluster(job("r", "alice", running=True), job("pa", "alice")), ACTIONS, BASE, binds={"c1/pa-0": "n0"}),
    Case("a user at maxApplications gets no new application admitted",
         cluster(job("r", "alice", running=True), job("pa", "alice")), ACTIONS, tiers(ONE_APP), binds={},
         phases={"c1/pa": "Pending"}),
    Case("the wildcard limits each user on their own",
         cluster(job("r", "alice", running=True), job("pb", "bob")), ACTIONS, tiers(ONE_APP), binds={"c1/pb-0": "n0"}),
    Case("applications admitted in the same session count",
         cluster(job("pa", "alice"), job("pbb", "alice")), ACTIONS, tiers(ONE_APP), binds={"c1/pa-0": "n0"}),
    Case("a job without user info is not limited",
         cluster(job("r", None, running=True), job("pa", None)), ACTIONS, tiers(ONE_APP), binds={"c1/pa-0": "n0"}),
    Case("maxResources caps what a user's tasks hold in the queue",
         cluster(job("r", "alice", running=True, cpu="3"), job("pa", "alice", cpu="2"), job("pbb", "alice", cpu="1")),
         ACTIONS, tiers({"users": ["alice"], "queue": "qa", "maxResources": {"cpu": "4"}}), binds={"c1/pbb-0": "n0"}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_user_limits(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_refusal_names_the_user_and_the_limit() -> None:
    res = run_scenario(cluster(job("r", "alice", running=True), job("pa", "alice")), actions=ACTIONS, tiers=tiers(ONE_APP))
    assert ("c1/pa", "Normal", "Unschedulable", "user alice has 1 of at most 1 applications in queue qa") in res.events


def test_arguments() -> None:
    parse = PLUGINS["user-limits"].parse
    a = parse({"userLimits.limits": [{"users": ["*"], "maxApplications": "2", "maxResources": {"cpu": "4"}}]})
    assert (a.limits[0].max_applications, a.limits[0].max_resources) == (2, {"cpu": "4"})
    with pytest.raises(ArgumentError, match="must name at least one user"):
        parse({"userLimits.limits": [{"users": []}]})
    with pytest.raises(ArgumentError, match="maxResources"):
        parse({"userLimits.limits": [{"users": ["a"], "maxResources": {"cpu": "lots"}}]})
