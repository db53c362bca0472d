"""Upstream's validation unit cases for the token-auth and worker-replica rules, ported from
ray-operator/controllers/ray/utils/validation_test.go at the newest stored snapshot (feeaf72):
TestValidateRayClusterSpecRayVersionForAuth, TestValidateRayClusterSpec_WorkerGroupReplicaValidation,
TestValidateRayClusterSpec_Auth and the K8s-token-auth cases of TestValidateRayJobSpec and
TestValidateRayServiceSpec. Upstream's ``podTemplateSpec(nil, nil)`` is one container."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api import Obj
from pumice.controllers.ray.validation import (
    ValidationError,
    parse_generic_version,
    validate_raycluster,
    validate_raycluster_spec,
    validate_raycluster_status,
    validate_rayjob,
    validate_rayservice_spec,
    version_less_than,
)

ORIGIN = "validation_test.go"


def template() -> Obj:
    return {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.0"}]}}


def group(name: str, **kw: Any) -> Obj:
    return {"groupName": name, "template": template(), **kw}


def check(spec: Obj, error: str | None, *, exact: bool = True) -> None:
    if error is None:
        validate_raycluster_spec(spec)
        return
    with pytest.raises(ValidationError) as e:
        validate_raycluster_spec(spec)
    if exact:
        assert str(e.value) == error
    else:
        assert error in str(e.value)


AUTH_VERSION_CASES = [
    ("Valid Ray version 2.52.0", "2.52.0", False, None),
    ("Invalid Ray version 2.52.0 with k8s token auth", "2.52.0", True,
     "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got 2.52.0"),
    ("Valid Ray version 2.55.0 with k8s token auth", "2.55.0", True, None),
    ("Valid Ray version 3.0.0", "3.0.0", False, None),
    ("Valid Ray version 3.0.0 with k8s token auth", "3.0.0", True, None),
    ("Invalid Ray version 2.50.0", "2.50.0", False,
     "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.50.0"),
    ("Invalid Ray version format", "invalid-version", False,
     "authOptions.mode is 'token' but RayVersion format is invalid: invalid-version, could not parse "
     "\"invalid-version\" as version"),
    ("Empty Ray version", "", False,
     "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is required"),
]


@pytest.mark.parametrize(("ray_version", "k8s", "error"), [
    pytest.param(v, k, e, id=n, marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpecRayVersionForAuth/{n}"))
    for n, v, k, e in AUTH_VERSION_CASES])
def test_ray_version_for_auth(ray_version: str, k8s: bool, error: str | None) -> None:
    # upstream sets EnableK8sTokenAuth to a pointer to the case's bool, false included
    spec = {"rayVersion": ray_version, "headGroupSpec": {"template": template()},
            "authOptions": {"mode": "token", "enableK8sTokenAuth": k8s}}
    check(spec, error, exact=False)


def replica_spec(autoscaling: bool, *groups: Obj) -> Obj:
    return {"enableInTreeAutoscaling": autoscaling, "headGroupSpec": {"template": template()},
            "workerGroupSpecs": list(groups)}


BOTH = "worker group worker-group-3 must set both minReplicas and maxReplicas when autoscaling is disabled"
REPLICA_CASES = [
    ("minReplicas greater than maxReplicas", replica_spec(False, group("worker-group-3", minReplicas=5, maxReplicas=3)),
     "worker group worker-group-3 has minReplicas 5 greater than maxReplicas 3"),
    ("replicas smaller than minReplicas when autoscaling disabled",
     replica_spec(False, group("worker-group-3", replicas=1, minReplicas=2, maxReplicas=5)), None),
    ("minReplicas are nil when autoscaling disabled", replica_spec(False, group("worker-group-3", maxReplicas=5)), BOTH),
    ("maxReplicas are nil when autoscaling disabled", replica_spec(False, group("worker-group-3", minReplicas=1)), BOTH),
    ("minReplicas and maxReplicas both are nil when autoscaling disabled",
     replica_spec(False, group("worker-group-3")), BOTH),
    ("minReplicas is negative", replica_spec(True, group("worker-group-3", minReplicas=-1)),
     "worker group worker-group-3 has negative minReplicas -1"),
    ("maxReplicas is negative", replica_spec(True, group("worker-group-3", maxReplicas=-1)),
     "worker group worker-group-3 has negative maxReplicas -1"),
    ("valid when autoscaling enabled", replica_spec(True, group("worker-group-3")), None),
]


@pytest.mark.parametrize(("spec", "error"), [
    pytest.param(s, e, id=n, marks=pytest.mark.upstream(
        f"{ORIGIN}: TestValidateRayClusterSpec_WorkerGroupReplicaValidation/{n}")) for n, s, e in REPLICA_CASES])
def test_worker_group_replica_validation(spec: Obj, error: str | None) -> None:
    check(spec, error)


def test_replicas_rule_applies_without_the_autoscaling_field_too() -> None:
    # upstream's IsAutoscalingEnabled: a missing enableInTreeAutoscaling is disabled
    spec = replica_spec(False, group("worker-group-3"))
    del spec["enableInTreeAutoscaling"]
    check(spec, BOTH)


AUTH_CASES = [
    ("enableK8sTokenAuth=true and secretName set",
     {"mode": "token", "enableK8sTokenAuth": True, "secretName": "my-secret"},
     "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set"),
    ("enableK8sTokenAuth=true and secretName unset", {"mode": "token", "enableK8sTokenAuth": True}, None),
    ("enableK8sTokenAuth=false and secretName set", {"mode": "token", "secretName": "my-secret"}, None),
]


@pytest.mark.parametrize(("auth", "error"), [
    pytest.param(a, e, id=n, marks=pytest.mark.upstream(f"{ORIGIN}: TestValidateRayClusterSpec_Auth/{n}"))
    for n, a, e in AUTH_CASES])
def test_auth_options(auth: Obj, error: str | None) -> None:
    spec = {"rayVersion": "2.55.0", "authOptions": auth, "headGroupSpec": {"template": template()},
            "workerGroupSpecs": [group("worker-group", minReplicas=1, maxReplicas=1)]}
    check(spec, error, exact=False)


def test_k8s_token_auth_without_token_mode_is_refused() -> None:
    spec = {"rayVersion": "2.55.0", "authOptions": {"mode": "disabled", "enableK8sTokenAuth": True},
            "headGroupSpec": {"template": template()}}
    check(spec, "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'")


@pytest.mark.upstream(f"{ORIGIN}: TestValidateRayJobSpec/RayJob does not support K8s token auth mode")
def test_rayjob_refuses_k8s_token_auth() -> None:
    job = {"metadata": {"name": "job"},
           "spec": {"rayClusterSpec": {"authOptions": {"mode": "token", "enableK8sTokenAuth": True}}}}
    with pytest.raises(ValidationError) as e:
        validate_rayjob(job)
    assert str(e.value) == "The RayJob spec is invalid: K8s token auth mode is currently not supported for RayJob"


@pytest.mark.upstream(f"{ORIGIN}: TestValidateRayServiceSpec/RayService does not support K8s token auth mode")
def test_rayservice_refuses_k8s_token_auth() -> None:
    rs = {"metadata": {"name": "svc"},
          "spec": {"rayClusterConfig": {"authOptions": {"mode": "token", "enableK8sTokenAuth": True}}}}
    with pytest.raises(ValidationError) as e:
        validate_rayservice_spec(rs)
    assert str(e.value) == "The RayService spec is invalid: K8s token auth mode is currently not supported for RayService"


def test_token_mode_rayjob_with_a_recent_ray_version_is_valid() -> None:
    job = {"metadata": {"name": "job"},
           "spec": {"entrypoint": "python x.py",
                    "rayClusterSpec": {"rayVersion": "2.60.0", "authOptions": {"mode": "token"},
                                       "headGroupSpec": {"template": template()}}}}
    validate_rayjob(job)
    job["spec"]["rayClusterSpec"]["rayVersion"] = "2.46.0"
    with pytest.raises(ValidationError, match=r"minimum Ray version is 2\.52\.0, got 2\.46\.0"):
        validate_rayjob(job)


@pytest.mark.parametrize(("text", "parsed"), [
    ("2.52.0", (2, 52, 0)), ("v2.52", (2, 52)), (" 2.60.0", (2, 60, 0)), ("2.52.0rc1", (2, 52, 0)),
    ("2.52.0-nightly", (2, 52, 0)), ("0.1", (0, 1))])
def test_generic_version_parse_like_apimachinery(text: str, parsed: tuple[int, ...]) -> None:
    assert parse_generic_version(text) == parsed


@pytest.mark.parametrize(("text", "error"), [
    ("invalid-version", 'could not parse "invalid-version" as version'),
    ("2", 'illegal version string "2"'),
    ("02.1", 'illegal zero-prefixed version component "02" in "02.1"'),
    ("", 'could not parse "" as version'),
])
def test_generic_version_errors_are_gos(text: str, error: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_generic_version(text)
    assert str(e.value) == error


def test_version_comparison_pads_with_zeros() -> None:
    assert not version_less_than((2, 52), (2, 52, 0))
    assert version_less_than((2, 51, 9), (2, 52, 0))
    assert not version_less_than((3,), (2, 52, 0))
    assert version_less_than((2, 52, 0), (2, 52, 0, 1))


@pytest.mark.parametrize(("name", "reason", "text"), [
    ("1abc", "InvalidRayClusterMetadata", "The RayCluster metadata is invalid default/1abc: RayCluster name should be "
     "a valid DNS1035 label: [a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
     "with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex "
     "used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]"),
    ("c" * 54, "InvalidRayClusterMetadata", f"The RayCluster metadata is invalid default/{'c' * 54}: RayCluster name "
     "should be no more than 53 characters"),
    ("ok", "InvalidRayClusterSpec", "The RayCluster spec is invalid default/ok: headGroupSpec should have at least "
     "one container"),
])
def test_raycluster_metadata_and_spec_refusals_carry_upstreams_reason_and_text(name: str, reason: str,
                                                                                text: str) -> None:
    """raycluster_controller.go: ValidateRayClusterMetadata's error as InvalidRayClusterMetadata, the
    spec's as InvalidRayClusterSpec, each prefixed with ``The RayCluster ... is invalid ns/name:``
    (trial 15 F-4: pumice had one reason, its own "DNS-1035" text and no prefix)."""
    spec: Obj = {"headGroupSpec": {"template": {"spec": {"containers": [] if name == "ok" else [{"name": "h"}]}}}}
    with pytest.raises(ValidationError) as e:
        validate_raycluster({"metadata": {"name": name, "namespace": "default"}, "spec": spec})
    assert (e.value.reason, str(e.value)) == (reason, text)


def test_a_raycluster_both_suspending_and_suspended_is_refused_with_upstreams_text() -> None:
    """raycluster_controller.go: ValidateRayClusterStatus's error as InvalidRayClusterStatus, in
    ``The RayCluster status is invalid ns/name, <error>`` (pumice had its own text)."""
    conds = [{"type": "RayClusterSuspending", "status": "True"}, {"type": "RayClusterSuspended", "status": "True"}]
    cluster: Obj = {"metadata": {"name": "rc", "namespace": "default"}, "status": {"conditions": conds}}
    with pytest.raises(ValidationError) as e:
        validate_raycluster_status(cluster)
    assert (e.value.reason, str(e.value)) == (
        "InvalidRayClusterStatus", "The RayCluster status is invalid default/rc, invalid RayCluster State: "
        "rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true")
    conds[1]["status"] = "False"
    validate_raycluster_status(cluster)
