"""The fair-share maths of proportion, capacity and drf as pure functions (no session)."""

from __future__ import annotations

import math

from pumice.scheduler.volcano.api.resource import Resource
from pumice.scheduler.volcano.plugins._fair_share import (
    Claim,
    clamp_deserved,
    dominant_share,
    proportion_deserved,
    real_capability,
    usage_share,
)

GI = 1024**3
NONE = Resource()
INF = Resource(math.inf, math.inf)


def claim(key: str, weight: int, request: Resource, *, cap: Resource = INF, guarantee: Resource = NONE) -> Claim:
    return Claim(key, weight, request, cap, guarantee)


def test_equal_weights_split_the_cluster_evenly_when_both_ask_for_more() -> None:
    got = proportion_deserved([claim("a", 1, Resource(8000, 8 * GI)), claim("b", 1, Resource(8000, 8 * GI))], Resource(8000, 8 * GI))
    assert got["a"] == Resource(4000, 4 * GI) and got["b"] == Resource(4000, 4 * GI)


def test_what_a_satisfied_queue_does_not_take_flows_to_the_others() -> None:
    got = proportion_deserved([claim("a", 1, Resource(1000, GI)), claim("b", 1, Resource(8000, 8 * GI))], Resource(8000, 8 * GI))
    assert got["a"] == Resource(1000, GI)
    assert got["b"] == Resource(7000, 7 * GI)


def test_weights_set_the_proportions() -> None:
    got = proportion_deserved([claim("a", 3, Resource(9000, 9 * GI)), claim("b", 1, Resource(9000, 9 * GI))], Resource(8000, 8 * GI))
    assert got["a"] == Resource(6000, 6 * GI) and got["b"] == Resource(2000, 2 * GI)


def test_capability_caps_and_guarantee_floors_the_deserved_share() -> None:
    got = proportion_deserved(
        [
            claim("a", 1, Resource(8000, 8 * GI), cap=Resource(1000, GI)),
            claim("b", 1, Resource(0, 0), guarantee=Resource(2000, 2 * GI)),
        ],
        Resource(8000, 8 * GI),
    )
    assert got["a"] == Resource(1000, GI)
    assert got["b"] == Resource(2000, 2 * GI)


def test_zero_weight_queues_get_nothing() -> None:
    assert proportion_deserved([claim("a", 0, Resource(1000, GI))], Resource(8000, 8 * GI)) == {"a": NONE}


def test_real_capability_is_the_unguaranteed_rest_plus_own_guarantee_capped() -> None:
    total, guarantees = Resource(10000, 10 * GI), Resource(4000, 4 * GI)
    assert real_capability(total, guarantees, Resource(1000, GI), None) == Resource(7000, 7 * GI)
    assert real_capability(total, guarantees, Resource(1000, GI), Resource(3000, math.inf)) == Resource(3000, 7 * GI)


def test_capacity_deserved_is_capped_by_real_capability_and_floored_by_guarantee() -> None:
    assert clamp_deserved(Resource(9000, 9 * GI), Resource(5000, 5 * GI), NONE) == Resource(5000, 5 * GI)
    assert clamp_deserved(Resource(1000, GI), Resource(5000, 5 * GI), Resource(2000, 2 * GI)) == Resource(2000, 2 * GI)


def test_share_is_the_largest_allocated_to_deserved_ratio() -> None:
    assert usage_share(Resource(1000, 3 * GI), Resource(4000, 4 * GI)) == 0.75
    assert usage_share(Resource(1000, GI), NONE) == 0.0


def test_dominant_share_names_the_scarcest_resource() -> None:
    assert dominant_share(Resource(1000, 6 * GI), Resource(10000, 8 * GI)) == ("memory", 0.75)
    assert dominant_share(NONE, Resource(10000, 8 * GI)) == ("", 0.0)


def test_proportion_deserved_gives_its_last_result_again_only_for_the_very_same_inputs(monkeypatch) -> None:
    from pumice.scheduler.volcano.plugins import _fair_share

    calls = []
    fill = _fair_share._water_fill
    monkeypatch.setattr(_fair_share, "_water_fill", lambda c, t: calls.append(1) or fill(c, t))
    monkeypatch.setattr(_fair_share, "_LAST", [])
    claims = [claim("a", 1, Resource(8000, 8 * GI, {"nvidia.com/gpu": 2000})), claim("b", 2, Resource(1000, GI))]
    first = proportion_deserved(claims, Resource(8000, 8 * GI, {"nvidia.com/gpu": 4000}))
    first["a"] = NONE  # the caller's dict is its own
    again = proportion_deserved(list(claims), Resource(8000, 8 * GI, {"nvidia.com/gpu": 4000}))
    assert len(calls) == 1 and again == fill(claims, Resource(8000, 8 * GI, {"nvidia.com/gpu": 4000}))
    # the stale case: a request that changed is filled afresh
    claims[1] = claim("b", 2, Resource(2000, GI))
    changed = proportion_deserved(claims, Resource(8000, 8 * GI, {"nvidia.com/gpu": 4000}))
    assert len(calls) == 2 and changed["b"] == Resource(2000, GI)
    # equal but not the same bits (-0.0) are other inputs; so is another scalar order
    proportion_deserved(claims, Resource(8000, 8 * GI, {"nvidia.com/gpu": -0.0}))
    proportion_deserved(claims, Resource(8000, 8 * GI, {"nvidia.com/gpu": 0.0}))
    assert len(calls) == 4
    a = claim("a", 1, Resource(1000, GI, {"x": 1.0, "y": 2.0}))
    proportion_deserved([a], Resource(8000, 8 * GI))
    proportion_deserved([claim("a", 1, Resource(1000, GI, {"y": 2.0, "x": 1.0}))], Resource(8000, 8 * GI))
    assert len(calls) == 6
