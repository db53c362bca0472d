"""Pure builders compared by equality with objects written out from reference/kuberay.md §2.3,
§2.8, §3.4 and §5.2 (upstream sample inputs read from ../shared/samples)."""

from __future__ import annotations

import copy

import pytest

from pumice._util.gostrings import quote
from pumice.controllers.ray.batchscheduler import (
    DefaultBatchScheduler,
    UnknownBatchSchedulerError,
    new_batch_scheduler,
)
from pumice.controllers.ray.batchscheduler.volcano import (
    VolcanoBatchScheduler,
    build_pod_group,
    calculate_pod_group_params,
    rayjob_pod_group_params,
)
from pumice.controllers.ray.common import job as jobb
from pumice.controllers.ray.common import pod as podb
from pumice.controllers.ray.common import resources as res
from pumice.controllers.ray.common import service as svcb
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample

FQDN = "raycluster-kuberay-head-svc.default.svc.cluster.local"
OWNER = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "raycluster-kuberay", "uid": "uid-1",
         "controller": True, "blockOwnerDeletion": True}
HEAD_CMD = ("ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0  "
            "--memory=5368709120  --metrics-export-port=8080  --num-cpus=1 ")
WORKER_CMD = (f"ray start  --address={FQDN}:6379  --block  --dashboard-agent-listen-port=52365  "
              "--memory=1073741824  --metrics-export-port=8080  --num-cpus=1 ")
WGET_RAYLET = "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
WGET_GCS = "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"


def sample_cluster() -> dict:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["metadata"]["uid"] = "uid-1"
    return cl


def field_env(name: str, path: str) -> dict:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def common_env(cmd: str, address: str) -> list[dict]:
    return [
        field_env("RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']"),
        field_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
        field_env("RAY_CLOUD_INSTANCE_ID", "metadata.name"),
        field_env("RAY_NODE_TYPE_NAME", "metadata.labels['ray.io/group']"),
        {"name": "KUBERAY_GEN_RAY_START_CMD", "value": cmd},
        {"name": "RAY_PORT", "value": "6379"},
        {"name": "RAY_ADDRESS", "value": address},
        {"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"},
    ]


def probe(initial: int, timeout: int, failure: int, command: str) -> dict:
    return {"initialDelaySeconds": initial, "timeoutSeconds": timeout, "periodSeconds": 5, "successThreshold": 1,
            "failureThreshold": failure, "exec": {"command": ["bash", "-c", command]}}


def test_head_pod_of_the_sample_cluster_matches_the_reference() -> None:
    expected = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": "default",
            "generateName": "raycluster-kuberay-head-",
            "labels": {
                "ray.io/is-ray-node": "yes", "ray.io/cluster": "raycluster-kuberay", "ray.io/node-type": "head",
                "ray.io/group": "headgroup", "ray.io/identifier": "raycluster-kuberay-head",
                "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator",
            },
            "annotations": {"ray.io/ft-enabled": "false"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "containers": [{
                "name": "ray-head",
                "image": "rayproject/ray:2.52.0",
                "resources": {"limits": {"cpu": "1", "memory": "5Gi"}, "requests": {"cpu": "1", "memory": "5Gi"}},
                "ports": [{"containerPort": 6379, "name": "gcs-server"}, {"containerPort": 8265, "name": "dashboard"},
                          {"containerPort": 10001, "name": "client"}, {"name": "metrics", "containerPort": 8080}],
                "volumeMounts": [{"name": "shared-mem", "mountPath": "/dev/shm"}],
                "command": ["/bin/bash", "-c", "--"],
                "args": [f"ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {HEAD_CMD}"],
                "env": [*common_env(HEAD_CMD, "127.0.0.1:6379"),
                        {"name": "RAY_USAGE_STATS_EXTRA_TAGS", "value": "kuberay_version=nightly;kuberay_crd=RayCluster"},
                        {"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"}],
                "livenessProbe": probe(30, 5, 120, f"{WGET_RAYLET} && {WGET_GCS}"),
                "readinessProbe": probe(10, 5, 10, f"{WGET_RAYLET} && {WGET_GCS}"),
            }],
            "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "5Gi"}}],
        },
    }
    assert podb.build_head_pod(sample_cluster()) == expected


