"""The fair-share maths of proportion, capacity and drf as pure functions (no session)."""

from __future__ import annotations

import math
import random

from pumice.scheduler.volcano.api.resource import Dimension, Resource, exceeded_part
from pumice.scheduler.volcano.plugins._fair_share import (
    Claim,
    clamp_deserved,
    dominant_share,
    proportion_deserved,
    real_capability,
    usage_share,
)
from pumice.scheduler.volcano.plugins._queue_util import exact_equal, res_max

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


def test_share_is_bit_for_bit_the_max_over_the_deserved_dimensions_of_their_shares() -> None:
    """updateShare as written upstream (max of helpers.Share over deserved's resource names) is
    the oracle of the inlined walk, on drawn amounts (zeros of both signs, infinities, NaN)."""
    from pumice.scheduler.volcano.api.resource import share

    def oracle(allocated: Resource, deserved: Resource) -> float:
        res = 0.0
        for rn in deserved.resource_names():
            res = max(res, share(allocated.get(rn), deserved.get(rn)))
        return res

    rng = random.Random(15)
    amounts = [0.0, -0.0, 0.05, 0.1, 0.2, 1.0, 3.0, 1e9, math.inf, math.nan, 1000.0, -5.0]

    def draw() -> Resource:
        names = rng.sample(["nvidia.com/gpu", "pods", "example.com/x"], rng.randint(0, 3))
        return Resource(rng.choice(amounts), rng.choice(amounts), {n: rng.choice(amounts) for n in names})

    for _ in range(5000):
        a, d = draw(), draw()
        got, want = usage_share(a, d), oracle(a, d)
        assert (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))


def test_dominant_share_names_the_scarcest_resource() -> None:
    assert dominant_share(Resource(1000, 6 * GI), Resource(10000, 8 * GI)) == ("memory", 0.75)
    assert dominant_share(NONE, Resource(10000, 8 * GI)) == ("", 0.0)


def test_proportion_deserved_gives_its_last_result_again_only_for_the_very_same_inputs(monkeypatch) -> None:
    from pumice.scheduler.volcano.plugins import _fair_share

    calls = []
    fill = _fair_share._water_fill
    monkeypatch.setattr(_fair_share, "_water_fill", lambda c, t: calls.append(1) or fill(c, t))
    monkeypatch.setattr(_fair_share, "_LAST", [])
    monkeypatch.setattr(_fair_share, "_FILLS", {})
    monkeypatch.setattr(_fair_share, "_FILLS_BASE", [])
    total = Resource(8000, 8 * GI, {"nvidia.com/gpu": 4000})
    claims = [claim("a", 1, Resource(8000, 8 * GI, {"nvidia.com/gpu": 2000})), claim("b", 2, Resource(1000, GI))]
    first = proportion_deserved(claims, total)
    first["a"] = NONE  # the caller's dict is its own
    again = proportion_deserved(list(claims), total)
    assert len(calls) == 1 and again == fill(claims, total)
    # the stale case: a request that changed is filled afresh
    claims[1] = claim("b", 2, Resource(2000, GI))
    changed = proportion_deserved(claims, total)
    assert len(calls) == 2 and changed["b"] == Resource(2000, GI)
    # another weight, key or total (even an equal one: other objects) is another input
    proportion_deserved([claims[0], claim("b", 3, claims[1].request)], total)
    proportion_deserved([claims[0], claim("c", 2, claims[1].request)], total)
    proportion_deserved(claims, Resource(8000, 8 * GI, {"nvidia.com/gpu": 4000}))
    assert len(calls) == 5


