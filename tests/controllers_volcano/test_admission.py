"""Volcano admission plugins in-process: defaults, upstream messages, the invalid_jobs samples."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from pumice.api.admission import AdmissionError
from pumice.controllers.volcano import admission_plugins
from pumice.testing.paths import shared_dir
from pumice.testing.volcano_admission import MemoryReader, admit, queue

EXAMPLES = shared_dir() / "samples" / "volcano" / "example"
PLUGINS = admission_plugins()


def reader(*queues: dict) -> MemoryReader:
    return MemoryReader([queue("default"), queue("root"), *queues])


def vcjob(name: str = "j1", *, queue_name: str | None = None, tasks: list | None = None, **spec) -> dict:
    s = {"tasks": tasks if tasks is not None else [
        {"replicas": 2, "name": "t1", "template": {"spec": {"containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}], **spec}
    if queue_name:
        s["queue"] = queue_name
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"}, "spec": s}


@pytest.mark.parametrize("path", sorted((EXAMPLES / "invalid_jobs").glob("*.yaml")), ids=lambda p: p.name)
async def test_every_invalid_job_sample_is_rejected(path: Path) -> None:
    job = yaml.safe_load(path.read_text())
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), job)
    assert 'admission webhook "validatejob.volcano.sh" denied the request' in e.value.message
    expected = {
        "duplicatedPolicyEvent-webhook-deny.yaml": "duplicate event PodFailed  across different policy",
        "duplicatedTaskName-webhook-deny.yaml": "duplicated task name task-1;",
        "minAvailable-webhook-deny.yaml": "job 'minAvailable' should not be greater than total replicas in tasks",
    }[path.name]
    assert expected in e.value.message


async def test_job_defaults_fill_queue_scheduler_retries_and_min_available() -> None:
    job = vcjob(tasks=[{"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
                       {"replicas": 3, "name": "b", "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}])
    out = await admit(PLUGINS, reader(), job)
    assert out is not None
    spec = out["spec"]
    assert spec["queue"] == "default"
    assert spec["schedulerName"] == "volcano"
    assert spec["maxRetry"] == 3
    assert spec["minAvailable"] == 5
    assert [t["name"] for t in spec["tasks"]] == ["default0", "b"]
    assert [t["minAvailable"] for t in spec["tasks"]] == [2, 3]
    assert [t["maxRetry"] for t in spec["tasks"]] == [3, 3]


async def test_ray_plugin_brings_svc() -> None:
    job = vcjob(plugins={"ray": []})
    out = await admit(PLUGINS, reader(), job)
    assert out is not None and set(out["spec"]["plugins"]) == {"ray", "svc"}


async def test_job_to_closed_queue_is_rejected_with_upstream_message() -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(queue("q1", "Closed")), vcjob(queue_name="q1"))
    assert "can only submit job to queue with state `Open`, queue `q1` status is `Closed`" in e.value.message


async def test_job_to_missing_queue_is_rejected() -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), vcjob(queue_name="nope"))
    assert 'unable to find job queue: queue.scheduling.volcano.sh "nope" not found' in e.value.message


async def test_job_to_parent_queue_is_rejected() -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(queue("eng"), queue("dev", parent="eng")), vcjob(queue_name="eng"))
    assert "can only submit job to leaf queue, queue `eng` has 1 child queues" in e.value.message


async def test_job_to_root_queue_is_rejected() -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), vcjob(queue_name="root"))
    assert "can not submit job to root queue" in e.value.message


@pytest.mark.parametrize(("policies", "fragment"), [
    ([{"event": "PodFailed", "exitCode": 3, "action": "RestartJob"}], "must not specify event and exitCode simultaneously"),
    ([{"action": "RestartJob"}], "either event and exitCode should be specified"),
    ([{"event": "Nope", "action": "RestartJob"}], 'Invalid value: "Nope": invalid policy event'),
    ([{"event": "PodFailed", "action": "SyncJob"}], 'Invalid value: "SyncJob": invalid policy action'),
    ([{"exitCode": 0, "action": "RestartJob"}], "0 is not a valid error code"),
    ([{"exitCode": 2, "action": "RestartJob"}, {"exitCode": 2, "action": "AbortJob"}], "duplicate exitCode 2"),
    ([{"event": "*", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}],
     "if there's * here, no other policy should be here"),
])
async def test_invalid_policies_are_rejected(policies: list, fragment: str) -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), vcjob(policies=policies))
    assert fragment in e.value.message
    assert "valid events are [* PodFailed PodEvicted PodPending Unknown TaskCompleted TaskFailed JobUpdated]" in e.value.message


async def test_unknown_job_plugin_is_rejected() -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), vcjob(plugins={"nccl": []}))
    assert "unable to find job plugin: nccl" in e.value.message


async def test_task_min_available_above_replicas_is_rejected() -> None:
    job = vcjob()
    job["spec"]["tasks"][0]["minAvailable"] = 5
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), job)
    assert "'minAvailable' is greater than 'replicas' in task: t1, job: j1;" in e.value.message


async def test_bad_task_name_is_rejected_by_the_policy() -> None:
    job = vcjob()
    job["spec"]["tasks"][0]["name"] = "Bad_Name"
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), job)
    assert e.value.code in (400, 422)


async def test_negative_replicas_are_rejected() -> None:
    job = vcjob()
    job["spec"]["tasks"][0]["replicas"] = -1
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), job)
    assert e.value.code == 422
    assert "ValidatingAdmissionPolicy 'job-validation-policy'" in e.value.message


async def test_cyclic_depends_on_is_rejected() -> None:
    c = {"spec": {"containers": [{"name": "c", "image": "x"}]}}
    job = vcjob(tasks=[{"name": "a", "replicas": 1, "template": c, "dependsOn": {"name": ["b"]}},
                       {"name": "b", "replicas": 1, "template": c, "dependsOn": {"name": ["a"]}}])
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), job)
    assert "doesn't form a directed acyclic graph(DAG)" in e.value.message


async def test_job_update_may_change_only_replicas_and_min_available() -> None:
    r = reader()
    old = await admit(PLUGINS, r, vcjob())
    assert old is not None
    new = copy.deepcopy(old)
    new["spec"]["tasks"][0]["replicas"] = 3
    await admit(PLUGINS, r, new, operation="UPDATE", old=old)
    new["spec"]["queue"] = "other"
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, r, new, operation="UPDATE", old=old)
    assert "job updates may not change fields other than `minAvailable`" in e.value.message


async def test_queue_defaults_weight_and_reclaimable() -> None:
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"}, "spec": {}}
    out = await admit(PLUGINS, reader(), q)
    assert out is not None and out["spec"] == {"reclaimable": True, "weight": 1}


async def test_queue_hierarchy_annotation_gets_root_prefix() -> None:
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
         "metadata": {"name": "q1", "annotations": {"volcano.sh/hierarchy": "eng/dev",
                                                    "volcano.sh/hierarchy-weights": "2/8"}}, "spec": {}}
    out = await admit(PLUGINS, reader(), q)
    assert out is not None
    assert out["metadata"]["annotations"] == {"volcano.sh/hierarchy": "root/eng/dev",
                                              "volcano.sh/hierarchy-weights": "1/2/8"}


@pytest.mark.parametrize(("spec", "fragment"), [
    ({"deserved": {"cpu": "4"}, "capability": {"cpu": "2"}}, "deserved[cpu]=4 must be <= capability[cpu]=2"),
    ({"deserved": {"cpu": "1"}, "guarantee": {"resource": {"cpu": "2"}}}, "deserved[cpu]=1 must be >= guarantee[cpu]=2"),
    ({"guarantee": {"resource": {"memory": "1Gi"}}}, "deserved[memory] must be >= guarantee[memory]=1Gi"),
    ({"capability": {"cpu": "lots"}}, "quantities must match the regular expression"),
])
async def test_queue_resource_order_is_enforced(spec: dict, fragment: str) -> None:
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"}, "spec": spec}
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), q)
    assert 'admission webhook "validatequeue.volcano.sh" denied the request' in e.value.message
    assert fragment in e.value.message


async def test_queue_with_bad_state_is_rejected() -> None:
    q = queue("q1", "Closing")
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), q)
    assert "queue state must be in [Open Closed]" in e.value.message


@pytest.mark.parametrize("name", ["default", "root"])
async def test_default_and_root_queues_cannot_be_deleted(name: str) -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), None, operation="DELETE", old=queue(name), name=name)
    assert f"`{name}` queue can not be deleted" in e.value.message


async def test_queue_with_children_cannot_be_deleted() -> None:
    r = reader(queue("eng"), queue("dev", parent="eng"))
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, r, None, operation="DELETE", old=queue("eng"), name="eng")
    assert "queue eng can not be deleted because it has 1 child queues: dev" in e.value.message
    await admit(PLUGINS, r, None, operation="DELETE", old=queue("dev"), name="dev")


async def test_child_capability_above_parent_is_rejected() -> None:
    r = reader(queue("eng", capability={"cpu": "4"}))
    q = queue("dev", parent="eng", capability={"cpu": "8"})
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, r, q)
    assert "queue dev capability[cpu]=8 exceeds its ancestor's capability=4" in e.value.message


@pytest.mark.parametrize(("resource", "parent", "child", "text"), [
    ("cpu", "1000", "2000", "capability[cpu]=2k exceeds its ancestor's capability=1k"),
    ("memory", "1000", "2000", "capability[memory]=2000 exceeds its ancestor's capability=1k"),
    ("nvidia.com/gpu", "1", "2", "capability[nvidia.com/gpu]=2.00 exceeds its ancestor's capability=1.00"),
])
async def test_capability_messages_print_values_as_format_resource_with_type(
        resource: str, parent: str, child: str, text: str) -> None:
    # validate_queue.go formatResourceWithType: cpu NewMilliQuantity(m, DecimalSI).String(),
    # memory NewQuantity(b, BinarySI).String() (below 1024 it is decimal: "1k"), others %.2f
    r = reader(queue("eng", capability={resource: parent}))
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, r, queue("dev", parent="eng", capability={resource: child}))
    assert f"queue dev {text}" in e.value.message


async def test_queue_cannot_be_its_own_parent() -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), queue("q1", parent="q1"))
    assert "queue q1 cannot use itself as parent" in e.value.message


def podgroup(queue_name: str | None) -> dict:
    spec: dict = {"minMember": 1}
    if queue_name:
        spec["queue"] = queue_name
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg1", "namespace": "ns1"}, "spec": spec}


async def test_podgroup_to_closed_queue_is_rejected() -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(queue("q1", "Closed")), podgroup("q1"))
    assert "can only submit PodGroup to queue with state `Open`, queue `q1` status is `Closed`." in e.value.message


async def test_podgroup_to_missing_queue_is_rejected() -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), podgroup("q9"))
    assert 'unable to find queue: queue.scheduling.volcano.sh "q9" not found' in e.value.message


async def test_podgroup_takes_the_namespace_queue() -> None:
    r = reader(queue("team"))
    r.add({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": "ns1", "annotations": {"scheduling.volcano.sh/queue-name": "team"}}})
    out = await admit(PLUGINS, r, podgroup(None))
    assert out is not None and out["spec"]["queue"] == "team"


def pod(annotations: dict, scheduler: str = "volcano") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                           "annotations": annotations},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "x"}]}}


@pytest.mark.parametrize(("ann", "fragment"), [
    ({"volcano.sh/jdb-min-available": "0"}, "it must be a positive integer"),
    ({"volcano.sh/jdb-max-unavailable": "100%"}, "between 1% ~ 99%"),
    ({"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"}, "not allow configure multiple annotations"),
])
async def test_pod_budget_annotations_are_validated(ann: dict, fragment: str) -> None:
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(), pod(ann))
    assert fragment in e.value.message


async def test_pods_of_other_schedulers_are_not_checked() -> None:
    await admit(PLUGINS, reader(), pod({"volcano.sh/jdb-min-available": "0"}, scheduler="default-scheduler"))


@pytest.mark.parametrize("path", [
    "job.yaml", "job-plugin.yaml", "task-start-dependency/job.yaml", "integrations/ray/ray-example.yaml",
    "kubecon-2019-china/gang/nginx.yaml",
])
async def test_valid_samples_are_admitted(path: str) -> None:
    for doc in yaml.safe_load_all((EXAMPLES / path).read_text()):
        if doc and doc.get("kind") == "Job" and doc["apiVersion"].startswith("batch.volcano.sh"):
            await admit(PLUGINS, reader(), doc)


async def test_a_queue_with_podgroups_or_allocated_pods_cannot_be_deleted() -> None:
    busy = queue("q1")
    busy["status"]["allocated"] = {"cpu": "2", "pods": "2"}
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, reader(busy), None, operation="DELETE", old=busy, name="q1")
    assert "queue q1 cannot be deleted because it has allocated Pods: 2" in e.value.message
    r = reader(queue("q2"))
    r.add({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
           "metadata": {"name": "pg", "namespace": "ns1"}, "spec": {"queue": "q2"}})
    with pytest.raises(AdmissionError) as e:
        await admit(PLUGINS, r, None, operation="DELETE", old=queue("q2"), name="q2")
    assert "queue q2 cannot be deleted because it has 1 PodGroups" in e.value.message
    await admit(PLUGINS, reader(queue("q3")), None, operation="DELETE", old=queue("q3"), name="q3")


def test_shipped_admission_conf_has_no_resource_groups_and_a_group_mutates_pods() -> None:
    from pumice.controllers.volcano.admission import load_admission_conf

    shipped = shared_dir() / "samples" / "volcano" / "installer" / "helm" / "chart" / "volcano" / "config" / "volcano-admission.conf"
    assert load_admission_conf(shipped.read_text()) == []
    groups = load_admission_conf("""