def test_worker_pod_of_the_sample_cluster_matches_the_reference() -> None:
    cl = sample_cluster()
    # upstream's script text, tabs as its Go raw string carries them (common/pod.go, wait-gcs-ready)
    wait = ("\n\t\t\t\t\tSECONDS=0\n\t\t\t\t\twhile true; do\n\t\t\t\t\t\tif (( SECONDS <= 120 )); then\n"
            "\t\t\t\t\t\t\tif ray health-check --address " + FQDN + ":6379 > /dev/null 2>&1; then\n"
            '\t\t\t\t\t\t\t\techo "GCS is ready."\n\t\t\t\t\t\t\t\tbreak\n\t\t\t\t\t\t\tfi\n'
            '\t\t\t\t\t\t\techo "$SECONDS seconds elapsed: Waiting for GCS to be ready."\n\t\t\t\t\t\telse\n'
            "\t\t\t\t\t\t\tif ray health-check --address " + FQDN + ":6379; then\n"
            '\t\t\t\t\t\t\t\techo "GCS is ready. Any error messages above can be safely ignored."\n'
            "\t\t\t\t\t\t\t\tbreak\n\t\t\t\t\t\t\tfi\n"
            '\t\t\t\t\t\t\techo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, '
            'refer to the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."\n'
            "\t\t\t\t\t\tfi\n\t\t\t\t\t\tsleep 5\n\t\t\t\t\tdone\n\t\t\t\t")
    expected = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": "default",
            "generateName": "raycluster-kuberay-workergroup-worker-",
            "labels": {
                "ray.io/is-ray-node": "yes", "ray.io/cluster": "raycluster-kuberay", "ray.io/node-type": "worker",
                "ray.io/group": "workergroup", "ray.io/identifier": "raycluster-kuberay-worker",
                "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator",
                "ray.io/worker-group-replica-index": "0",
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "initContainers": [{
                "name": "wait-gcs-ready",
                "image": "rayproject/ray:2.52.0",
                "command": ["/bin/bash", "-c", "--"],
                "args": [wait],
                "env": [{"name": "FQ_RAY_IP", "value": FQDN}, {"name": "RAY_IP", "value": "raycluster-kuberay-head-svc"}],
                "resources": {"limits": {"cpu": "200m", "memory": "256Mi"}, "requests": {"cpu": "200m", "memory": "256Mi"}},
            }],
            "containers": [{
                "name": "ray-worker",
                "image": "rayproject/ray:2.52.0",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
                "ports": [{"name": "metrics", "containerPort": 8080}],
                "volumeMounts": [{"name": "shared-mem", "mountPath": "/dev/shm"}],
                "command": ["/bin/bash", "-c", "--"],
                "args": [f"ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {WORKER_CMD}"],
                "env": [{"name": "FQ_RAY_IP", "value": FQDN}, {"name": "RAY_IP", "value": "raycluster-kuberay-head-svc"},
                        *common_env(WORKER_CMD, f"{FQDN}:6379"),
                        {"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"}],
                "livenessProbe": probe(30, 2, 120, WGET_RAYLET),
                "readinessProbe": probe(10, 2, 10, WGET_RAYLET),
            }],
            "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}],
        },
    }
    assert podb.build_worker_pod(cl, cl["spec"]["workerGroupSpecs"][0]) == expected


def test_ray_2_53_and_later_get_the_http_health_probe() -> None:
    cl = sample_cluster()
    cl["spec"]["rayVersion"] = "2.60.0"
    ct = podb.build_head_pod(cl)["spec"]["containers"][0]
    assert ct["readinessProbe"]["httpGet"] == {"path": "/api/healthz", "port": 52365}
    assert "exec" not in ct["readinessProbe"]


def test_ray_start_flags_render_booleans_like_upstream() -> None:
    rendered = podb.convert_param_map({"block": "true", "include-dashboard": "false", "log-color": "true",
                                       "no-monitor": "false", "num-cpus": "2"})
    assert rendered == " --block  --include-dashboard=false  --log-color=true  --num-cpus=2 "


