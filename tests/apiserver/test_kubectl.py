"""Real kubectl against the server over HTTPS (serve_http): the requests of
reference/kubectl-traces.txt, the upstream CRDs and the sample manifests."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pumice.testing.cluster import HttpServer, serve_http
from pumice.testing.paths import samples_dir

pytestmark = pytest.mark.kubectl


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with serve_http(tmp_path_factory.mktemp("kubectl")) as s:
        yield s


POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: "{app}"}}
spec:
  containers:
  - name: main
    image: busybox
    command: [sleep, "3600"]
"""


def test_apply_creates_then_updates(kubectl, tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(POD.format(name="ap1", app="one"))
    assert "pod/ap1 created" in kubectl("apply", "-f", str(f)).stdout
    f.write_text(POD.format(name="ap1", app="two"))
    assert "pod/ap1 configured" in kubectl("apply", "-f", str(f)).stdout
    got = json.loads(kubectl("get", "pod", "ap1", "-o", "json").stdout)
    assert got["metadata"]["labels"] == {"app": "two"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]


CSA_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{a: \"{a}\", b: \"{b}\"}}\n"


def test_server_side_apply_takes_over_from_client_side_apply(kubectl) -> None:
    """The documented upgrade path (trial-9 F-2): ``kubectl apply`` then ``kubectl apply
    --server-side`` goes through; the fields move to ``kubectl`` (Apply) and kubectl's
    last-applied annotation now records the server-side apply."""
    kubectl("apply", "-f", "-", stdin=CSA_CM.format(name="csa1", a="1", b="x"))
    out = kubectl("apply", "--server-side", "-f", "-", stdin=CSA_CM.format(name="csa1", a="2", b="x")).stdout
    assert "configmap/csa1 serverside-applied" in out
    got = json.loads(kubectl("get", "configmap", "csa1", "-o", "json", "--show-managed-fields").stdout)
    assert got["data"] == {"a": "2", "b": "x"}
    # once the apply went through, kubectl itself moves what kubectl-client-side-apply still
    # owned to kubectl and applies the annotation as kubectl-last-applied (client-go csaupgrade)
    entries = {e["manager"]: e for e in got["metadata"]["managedFields"]}
    assert set(entries) == {"kubectl", "kubectl-last-applied"}
    assert entries["kubectl"]["operation"] == "Apply"
    assert entries["kubectl"]["fieldsV1"] == {"f:data": {"f:a": {}, "f:b": {}}}
    assert entries["kubectl-last-applied"]["fieldsV1"] == {
        "f:metadata": {"f:annotations": {"f:kubectl.kubernetes.io/last-applied-configuration": {}}}}
    last = got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(last) == {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "2", "b": "x"},
                                "metadata": {"name": "csa1", "namespace": "default"}}
    # and client-side apply goes on from there: kubectl's three-way diff sees b as removed
    kubectl("apply", "-f", "-", stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: csa1}\ndata: {a: \"3\"}\n")
    assert json.loads(kubectl("get", "configmap", "csa1", "-o", "json").stdout)["data"] == {"a": "3"}


def test_server_side_apply_still_conflicts_on_a_field_changed_since_the_client_side_apply(kubectl) -> None:
    """As kube-apiserver: only fields whose live value is the last-applied one are forgiven; the
    others keep their conflict (here .data.a, changed by kubectl patch), and nothing is written."""
    kubectl("apply", "-f", "-", stdin=CSA_CM.format(name="csa2", a="1", b="x"))
    kubectl("patch", "configmap", "csa2", "--type", "merge", "-p", '{"data":{"a":"9"}}')
    p = kubectl("apply", "--server-side", "-f", "-", stdin=CSA_CM.format(name="csa2", a="2", b="y"), check=False)
    assert p.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: .data.a' in p.stderr
    assert json.loads(kubectl("get", "configmap", "csa2", "-o", "json").stdout)["data"] == {"a": "9", "b": "x"}


def test_get_prints_a_table(kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=POD.format(name="tp1", app="t"))
    out = kubectl("get", "pods").stdout
    header = out.splitlines()[0].split()
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert any(line.split()[:3] == ["tp1", "0/1", "Pending"] for line in out.splitlines())


def test_get_yaml_round_trips(kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=POD.format(name="yp1", app="y"))
    obj = yaml.safe_load(kubectl("get", "pod", "yp1", "-o", "yaml").stdout)
    assert obj["kind"] == "Pod" and obj["metadata"]["uid"] and obj["status"]["phase"] == "Pending"


def test_label_and_merge_patch(kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=POD.format(name="lp1", app="l"))
    assert "labeled" in kubectl("label", "pod", "lp1", "tier=web").stdout
    assert "patched" in kubectl("patch", "pod", "lp1", "--type", "merge", "-p",
                                '{"metadata":{"annotations":{"a":"b"}}}').stdout
    got = json.loads(kubectl("get", "pod", "lp1", "-o", "json").stdout)
    assert got["metadata"]["labels"]["tier"] == "web" and got["metadata"]["annotations"]["a"] == "b"


def test_strategic_patch_of_containers_by_name(kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=POD.format(name="sp1", app="s"))
    kubectl("patch", "pod", "sp1", "-p", '{"spec":{"containers":[{"name":"main","image":"busybox:1.36"}]}}')
    got = json.loads(kubectl("get", "pod", "sp1", "-o", "json").stdout)
    assert [c["image"] for c in got["spec"]["containers"]] == ["busybox:1.36"]
    assert got["spec"]["containers"][0]["command"] == ["sleep", "3600"]


def test_server_side_apply_creates_and_updates(kubectl) -> None:
    out = kubectl("apply", "--server-side", "-f", "-", stdin=POD.format(name="ssa1", app="a")).stdout
    assert "serverside-applied" in out
    kubectl("apply", "--server-side", "-f", "-", stdin=POD.format(name="ssa1", app="b"))
    got = json.loads(kubectl("get", "pod", "ssa1", "-o", "json", "--show-managed-fields").stdout)
    assert got["metadata"]["labels"] == {"app": "b"}
    assert any(m["manager"] == "kubectl" for m in got["metadata"]["managedFields"])


def test_get_watch_sees_an_update(kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=POD.format(name="wp1", app="w"))
    proc = subprocess.Popen([*kubectl.cmd, "get", "pods", "wp1", "-w", "-o", "name"], env=kubectl.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "pod/wp1"
        kubectl("label", "pod", "wp1", "seen=yes")
        assert proc.stdout.readline().strip() == "pod/wp1"
    finally:
        proc.kill()
        proc.wait()


def test_describe_shows_events(kubectl, srv: HttpServer) -> None:
    kubectl("apply", "-f", "-", stdin=POD.format(name="dp1", app="d"))
    pod = json.loads(kubectl("get", "pod", "dp1", "-o", "json").stdout)
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "dp1.1", "namespace": "default"},
             "involvedObject": {"kind": "Pod", "namespace": "default", "name": "dp1", "uid": pod["metadata"]["uid"],
                                "apiVersion": "v1"},
             "reason": "Scheduled", "message": "Successfully assigned default/dp1 to n1", "type": "Normal",
             "source": {"component": "default-scheduler"}, "count": 1,
             "firstTimestamp": pod["metadata"]["creationTimestamp"],
             "lastTimestamp": pod["metadata"]["creationTimestamp"]}
    kubectl("create", "-f", "-", stdin=json.dumps(event))
    out = kubectl("describe", "pod", "dp1").stdout
    assert "Scheduled" in out and "Successfully assigned default/dp1 to n1" in out


