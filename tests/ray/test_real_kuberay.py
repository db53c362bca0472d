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

from pumice.api import Obj
from pumice.testing.paths import shared_dir

KUBERAY_VERSION = "v1.5.0"


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

    def __init__(self, runtime: str, controllers: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pumice-kuberay-", dir="/var/tmp"))
        self.kubeconfig = self.dir / "data" / "kubeconfig"
        self.log = open(self.dir / "up.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pumice.cli.main", "up", "--data-dir", str(self.dir / "data"), "--port",
             str(_free_port()), "--runtime", runtime, "--controllers", controllers, "--batch-scheduler", "none",
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
def running(runtime: str, controllers: str, operator: Path | None) -> Iterator[Up]:
    up = Up(runtime, controllers)
    op = None
    try:
        if operator is not None:
            op_log = open(up.dir / "operator.log", "w")  # noqa: SIM115 - closed below
            op = subprocess.Popen([str(operator), "--kubeconfig", str(up.kubeconfig), "--enable-leader-election",
                                   "--leader-election-namespace", "default", "--metrics-addr", "127.0.0.1:0",
                                   "--health-probe-bind-address", "127.0.0.1:0"], stdout=op_log,
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
    """Pods and Services of the RayCluster, normalized: generated names, uids, timestamps,
    addresses, resourceVersions and server-side bookkeeping removed."""
    out: dict[str, list[Obj]] = {}
    for kind in ("pods", "services"):
        items = up.json("get", kind, "-l", "ray.io/cluster=raycluster-kuberay")["items"]
        out[kind] = sorted((_normalize(o) for o in items), key=lambda o: json.dumps(o, sort_keys=True))
    return out


_VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "name",
                  "generateName", "ownerReferences")


def _normalize(obj: Obj) -> Obj:
    obj = json.loads(json.dumps(obj))
    md = obj.get("metadata") or {}
    for k in _VOLATILE_META:
        md.pop(k, None)
    obj.pop("status", None)
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
_MASTER_ONLY_ENV = ("RAY_CLUSTER_NAMESPACE",)
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


@pytest.mark.kubectl
def test_real_operator_children_match_pumices_operator(operator_binary: Path) -> None:
    sample = shared_dir() / "samples" / "kuberay" / "ray-cluster.sample.yaml"
    results = []
    for controllers, operator in (("kube,volcano", operator_binary), ("kube,ray,volcano", None)):
        with running("simulated", controllers, operator) as up:
            up.kubectl("apply", "-f", str(sample))
            _wait(lambda up=up: up.kubectl("get", "raycluster", "raycluster-kuberay", "-o",
                                           "jsonpath={.status.state}", check=False).stdout == "ready",
                  120, "RayCluster ready")
            results.append(_children(up))
    real, ours = results
    assert [len(real["pods"]), len(real["services"])] == [2, 1]
    assert real["services"] == ours["services"]
    # Each listed difference is really there (pumice follows master), so the list stays current.
    head = next(p for p in ours["pods"] if p["metadata"]["labels"]["ray.io/node-type"] == "head")
    assert set(_MASTER_ONLY_ANNOTATIONS) <= set(head["metadata"]["annotations"])
    assert "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536};" in head["spec"]["containers"][0]["args"][0]
    assert "RAY_CLUSTER_NAMESPACE" in {e["name"] for e in head["spec"]["containers"][0]["env"]}
    worker = next(p for p in ours["pods"] if p["metadata"]["labels"]["ray.io/node-type"] == "worker")
    assert "ray.io/worker-group-replica-index" in worker["metadata"]["labels"]
    ours_as_v1_5_0 = sorted((_as_v1_5_0(p) for p in ours["pods"]), key=lambda o: json.dumps(o, sort_keys=True))
    assert real["pods"] == ours_as_v1_5_0


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
