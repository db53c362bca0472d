"""Restart safety (a new manager mid-rollout converges without duplicate Pods) and idempotence
(a second reconcile with no change in the world writes nothing)."""

from __future__ import annotations

import asyncio
from typing import Any

from pumice.api.scheme import DEPLOYMENT, JOB, POD, REPLICA_SET, SERVICE
from pumice.controllers.kube.deployment import DeploymentReconciler
from pumice.controllers.kube.endpoints import EndpointsReconciler
from pumice.controllers.kube.job import JobReconciler
from pumice.controllers.kube.podutil import is_active
from pumice.controllers.kube.replicaset import ReplicaSetReconciler
from pumice.runtime import Request
from pumice.testing.fake_client import CountingClient

from .conftest import Env, deployment, eventually, job
from .test_deployment import rollout_complete


async def test_manager_restart_mid_rollout_converges_without_duplicate_pods(env: Env) -> None:
    await env.client.create(deployment("web", 6, max_unavailable=0, max_surge=2))
    await eventually(lambda: rollout_complete(env, "web", 6))
    # hold the rollout mid-way: with the scheduler stopped the surge Pods stay Pending, so the new
    # ReplicaSet cannot become available and the old one keeps its Pods until the restart is done
    await env.scheduler.stop()
    await env.client.patch(DEPLOYMENT, "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "nginx:2", "resources": {"requests": {"cpu": "100m"}}}]}}}}, "default")

    async def mid_rollout() -> bool:
        rss = (await env.client.list(REPLICA_SET, "default")).items
        return len(rss) == 2 and all(rs["spec"]["replicas"] > 0 for rs in rss)

    await eventually(mid_rollout, what="two active replica sets")
    await env.stop_manager()
    await env.start_manager()
    await env.scheduler.start()
    await eventually(lambda: rollout_complete(env, "web", 6), what="rollout finished after restart")

    async def six_new_pods() -> bool:
        pods = [p for p in (await env.client.list(POD, "default")).items if is_active(p)]
        return len(pods) == 6 and all(p["spec"]["containers"][0]["image"] == "nginx:2" for p in pods)

    await eventually(six_new_pods, what="exactly 6 new pods")
    await asyncio.sleep(0.3)
    pods = [p for p in (await env.client.list(POD, "default")).items if is_active(p)]
    assert len(pods) == 6
    rss = sorted((await env.client.list(REPLICA_SET, "default")).items, key=lambda r: r["metadata"]["name"])
    assert sorted(rs["spec"]["replicas"] for rs in rss) == [0, 6]


async def test_killed_manager_mid_scale_up_is_replaced_without_duplicate_pods(env: Env) -> None:
    await env.client.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                             "metadata": {"name": "big", "namespace": "default"},
                             "spec": {"replicas": 40, "selector": {"matchLabels": {"rs": "big"}},
                                      "template": {"metadata": {"labels": {"rs": "big"}},
                                                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})

    async def some_pods() -> bool:
        return len((await env.client.list(POD, "default")).items) >= 3

    await eventually(some_pods)
    assert env.mgr_task is not None
    env.mgr_task.cancel()  # no graceful shutdown: in-flight creates are cut off
    try:
        await env.mgr_task
    except BaseException:
        pass
    env.mgr = None
    env.mgr_task = None
    await env.start_manager()

    async def forty_running() -> bool:
        pods = [p for p in (await env.client.list(POD, "default")).items if is_active(p)]
        return len(pods) == 40 and all(p["status"].get("phase") == "Running" for p in pods)

    await eventually(forty_running, what="40 running pods")
    await asyncio.sleep(0.3)
    assert len([p for p in (await env.client.list(POD, "default")).items if is_active(p)]) == 40
    assert (await env.client.get(REPLICA_SET, "big", "default"))["status"]["replicas"] == 40


async def _settle(env: Env) -> None:
    """Let every informer catch up with the last writes."""
    await asyncio.sleep(0.3)


async def test_second_reconcile_of_settled_objects_writes_nothing(env: Env) -> None:
    await env.client.create(deployment("web", 3))
    await env.client.create(job("once", completions=2, parallelism=2))
    await env.client.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                             "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    await eventually(lambda: rollout_complete(env, "web", 3))

    async def job_running() -> bool:
        j = await env.client.get(JOB, "once", "default")
        return (j.get("status") or {}).get("ready") == 2

    await eventually(job_running)
    await _settle(env)
    kube = env.kube
    assert kube is not None and kube.replicaset and kube.deployment and kube.job and kube.endpoints
    counting = CountingClient(env.client)
    rs_name = (await env.client.list(REPLICA_SET, "default")).items[0]["metadata"]["name"]
    reconcilers: list[tuple[Any, Request]] = [
        (ReplicaSetReconciler(counting, replica_sets=kube.replicaset.replica_sets, pods=kube.replicaset.pods,
                              clock=env.mgr.clock, recorder=kube.replicaset.recorder),  # type: ignore[union-attr]
         Request("default", rs_name)),
        (DeploymentReconciler(counting, deployments=kube.deployment.deployments, replica_sets=kube.deployment.replica_sets,
                              pods=kube.deployment.pods, clock=env.mgr.clock,  # type: ignore[union-attr]
                              recorder=kube.deployment.recorder), Request("default", "web")),
        (JobReconciler(counting, jobs=kube.job.jobs, pods=kube.job.pods, clock=env.mgr.clock,  # type: ignore[union-attr]
                       recorder=kube.job.recorder), Request("default", "once")),
        (EndpointsReconciler(counting, services=kube.endpoints.services, pods=kube.endpoints.pods,
                             endpoints=kube.endpoints.endpoints, slices=kube.endpoints.slices), Request("default", "web")),
    ]
    for rec, req in reconcilers:
        await rec.reconcile(req)
        await _settle(env)
        counting.reset()
        await rec.reconcile(req)
        assert counting.writes() == [], type(rec).__name__
    assert (await env.client.get(SERVICE, "web", "default"))["metadata"]["name"] == "web"


async def test_suspended_job_reconciled_later_writes_nothing(env: Env) -> None:
    from pumice._util.clock import FakeClock

    await env.client.create(job("paused", completions=1, suspend=True))

    async def suspended() -> bool:
        j = await env.client.get(JOB, "paused", "default")
        return any(c["type"] == "Suspended" for c in (j.get("status") or {}).get("conditions") or [])

    await eventually(suspended)
    await _settle(env)
    kube = env.kube
    assert kube is not None and kube.job is not None
    clock = FakeClock()
    counting = CountingClient(env.client)
    rec = JobReconciler(counting, jobs=kube.job.jobs, pods=kube.job.pods, clock=clock, recorder=kube.job.recorder)
    clock.advance(3600)
    await rec.reconcile(Request("default", "paused"))
    assert counting.writes() == []