def test_num_cpus_is_rounded_up_from_the_limit_and_gpus_come_from_gpu_limits() -> None:
    params: dict[str, str] = {}
    cmd = podb.generate_ray_start_command("worker", params, {"limits": {"cpu": "1500m", "nvidia.com/gpu": "2",
                                                                        "memory": "1Gi"}})
    assert params == {"num-cpus": "2", "memory": "1073741824", "num-gpus": "2"}
    assert cmd == "ray start  --memory=1073741824  --num-cpus=2  --num-gpus=2 "


def test_user_ray_start_command_is_left_alone_and_user_prefix_is_kept() -> None:
    cl = sample_cluster()
    cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["command"] = ["echo", "hi"]
    ct = podb.build_head_pod(cl)["spec"]["containers"][0]
    assert ct["args"] == [f" echo  hi  && ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {HEAD_CMD}"]
    cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["command"] = ["ray start --head --block"]
    ct = podb.build_head_pod(cl)["spec"]["containers"][0]
    assert ct["command"] == ["ray start --head --block"]


def test_head_service_is_headless_with_sorted_named_ports() -> None:
    expected = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "raycluster-kuberay-head-svc",
            "namespace": "default",
            "labels": {"ray.io/cluster": "raycluster-kuberay", "ray.io/node-type": "head",
                       "ray.io/identifier": "raycluster-kuberay-head", "app.kubernetes.io/name": "kuberay",
                       "app.kubernetes.io/created-by": "kuberay-operator"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "selector": {"ray.io/cluster": "raycluster-kuberay", "ray.io/node-type": "head",
                         "ray.io/identifier": "raycluster-kuberay-head", "app.kubernetes.io/name": "kuberay",
                         "app.kubernetes.io/created-by": "kuberay-operator"},
            "ports": [{"name": "client", "port": 10001, "appProtocol": "tcp"},
                      {"name": "dashboard", "port": 8265, "appProtocol": "tcp"},
                      {"name": "gcs-server", "port": 6379, "appProtocol": "tcp"},
                      {"name": "metrics", "port": 8080, "appProtocol": "tcp"}],
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
        },
    }
    assert svcb.build_head_service(sample_cluster()) == expected


def test_head_without_declared_ports_gets_the_default_port_set() -> None:
    cl = sample_cluster()
    del cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]
    ports = {p["name"]: p["port"] for p in svcb.build_head_service(cl)["spec"]["ports"]}
    assert ports == {"client": 10001, "gcs-server": 6379, "dashboard": 8265, "metrics": 8080, "serve": 8000}


def sample_rayjob() -> dict:
    job = load_sample("ray-job.sample.yaml", "RayJob")
    job["metadata"]["uid"] = "job-uid"
    job["status"] = {"dashboardURL": "rayjob-sample-abcde-head-svc.default.svc.cluster.local:8265",
                     "jobId": "rayjob-sample-xyz12"}
    return job


