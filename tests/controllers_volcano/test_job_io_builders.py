"""The pure parts of vcjob IO volumes: the Pods' claim volumes (upstream createJobPod), the claim
built for a ``volumeClaim`` (createPVC), the generated names (GenPVCName), the webhook's volume
rules (validateIO) and the controller's own check of a Job whose claim names it wrote back. The
API-server scenarios are in tests/e2e_volcano/test_job_io_volumes.py."""

from __future__ import annotations

import random

from pumice.controllers.volcano.admission.jobs import validate_job_spec
from pumice.controllers.volcano.job import builders
from pumice.controllers.volcano.job.controller import defaulted_and_checked

CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def vcjob(volumes: list[dict]) -> dict:
    c = {"name": "c", "image": "busybox"}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u-1"},
            "spec": {"minAvailable": 1, "queue": "default", "volumes": volumes,
                     "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [c, {**c, "name": "d"}]}}}]}}


def test_a_claim_named_by_two_volumes_is_mounted_once_in_every_container() -> None:
    job = vcjob([{"mountPath": "/a", "volumeClaimName": "data"}, {"mountPath": "/b", "volumeClaimName": "data"},
                 {"mountPath": "/c", "volumeClaimName": "logs"}])
    pod = builders.build_pod(job, job["spec"]["tasks"][0], 0)
    data = builders.pod_volume_name("j", "ns", "j-t-0", "data")
    logs = builders.pod_volume_name("j", "ns", "j-t-0", "logs")
    assert pod["spec"]["volumes"] == [{"name": data, "persistentVolumeClaim": {"claimName": "data"}},
                                      {"name": logs, "persistentVolumeClaim": {"claimName": "logs"}}]
    for c in pod["spec"]["containers"]:
        assert c["volumeMounts"] == [{"mountPath": "/a", "name": data}, {"mountPath": "/c", "name": logs}]
    assert builders.build_pod(job, job["spec"]["tasks"][0], 0) == pod  # the names are derived, not drawn


def test_a_job_without_volumes_gives_its_pods_none() -> None:
    job = vcjob([])
    pod = builders.build_pod(job, job["spec"]["tasks"][0], 0)
    assert "volumes" not in pod["spec"] and all("volumeMounts" not in c for c in pod["spec"]["containers"])


def test_the_claim_of_a_volume_claim_is_controlled_by_the_job_and_named_as_upstream() -> None:
    job = vcjob([{"mountPath": "/a", "volumeClaim": CLAIM}])
    name = builders.gen_pvc_name("j", random.Random("u-1/0"))
    assert name == builders.gen_pvc_name("j", random.Random("u-1/0"))
    assert name.startswith("j-pvc-") and len(name) == len("j-pvc-") + 12
    pvc = builders.build_pvc(job, name, CLAIM)
    assert pvc == {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {"name": name, "namespace": "ns", "ownerReferences": [
                       {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "u-1",
                        "controller": True, "blockOwnerDeletion": True}]},
                   "spec": CLAIM}
    assert pvc["spec"] is not CLAIM


def test_the_webhook_refuses_an_invalid_volume_claim_name() -> None:
    problem = validate_job_spec(vcjob([{"mountPath": "/a", "volumeClaimName": "Bad_Name"}]))
    assert problem.startswith("invalid VolumeClaimName Bad_Name : [a lowercase RFC 1123 subdomain must consist of"), problem


def test_the_webhook_volume_rules_keep_upstream_texts() -> None:
    assert validate_job_spec(vcjob([{"volumeClaimName": "a"}])) == " mountPath is required;"
    assert validate_job_spec(vcjob([{"mountPath": "/v", "volumeClaimName": "a"},
                                    {"mountPath": "/v", "volumeClaimName": "b"}])) == " duplicated mountPath: /v;"
    assert validate_job_spec(vcjob([{"mountPath": "/v"}])) == " either VolumeClaim or VolumeClaimName must be specified;"
    assert validate_job_spec(vcjob([{"mountPath": "/v", "volumeClaimName": "a", "volumeClaim": CLAIM}])).startswith(
        "conflict: If you want to use an existing PVC")


def test_a_claim_name_the_controller_wrote_back_does_not_make_the_job_invalid() -> None:
    written = vcjob([{"mountPath": "/a", "volumeClaim": CLAIM, "volumeClaimName": "j-pvc-0123456789ab"}])
    out, problem = defaulted_and_checked(written)
    assert problem == ""
    assert out["spec"]["volumes"][0]["volumeClaimName"] == "j-pvc-0123456789ab"