def test_delete_waits_for_finalizers(kubectl) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fin1", "finalizers": ["example.com/x"]}}
    kubectl("create", "-f", "-", stdin=json.dumps(cm))
    proc = subprocess.Popen([*kubectl.cmd, "delete", "configmap", "fin1", "--timeout=30s"], env=kubectl.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            got = json.loads(kubectl("get", "configmap", "fin1", "-o", "json").stdout)
            if got["metadata"].get("deletionTimestamp"):
                break
            time.sleep(0.1)
        assert proc.poll() is None  # still waiting for the finalizer
        kubectl("patch", "configmap", "fin1", "--type", "json", "-p",
                '[{"op":"remove","path":"/metadata/finalizers"}]')
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert 'configmap "fin1" deleted' in out
    finally:
        if proc.poll() is None:
            proc.kill()
    assert kubectl("get", "configmap", "fin1", check=False).returncode != 0


def test_delete_missing_is_not_found(kubectl) -> None:
    p = kubectl("delete", "pod", "nope", check=False)
    assert p.returncode != 0 and 'pods "nope" not found' in p.stderr


def test_invalid_name_is_rejected(kubectl) -> None:
    p = kubectl("apply", "-f", "-", stdin=POD.format(name="Bad_Name", app="x"), check=False)
    assert p.returncode != 0 and "is invalid" in p.stderr and "metadata.name" in p.stderr


def test_a_label_selector_set_missing_a_comma_is_refused_and_an_empty_set_is_not(kubectl) -> None:
    """trial-13 F-3: ``in (a b)`` listed both sets (so a ``kubectl delete -l`` typo deleted
    them); kube-apiserver answers 400 with apimachinery's parse error. ``in ()`` is {""}."""
    for value in ("1", "2"):
        kubectl("create", "configmap", f"setsel-{value}")
        kubectl("label", "configmap", f"setsel-{value}", f"setsel={value}")
    p = kubectl("get", "configmaps", "-l", "setsel in (1 2)", "-o", "name", check=False)
    assert p.returncode != 0 and p.stdout == ""
    assert "unable to parse requirement: found '2', expected: ',' or ')'" in p.stderr
    assert kubectl("get", "configmaps", "-l", "setsel in ()", "-o", "name").stdout == ""
    out = kubectl("get", "configmaps", "-l", "setsel,setsel notin (,)", "-o", "name").stdout.split()
    assert out == ["configmap/setsel-1", "configmap/setsel-2"]


# ---- CRDs and samples -----------------------------------------------------------------------


def test_kuberay_crds_apply_server_side(kubectl) -> None:
    for f in sorted((samples_dir() / "kuberay").glob("ray.io_*.yaml")):
        out = kubectl("apply", "--server-side", "--force-conflicts", "-f", str(f)).stdout
        assert "serverside-applied" in out
    names = kubectl("get", "crd", "-o", "name").stdout.split()
    assert {"customresourcedefinition.apiextensions.k8s.io/" + n for n in
            ("rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io")} <= set(names)


def test_kuberay_crds_client_side_apply_hits_the_annotation_limit_as_upstream(kubectl) -> None:
    # upstream kube-apiserver rejects these too (KubeRay's docs say to use --server-side or create)
    f = samples_dir() / "kuberay" / "ray.io_rayclusters.yaml"
    p = kubectl("apply", "-f", str(f), check=False)
    assert p.returncode != 0 and "metadata.annotations: Too long: may not be more than 262144 bytes" in p.stderr


def test_volcano_crds_apply(kubectl) -> None:
    for f in sorted((samples_dir() / "volcano" / "config" / "crd" / "volcano" / "bases").glob("*.yaml")):
        kubectl("apply", "-f", str(f))
    assert "queues.scheduling.volcano.sh" in kubectl("get", "crd").stdout


def _served(kubectl) -> set[tuple[str, str]]:
    out = kubectl("api-resources", "-o", "wide", "--no-headers").stdout
    served = set()
    for line in out.splitlines():
        cols = line.split()
        # NAME [SHORTNAMES] APIVERSION NAMESPACED KIND VERBS...
        for i, c in enumerate(cols):
            if c in ("true", "false"):
                served.add((cols[i - 1], cols[i + 1]))
                break
    return served


#: upstream samples a real 1.32 cluster with the same CRDs also refuses, and why
REFUSED_SAMPLES = {
    "ray-cluster.kai-scheduler.yaml": "uses kai-scheduler Queue kinds",
    "high-priority.yaml": "scheduling.k8s.io/v1beta1 was removed in 1.22",
    "normal-priority.yaml": "scheduling.k8s.io/v1beta1 was removed in 1.22",
    "elastic-job.yaml": "template.spec.priorityClass is not a Pod field (strict field validation)",
}


def _sample_files() -> list[Path]:
    files = sorted((samples_dir() / "kuberay").glob("ray-*.yaml"))
    files += sorted(p for p in (samples_dir() / "volcano" / "example").rglob("*.yaml"))
    return files


def test_sample_manifests_apply(kubectl) -> None:
    for f in sorted((samples_dir() / "kuberay").glob("ray.io_*.yaml")):
        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(f))
    served = _served(kubectl)
    good: list[str] = []
    for f in _sample_files():
        if f.name in REFUSED_SAMPLES:
            p = kubectl("apply", "-f", str(f), check=False)
            assert p.returncode != 0, f"{f.name} was expected to be refused: {REFUSED_SAMPLES[f.name]}"
            continue
        docs = [d for d in yaml.safe_load_all(f.read_text()) if isinstance(d, dict) and d.get("kind")]
        kinds = {(d["apiVersion"], d["kind"]) for d in docs}
        assert kinds <= served, f"{f}: kinds {kinds - served} not served"
        good.append(str(f))
    assert len(good) >= 30
    # one invocation per batch keeps the test fast; every file must go through
    for i in range(0, len(good), 12):
        args = [a for f in good[i:i + 12] for a in ("-f", f)]
        kubectl("apply", *args)


