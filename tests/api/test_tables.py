from __future__ import annotations

import pytest

from pumice.api.scheme import ResourceKind, Scheme
from pumice.api.tables import human_duration, jsonpath_find, jsonpath_get, pod_status_reason, to_table

SCHEME = Scheme.builtin()
NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z
CREATED = "2023-11-14T22:08:18Z"  # 5m2s before NOW


def kind(api_version, k):
    return SCHEME.by_api_version_kind(api_version, k)


@pytest.mark.parametrize("seconds, text", [
    (5, "5s"), (119, "119s"), (182, "3m2s"), (600, "10m"), (3 * 3600 + 600, "3h10m"), (10 * 3600, "10h"),
    (5 * 86400, "5d"), (5 * 86400 + 7200, "5d2h"), (30 * 86400, "30d"), (800 * 86400, "2y70d"), (-5, "<invalid>"),
])
def test_ages_are_in_kubectl_form(seconds, text):
    assert human_duration(seconds) == text


def pod(phase="Running", **status):
    return {"metadata": {"name": "p", "creationTimestamp": CREATED},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": phase, "podIP": "10.0.0.5", **status}}


def cs(name, ready=False, restarts=0, **state):
    return {"name": name, "ready": ready, "restartCount": restarts, "state": state}


def test_pod_columns_and_a_running_row():
    p = pod(containerStatuses=[cs("a", True, running={}), cs("b", True, 2, running={})])
    table = to_table(kind("v1", "Pod"), [p], NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]
    assert [c["priority"] for c in table["columnDefinitions"]][5:] == [1, 1, 1, 1]
    [row] = table["rows"]
    assert row["cells"] == ["p", "2/2", "Running", "2", "5m2s", "10.0.0.5", "n1", "<none>", "<none>"]
    assert row["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": p["metadata"]}


@pytest.mark.parametrize("pod_obj, status", [
    (pod("Pending"), "Pending"),
    (pod("Pending", containerStatuses=[cs("a", waiting={"reason": "ContainerCreating"}), cs("b")]),
     "ContainerCreating"),
    (pod("Running", containerStatuses=[cs("a", waiting={"reason": "CrashLoopBackOff"}), cs("b", True, running={})]),
     "CrashLoopBackOff"),
    (pod("Succeeded", containerStatuses=[cs("a", terminated={"reason": "Completed", "exitCode": 0}),
                                         cs("b", terminated={"reason": "Completed", "exitCode": 0})]), "Completed"),
    (pod("Failed", containerStatuses=[cs("a", terminated={"exitCode": 3})]), "ExitCode:3"),
    (pod("Failed", reason="Evicted"), "Evicted"),
    (pod("Pending", conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]),
     "SchedulingGated"),
])
def test_pod_status_as_kubectl_computes_it(pod_obj, status):
    assert pod_status_reason(pod_obj) == status


def test_init_container_progress_and_failures():
    p = pod("Pending")
    p["spec"]["initContainers"] = [{"name": "i1"}, {"name": "i2"}]
    p["status"]["initContainerStatuses"] = [cs("i1", terminated={"exitCode": 0}), cs("i2", running={})]
    assert pod_status_reason(p) == "Init:1/2"
    p["status"]["initContainerStatuses"][1] = cs("i2", waiting={"reason": "ImagePullBackOff"})
    assert pod_status_reason(p) == "Init:ImagePullBackOff"
    p["status"]["initContainerStatuses"][1] = cs("i2", terminated={"exitCode": 1, "reason": "Error"})
    assert pod_status_reason(p) == "Init:Error"


def test_deleting_pod_is_terminating():
    p = pod(containerStatuses=[cs("a", True, running={}), cs("b", True, running={})])
    p["metadata"]["deletionTimestamp"] = CREATED
    assert pod_status_reason(p) == "Terminating"