resourceGroups:
- resourceGroup: management
  object: {key: namespace, value: [mng-ns-1]}
  schedulerName: default-scheduler
  tolerations: [{effect: NoSchedule, key: taint, operator: Exists}]
  labels: {volcano.sh/nodetype: management}
""")
    assert groups[0].resourceGroup == "management" and groups[0].object_value == ("mng-ns-1",)
    with pytest.raises(ValueError, match="unknown resourceGroups keys"):
        load_admission_conf("resourceGroups: [{resourceGroup: x, color: red}]")


async def test_resource_group_mutates_matching_pods() -> None:
    from pumice.controllers.volcano.admission import ResourceGroup

    plugins = admission_plugins(resource_groups=[ResourceGroup(
        "cpu", object_key="annotation", object_value=("volcano.sh/resource-group: cpu",),
        schedulerName="volcano", labels={"volcano.sh/nodetype": "cpu"})])
    p = pod({"volcano.sh/resource-group": "cpu"}, scheduler="default-scheduler")
    out = await admit(plugins, reader(), p)
    assert out is not None and out["spec"]["nodeSelector"] == {"volcano.sh/nodetype": "cpu"}
    assert out["spec"]["schedulerName"] == "volcano"
    other = await admit(plugins, reader(), pod({}, scheduler="default-scheduler"))
    assert other is not None and "nodeSelector" not in other["spec"]
