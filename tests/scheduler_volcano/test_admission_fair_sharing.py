"""admission-fair-sharing (Kueue's Admission Fair Sharing as a pumice plugin): the queue with the
least decayed past usage per weight is served first. Sessions run at epoch 0, so Pod times are
given before ``1970-01-01T00:00:00Z``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pumice.scheduler.volcano.framework.arguments import ArgumentError
from pumice.scheduler.volcano.plugins import PLUGINS
from pumice.scheduler.volcano.plugins._usage import decayed_seconds
from pumice.testing.volcano import Case, node, plugin, pod, podgroup, queue

from .conftest import run_both

ACTIONS = ["enqueue", "allocate"]


def tiers(half_life: float = 86400, penalty: float = 300) -> list[list[Any]]:
    afs = plugin("admission-fair-sharing", {"admissionFairSharing.usageHalfLifeTime": half_life,
                                            "admissionFairSharing.entryPenaltySeconds": penalty}, all=True)
    return [["priority", "gang", "conformance", afs], ["predicates", "nodeorder"]]


BASE = [["priority", "gang", "conformance"], ["predicates", "nodeorder"]]


def finished(name: str, q: str, cpu: str, start: str, end: str) -> list[dict[str, Any]]:
    """A Completed job of one Pod that used ``cpu`` from ``start`` to ``end``."""
    p = pod(name + "-0", group=name, requests=f"{cpu},1Gi", node="n0", phase="Succeeded")
    p["status"]["startTime"] = start
    p["status"]["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": 0, "finishedAt": end}}}]
    return [podgroup(name, queue=q, min_member=1, phase="Completed"), p]


def waiting(name: str, q: str) -> list[dict[str, Any]]:
    return [podgroup(name, queue=q, min_member=1, phase="Inqueue"), pod(name + "-0", group=name, requests="4,1Gi")]


def cluster(history: list[dict[str, Any]], *, qa_weight: int = 1) -> list[dict[str, Any]]:
    """One 4-cpu node, a waiting 4-cpu job in each of qa and qb: only one can run."""
    return [node("n0", "4,16Gi,pods=20"), queue("qa", weight=qa_weight), queue("qb"), *history,
            *waiting("a", "qa"), *waiting("b", "qb")]


RECENT_A = finished("old-a", "qa", "4", "1969-12-31T22:00:00Z", "1969-12-31T23:00:00Z")  # 4 cpu for 1 h, 1 h ago
LONG_AGO_A = finished("old-a", "qa", "4", "1969-12-21T22:00:00Z", "1969-12-21T23:00:00Z")  # the same, 10 days ago
RECENT_B = finished("old-b", "qb", "1", "1969-12-31T23:40:00Z", "1969-12-31T23:50:00Z")  # 1 cpu for 10 min, 10 min ago

CASES = [
    Case("without the plugin the first queue by name wins", cluster(RECENT_A), ACTIONS, BASE, binds={"c1/a-0": "n0"}),
    Case("the queue that used nothing goes before the one that used recently", cluster(RECENT_A), ACTIONS, tiers(),
         binds={"c1/b-0": "n0"}),
    Case("usage ten half-lives ago counts less than a small recent use",
         cluster(LONG_AGO_A + RECENT_B), ACTIONS, tiers(half_life=86400), binds={"c1/a-0": "n0"}),
    Case("without decay the larger old use still counts in full",
         cluster(LONG_AGO_A + RECENT_B), ACTIONS, tiers(half_life=0), binds={"c1/b-0": "n0"}),
    Case("the queue with the larger recent usage waits", cluster(RECENT_A + RECENT_B), ACTIONS, tiers(), binds={"c1/b-0": "n0"}),
    Case("a heavier queue weight divides its usage", cluster(RECENT_A + RECENT_B, qa_weight=1000), ACTIONS, tiers(),
         binds={"c1/a-0": "n0"}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_admission_fair_sharing(case: Case, tmp_path: Path) -> None:
    run_both(case, tmp_path)


def small_jobs() -> list[dict[str, Any]]:
    """One 4-cpu node; two 2-cpu jobs in each of qa and qb, no history."""
    objs: list[dict[str, Any]] = [node("n0", "4,16Gi,pods=20"), queue("qa"), queue("qb")]
    for q in ("a", "b"):
        for i in (1, 2):
            objs += [podgroup(f"{q}{i}", queue=f"q{q}", min_member=1, phase="Inqueue"),
                     pod(f"{q}{i}-0", group=f"{q}{i}", requests="2,1Gi")]
    return objs


def test_entry_penalty_alternates_queues_within_one_session(tmp_path: Path) -> None:
    run_both(Case("penalty", small_jobs(), ACTIONS, tiers(), binds={"c1/a1-0": "n0", "c1/b1-0": "n0"}), tmp_path)


def test_without_penalty_ties_stay_with_the_first_queue(tmp_path: Path) -> None:
    run_both(Case("no penalty", small_jobs(), ACTIONS, tiers(penalty=0), binds={"c1/a1-0": "n0", "c1/a2-0": "n0"}), tmp_path)


def test_decay_integral() -> None:
    # one hour of use that ended now, half-life one hour: 3600 / ln 2 * (1 - 1/2)
    assert math.isclose(decayed_seconds(-3600, 0, 0, 3600), 3600 / math.log(2) / 2)
    assert decayed_seconds(-3600, 0, 0, 0) == 3600
    assert decayed_seconds(5, 5, 10, 60) == 0


def test_arguments() -> None:
    parse = PLUGINS["admission-fair-sharing"].parse
    a = parse({"admissionFairSharing.resourceWeights": {"nvidia.com/gpu": 10}})
    assert (a.usage_half_life_time, a.entry_penalty_seconds, a.resource_weights) == (604800, 300, {"nvidia.com/gpu": 10})
    with pytest.raises(ArgumentError, match="must not be negative"):
        parse({"admissionFairSharing.resourceWeights": {"cpu": -1}})
    assert parse({"admissionFairSharing.halfLife": 1}) == parse({})  # unknown keys are ignored (logged)