def test_submitter_job_runs_the_status_then_submit_guard() -> None:
    job = sample_rayjob()
    addr = "http://rayjob-sample-abcde-head-svc.default.svc.cluster.local:8265"
    renv = '{"env_vars":{"counter_name":"test_counter"},"pip":["requests==2.26.0","pendulum==2.1.2"]}'
    health = (f"python -c \"import urllib.request; r=urllib.request.urlopen('{addr}/api/gcs_healthz', timeout=10); "
              "exit(0 if b'success' in r.read() else 1)\"")
    script = (f'until {health} >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become healthy at {addr} ..." ; '
              f"sleep 2 ; done ; if ! ray job status --address {addr} rayjob-sample-xyz12 >/dev/null 2>&1 ; then "
              f"ray job submit --address {addr} --no-wait --runtime-env-json {quote(renv)} "
              f"--submission-id rayjob-sample-xyz12 -- python /home/ray/samples/sample_code.py ; fi ; "
              f"ray job logs --address {addr} --follow rayjob-sample-xyz12")
    tmpl = jobb.build_submitter_pod_template(job, job["spec"]["rayClusterSpec"])
    expected_job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "rayjob-sample",
            "namespace": "default",
            "labels": {"ray.io/originated-from-cr-name": "rayjob-sample", "ray.io/originated-from-crd": "RayJob",
                       "app.kubernetes.io/created-by": "kuberay-operator"},
            "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rayjob-sample",
                                 "uid": "job-uid", "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "backoffLimit": 2,
            "template": {
                "metadata": {"labels": {"ray.io/originated-from-cr-name": "rayjob-sample",
                                        "ray.io/originated-from-crd": "RayJob",
                                        "app.kubernetes.io/created-by": "kuberay-operator"}},
                "spec": {
                    "containers": [{
                        "name": "ray-job-submitter",
                        "image": "rayproject/ray:2.52.0",
                        "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                      "requests": {"cpu": "500m", "memory": "200Mi"}},
                        "command": ["/bin/bash", "-ce", "--"],
                        "args": [script],
                        "env": [{"name": "PYTHONUNBUFFERED", "value": "1"},
                                {"name": "RAY_DASHBOARD_ADDRESS", "value": job["status"]["dashboardURL"]},
                                {"name": "RAY_JOB_SUBMISSION_ID", "value": "rayjob-sample-xyz12"}],
                    }],
                    "restartPolicy": "Never",
                },
            },
        },
    }
    assert jobb.build_submitter_job(job, tmpl) == expected_job


def test_rayjob_cluster_carries_originated_from_labels_and_owner() -> None:
    job = sample_rayjob()
    cluster = jobb.build_cluster_for_rayjob(job, "rayjob-sample-abcde")
    assert cluster["metadata"] == {
        "name": "rayjob-sample-abcde", "namespace": "default",
        "labels": {"ray.io/originated-from-cr-name": "rayjob-sample", "ray.io/originated-from-crd": "RayJob",
                   "ray.io/job-submission-mode": "K8sJobMode"},
        "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rayjob-sample", "uid": "job-uid",
                             "controller": True, "blockOwnerDeletion": True}],
    }
    assert cluster["spec"] == job["spec"]["rayClusterSpec"]


def test_sidecar_mode_appends_the_submitter_to_the_head_and_forces_never() -> None:
    job = sample_rayjob()
    job["spec"]["submissionMode"] = "SidecarMode"
    cluster = jobb.build_cluster_for_rayjob(job, "c")
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    assert [ct["name"] for ct in head["containers"]] == ["ray-head", "ray-job-submitter"]
    assert head["restartPolicy"] == "Never"
    assert "http://127.0.0.1:8265" in head["containers"][1]["args"][0]
    assert "--no-wait" not in head["containers"][1]["args"][0]
    assert cluster["metadata"]["annotations"] == {"ray.io/disable-provisioned-head-restart": "true"}


def gpu_cluster_spec(num_of_hosts: int = 1) -> dict:
    def tmpl(limits: dict | None = None) -> dict:
        r: dict = {"requests": {"cpu": "256m", "memory": "256Mi"}}
        if limits:
            r["limits"] = limits
        return {"spec": {"containers": [{"name": "ray", "image": "ray", "resources": r}]}}

    return {"headGroupSpec": {"template": tmpl()},
            "workerGroupSpecs": [{"groupName": "g", "replicas": 2, "minReplicas": 1, "maxReplicas": 4,
                                  "numOfHosts": num_of_hosts, "template": tmpl({"nvidia.com/gpu": "1"})}]}


@pytest.mark.upstream("volcano_scheduler_test.go TestCreatePodGroup")
def test_pod_group_numbers_match_the_upstream_unit_test() -> None:
    members, total, formats = calculate_pod_group_params(gpu_cluster_spec())
    assert members == 3
    assert res.format_resource_list(total, formats) == {"cpu": "768m", "memory": "768Mi", "nvidia.com/gpu": "2"}
    members, _, _ = calculate_pod_group_params(gpu_cluster_spec(num_of_hosts=2))
    assert members == 5


