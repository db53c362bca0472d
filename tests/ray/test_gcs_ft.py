"""GCS fault tolerance in the RayCluster controller (kuberay-2.md §13): injection, the Redis
cleanup finalizer, the cleanup Job and the deletion timeout."""

from __future__ import annotations

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.common import gcs_ft as gcsft
from pumice.controllers.ray.raycluster import RayClusterOptions, RayClusterReconciler
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme

NAME = "raycluster-external-redis"
REQ = Request("default", NAME)
FIN = "ray.io/gcs-ft-redis-cleanup-finalizer"


class World:
    def __init__(self, options: RayClusterOptions = RayClusterOptions()) -> None:
        self.clock = FakeClock()
        self.client = FakeClient(ray_scheme(), clock=self.clock)
        self.events: list[tuple[str, str, str]] = []
        self.rc = RayClusterReconciler(self.client, clock=self.clock, recorder=self, options=options)

    def event(self, obj: Obj, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))

    async def cluster(self) -> Obj:
        return await self.client.get(scheme.RAY_CLUSTER, NAME, "default")

    async def pods(self) -> list[Obj]:
        return (await self.client.list(scheme.POD, "default")).items

    async def jobs(self) -> list[Obj]:
        return (await self.client.list(scheme.JOB, "default")).items

    async def force_remove_pods(self) -> None:
        """What the node agent does once a deleted Pod's processes are gone."""
        for p in await self.pods():
            await self.client.delete(scheme.POD, p["metadata"]["name"], "default", grace_period_seconds=0)

    async def create(self) -> Obj:
        return await self.client.create(load_sample("ray-cluster.external-redis.yaml", "RayCluster"))


async def test_first_pass_adds_the_redis_cleanup_finalizer_then_pods_get_the_ft_env() -> None:
    w = World()
    await w.create()
    res = await w.rc.reconcile(REQ)
    assert (await w.cluster())["metadata"]["finalizers"] == [FIN]
    assert res.requeue_after == 2.0 and await w.pods() == []
    await w.rc.reconcile(REQ)
    [head] = [p for p in await w.pods() if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    uid = (await w.cluster())["metadata"]["uid"]
    assert head["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"
    assert head["metadata"]["annotations"]["ray.io/external-storage-namespace"] == uid
    env = {e["name"]: e for e in head["spec"]["containers"][0]["env"]}
    assert env["RAY_REDIS_ADDRESS"]["value"] == "redis:6379"
    assert env["RAY_external_storage_namespace"]["value"] == uid
    assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "redis-password-secret"
    [worker] = [p for p in await w.pods() if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    wenv = {e["name"]: e.get("value") for e in worker["spec"]["containers"][0]["env"]}
    assert wenv["RAY_gcs_rpc_server_reconnect_timeout_s"] == "600"


async def test_deletion_removes_pods_waits_for_the_head_runs_the_cleanup_job_and_drops_the_finalizer() -> None:
    w = World()
    await w.create()
    await w.rc.reconcile(REQ)
    await w.rc.reconcile(REQ)
    await w.client.delete(scheme.RAY_CLUSTER, NAME, "default")
    res = await w.rc.reconcile(REQ)
    assert res.requeue_after == 10.0, "waits for the head Pod to terminate"
    assert all(p["metadata"].get("deletionTimestamp") for p in await w.pods())
    assert await w.jobs() == []
    await w.force_remove_pods()
    await w.rc.reconcile(REQ)
    [job] = await w.jobs()
    assert job["metadata"]["name"] == f"{NAME}-redis-cleanup"
    assert job["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 300
    assert ("Normal", "CreatedRedisCleanupJob", f"Created Redis cleanup Job default/{NAME}-redis-cleanup") in w.events
    await w.rc.reconcile(REQ)
    assert FIN in (await w.cluster())["metadata"]["finalizers"], "kept while the Job runs"
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    job["apiVersion"], job["kind"] = "batch/v1", "Job"
    await w.client.update_status(job)
    await w.rc.reconcile(REQ)
    with pytest.raises(Exception, match="not found"):
        await w.cluster()


async def test_a_failed_cleanup_job_also_releases_the_cluster() -> None:
    w = World()
    await w.create()
    await w.rc.reconcile(REQ)
    await w.client.delete(scheme.RAY_CLUSTER, NAME, "default")
    await w.rc.reconcile(REQ)
    [job] = await w.jobs()
    job["apiVersion"], job["kind"] = "batch/v1", "Job"
    job["status"] = {"conditions": [{"type": "FailureTarget", "status": "True"}]}
    await w.client.update_status(job)
    await w.rc.reconcile(REQ)
    with pytest.raises(Exception, match="not found"):
        await w.cluster()


async def test_the_finalizer_is_force_removed_after_the_deletion_timeout_with_a_warning() -> None:
    w = World()
    cl = load_sample("ray-cluster.external-redis.yaml", "RayCluster")
    cl["metadata"]["annotations"] = {"ray.io/gcs-ft-deletion-timeout": "30"}
    await w.client.create(cl)
    await w.rc.reconcile(REQ)
    await w.client.delete(scheme.RAY_CLUSTER, NAME, "default")
    await w.rc.reconcile(REQ)
    w.clock.advance(29)
    await w.rc.reconcile(REQ)
    assert FIN in (await w.cluster())["metadata"]["finalizers"]
    w.clock.advance(2)
    await w.rc.reconcile(REQ)
    with pytest.raises(Exception, match="not found"):
        await w.cluster()
    [(typ, msg)] = [(t, m) for t, r, m in w.events if r == "ForceDeletedStuckCluster"]
    assert typ == "Warning" and msg.startswith("Force-removed GCS FT finalizer after 31s due to Redis cleanup timeout")


async def test_cleanup_disabled_by_the_operator_switch_adds_no_finalizer() -> None:
    w = World(RayClusterOptions(enable_gcs_ft_redis_cleanup=False))
    await w.create()
    await w.rc.reconcile(REQ)
    assert not (await w.cluster())["metadata"].get("finalizers")


def test_cleanup_job_runs_rays_cleanup_on_the_first_redis_address_without_probes() -> None:
    cl = load_sample("ray-cluster.external-redis.yaml", "RayCluster")
    cl["metadata"]["uid"] = "u1"
    job = gcsft.build_redis_cleanup_job(cl)
    pod = job["spec"]["template"]["spec"]
    [ray] = pod["containers"]
    assert pod["restartPolicy"] == "Never"
    assert "readinessProbe" not in ray and "livenessProbe" not in ray
    assert ray["resources"]["limits"] == {"cpu": "200m", "memory": "256Mi"}
    assert ray["command"] == ["/bin/bash", "-c", "--"]
    arg = ray["args"][0]
    assert "cleanup_redis_storage(host=parsed.hostname, port=parsed.port, password=" in arg
    assert "username=" not in arg
    assert ".split(',')[0]" in arg
    env = {e["name"]: e.get("value") for e in ray["env"]}
    assert env["RAY_redis_db_connect_retries"] == "120" and env["RAY_redis_db_connect_wait_milliseconds"] == "500"
    assert env["RAY_external_storage_namespace"] == "u1"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"
