from __future__ import annotations

import yaml

from pumice.api.ray import constants as rc
from pumice.api.ray.types import (
    RayCluster,
    RayClusterStatus,
    RayJob,
    RayService,
    WorkerGroupSpec,
    from_wire,
    to_wire,
)
from pumice.api.volcano import constants as vc
from pumice.api.volcano.types import Job, PodGroup, PodGroupSpec, Queue

from .conftest import KUBERAY, VOLCANO

RAY_KINDS = {"RayCluster": RayCluster, "RayJob": RayJob, "RayService": RayService}


def test_every_kuberay_sample_round_trips_through_the_models():
    seen = 0
    for path in sorted(KUBERAY.glob("ray-*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") in RAY_KINDS and doc.get("apiVersion") == "ray.io/v1":
                model = from_wire(doc, RAY_KINDS[doc["kind"]])
                # Explicit default values (replicas: 0) are omitted on encode; nothing else changes.
                assert from_wire(to_wire(model), RAY_KINDS[doc["kind"]]) == model, path.name
                assert to_wire(model)["spec"].keys() == doc["spec"].keys(), path.name
                seen += 1
    assert seen >= 20


def test_volcano_job_samples_decode():
    jobs = 0
    for path in sorted((VOLCANO / "example").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("apiVersion") == "batch.volcano.sh/v1alpha1" and doc.get("kind") == "Job":
                job = from_wire(doc, Job)
                assert job.spec is not None and job.spec.tasks
                jobs += 1
    assert jobs > 0


def test_top_level_kinds_always_encode_api_version_and_kind():
    assert to_wire(RayCluster()) == {"apiVersion": "ray.io/v1", "kind": "RayCluster"}
    assert to_wire(Queue()) == {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"}
    pg = to_wire(PodGroup(spec=PodGroupSpec(min_member=3, queue="q1")))
    assert pg["spec"] == {"minMember": 3, "queue": "q1"}


def test_wire_names_keep_upstream_acronyms():
    status = from_wire({"desiredCPU": "2", "head": {"podIP": "10.0.0.1", "serviceIP": "None"}},
                       RayClusterStatus)
    assert status.desired_cpu == "2" and status.head.pod_ip == "10.0.0.1"
    w = from_wire({"groupName": "g", "template": {}, "minReplicas": 1, "maxReplicas": 3}, WorkerGroupSpec)
    assert (w.replicas, w.num_of_hosts) == (0, 1)


def test_constants_are_the_upstream_strings():
    assert rc.JobDeploymentStatus.VALIDATION_FAILED == "ValidationFailed"
    assert rc.JobStatus.SUCCEEDED == "SUCCEEDED"
    assert rc.JobSubmissionMode.K8S_JOB_MODE == "K8sJobMode"
    assert rc.ClusterState.READY == "ready"
    assert rc.RayClusterConditionType.HEAD_POD_READY == "HeadPodReady"
    assert vc.PodGroupPhase.INQUEUE == "Inqueue"
    assert vc.QueueState.CLOSING == "Closing"
    assert vc.KUBE_GROUP_NAME_ANNOTATION_KEY == "scheduling.k8s.io/group-name"
    assert vc.QUEUE_NAME_KEY == "volcano.sh/queue-name"