def test_proportion_deserved_keeps_results_by_the_exact_values_of_the_requests(monkeypatch) -> None:
    """With the same total, keys, weights, capabilities and guarantees (the same objects), a
    request that goes back to an earlier value (another object) gets the result kept for it;
    -0.0 and 0.0, or the same amounts under another scalar order, are other inputs."""
    from pumice.scheduler.volcano.plugins import _fair_share

    calls = []
    fill = _fair_share._water_fill
    monkeypatch.setattr(_fair_share, "_water_fill", lambda c, t: calls.append(1) or fill(c, t))
    monkeypatch.setattr(_fair_share, "_LAST", [])
    monkeypatch.setattr(_fair_share, "_FILLS", {})
    monkeypatch.setattr(_fair_share, "_FILLS_BASE", [])
    total = Resource(8000, 8 * GI, {"nvidia.com/gpu": 4000})
    a = claim("a", 1, Resource(8000, 8 * GI, {"nvidia.com/gpu": 2000}))
    b = claim("b", 2, Resource(1000, GI))

    def with_b(request: Resource) -> list[Claim]:
        return [a, b._replace(request=request)]

    first = proportion_deserved(with_b(Resource(1000, GI)), total)
    proportion_deserved(with_b(Resource(3000, 2 * GI)), total)
    assert len(calls) == 2
    back = proportion_deserved(with_b(Resource(1000, GI)), total)
    assert len(calls) == 2 and back == first
    proportion_deserved(with_b(Resource(-0.0, GI)), total)
    proportion_deserved(with_b(Resource(0.0, GI)), total)
    assert len(calls) == 4
    proportion_deserved(with_b(Resource(1000, GI, {"x": 1.0, "y": 2.0})), total)
    proportion_deserved(with_b(Resource(1000, GI, {"y": 2.0, "x": 1.0})), total)
    assert len(calls) == 6
    # drawn requests, many repeated: every result is the water filling's on those inputs
    rng = random.Random(5)
    for _ in range(300):
        reqs = [Resource(rng.choice([0.0, 500.0, 4000.0]), rng.choice([0.0, GI]),
                         {"nvidia.com/gpu": float(rng.randint(0, 2) * 1000)} if rng.random() < 0.5 else {})
                for _ in range(2)]
        claims = [a._replace(request=reqs[0]), b._replace(request=reqs[1])]
        got = proportion_deserved(claims, total)
        want = fill(claims, total)
        assert [(k, v.milli_cpu, v.memory, tuple(v.scalars.items())) for k, v in got.items()] == [
            (k, v.milli_cpu, v.memory, tuple(v.scalars.items())) for k, v in want.items()]
    assert len(calls) < 6 + 300


def _water_fill_on_resources(claims: list[Claim], total: Resource) -> dict[str, Resource]:
    """The water filling written with the Resource methods (the form it mirrors upstream): the
    oracle for _fair_share._water_fill, which does the same on plain floats."""
    deserved: dict[str, Resource] = {c.key: Resource() for c in claims}
    remaining = total
    met: set[str] = set()
    while True:
        total_weight = sum(c.weight for c in claims if c.key not in met)
        if total_weight == 0:
            break
        old_remaining = remaining
        inc_total = Resource()
        dec_total = Resource()
        for c in claims:
            if c.key in met:
                continue
            old = deserved[c.key]
            d = old + remaining.multi(c.weight / total_weight)
            d = d.min_dimension(c.real_capability, Dimension.INFINITY)
            d = d.min_dimension(c.request, Dimension.ZERO)
            d = res_max(d, c.guarantee)
            deserved[c.key] = d
            if c.request.less_equal(d, Dimension.ZERO) or exact_equal(d, old):
                met.add(c.key)
            inc, dec = d.diff(old, Dimension.ZERO)
            inc_total = inc_total + inc
            dec_total = dec_total + dec
        remaining = exceeded_part(remaining + dec_total, inc_total)
        if remaining.is_empty() or exact_equal(remaining, old_remaining):
            break
    return deserved


def _bits(got: dict[str, Resource]) -> list[object]:
    return [(k, r.milli_cpu.hex(), r.memory.hex(), [(n, v.hex()) for n, v in r.scalars.items()]) for k, r in got.items()]


def test_water_fill_on_floats_is_bit_for_bit_the_resource_version() -> None:
    from pumice.scheduler.volcano.plugins._fair_share import _water_fill

    rng = random.Random(15)
    names = ["nvidia.com/gpu", "pods", "x", "volcano.sh/gpu-memory"]

    def amount() -> float:
        return rng.choice([0.0, -0.0, 0.05, 1.0, 3.0, 1000.0, 1e6 / 3, 2.0**53, math.inf, rng.uniform(0, 1e4)])

    def res(p: float = 0.5) -> Resource:
        sc = {n: amount() for n in rng.sample(names, rng.randint(0, len(names))) if rng.random() < p}
        return Resource(amount(), amount(), sc)

    cases = 0
    for _ in range(3000):
        n = rng.randint(1, 5)
        claims = [Claim(f"q{i}", rng.choice([0, 1, 1, 2, 3]), res(), rng.choice([INF, res(0.8)]),
                        rng.choice([NONE, res(0.3), res(1.0)])) for i in range(n)]
        if rng.random() < 0.2:
            claims.append(claims[0])  # a repeated key
        total = res(rng.choice([0.2, 0.9]))
        assert _bits(_water_fill(claims, total)) == _bits(_water_fill_on_resources(claims, total)), (claims, total)
        cases += 1
    assert cases == 3000
