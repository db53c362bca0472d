"""Cases ported from upstream's RayJob controller unit tests at the snapshot of
reference/kuberay-2.md (kuberay master feeaf72fa, ray-operator/controllers/ray/
rayjob_controller_unit_test.go); each test keeps upstream's name."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj
from pumice.client.base import ApiError
from pumice.controllers.ray.common import job as jobb
from pumice.controllers.ray.rayjob import RayJobReconciler
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme

ORIGIN = "kuberay ray-operator/controllers/ray/rayjob_controller_unit_test.go"


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.items.append((type, reason, message))


def world() -> tuple[FakeClient, RayJobReconciler, Events]:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    ev = Events()
    return client, RayJobReconciler(client, recorder=ev, rng=random.Random(0)), ev


def fail_on(client: FakeClient, fail: str) -> None:
    """Every ``fail`` call (create, delete, ...) answers 500, as upstream's interceptor."""
    def boom(verb: str, plural: str, namespace: str, name: str) -> None:
        if verb == fail:
            raise ApiError(500, "InternalError", "random", {})
    client.interceptor = boom


def rayjob(**status: Any) -> Obj:
    job = load_sample("ray-job.sample.yaml", "RayJob")
    job["metadata"]["uid"] = "test-uid"
    job["status"] = status
    return job


@pytest.mark.upstream(f"{ORIGIN}: TestCreateNewK8sJob_PropagatesLabelsToSubmitterPodTemplate")
def test_create_new_k8s_job_propagates_labels_to_submitter_pod_template() -> None:
    job = rayjob(dashboardURL="h:8265", jobId="id-1")
    cluster = {"spec": job["spec"]["rayClusterSpec"]}
    tmpl = jobb.build_submitter_pod_template(job, cluster["spec"])
    k8s_job = jobb.build_submitter_job(job, tmpl)
    labels = k8s_job["spec"]["template"]["metadata"]["labels"]
    assert labels["ray.io/originated-from-cr-name"] == "rayjob-sample"
    assert labels["ray.io/originated-from-crd"] == "RayJob"
    assert labels["app.kubernetes.io/created-by"] == "kuberay-operator"


@pytest.mark.upstream(f"{ORIGIN}: TestFailedCreateRayClusterEvent")
async def test_failed_create_ray_cluster_event() -> None:
    client, rj, ev = world()
    job = rayjob(rayClusterName="rayjob-sample-abcde")
    fail_on(client, "create")
    with pytest.raises(ApiError):
        await rj._get_or_create_cluster(job)
    assert any(r == "FailedToCreateRayCluster" and "Failed to create RayCluster" in m for _, r, m in ev.items)


@pytest.mark.upstream(f"{ORIGIN}: TestFailedDeleteRayJobSubmitterEvent")
async def test_failed_delete_ray_job_submitter_event() -> None:
    client, rj, ev = world()
    job = rayjob()
    await client.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "rayjob-sample",
                                                                             "namespace": "default"}, "spec": {}})
    fail_on(client, "delete")
    with pytest.raises(ApiError):
        await rj._delete_submitter_job(job)
    assert any(r == "FailedToDeleteRayJobSubmitter" and "Failed to delete submitter K8s Job" in m for _, r, m in ev.items)


@pytest.mark.upstream(f"{ORIGIN}: TestFailedDeleteRayClusterEvent")
async def test_failed_delete_ray_cluster_event() -> None:
    client, rj, ev = world()
    await client.create({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                         "metadata": {"name": "test-raycluster", "namespace": "default"}, "spec": {}})
    job = rayjob(rayClusterName="test-raycluster")
    fail_on(client, "delete")
    with pytest.raises(ApiError):
        await rj._delete_cluster(job)
    assert any(r == "FailedToDeleteRayCluster" and "Failed to delete cluster" in m for _, r, m in ev.items)


@pytest.mark.upstream(f"{ORIGIN}: TestGetSubmitterTemplate_WithEnableK8sTokenAuth")
def test_get_submitter_template_with_enable_k8s_token_auth() -> None:
    job = {"metadata": {"name": "j"}, "spec": {"submissionMode": "K8sJobMode"}}
    cluster_spec = {"authOptions": {"mode": "token", "enableK8sTokenAuth": True},
                    "headGroupSpec": {"template": {"spec": {"containers": [{"image": "rayproject/ray"}]}}}}
    tmpl = jobb.build_submitter_pod_template(job, cluster_spec, cluster_name="test-raycluster")
    assert any(v["name"] == "ray-token" and v.get("projected") for v in tmpl["spec"]["volumes"])
    mounts = tmpl["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "ray-token", "mountPath": "/var/run/secrets/ray.io/serviceaccount", "readOnly": True} in mounts
