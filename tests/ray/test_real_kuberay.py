"""The unmodified KubeRay operator (Go, built from the Go module proxy) against ``pumice up`` with
pumice's own ray controllers off and leader election on (issue 12 acceptance):

- on real Ray (process runtime), ``ray-job.sample.yaml`` reaches SUCCEEDED (marker ``ray``);
- on the simulated runtime, the children it makes for ``ray-cluster.sample.yaml`` (Pods, Services)
  are compared with those pumice's own operator makes for the same input: they differ only in
  names, uids, timestamps and addresses, once the listed changes KubeRay master made since the
  release are undone on pumice's side (pumice follows master; the proxy serves no master build).

The operator binary is cached outside the repository (``~/.cache/pumice/kuberay-<version>``); the
tests skip with one line where Go is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pumice.api import Obj
from pumice.controllers.ray.batchscheduler.volcano import rayjob_pod_group_params
from pumice.controllers.ray.common.resources import format_resource_list
from pumice.testing.paths import shared_dir

KUBERAY_VERSION = "v1.5.0"

# A cold Go cache pays ~4.5 min for the go install (measured 274 s on this 2-core machine under
# load): more than the default suite may add, so these run with -m kuberay_operator (make test-kuberay).
pytestmark = pytest.mark.kuberay_operator


@pytest.fixture(scope="module")
def operator_binary() -> Path:
    cache = Path.home() / ".cache" / "pumice" / f"kuberay-{KUBERAY_VERSION}" / "bin"
    binary = cache / "ray-operator"
    if binary.exists():
        return binary
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        pytest.skip("Go is not installed: cannot build the KubeRay operator")
    cache.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([go, "install", f"github.com/ray-project/kuberay/ray-operator@{KUBERAY_VERSION}"],
                       env={**os.environ, "GOBIN": str(cache), "GOFLAGS": "-mod=mod"}, capture_output=True, text=True,
                       timeout=1800)
    assert p.returncode == 0, f"go install failed: {p.stderr[-2000:]}"
    return binary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Up:
    """``pumice up`` in a child process, and kubectl against it."""

    def __init__(self, runtime: str, controllers: str, batch_scheduler: str = "none") -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pumice-kuberay-", dir="/var/tmp"))
        self.kubeconfig = self.dir / "data" / "kubeconfig"
        self.log = open(self.dir / "up.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pumice.cli.main", "up", "--data-dir", str(self.dir / "data"), "--port",
             str(_free_port()), "--runtime", runtime, "--controllers", controllers, "--batch-scheduler", batch_scheduler,
             *(["--node-cpu", "16", "--node-memory", "64Gi"] if runtime == "simulated" else []),
             "--no-dashboard"], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not self.kubeconfig.exists() or self.kubectl("get", "ns", check=False).returncode != 0:
            assert self.proc.poll() is None, (self.dir / "up.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "pumice up did not start"
            time.sleep(0.5)

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run(["kubectl", "--kubeconfig", str(self.kubeconfig), *args], capture_output=True, text=True,
                           timeout=120)
        if check:
            assert p.returncode == 0, f"kubectl {' '.join(args)}: {p.stderr}"
        return p

    def json(self, *args: str) -> Obj:
        out: Obj = json.loads(self.kubectl(*args, "-o", "json").stdout)
        return out

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def running(runtime: str, controllers: str, operator: Path | None, batch_scheduler: str = "none") -> Iterator[Up]:
    up = Up(runtime, controllers, batch_scheduler)
    op = None
    try:
        if operator is not None:
            op_log = open(up.dir / "operator.log", "w")  # noqa: SIM115 - closed below
            op = subprocess.Popen([str(operator), "--kubeconfig", str(up.kubeconfig), "--enable-leader-election",
                                   "--leader-election-namespace", "default", "--metrics-addr", "127.0.0.1:0",
                                   "--health-probe-bind-address", "127.0.0.1:0",
                                   *(["--batch-scheduler", batch_scheduler] if batch_scheduler != "none" else [])],
                                  stdout=op_log,
                                  stderr=subprocess.STDOUT)
        yield up
    finally:
        if op is not None:
            op.terminate()
            op.wait(30)
        up.stop()


def _wait(cond: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(2)


def _children(up: Up) -> dict[str, list[Obj]]:
    """Pods and Services of the RayClusters, the RayJob's submitter Jobs and the PodGroups,
    normalized: generated names, uids, timestamps, addresses, resourceVersions and server-side
    bookkeeping removed."""
    out: dict[str, list[Obj]] = {}
    # The RayJob's RayCluster has a generated suffix; it appears in labels, selectors and env.
    clusters = up.json("get", "rayclusters")["items"]
    generated = {c["metadata"]["name"]: "rayjob-sample-<generated>" for c in clusters
                 if c["metadata"]["name"].startswith("rayjob-sample-")}
    for kind, selector in (("pods", "ray.io/cluster"), ("services", "ray.io/cluster"), ("jobs", ""),
                           ("podgroups.scheduling.volcano.sh", "")):
        items = up.json("get", kind, *(["-l", selector] if selector else []))["items"]
        text = json.dumps([_normalize(o, kind) for o in items])
        for name, placeholder in generated.items():
            text = text.replace(name, placeholder)
        # The submission id (RAY_JOB_SUBMISSION_ID) is the RayJob's name plus a random suffix.
        text = re.sub(r"rayjob-sample-[a-z0-9]{5}\b", "rayjob-sample-<submission-id>", text)
        out[kind] = sorted(json.loads(text), key=lambda o: json.dumps(o, sort_keys=True))
    out["rayjob"] = [up.json("get", "rayjob", "rayjob-sample")]
    return out


_VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "name",
                  "generateName", "ownerReferences")


def _normalize(obj: Obj, kind: str = "") -> Obj:
    obj = json.loads(json.dumps(obj))
    md = obj.get("metadata") or {}
    for k in _VOLATILE_META:
        if k != "name" or kind not in ("jobs", "podgroups.scheduling.volcano.sh"):  # those names are chosen
            md.pop(k, None)
    obj.pop("status", None)
    for labels in (md.get("labels") or {}, ((obj.get("spec") or {}).get("template") or {}).get("metadata", {})
                   .get("labels") or {}):
        for k in ("controller-uid", "batch.kubernetes.io/controller-uid"):
            if k in labels:
                labels[k] = "<uid>"
    if kind == "jobs":
        obj["spec"].pop("selector", None)  # matches the Job's own uid
    spec = obj.get("spec") or {}
    for k in ("nodeName", "clusterIP", "clusterIPs", "hostname"):
        spec.pop(k, None)
    for v in spec.get("volumes") or []:
        if str(v.get("name", "")).startswith("kube-api-access-"):
            v["name"] = "kube-api-access"
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        for m in c.get("volumeMounts") or []:
            if str(m.get("name", "")).startswith("kube-api-access-"):
                m["name"] = "kube-api-access"
    return obj


# What KubeRay master (which pumice's ray controllers follow) changed in the Pods since v1.5.0, the
# newest release the Go module proxy serves as a module with its sources for ``go install`` at
# this writing (master itself is not on the proxy: ``@master`` and pseudo-versions answer 403).
# ``_as_v1_5_0`` undoes exactly these on pumice's Pods; anything else must be equal.
#   1. #4467 (72f04d2b6, "always set RAY_CLUSTER_NAMESPACE using downward API"): every Ray
#      container gets RAY_CLUSTER_NAMESPACE from metadata.namespace; v1.5.0 sets it only in the
#      autoscaler sidecar.
#   2. #4860 (798089ce5, "support override ray start ulimit with env var"): the generated command
#      starts ``ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}``; v1.5.0 ``ulimit -n 65536``.
#   3. KUBERAY_VERSION is "nightly" on master and the release number on release branches (#4177,
#      21cf8ccdc, "update version to v1.5.0"): RAY_USAGE_STATS_EXTRA_TAGS says kuberay_version=.
#   4. #4185 (1411cdaf1, "Support recreate pods for RayCluster using RayClusterSpec.upgradeStrategy"):
#      the head Pod is annotated ray.io/upgrade-strategy-recreate-hash and ray.io/kuberay-version.
#   5. #4572 (6652c3660, "Promote RayMultiHostIndexing feature to Beta"): the gate is on by default,
#      so worker Pods carry ray.io/worker-group-replica-index (and, for multi-host groups,
#      ray.io/worker-group-replica-name and ray.io/replica-host-index); off by default in v1.5.0.
#   6. #4340 (b27282b0a, "Sync RayJob or RayCluster annotations to Volcano PodGroup"): the PodGroup
#      carries its RayCluster's/RayJob's annotations; v1.5.0's has none.
#   7. #4638 (1df0651f9, "Add NetworkIsolation support to RayClusters"): the submitter Job's Pod
#      template is labelled app.kubernetes.io/created-by, ray.io/originated-from-cr-name and
#      ray.io/originated-from-crd.
#   8. #4798 (e3790d555, "Add GCS health wait to K8sJobMode submitter"): the submitter's command
#      first waits for the dashboard's GCS health endpoint through the head Service; v1.5.0 waits
#      only in SidecarMode.
#   9. #4476 (18927477e, "Fix volcano podgroup stuck in inqueue state after rayjob completes"): once
#      the RayJob has finished, its PodGroup's minResources shrink to the cluster's (the submitter's
#      share goes). pumice's RayJob finishes on the simulated runtime; the real operator's stays
#      Running there (it cannot reach the dashboard from the host), so a finished RayJob's PodGroup
#      is compared with what pumice's builder gives at submission.
# Not visible against v1.5.0, found by building master from its source by hand (see
# /work/notes/issue-12-diff.md): the recreate-hash value (4.) differs, because pumice hashes its own
# sorted-key JSON and Go hashes json.Marshal of the typed spec (documented deviation in
# pumice/controllers/ray/common/hashing.py).
_MASTER_ONLY_ENV = ("RAY_CLUSTER_NAMESPACE",)
_MASTER_ONLY_TEMPLATE_LABELS = ("app.kubernetes.io/created-by", "ray.io/originated-from-cr-name",
                                "ray.io/originated-from-crd")
_K8S_JOB_MODE_WAIT = re.compile(r"^until python -c .*? ; done ; ")
_MASTER_ONLY_ANNOTATIONS = ("ray.io/upgrade-strategy-recreate-hash", "ray.io/kuberay-version")
_MASTER_ONLY_LABELS = ("ray.io/worker-group-replica-index", "ray.io/worker-group-replica-name",
                       "ray.io/replica-host-index")


def _as_v1_5_0(pod: Obj) -> Obj:
    """Undo on one normalized Pod of pumice's operator the master-only changes listed above."""
    pod = json.loads(json.dumps(pod))
    md = pod["metadata"]
    for k in _MASTER_ONLY_ANNOTATIONS:
        (md.get("annotations") or {}).pop(k, None)
    for k in _MASTER_ONLY_LABELS:
        (md.get("labels") or {}).pop(k, None)
    for c in pod["spec"]["containers"]:
        if c["name"] != "autoscaler":
            c["env"] = [e for e in c.get("env") or [] if e["name"] not in _MASTER_ONLY_ENV]
        for e in c.get("env") or []:
            if e["name"] == "RAY_USAGE_STATS_EXTRA_TAGS":
                e["value"] = e["value"].replace("kuberay_version=nightly", f"kuberay_version={KUBERAY_VERSION}")
        c["args"] = [a.replace("ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536};", "ulimit -n 65536;")
                     for a in c.get("args") or []]
    return pod