def test_rayjob_pod_group_counts_the_submitter_in_resources_not_members() -> None:
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob",
           "metadata": {"name": "j", "namespace": "ns", "uid": "u", "labels": {"volcano.sh/queue-name": "q1",
                                                                              "ray.io/priority-class-name": "high"}},
           "spec": {"rayClusterSpec": gpu_cluster_spec()}}
    members, total, formats = rayjob_pod_group_params(job)
    assert members == 3
    assert res.format_resource_list(total, formats) == {"cpu": "1268m", "memory": "968Mi", "nvidia.com/gpu": "2"}
    assert build_pod_group(job, members, total, formats) == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "ray-j-pg", "namespace": "ns",
                     "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "j", "uid": "u",
                                          "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"minMember": 3, "minResources": {"cpu": "1268m", "memory": "968Mi", "nvidia.com/gpu": "2"},
                 "queue": "q1", "priorityClassName": "high"},
        "status": {"phase": "Pending"},
    }


def test_autoscaling_pod_group_uses_min_replicas() -> None:
    spec = gpu_cluster_spec()
    spec["enableInTreeAutoscaling"] = True
    members, total, formats = calculate_pod_group_params(spec)
    assert members == 2
    assert res.format_resource_list(total, formats) == {"cpu": "512m", "memory": "512Mi", "nvidia.com/gpu": "1"}


def test_pod_group_min_resources_keep_the_format_of_their_sums() -> None:
    # SumResourceList adds with resource.Quantity.Add, which keeps the receiver's format: decimal
    # memory sums to "3G" (pumice printed the byte count 3000000000), an exponent stays one
    def pod(cpu: str, memory: str) -> dict:
        return {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}
    spec = {"headGroupSpec": {"template": pod("1", "1G")},
            "workerGroupSpecs": [{"groupName": "g", "replicas": 2, "minReplicas": 1, "maxReplicas": 4,
                                  "template": pod("1e3", "1G")}]}
    members, total, formats = calculate_pod_group_params(spec)
    assert members == 3
    assert res.format_resource_list(total, formats) == {"cpu": "2001", "memory": "3G"}
    spec["enableInTreeAutoscaling"] = True
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
           "spec": {"rayClusterSpec": spec, "submitterPodTemplate": pod("500m", "500M")}}
    members, total, formats = rayjob_pod_group_params(job)
    assert build_pod_group(job, members, total, formats)["spec"]["minResources"] == {"cpu": "1001500m", "memory": "2500M"}


def test_volcano_metadata_on_a_pod_names_the_rayjob_pod_group() -> None:
    sched = VolcanoBatchScheduler(FakeClient())
    cluster = {"kind": "RayCluster", "metadata": {"name": "c-abcde", "labels": {
        "ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "myjob",
        "volcano.sh/queue-name": "q1"}}}
    pod = {"kind": "Pod", "metadata": {"labels": {}}, "spec": {}}
    sched.add_metadata_to_child_resource(cluster, pod, "headgroup")
    assert pod == {"kind": "Pod",
                   "metadata": {"labels": {"volcano.sh/queue-name": "q1"},
                                "annotations": {"scheduling.k8s.io/group-name": "ray-myjob-pg",
                                                "volcano.sh/task-spec": "headgroup"}},
                   "spec": {"schedulerName": "volcano"}}


def test_unknown_batch_scheduler_names_the_known_ones() -> None:
    assert isinstance(new_batch_scheduler(None, FakeClient()), DefaultBatchScheduler)
    with pytest.raises(UnknownBatchSchedulerError, match="known: kai-scheduler, scheduler-plugins, volcano, yunikorn"):
        new_batch_scheduler("kube-batch", FakeClient())


def test_desired_replicas_clamp_and_treat_missing_num_of_hosts_as_one() -> None:
    g = {"groupName": "g", "replicas": 10, "minReplicas": 1, "maxReplicas": 5}
    assert res.group_desired_replicas(g) == 5
    assert res.desired_worker_pods({"workerGroupSpecs": [g]}) == 5
    # an explicit 0 is 0 Pods, as upstream multiplies by the field (envtest "invalid NumOfHosts")
    assert res.desired_worker_pods({"workerGroupSpecs": [{**g, "numOfHosts": 0}]}) == 0
    assert res.group_desired_replicas({**g, "replicas": 0}) == 1
    assert res.group_desired_replicas({**g, "suspend": True}) == 0