def test_elastic_job_sample_applies_without_strict_validation(kubectl) -> None:
    f = next(p for p in _sample_files() if p.name == "elastic-job.yaml")
    p = kubectl("apply", "-f", str(f), check=False)
    assert p.returncode != 0 and 'unknown field "spec.tasks[0].template.spec.priorityClass"' in p.stderr
    kubectl("apply", "--validate=false", "-f", str(f))


def test_get_custom_resources_uses_printer_columns(kubectl) -> None:
    kubectl("apply", "-f", str(samples_dir() / "kuberay" / "ray-cluster.sample.yaml"))
    header = kubectl("get", "rayclusters").stdout.splitlines()[0]
    assert header.split()[:2] == ["NAME", "DESIRED"]


def test_strategic_patch_on_custom_resource_is_415(kubectl) -> None:
    kubectl("apply", "-f", str(samples_dir() / "kuberay" / "ray-cluster.sample.yaml"))
    p = kubectl("patch", "raycluster", "raycluster-kuberay", "-p", '{"spec":{"suspend":true}}', check=False)
    assert p.returncode != 0 and "the body of the request was in an unknown format" in p.stderr


CM = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  labels: {{sortcase: "yes"}}
data:
  rank: "{rank}"
"""


def test_sort_by_a_field_outside_metadata_lists_every_object_in_order(kubectl) -> None:
    # --sort-by asks for includeObject=Object: the rows must carry whole objects, or kubectl
    # has nothing to sort on and prints "No resources found".
    for name, rank in (("sort-b", "2"), ("sort-c", "3"), ("sort-a", "1")):
        kubectl("apply", "-f", "-", stdin=CM.format(name=name, rank=rank))
    out = kubectl("get", "configmaps", "-l", "sortcase=yes", "--sort-by=.data.rank", "--no-headers").stdout
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert names == ["sort-a", "sort-b", "sort-c"]


def test_kubectl_raw_create_warns_about_a_duplicate_field_and_strict_refuses_it(kubectl, tmp_path: Path) -> None:
    f = tmp_path / "dup.json"
    f.write_text('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kdup1","name":"kdup2"}}')
    p = kubectl("create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", str(f))
    assert 'Warning: duplicate field "metadata.name"' in p.stderr and '"name":"kdup2"' in p.stdout
    p = kubectl("create", "--raw", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", "-f", str(f),
                check=False)
    assert p.returncode != 0 and 'strict decoding error: duplicate field "metadata.name"' in p.stderr


def test_kuberay_crd_cel_rules_hold_for_kubectl(kubectl) -> None:
    """The upstream RayJob CRD's x-kubernetes-validations: managedBy's allowed values and its
    immutability (a transition rule), deletionStrategy's exclusive forms."""
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(samples_dir() / "kuberay" / "ray.io_rayjobs.yaml"))
    docs = list(yaml.safe_load_all((samples_dir() / "kuberay" / "ray-job.sample.yaml").read_text()))
    job = next(d for d in docs if d and d.get("kind") == "RayJob")
    job["metadata"]["name"] = "rjmb"
    job["spec"]["managedBy"] = "evil.example/operator"
    p = kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job), check=False)
    assert p.returncode != 0
    assert ('spec.managedBy: Invalid value: "string": the managedBy field value must be either '
            "'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'") in p.stderr
    job["spec"]["managedBy"] = "ray.io/kuberay-operator"
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    p = kubectl("patch", "rayjob", "rjmb", "--type", "merge", "-p", '{"spec":{"managedBy":"kueue.x-k8s.io/multikueue"}}',
                check=False)
    assert p.returncode != 0 and "the managedBy field is immutable" in p.stderr
    kubectl("patch", "rayjob", "rjmb", "--type", "merge", "-p", '{"spec":{"entrypoint":"python -c pass"}}')
    p = kubectl("patch", "rayjob", "rjmb", "--type", "merge", "-p",
                '{"spec":{"deletionStrategy":{"onSuccess":{"policy":"DeleteCluster"},'
                '"deletionRules":[{"policy":"DeleteCluster","condition":{"jobStatus":"SUCCEEDED"}}]}}}', check=False)
    assert p.returncode != 0 and "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together" \
        in p.stderr
