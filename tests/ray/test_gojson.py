"""Go's encoding/json of a RayClusterSpec without Go (the byte-for-byte comparison with upstream's
own functions is tests/ray/test_hash_go.py, which needs ``go``)."""

from __future__ import annotations

import json

import pytest

from pumice.controllers.ray.common.gojson import go_quantity_string, go_string, marshal
from pumice.controllers.ray.common.hashing import (
    hash_without_replicas_and_workers_to_delete,
    with_raycluster_defaults,
)

from .conftest import load_sample


@pytest.mark.parametrize(("given", "canonical"), [
    ("1", "1"), ("500m", "500m"), ("1000m", "1"), ("0.5", "500m"), ("0.1", "100m"), ("1.5", "1500m"),
    ("1000", "1k"), ("1024", "1024"), ("5Gi", "5Gi"), ("2048Mi", "2Gi"), ("1.5Gi", "1536Mi"), ("1Ki", "1Ki"),
    ("0.3Ki", "307200m"), ("512", "512"), ("1e3", "1e3"), ("3e-3", "3e-3"), ("1E", "1E"), ("0", "0"),
    ("0Gi", "0"), (2, "2"), (0.25, "250m"), ("-1.5Gi", "-1536Mi"),
])
def test_quantities_are_written_in_gos_canonical_form(given: str | int | float, canonical: str) -> None:
    assert go_quantity_string(given) == canonical


def test_strings_are_escaped_as_go_escapes_them() -> None:
    assert go_string('a<b>&"c"\\\n\t\x01\u2028é') == '"a\\u003cb\\u003e\\u0026\\"c\\"\\\\\\n\\t\\u0001\\u2028é"'


def test_fields_follow_go_declaration_order_and_omitempty() -> None:
    spec = {"workerGroupSpecs": [], "rayVersion": "2.52.0", "unknownField": 1,
            "headGroupSpec": {"rayStartParams": {"b": "1", "a": "2"},
                              "template": {"spec": {"containers": [{"image": "ray", "name": "ray-head"}]}}}}
    out = json.loads(marshal(spec))
    # Upstream declares headGroupSpec before rayVersion; an empty slice with omitempty and a
    # field the Go type lacks are dropped; structs without omitempty are always written.
    assert list(out) == ["headGroupSpec", "rayVersion"]
    assert list(out["headGroupSpec"]["rayStartParams"]) == ["a", "b"]
    assert out["headGroupSpec"]["template"] == {"metadata": {}, "spec": {"containers": [
        {"name": "ray-head", "image": "ray", "resources": {}}]}}


def test_the_sample_hash_is_upstreams() -> None:
    # The value upstream's GenerateJsonHash gives for ray-cluster.sample.yaml with the ignored
    # fields cleared (tests/ray/test_hash_go.py recomputes it with upstream's Go code).
    spec = load_sample("ray-cluster.sample.yaml", "RayCluster")["spec"]
    assert hash_without_replicas_and_workers_to_delete(spec) == "6RKSSRH0TUUOPMDVECMHUNDSDORCPGVT"


def test_the_hash_ignores_what_autoscalers_edit_and_sees_the_rest() -> None:
    spec = load_sample("ray-cluster.sample.yaml", "RayCluster")["spec"]
    base = hash_without_replicas_and_workers_to_delete(spec)
    g = spec["workerGroupSpecs"][0]
    g.update(replicas=7, minReplicas=0, maxReplicas=9, scaleStrategy={"workersToDelete": ["w"]})
    assert hash_without_replicas_and_workers_to_delete(spec) == base
    g["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.53.0"
    assert hash_without_replicas_and_workers_to_delete(spec) != base


def test_the_head_pods_hash_sees_a_missing_ray_start_params_as_the_empty_map_upstream_defaults_it_to() -> None:
    # rayStartParams has no omitempty: Go writes a nil map as null and an empty one as {}; the
    # RayCluster controller's setDefaults turns nil into {} before hashing for the head Pod.
    spec = load_sample("ray-cluster.sample.yaml", "RayCluster")["spec"]
    spec["headGroupSpec"].pop("rayStartParams", None)
    assert b'"rayStartParams":null' in marshal(spec)
    defaulted = with_raycluster_defaults(spec)
    assert defaulted["headGroupSpec"]["rayStartParams"] == {} and "rayStartParams" not in spec["headGroupSpec"]
    assert b'"rayStartParams":{}' in marshal(defaulted)
