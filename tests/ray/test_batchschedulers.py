"""YuniKorn, scheduler-plugins and KAI adapters write exactly the labels, annotations and objects
upstream writes (kuberay-2.md §14), compared by equality; ``--batch-scheduler`` picks one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.batchscheduler import new_batch_scheduler
from pumice.controllers.ray.batchscheduler.kai import K8S_JOB_MODE_REFUSED, KaiBatchScheduler
from pumice.controllers.ray.batchscheduler.scheduler_plugins import SchedulerPluginsBatchScheduler
from pumice.controllers.ray.batchscheduler.yunikorn import YuniKornBatchScheduler
from pumice.controllers.ray.raycluster import RayClusterReconciler
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme


def pod() -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"ray.io/cluster": "c"}},
            "spec": {"containers": [{"name": "ray-head"}]}}


def test_yunikorn_sample_labels_a_pod_with_application_and_queue() -> None:
    cluster = load_sample("ray-cluster.yunikorn-scheduler.yaml", "RayCluster")
    p = pod()
    YuniKornBatchScheduler().add_metadata_to_child_resource(cluster, p, "headgroup")
    labels = cluster["metadata"]["labels"]
    assert p["metadata"]["labels"] == {"ray.io/cluster": "c",
                                       "applicationId": labels["yunikorn.apache.org/app-id"],
                                       "queue": labels["yunikorn.apache.org/queue"]}
    assert p["spec"]["schedulerName"] == "yunikorn"
    assert "ray.io/gang-scheduling-enabled" in labels  # the sample asks for a gang
    assert p["metadata"]["annotations"]["yunikorn.apache.org/task-group-name"] == "headgroup"
    groups = json.loads(p["metadata"]["annotations"]["yunikorn.apache.org/task-groups"])
    assert [(g["name"], g["minMember"]) for g in groups] == [("headgroup", 1), ("worker", 2)]


def test_yunikorn_gang_writes_task_groups_in_upstream_shape() -> None:
    cluster = {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "c", "labels": {"ray.io/gang-scheduling-enabled": "true",
                                             "yunikorn.apache.org/app-id": "app-1"}},
        "spec": {"headGroupSpec": {"template": {"spec": {"containers": [
            {"name": "h", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}}},
            "workerGroupSpecs": [{"groupName": "g", "replicas": 2, "minReplicas": 1, "maxReplicas": 3, "numOfHosts": 2,
                                  "template": {"spec": {"nodeSelector": {"pool": "a"}, "containers": [
                                      {"name": "w", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                                                  "limits": {"nvidia.com/gpu": "1"}}}]}}}]},
    }
    p = pod()
    YuniKornBatchScheduler().add_metadata_to_child_resource(cluster, p, "g")
    ann = p["metadata"]["annotations"]
    assert ann["yunikorn.apache.org/task-group-name"] == "g"
    assert ann["yunikorn.apache.org/task-groups"] == (
        '[{"minResource":{"cpu":"1","memory":"2Gi"},"name":"headgroup","minMember":1},'
        '{"minResource":{"cpu":"500m","memory":"1Gi","nvidia.com/gpu":"1"},"nodeSelector":{"pool":"a"},'
        '"name":"g","minMember":2}]')
    assert p["metadata"]["labels"]["applicationId"] == "app-1"


def test_yunikorn_rayjob_adds_the_submitter_group_and_keeps_a_user_annotation() -> None:
    job = load_sample("ray-job.yunikorn-scheduler.yaml", "RayJob")
    job["metadata"]["labels"]["ray.io/gang-scheduling-enabled"] = "true"
    p = pod()
    YuniKornBatchScheduler().add_metadata_to_child_resource(job, p, "submittergroup")
    groups = json.loads(p["metadata"]["annotations"]["yunikorn.apache.org/task-groups"])
    assert [g["name"] for g in groups] == ["headgroup", *[w["groupName"] for w in
                                                          job["spec"]["rayClusterSpec"]["workerGroupSpecs"]],
                                           "submittergroup"]
    job["metadata"].setdefault("annotations", {})["yunikorn.apache.org/task-groups"] = '[{"name":"mine"}]'
    p = pod()
    YuniKornBatchScheduler().add_metadata_to_child_resource(job, p, "")
    assert p["metadata"]["annotations"] == {"yunikorn.apache.org/task-groups": '[{"name":"mine"}]'}


async def test_scheduler_plugins_creates_one_podgroup_once_and_labels_pods() -> None:
    client = FakeClient(ray_scheme_with_sp(), clock=FakeClock())
    cluster = load_sample("ray-cluster.scheduler-plugins.yaml", "RayCluster")
    cluster["metadata"]["uid"] = "u-1"
    cluster["apiVersion"], cluster["kind"] = "ray.io/v1", "RayCluster"
    sp = SchedulerPluginsBatchScheduler(client)
    await sp.do_batch_scheduling_on_submission(cluster)
    pg = await client.get(scheme.SCHEDULER_PLUGINS_POD_GROUP, cluster["metadata"]["name"], "default")
    workers = sum(int(g.get("replicas") or 0) for g in cluster["spec"]["workerGroupSpecs"])
    assert pg["spec"]["minMember"] == workers + 1
    assert pg["metadata"]["ownerReferences"] == [{"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                                  "name": cluster["metadata"]["name"], "uid": "u-1"}]
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 5
    await sp.do_batch_scheduling_on_submission(cluster)
    again = await client.get(scheme.SCHEDULER_PLUGINS_POD_GROUP, cluster["metadata"]["name"], "default")
    assert again["spec"]["minMember"] == pg["spec"]["minMember"], "never resized"
    p = pod()
    sp.add_metadata_to_child_resource(cluster, p, "headgroup")
    assert p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == cluster["metadata"]["name"]
    assert p["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    with pytest.raises(TypeError, match="currently only RayCluster is supported"):
        await sp.do_batch_scheduling_on_submission({"kind": "RayJob", "metadata": {"name": "j"}})


def ray_scheme_with_sp() -> Any:
    s = ray_scheme()
    s.add(scheme.SCHEDULER_PLUGINS_POD_GROUP)
    return s


async def test_kai_copies_the_queue_label_and_refuses_k8s_job_mode() -> None:
    cluster = load_sample("ray-cluster.kai-scheduler.yaml", "RayCluster")
    p = pod()
    KaiBatchScheduler().add_metadata_to_child_resource(cluster, p, "headgroup")
    assert p["metadata"]["labels"]["kai.scheduler/queue"] == cluster["metadata"]["labels"]["kai.scheduler/queue"]
    assert p["spec"]["schedulerName"] == "kai-scheduler"
    with pytest.raises(ValueError, match=K8S_JOB_MODE_REFUSED[:30]):
        await KaiBatchScheduler().do_batch_scheduling_on_submission(
            {"kind": "RayJob", "spec": {"submissionMode": "K8sJobMode"}})
    await KaiBatchScheduler().do_batch_scheduling_on_submission({"kind": "RayJob", "spec": {"submissionMode": "HTTPMode"}})


def test_a_raycluster_child_gets_labels_but_no_scheduler_name() -> None:
    job = load_sample("ray-job.yunikorn-scheduler.yaml", "RayJob")
    child = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "x"}, "spec": {}}
    YuniKornBatchScheduler().add_metadata_to_child_resource(job, child, "")
    assert "schedulerName" not in child["spec"]
    assert child["metadata"]["labels"]["applicationId"] == job["metadata"]["labels"]["yunikorn.apache.org/app-id"]


@pytest.mark.parametrize(("flag", "scheduler_name"), [
    ("yunikorn", "yunikorn"), ("scheduler-plugins", "scheduler-plugins-scheduler"),
    ("kai-scheduler", "kai-scheduler"), ("volcano", "volcano"), (None, ""),
])
async def test_batch_scheduler_flag_selects_one_adapter_for_the_operator(flag: str | None, scheduler_name: str) -> None:
    client = FakeClient(ray_scheme_with_sp(), clock=FakeClock())
    sched = new_batch_scheduler(flag, client)
    assert sched.name == scheduler_name
    rc = RayClusterReconciler(client, batch_scheduler=sched)
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    await client.create(cl)
    await rc.reconcile(Request("default", cl["metadata"]["name"]))
    pods = (await client.list(scheme.POD, "default")).items
    assert pods and all((p["spec"].get("schedulerName") or "") == scheduler_name for p in pods)


# --- Kueue: managedBy and suspend (kuberay-2.md §14, Kueue) ---------------------------------------

@pytest.mark.parametrize(("sample", "kind"), [("ray-cluster.sample.yaml", "RayCluster"), ("ray-job.sample.yaml", "RayJob")])
async def test_multikueue_managed_objects_are_left_alone(sample: str, kind: str) -> None:
    from pumice.controllers.ray.rayjob import RayJobReconciler

    client = FakeClient(ray_scheme(), clock=FakeClock())
    obj = load_sample(sample, kind)
    obj["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    await client.create(obj)
    r: Any = RayClusterReconciler(client) if kind == "RayCluster" else RayJobReconciler(client)
    res = await r.reconcile(Request("default", obj["metadata"]["name"]))
    assert res.requeue_after is None
    assert len(client.writes()) == 1, client.writes()  # only the test's own create: no finalizer, status, child
    assert (await client.list(scheme.POD, "default")).items == []


async def test_a_rayjob_created_suspended_by_kueue_creates_nothing_until_admitted() -> None:
    import random

    from pumice.controllers.ray.rayjob import RayJobReconciler

    client = FakeClient(ray_scheme(), clock=FakeClock())
    job = load_sample("ray-job.sample.yaml", "RayJob")
    job["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "user-queue"
    job["spec"]["suspend"] = True
    job["spec"]["shutdownAfterJobFinishes"] = True
    await client.create(job)
    rj = RayJobReconciler(client, rng=random.Random(1))
    for _ in range(3):
        await rj.reconcile(Request("default", "rayjob-sample"))
    assert (await client.list(scheme.RAY_CLUSTER, "default")).items == []
    st = (await client.get(scheme.RAY_JOB, "rayjob-sample", "default"))["status"]
    assert st["jobDeploymentStatus"] == "Suspended"
    job = await client.get(scheme.RAY_JOB, "rayjob-sample", "default")
    job["spec"]["suspend"] = False  # Kueue admits the workload
    await client.update(job)
    for _ in range(3):
        await rj.reconcile(Request("default", "rayjob-sample"))
    assert len((await client.list(scheme.RAY_CLUSTER, "default")).items) == 1
