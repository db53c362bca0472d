"""Every upstream KubeRay sample (../shared/samples/kuberay) applied unchanged to the in-process
API server with the operator running (simulated kubelet, fake Ray dashboard), and the state it
reaches. Kinds the server does not serve (KAI's ``scheduling.run.ai`` Queues) are skipped."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from pumice.api import Obj, scheme
from pumice.client.base import ApiError
from pumice.testing import cluster as cluster_mod
from pumice.testing.ray_dashboard import FakeRayDashboard

from .conftest import load_sample, shared_dir
from .test_setup import running, wait_for

# sample -> {(kind, name): expected}; expected is a RayCluster state or a RayJob deployment status
EXPECTED: dict[str, dict[tuple[str, str], str]] = {
    "ray-cluster.autoscaler-v2.yaml": {("RayCluster", "raycluster-autoscaler"): "ready"},
    "ray-cluster.autoscaler.yaml": {("RayCluster", "raycluster-autoscaler"): "ready"},
    "ray-cluster.complete.yaml": {("RayCluster", "raycluster-complete"): "ready"},
    "ray-cluster.external-redis.yaml": {("RayCluster", "raycluster-external-redis"): "ready"},
    "ray-cluster.kai-scheduler.yaml": {("RayCluster", "raycluster-sample"): "ready"},
    "ray-cluster.sample.yaml": {("RayCluster", "raycluster-kuberay"): "ready"},
    "ray-cluster.scheduler-plugins.yaml": {("RayCluster", "test-podgroup-0"): "ready"},
    "ray-cluster.tpu-v4-multihost.yaml": {("RayCluster", "raycluster-tpu-v4-multihost"): "ready"},
    "ray-cluster.volcano-scheduler-queue.yaml": {("RayCluster", "test-cluster-0"): "ready"},
    "ray-cluster.volcano-scheduler.yaml": {("RayCluster", "test-cluster-0"): "ready"},
    "ray-cluster.yunikorn-scheduler.yaml": {("RayCluster", "test-yunikorn-0"): "ready"},
    "ray-job.batch-inference.yaml": {("RayJob", "rayjob-sample"): "Complete"},
    "ray-job.custom-head-svc.yaml": {("RayJob", "rayjob-sample"): "Complete"},
    "ray-job.deletion-rules.yaml": {("RayJob", "rayjob-deletion-rules"): "Complete"},
    "ray-job.interactive-mode.yaml": {("RayJob", "rayjob-interactive-mode"): "Waiting"},
    "ray-job.light-weight-submitter.yaml": {("RayJob", "rayjob-light-weight-submitter"): "Complete"},
    "ray-job.resources.yaml": {("RayJob", "rayjob-sample"): "Complete"},
    "ray-job.sample.yaml": {("RayJob", "rayjob-sample"): "Complete"},
    "ray-job.shutdown.yaml": {("RayJob", "rayjob-sample-shutdown"): "Complete"},
    # SidecarMode: the submitter runs inside the head Pod; with no real container it never
    # terminates, so the job stays Running (the real-Ray run completes it).
    "ray-job.sidecar-mode.yaml": {("RayJob", "rayjob-sidecar-mode"): "Running"},
    "ray-job.use-existing-raycluster.yaml": {("RayJob", "rayjob-use-existing-raycluster"): "Complete"},
    "ray-job.volcano-scheduler-queue.yaml": {("RayJob", "rayjob-sample-0"): "Complete"},
    "ray-job.yunikorn-scheduler.yaml": {("RayJob", "rayjob-yunikorn-0"): "Complete"},
}


def sample_docs(name: str) -> list[Obj]:
    docs = [d for d in yaml.safe_load_all((shared_dir() / "samples" / "kuberay" / name).read_text()) if d]
    for d in docs:
        d.setdefault("metadata", {}).setdefault("namespace", "default")
    return docs


def test_every_rayjob_and_raycluster_sample_has_an_expectation() -> None:
    names = sorted(p.name for p in (shared_dir() / "samples" / "kuberay").glob("ray-[cj]*.yaml"))
    assert sorted(EXPECTED) == names
    for name, exp in EXPECTED.items():
        found = {(d["kind"], d["metadata"]["name"]) for d in sample_docs(name) if d["kind"] in ("RayCluster", "RayJob")}
        assert found == set(exp), name


@contextlib.asynccontextmanager
async def operator() -> AsyncIterator[Any]:
    async with cluster_mod.local_cluster() as lc, running(
        lc.client, FakeRayDashboard(), seed=5, manager_client=lc.new_client(field_manager="kuberay-operator")
    ):
        yield lc.client


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_sample_reaches_its_expected_state(name: str) -> None:
    async with operator() as client:
        if name == "ray-job.use-existing-raycluster.yaml":
            cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
            cl["metadata"]["name"] = "ray-cluster-kuberay"
            await client.create(cl)
        for doc in sample_docs(name):
            try:
                await client.create(doc)
            except ApiError as e:
                if e.code == 404 and doc["apiVersion"].startswith("scheduling.run.ai"):
                    continue  # KAI's Queue CRD is not served by pumice
                raise
        for (kind, obj_name), want in EXPECTED[name].items():
            rk = scheme.RAY_CLUSTER if kind == "RayCluster" else scheme.RAY_JOB
            field = "state" if kind == "RayCluster" else "jobDeploymentStatus"

            async def reached(rk: Any = rk, obj_name: str = obj_name, field: str = field, want: str = want) -> bool:
                obj = await client.get(rk, obj_name, "default")
                return (obj.get("status") or {}).get(field) == want

            await wait_for(reached, timeout=60)