def _job_as_v1_5_0(job: Obj) -> Obj:
    """Undo on pumice's submitter Job the master-only changes 7 and 8."""
    job = json.loads(json.dumps(job))
    template = job["spec"]["template"]
    for k in _MASTER_ONLY_TEMPLATE_LABELS:
        template["metadata"]["labels"].pop(k, None)
    for c in template["spec"]["containers"]:
        c["args"] = [_K8S_JOB_MODE_WAIT.sub("", a) for a in c.get("args") or []]
    return job


def _podgroup_as_v1_5_0(pg: Obj, rayjob: Obj) -> Obj:
    """Undo on pumice's PodGroup the master-only changes 6 and 9."""
    pg = json.loads(json.dumps(pg))
    pg["metadata"].pop("annotations", None)
    finished = (rayjob.get("status") or {}).get("jobDeploymentStatus") in ("Complete", "Failed")
    if pg["metadata"]["name"] == "ray-rayjob-sample-pg" and finished:
        members, total, formats = rayjob_pod_group_params(rayjob)
        pg["spec"].update(minMember=members, minResources=format_resource_list(total, formats))
    return pg


def _sorted(objs: Any) -> list[Obj]:
    return sorted(objs, key=lambda o: json.dumps(o, sort_keys=True))


@pytest.mark.kubectl
def test_real_operator_children_match_pumices_operator(operator_binary: Path, tmp_path: Path) -> None:
    """ray-cluster.sample.yaml and ray-job.sample.yaml, both for Volcano (label
    ``ray.io/scheduler-name: volcano``, operators run with the volcano batch scheduler)."""
    docs = []
    for name in ("ray-cluster.sample.yaml", "ray-job.sample.yaml"):
        for doc in yaml.safe_load_all((shared_dir() / "samples" / "kuberay" / name).read_text()):
            if doc and doc.get("kind") in ("RayCluster", "RayJob"):
                doc["metadata"].setdefault("labels", {})["ray.io/scheduler-name"] = "volcano"
            if doc:
                docs.append(doc)
    manifest = tmp_path / "samples.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    results = []
    for controllers, operator in (("kube,volcano", operator_binary), ("kube,ray,volcano", None)):
        with running("simulated", controllers, operator, batch_scheduler="volcano") as up:
            up.kubectl("apply", "-f", str(manifest))

            def ready(up: Up = up) -> bool:
                states = up.kubectl("get", "rayclusters", "-o", "jsonpath={.items[*].status.state}",
                                    check=False).stdout.split()
                return states == ["ready", "ready"] and up.kubectl("get", "job", "rayjob-sample",
                                                                   check=False).returncode == 0

            _wait(ready, 180, "both RayClusters ready and the submitter Job")
            results.append(_children(up))
    real, ours = results
    assert [len(real[k]) for k in ("pods", "services", "jobs", "podgroups.scheduling.volcano.sh")] == [4, 2, 1, 2]
    assert real["services"] == ours["services"]
    # Each listed difference is really there (pumice follows master), so the list stays current.
    head = next(p for p in ours["pods"] if p["metadata"]["labels"]["ray.io/node-type"] == "head")
    assert set(_MASTER_ONLY_ANNOTATIONS) <= set(head["metadata"]["annotations"])
    assert "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536};" in head["spec"]["containers"][0]["args"][0]
    assert "RAY_CLUSTER_NAMESPACE" in {e["name"] for e in head["spec"]["containers"][0]["env"]}
    worker = next(p for p in ours["pods"] if p["metadata"]["labels"]["ray.io/node-type"] == "worker")
    assert "ray.io/worker-group-replica-index" in worker["metadata"]["labels"]
    job = ours["jobs"][0]
    assert set(_MASTER_ONLY_TEMPLATE_LABELS) <= set(job["spec"]["template"]["metadata"]["labels"])
    assert _K8S_JOB_MODE_WAIT.match(job["spec"]["template"]["spec"]["containers"][0]["args"][0])
    assert all("kubectl.kubernetes.io/last-applied-configuration" in pg["metadata"]["annotations"]
               for pg in ours["podgroups.scheduling.volcano.sh"])
    assert real["pods"] == _sorted(_as_v1_5_0(p) for p in ours["pods"])
    assert real["jobs"] == _sorted(_job_as_v1_5_0(j) for j in ours["jobs"])
    assert real["rayjob"][0]["status"]["jobDeploymentStatus"] not in ("Complete", "Failed")
    assert real["podgroups.scheduling.volcano.sh"] == _sorted(
        _podgroup_as_v1_5_0(pg, ours["rayjob"][0]) for pg in ours["podgroups.scheduling.volcano.sh"])