def test_completed_with_a_running_container_shows_running_or_not_ready():
    p = pod(containerStatuses=[cs("a", terminated={"reason": "Completed", "exitCode": 0}), cs("b", True, running={})])
    # kubectl walks statuses from the last one, so "a" (Completed) decides the reason
    assert pod_status_reason(p) == "NotReady"
    p["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert pod_status_reason(p) == "Running"


def test_node_deployment_job_and_service_rows():
    node = {"metadata": {"name": "n1", "creationTimestamp": CREATED, "labels": {"node-role.kubernetes.io/worker": ""}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.32.0"}}}
    assert to_table(kind("v1", "Node"), [node], NOW)["rows"][0]["cells"][:5] == [
        "n1", "Ready,SchedulingDisabled", "worker", "5m2s", "v1.32.0"]
    dep = {"metadata": {"name": "d", "creationTimestamp": CREATED}, "spec": {"replicas": 3},
           "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    t = to_table(kind("apps/v1", "Deployment"), [dep], NOW)
    assert [c["name"] for c in t["columnDefinitions"] if c["priority"] == 0] == [
        "Name", "Ready", "Up-to-date", "Available", "Age"]
    assert t["rows"][0]["cells"][:5] == ["d", "2/3", 3, 2, "5m2s"]
    job = {"metadata": {"name": "j", "creationTimestamp": CREATED}, "spec": {"completions": 1},
           "status": {"succeeded": 1, "startTime": CREATED, "completionTime": "2023-11-14T22:08:48Z",
                      "conditions": [{"type": "Complete", "status": "True"}]}}
    t = to_table(kind("batch/v1", "Job"), [job], NOW)
    assert [c["name"] for c in t["columnDefinitions"] if c["priority"] == 0] == [
        "Name", "Status", "Completions", "Duration", "Age"]
    assert t["rows"][0]["cells"][:5] == ["j", "Complete", "1/1", "30s", "5m2s"]
    svc = {"metadata": {"name": "s", "creationTimestamp": CREATED},
           "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "selector": {"app": "a"},
                    "ports": [{"port": 80, "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}}
    assert to_table(kind("v1", "Service"), [svc], NOW)["rows"][0]["cells"] == [
        "s", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "5m2s", "app=a"]


def test_a_claim_or_volume_being_deleted_is_terminating():
    # trial 18 F-2: a Bound claim held by kubernetes.io/pvc-protection showed Bound; printers.go
    # prints Terminating for a claim or volume with a deletionTimestamp
    md = {"creationTimestamp": CREATED, "deletionTimestamp": "2023-11-14T22:13:00Z",
          "finalizers": ["kubernetes.io/pvc-protection"]}
    claim = {"metadata": {"name": "data1", **md},
             "spec": {"volumeName": "pv1", "storageClassName": "standard", "volumeMode": "Filesystem"},
             "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}}
    assert to_table(kind("v1", "PersistentVolumeClaim"), [claim], NOW)["rows"][0]["cells"] == [
        "data1", "Terminating", "pv1", "1Gi", "RWO", "standard", "<unset>", "5m2s", "Filesystem"]
    volume = {"metadata": {"name": "pv1", **md},
              "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                       "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "default", "name": "data1"},
                       "storageClassName": "standard", "volumeMode": "Filesystem"},
              "status": {"phase": "Bound"}}
    assert to_table(kind("v1", "PersistentVolume"), [volume], NOW)["rows"][0]["cells"] == [
        "pv1", "1Gi", "RWO", "Retain", "Terminating", "default/data1", "standard", "<unset>", "", "5m2s",
        "Filesystem"]
    del claim["metadata"]["deletionTimestamp"], volume["metadata"]["deletionTimestamp"]
    assert to_table(kind("v1", "PersistentVolumeClaim"), [claim], NOW)["rows"][0]["cells"][1] == "Bound"
    assert to_table(kind("v1", "PersistentVolume"), [volume], NOW)["rows"][0]["cells"][4] == "Bound"


def test_small_kinds():
    cm = {"metadata": {"name": "c", "creationTimestamp": CREATED}, "data": {"a": "1", "b": "2"}}
    assert to_table(kind("v1", "ConfigMap"), [cm], NOW)["rows"][0]["cells"] == ["c", 2, "5m2s"]
    sec = {"metadata": {"name": "s", "creationTimestamp": CREATED}, "type": "Opaque", "data": {"a": "MQ=="}}
    assert to_table(kind("v1", "Secret"), [sec], NOW)["rows"][0]["cells"] == ["s", "Opaque", 1, "5m2s"]
    crd = {"metadata": {"name": "rayjobs.ray.io", "creationTimestamp": CREATED}}
    t = to_table(kind("apiextensions.k8s.io/v1", "CustomResourceDefinition"), [crd], NOW)
    assert t["rows"][0]["cells"] == ["rayjobs.ray.io", CREATED]
    rb = ResourceKind("rbac.authorization.k8s.io", "v1", "Unknownish", "unknownishes")
    assert to_table(rb, [cm], NOW)["rows"][0]["cells"] == ["c", "5m2s"]


def test_custom_resource_printer_columns():
    rk = ResourceKind("ray.io", "v1", "RayCluster", "rayclusters")
    cols = [{"name": "desired workers", "type": "integer", "jsonPath": ".status.desiredWorkerReplicas"},
            {"name": "status", "type": "string", "jsonPath": ".status.state"},
            {"name": "age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            {"name": "head pod IP", "type": "string", "jsonPath": ".status.head.podIP", "priority": 1}]
    rc = {"metadata": {"name": "rc", "creationTimestamp": CREATED},
          "status": {"desiredWorkerReplicas": 2, "state": "ready"}}
    t = to_table(rk, [rc], NOW, cols)
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "desired workers", "status", "age", "head pod IP"]
    assert t["columnDefinitions"][4]["priority"] == 1
    assert t["rows"][0]["cells"] == ["rc", 2, "ready", "5m2s", None]


def test_jsonpath_simple_paths():
    obj = {"spec": {"items": [{"x": 1}]}, "metadata": {"labels": {"app.kubernetes.io/name": "n"}}}
    assert jsonpath_get(obj, ".spec.items[0].x") == (True, 1)
    assert jsonpath_get(obj, "{.metadata.labels.app\\.kubernetes\\.io/name}") == (True, "n")
    assert jsonpath_get(obj, ".status.state") == (False, None)


def test_printer_columns_take_the_first_value_of_filters_and_wildcards():
    # trial-8 F-12: kube-apiserver evaluates printer columns with client-go's jsonpath and prints results[0][0]
    rk = SCHEME.by_api_version_kind("ray.io/v1", "RayCluster")
    cols = [{"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
            {"name": "Types", "type": "string", "jsonPath": ".status.conditions[*].type"},
            {"name": "Big", "type": "string", "jsonPath": ".status.conditions[?(@.n >= 2)].type"},
            {"name": "Deep", "type": "integer", "jsonPath": "..n"}]
    rc = {"metadata": {"name": "rc", "creationTimestamp": CREATED},
          "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True", "n": 2}]}}
    t = to_table(rk, [rc], NOW, cols)
    assert t["rows"][0]["cells"] == ["rc", "True", "Synced", "Ready", 2]
    assert jsonpath_find(rc, ".status.conditions[-1:].type") == ["Ready"]
    assert jsonpath_get(rc, ".status.conditions[?(@.type=='Gone')].status") == (False, None)


def test_printer_columns_of_a_type_show_no_cell_for_a_value_of_another_type() -> None:
    """apiextensions cellForJSONValue: a typed column's value of the wrong JSON type is no cell
    (kubectl: <none>); integer truncates a number, number widens an integer (trial 11 F-16)."""
    from pumice.api.scheme import ResourceKind
    from pumice.api.tables import to_table

    rk = ResourceKind("t11.io", "v1", "Thing", "things")
    cols = [{"name": n, "type": t, "jsonPath": f".spec.{n}"} for n, t in
            (("i", "integer"), ("f", "number"), ("b", "boolean"), ("d", "date"), ("s", "string"), ("x", "integer"))]
    obj = {"metadata": {"name": "th"}, "spec": {"i": "red1", "f": "abc", "b": 1, "d": "bogus", "s": 5, "x": 2.7}}
    cells = to_table(rk, [obj], 0.0, cols)["rows"][0]["cells"]
    assert cells == ["th", None, None, None, "<invalid>", "5", 2]
    obj["spec"] = {"i": 3, "f": 2, "b": True}
    assert to_table(rk, [obj], 0.0, cols)["rows"][0]["cells"][1:4] == [3, 2.0, True]


@pytest.mark.parametrize("api_version, k, column", [
    ("v1", "ConfigMap", "Data"), ("v1", "Secret", "Data"), ("v1", "ServiceAccount", "Secrets"),
    ("v1", "Event", "Count"), ("apps/v1", "Deployment", "Up-to-date"), ("apps/v1", "Deployment", "Available"),
])
def test_count_columns_are_declared_string_as_printers_go_declares_them(api_version, k, column):
    # kube-apiserver 1.32 (and 1.34, differential run of session 14) declares these "string" though
    # the cells are integers; kubectl's --sort-by and custom-columns read the declared type
    table = to_table(kind(api_version, k), [], NOW)
    [col] = [c for c in table["columnDefinitions"] if c["name"] == column]
    assert col["type"] == "string"


def test_cronjob_rows_have_the_wide_columns_and_suspend_as_printbool_text():
    cj = {"metadata": {"name": "c1", "creationTimestamp": CREATED},
          "spec": {"schedule": "*/5 * * * *", "suspend": False, "jobTemplate": {"spec": {
              "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}}}
    table = to_table(kind("batch/v1", "CronJob"), [cj], NOW)
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]][6:] == [
        ("Age", 0), ("Containers", 1), ("Images", 1), ("Selector", 1)]
    assert table["rows"][0]["cells"] == ["c1", "*/5 * * * *", "<none>", "False", 0, "<none>", "5m2s", "c", "busybox",
                                         "<none>"]
    del cj["spec"]["suspend"]
    assert to_table(kind("batch/v1", "CronJob"), [cj], NOW)["rows"][0]["cells"][3] == "<unset>"
