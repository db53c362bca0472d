"""RayJob validation: upstream's rule order, messages and Event reasons (ValidateRayJobMetadata,
ValidateRayJobSpec with validateDeletionConfiguration, ValidateRayJobStatus in
ray-operator/controllers/ray/utils/validation.go at feeaf72). Each case is one rule broken; the
message is upstream's, byte for byte."""

from __future__ import annotations

from typing import Any

import pytest

from pumice.api import Obj
from pumice.controllers.ray.validation import ValidationError, validate_rayjob

SPEC = "The RayJob spec is invalid: "


def rayjob(name: str = "job", status: Obj | None = None, **spec: Any) -> Obj:
    cluster = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}}}}
    body: Obj = {"rayClusterSpec": cluster, "shutdownAfterJobFinishes": True, **spec}
    for k, v in list(body.items()):
        if v is None:
            del body[k]
    return {"metadata": {"name": name, "namespace": "default"}, "spec": body, "status": status or {}}


def refused(job: Obj) -> ValidationError:
    with pytest.raises(ValidationError) as e:
        validate_rayjob(job)
    return e.value


def test_a_valid_rayjob_passes() -> None:
    validate_rayjob(rayjob())
    validate_rayjob(rayjob(shutdownAfterJobFinishes=None, suspend=None))


@pytest.mark.parametrize(("job", "message"), [
    (rayjob(suspend=True, shutdownAfterJobFinishes=False),
     SPEC + "a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended"),
    (rayjob(ttlSecondsAfterFinished=-1), SPEC + "TTLSecondsAfterFinished must be a non-negative integer"),
    (rayjob(shutdownAfterJobFinishes=False, ttlSecondsAfterFinished=5),
     SPEC + "a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished"),
    (rayjob(suspend=True, rayClusterSpec=None, clusterSelector={"ray.io/cluster": "c"}),
     SPEC + "the ClusterSelector mode doesn't support the suspend operation"),
    (rayjob(rayClusterSpec=None), SPEC + "one of RayClusterSpec or ClusterSelector must be set"),
    (rayjob(rayClusterSpec=None, clusterSelector={"other": "x"}), "cluster name in ClusterSelector should not be empty"),
    (rayjob(rayClusterSpec=None, clusterSelector={"ray.io/cluster": "c"}, submissionMode="SidecarMode"),
     "ClusterSelector is not supported in SidecarMode"),
    (rayjob(rayClusterSpec=None, clusterSelector={"ray.io/cluster": "c"}, backoffLimit=2),
     SPEC + "BackoffLimit is incompatible with ClusterSelector mode"),
    (rayjob(submissionMode="InteractiveMode", backoffLimit=1), SPEC + "BackoffLimit is incompatible with InteractiveMode"),
    (rayjob(submissionMode="SidecarMode", submitterPodTemplate={"spec": {}}),
     "Currently, SidecarMode doesn't support SubmitterPodTemplate"),
    (rayjob(submissionMode="SidecarMode", submitterConfig={"backoffLimit": 1}),
     "Currently, SidecarMode doesn't support SubmitterConfig"),
    (rayjob(activeDeadlineSeconds=0), SPEC + "activeDeadlineSeconds must be a positive integer"),
    (rayjob(preRunningDeadlineSeconds=-3), SPEC + "preRunningDeadlineSeconds must be a positive integer"),
    (rayjob(backoffLimit=-1), SPEC + "backoffLimit must be a positive integer"),
    (rayjob(runtimeEnvYAML="a: [1"), None),
])
def test_each_spec_rule_is_reported_with_upstreams_message(job: Obj, message: str | None) -> None:
    e = refused(job)
    assert e.reason == "InvalidRayJobSpec"
    if message is None:
        assert str(e).startswith("failed to unmarshal RuntimeEnvYAML: a: [1: ")
    else:
        assert str(e) == message


def test_an_invalid_cluster_spec_is_wrapped_as_upstream_does() -> None:
    job = rayjob()
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"] = []
    e = refused(job)
    assert str(e).startswith(SPEC) and e.reason == "InvalidRayJobSpec"


@pytest.mark.parametrize(("strategy", "extra", "message"), [
    ({"deletionRules": [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}]}, {},
     SPEC + "spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive"),
    ({"onSuccess": {"policy": "DeleteSelf"}, "deletionRules": [{"policy": "DeleteSelf", "condition": {"jobStatus": "FAILED"}}]},
     {"shutdownAfterJobFinishes": False},
     SPEC + "Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously"),
    ({}, {}, SPEC + "DeletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field "
     "(cannot be empty)"),
    ({"onSuccess": {"policy": "DeleteSelf"}}, {},
     "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy deletion "
     "policy fields of DeletionStrategy"),
    ({"onSuccess": {}, "onFailure": {"policy": "DeleteSelf"}}, {},
     "the DeletionPolicyType field of DeletionStrategy.OnSuccess cannot be unset when DeletionStrategy is enabled"),
    ({"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteSelf"}},
     {"rayClusterSpec": None, "clusterSelector": {"ray.io/cluster": "c"}, "shutdownAfterJobFinishes": False},
     "the ClusterSelector mode doesn't support DeletionStrategy=DeleteCluster on success"),
    ({"onSuccess": {"policy": "DeleteSelf"}, "onFailure": {"policy": "DeleteNone"}}, {},
     SPEC + "shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'"),
])
def test_deletion_strategy_rules(strategy: Obj, extra: Obj, message: str) -> None:
    e = refused(rayjob(deletionStrategy=strategy, **extra))
    assert str(e) == message


def test_legacy_deletion_policies_may_go_with_shutdown_after_job_finishes() -> None:
    # upstream refuses only DeleteNone with shutdownAfterJobFinishes (pumice refused every legacy policy)
    validate_rayjob(rayjob(deletionStrategy={"onSuccess": {"policy": "DeleteCluster"},
                                             "onFailure": {"policy": "DeleteSelf"}}))


def test_deletion_rules_report_every_problem_one_per_line() -> None:
    rules = [
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Failed"}},
        {"policy": "DeleteCluster", "condition": {}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 10}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 20}},
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 5}},
    ]
    e = refused(rayjob(shutdownAfterJobFinishes=False, deletionStrategy={"deletionRules": rules}))
    assert str(e).splitlines() == [
        "deletionRules[0]: cannot set both JobStatus and JobDeploymentStatus at the same time",
        "deletionRules[1]: exactly one of JobStatus and JobDeploymentStatus must be set",
        "deletionRules[3]: duplicate rule for DeletionPolicyType 'DeleteCluster' and JobStatus 'SUCCEEDED'",
        "for JobStatus 'SUCCEEDED': DeleteSelf TTL (5) must be >= DeleteCluster TTL (10)",
    ]


def test_metadata_and_status_rules_carry_their_own_event_reasons() -> None:
    e = refused(rayjob(name="x" * 48))
    assert e.reason == "InvalidRayJobMetadata"
    assert str(e) == "The RayJob metadata is invalid: RayJob name should be no more than 47 characters"
    e = refused(rayjob(name="Bad_Name"))
    assert e.reason == "InvalidRayJobMetadata"
    assert str(e).startswith("The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: "
                             "[a DNS-1035 label must consist of lower case alphanumeric characters")
    e = refused(rayjob(status={"jobDeploymentStatus": "Waiting"}))
    assert e.reason == "InvalidRayJobStatus"
    assert str(e) == ("The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode "
                      "is not InteractiveMode")