OPERATOR_IN_A_POD = """
apiVersion: v1
kind: ServiceAccount
metadata: {{name: kuberay-operator, namespace: default}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: kuberay-operator}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
subjects: [{{kind: ServiceAccount, name: kuberay-operator, namespace: default}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: kuberay-operator, namespace: default, labels: {{app.kubernetes.io/name: kuberay-operator}}}}
spec:
  serviceAccountName: kuberay-operator
  containers:
  - name: kuberay-operator
    image: quay.io/kuberay/operator:{version}
    command: ["{binary}", "--enable-leader-election", "--leader-election-namespace", "default",
              "--metrics-addr", ":8080", "--health-probe-bind-address", ":8082"]
"""


@pytest.mark.ray
@pytest.mark.netns
@pytest.mark.timeout(1800)
def test_real_operator_runs_the_ray_job_sample_on_real_ray(operator_binary: Path) -> None:
    """The operator runs in a Pod, as it is deployed: in-cluster config from its ServiceAccount
    token and ``kube-root-ca.crt``, and the head Service's cluster DNS name for the Ray dashboard
    (which the host cannot resolve)."""
    if not (Path(sys.executable).parent / "ray").exists():
        pytest.skip("ray is not installed")
    if os.geteuid() != 0:
        pytest.skip("the operator Pod reaches the Ray head by Service name: needs network namespaces (root)")
    sample = shared_dir() / "samples" / "kuberay" / "ray-job.sample.yaml"
    with running("process", "kube,volcano", None) as up:
        _wait(lambda: up.kubectl("get", "configmap", "kube-root-ca.crt", check=False).returncode == 0 and
              up.kubectl("get", "serviceaccount", "default", check=False).returncode == 0, 60, "ServiceAccounts")
        manifest = up.dir / "operator.yaml"
        manifest.write_text(OPERATOR_IN_A_POD.format(version=KUBERAY_VERSION, binary=operator_binary))
        up.kubectl("apply", "-f", str(manifest))
        up.kubectl("wait", "--for=condition=Ready", "pod/kuberay-operator", "--timeout=120s")
        up.kubectl("apply", "-f", str(sample))

        def status() -> tuple[str, str]:
            p = up.kubectl("get", "rayjob", "rayjob-sample", "-o",
                           "jsonpath={.status.jobDeploymentStatus}/{.status.jobStatus}", check=False)
            a, _, b = p.stdout.partition("/")
            return a, b

        _wait(lambda: status()[0] in ("Complete", "Failed"), 900, "the RayJob to finish")
        logs = up.kubectl("logs", "kuberay-operator", "--tail=40", check=False).stdout
        assert status() == ("Complete", "SUCCEEDED"), logs[-3000:]
