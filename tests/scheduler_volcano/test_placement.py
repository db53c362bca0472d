"""placement (YuniKorn's placement rules as a pumice plugin): a job without an explicit queue is
placed by namespace, user or a fixed rule. The ``default`` queue here holds 1 cpu, so a job left
there does not run, and one placed in a team queue does."""

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
BASE = [["priority", "gang", "conformance"], ["predicates", "proportion", "nodeorder"]]


def tiers(*rules: dict[str, Any]) -> list[list[Any]]:
    return [[plugin("placement", {"placement.rules": list(rules)}, all=True), "priority", "gang", "conformance"],
            ["predicates", "proportion", "nodeorder"]]


def cluster(*, namespace: str = "team-b", user: str | None = None, queue_name: str = "default") -> list[dict[str, Any]]:
    """One 8-cpu node; Queues default (1 cpu), team-b, alice, big; one 2-cpu job."""
    pg = podgroup("j", namespace=namespace, queue=queue_name, min_member=1, phase="Inqueue")
    if user is not None:
        pg["metadata"]["annotations"]["yunikorn.apache.org/user.info"] = json.dumps({"user": user, "groups": ["ml"]})
    return [node("n0", "8,32Gi,pods=20"), queue("default", capability="1,1Gi"), queue("team-b"), queue("alice"), queue("big"),
            queue("small", capability="1,1Gi"), pg, pod("j-0", namespace=namespace, group="j", requests="2,1Gi")]


def bound(ns: str = "team-b") -> dict[str, str]:
    return {f"{ns}/j-0": "n0"}


CASES = [
    Case("without the plugin the job stays in the small default queue", cluster(), ACTIONS, BASE, binds={}),
    Case("the namespace rule places the job in its namespace's queue", cluster(), ACTIONS, tiers({"rule": "namespace"}),
         binds=bound()),
    Case("the user rule places the job in its user's queue", cluster(namespace="c1", user="alice"), ACTIONS,
         tiers({"rule": "user"}), binds=bound("c1")),
    Case("a rule naming no existing queue passes to the next", cluster(namespace="c1", user="bob"), ACTIONS,
         tiers({"rule": "user"}, {"rule": "namespace"}, {"rule": "fixed", "value": "big"}), binds=bound("c1")),
    Case("a rule limited to other namespaces does not apply", cluster(), ACTIONS,
         tiers({"rule": "fixed", "value": "big", "namespaces": ["team-a"]}), binds={}),
    Case("a queue the PodGroup names is never changed", cluster(queue_name="small"), ACTIONS,
         tiers({"rule": "provided"}, {"rule": "fixed", "value": "big"}), binds={}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_placement(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def test_placed_queue_is_annotated() -> None:
    res = run_scenario(cluster(), actions=ACTIONS, tiers=tiers({"rule": "namespace"}))
    assert res.close is not None
    assert res.close.pod_group_annotations["team-b/j"] == {"scheduling.pumice.io/placed-queue": "team-b"}


def test_bad_user_info_is_reported() -> None:
    objs = cluster(namespace="c1")
    objs[6]["metadata"]["annotations"]["yunikorn.apache.org/user.info"] = "alice"
    res = run_scenario(objs, actions=ACTIONS, tiers=tiers({"rule": "user"}))
    assert any(e[0] == "c1/j" and e[2] == "InvalidUserInfo" for e in res.events)


def test_arguments() -> None:
    parse = PLUGINS["placement"].parse
    a = parse({"placement.rules": [{"rule": "fixed", "value": "q", "namespaces": ["a"]}]})
    assert a.rules[0].namespaces == ("a",)
    with pytest.raises(ArgumentError, match="needs a value"):
        parse({"placement.rules": [{"rule": "fixed"}]})
    with pytest.raises(ArgumentError):
        parse({"placement.rules": [{"rule": "tag"}]})
