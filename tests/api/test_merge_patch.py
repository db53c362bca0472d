"""merge_patch_into (the API server's in-place JSON merge patch) against merge_patch."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from pumice.api.patch import merge_patch, merge_patch_into

KEYS = ["a", "b", "c", "d", "e"]


def _value(rng: random.Random, depth: int) -> Any:
    r = rng.random()
    if depth < 3 and r < 0.35:
        return {k: _value(rng, depth + 1) for k in rng.sample(KEYS, rng.randint(0, 4))}
    if depth < 3 and r < 0.5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([None, 0, 1, -2.5, "", "x", True, False, 10**25])


def test_in_place_merge_equals_merge_patch_keys_in_the_same_order() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        target = {k: _value(rng, 1) for k in rng.sample(KEYS, rng.randint(0, 5))}
        target = {k: v for k, v in target.items() if v is not None}
        patch = {k: _value(rng, 1) for k in rng.sample(KEYS, rng.randint(0, 5))}
        want = merge_patch(target, patch)
        got = merge_patch_into(copy.deepcopy(target), copy.deepcopy(patch))
        # json.dumps keeps insertion order: equal text means equal values and key order
        assert json.dumps(got) == json.dumps(want), (target, patch)


def test_in_place_merge_changes_the_target_and_takes_the_patch_values() -> None:
    target: dict[str, Any] = {"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"n": [1, 2]}}
    patch: dict[str, Any] = {"metadata": {"labels": {"x": None, "y": "2"}}, "spec": {"n": [3]}, "status": {"s": 1}}
    out = merge_patch_into(target, patch)
    assert out is target
    assert out == {"metadata": {"name": "a", "labels": {"y": "2"}}, "spec": {"n": [3]}, "status": {"s": 1}}
    assert out["spec"]["n"] is patch["spec"]["n"]