def test_builders_do_not_modify_their_input() -> None:
    cl = sample_cluster()
    before = copy.deepcopy(cl)
    podb.build_head_pod(cl)
    podb.build_worker_pod(cl, cl["spec"]["workerGroupSpecs"][0])
    svcb.build_head_service(cl)
    assert cl == before


# --- the RayCluster's serve Service (ray.io/enable-serve-service) ---------------------------------


def test_the_serve_service_of_a_raycluster_selects_all_its_pods_at_the_serving_ports() -> None:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["metadata"].update(namespace="default", uid="u1", annotations={"ray.io/enable-serve-service": "true"})
    cl["spec"]["headGroupSpec"]["serviceType"] = "NodePort"
    cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 8265, "name": "dashboard"}, {"containerPort": 9000, "name": "serve-grpc"},
        {"containerPort": 8000, "name": "serve"}, {"containerPort": 7000, "name": "server"}]
    svc = svcb.build_serve_service_for_raycluster(cl)
    assert svc["metadata"]["name"] == "raycluster-kuberay-serve-svc"
    assert svc["metadata"]["labels"] == {"ray.io/originated-from-cr-name": "raycluster-kuberay",
                                         "ray.io/originated-from-crd": "RayCluster",
                                         "ray.io/serve": "raycluster-kuberay-serve"}
    assert svc["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert svc["spec"] == {"selector": {"ray.io/cluster": "raycluster-kuberay"}, "type": "NodePort",
                           "ports": [{"name": "serve", "port": 8000}, {"name": "serve-grpc", "port": 9000}]}


def test_a_raycluster_serve_service_needs_a_serving_port() -> None:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 8265, "name": "dashboard"}]
    with pytest.raises(ValueError, match="Please specify a port named 'serve'") as e:
        svcb.build_serve_service_for_raycluster(cl)
    assert str(e.value) == svcb.SERVE_PORT_MISSING


# --- operator configuration: sidecars and default container envs ----------------------------------


@pytest.mark.upstream("kuberay ray-operator/controllers/ray/common/pod_test.go: TestBuildPod (defaultContainerEnvs)")
def test_default_container_envs_go_first_into_the_ray_container_unless_it_sets_them() -> None:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "SHARED", "value": "mine"}]
    opts = podb.PodOptions(default_container_envs=({"name": "TEST_DEFAULT_ENV_NAME", "value": "TEST_ENV_VALUE"},
                                                   {"name": "SHARED", "value": "default"}))
    head = podb.build_head_pod(cl, opts)["spec"]["containers"][0]["env"]
    assert head[:2] == [{"name": "TEST_DEFAULT_ENV_NAME", "value": "TEST_ENV_VALUE"}, {"name": "SHARED", "value": "default"}]
    worker = podb.build_worker_pod(cl, cl["spec"]["workerGroupSpecs"][0], opts)["spec"]["containers"][0]["env"]
    assert [e for e in worker if e["name"] == "SHARED"] == [{"name": "SHARED", "value": "mine"}]
    assert {"name": "TEST_DEFAULT_ENV_NAME", "value": "TEST_ENV_VALUE"} in worker


def test_sidecars_are_appended_after_the_templates_containers_and_the_autoscaler() -> None:
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    cl["spec"]["enableInTreeAutoscaling"] = True
    side = {"name": "fluentbit", "image": "fluent/fluent-bit:1.9.6"}
    opts = podb.PodOptions(head_sidecar_containers=(side,), worker_sidecar_containers=(dict(side, name="w-side"),))
    head = podb.build_head_pod(cl, opts)
    assert [ct["name"] for ct in head["spec"]["containers"]] == ["ray-head", "autoscaler", "fluentbit"]
    assert head["spec"]["containers"][2] == side  # untouched: no Ray env, command or probes
    worker = podb.build_worker_pod(cl, cl["spec"]["workerGroupSpecs"][0], opts)
    assert [ct["name"] for ct in worker["spec"]["containers"]] == ["ray-worker", "w-side"]
