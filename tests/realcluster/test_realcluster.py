"""pumice on a real Kubernetes control plane (issue 13; ``make realcluster``, not part of ``make
test``: the first build of kube-apiserver takes 10-30 minutes).

etcd, kube-apiserver, kube-controller-manager and kube-scheduler are built from the Go module proxy
(tools/build_kube.py) and run on loopback; pumice's simulated node agent plays the kubelets. The
README's real-cluster steps are followed: ``pumice install --print`` applied with the real
kubectl, then the controller manager, the Volcano scheduler and the webhook run as processes, each
with a token of its own ServiceAccount, so that every request they make is checked against the
RBAC the install grants. Then: an invalid vcjob refused by the webhook with upstream's message,
the seeds' two gangs on room for four, a Queue capability holding a job back, the RayCluster sample
with a Volcano queue becoming ready, and the scheduler and controller manager restarted mid-work
with nothing lost.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pumice._util.tls import self_signed
from pumice.controllers.webhook import default_webhooks, webhook_configurations
from pumice.testing.kube_control_plane import KubeControlPlane, free_port
from pumice.testing.paths import shared_dir

if not os.environ.get("PUMICE_REALCLUSTER"):
    pytest.skip("real-cluster tests run with `make realcluster` (they build kube-apiserver)", allow_module_level=True)

pytestmark = pytest.mark.timeout(3600)

NS = "pumice-system"


def wait_for(what: str, cond: Callable[[], Any], timeout: float = 120.0, interval: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = cond()
        except (subprocess.CalledProcessError, KeyError, ValueError, json.JSONDecodeError) as e:
            last = e
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"not within {timeout:g} s: {what} (last: {last!r})")


class Pumice:
    """The pumice components run as processes against the real control plane."""

    def __init__(self, cp: KubeControlPlane, workdir: Path) -> None:
        self.cp = cp
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.kubeconfigs: dict[str, Path] = {}

    def sa_kubeconfig(self, component: str) -> Path:
        token = self.cp.kubectl("-n", NS, "create", "token", f"pumice-{component}", "--duration", "2h").stdout.strip()
        path = self.cp.kubeconfig(token, self.workdir / f"{component}.kubeconfig", namespace=NS)
        self.kubeconfigs[component] = path
        return path

    def start(self, component: str, *args: str, kubeconfig: Path | None = None) -> None:
        kc = kubeconfig or self.kubeconfigs.get(component) or self.sa_kubeconfig(component)
        log = open(self.workdir / f"pumice-{component}.log", "ab")  # noqa: SIM115 - closed with the process
        self.procs[component] = subprocess.Popen(
            [sys.executable, "-m", "pumice.cli.main", *args[:1], "--kubeconfig", str(kc), *args[1:]],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()

    def stop(self, component: str, sig: str = "term") -> None:
        p = self.procs.pop(component)
        if sig == "kill":
            p.kill()
        else:
            p.terminate()
        p.wait(30)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)

    def log(self, component: str) -> str:
        return (self.workdir / f"pumice-{component}.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KubeControlPlane, Pumice]]:
    work = tmp_path_factory.mktemp("realcluster")
    with KubeControlPlane(work / "kube") as cp:
        pm = Pumice(cp, work)
        install = subprocess.run([sys.executable, "-m", "pumice.cli.main", "install", "--print", "--namespace", NS],
                                 capture_output=True, text=True, check=True).stdout
        objs = list(yaml.load_all(install, Loader=yaml.CSafeLoader))
        # the objects a cluster without container runtime can use: the in-cluster Deployments and the
        # Service-based webhook configuration are replaced by processes on this machine
        keep = [o for o in objs if o["kind"] not in ("Deployment", "Service", "Secret", "MutatingWebhookConfiguration",
                                                     "ValidatingWebhookConfiguration")]
        applied = cp.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(keep))
        assert "customresourcedefinition.apiextensions.k8s.io/queues.scheduling.volcano.sh" in applied.stdout
        wait_for("the Volcano and ray.io CRDs established", lambda: cp.kubectl(
            "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s").returncode == 0)
        wait_for("the ServiceAccount controller", lambda: cp.kubectl("-n", NS, "get", "sa", "pumice-scheduler"))

        cert, key = self_signed("pumice-webhook", ["127.0.0.1", "localhost"], now=dt.datetime.now(dt.UTC))
        (work / "webhook.crt").write_bytes(cert)
        (work / "webhook.key").write_bytes(key)
        port = free_port()
        pm.start("webhook", "webhook", "--host", "127.0.0.1", "--port", str(port), "--tls-cert-file",
                 str(work / "webhook.crt"), "--tls-private-key-file", str(work / "webhook.key"))
        pm.start("controller-manager", "controller-manager", "--controllers", "ray,volcano",
                 "--batch-scheduler", "volcano", "--leader-elect", "--lease-duration", "6", "--renew-deadline", "4",
                 "--retry-period", "1")
        pm.start("scheduler", "scheduler", "--name", "volcano")
        pm.start("node-agent", "node-agent", "--runtime", "simulated", "--nodes", "2", "--node-cpu", "2",
                 "--node-memory", "8Gi", "--data-dir", str(work / "node"), kubeconfig=work / "kube" / "admin.kubeconfig")
        configs = webhook_configurations(default_webhooks(), namespace=NS, service="pumice-webhook", ca_bundle=cert,
                                         url=f"https://127.0.0.1:{port}")
        cp.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(configs))
        wait_for("two Ready Nodes", lambda: _ready_nodes(cp) == 2)
        wait_for("the default Queue Open", lambda: _get(cp, "queue", "default", ns=None)["status"]["state"] == "Open")
        try:
            yield cp, pm
        finally:
            logs = {name: pm.log(name)[-3000:] for name in ("controller-manager", "scheduler", "webhook")
                    if (work / f"pumice-{name}.log").exists()}
            pm.stop_all()
            for name, text in logs.items():
                print(f"---- pumice {name} (last lines)\n{text}")


def _get(cp: KubeControlPlane, kind: str, name: str, ns: str | None = "default") -> dict[str, Any]:
    args = ["get", kind, name, "-o", "json"] + (["-n", ns] if ns else [])
    out: dict[str, Any] = json.loads(cp.kubectl(*args).stdout)
    return out


def _items(cp: KubeControlPlane, kind: str, *selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(cp.kubectl("get", kind, "-n", "default", "-o", "json",
                                                        *selector).stdout)["items"]
    return items


def _ready_nodes(cp: KubeControlPlane) -> int:
    nodes = json.loads(cp.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    return sum(1 for n in nodes for c in n["status"].get("conditions", []) if c["type"] == "Ready"
               and c["status"] == "True")


def vcjob(name: str, *, replicas: int = 3, min_available: int = 3, cpu: str = "1", queue: str = "default",
          **task: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": min_available, "schedulerName": "volcano", "queue": queue, "tasks": [
                {"name": "worker", "replicas": replicas, **task, "template": {"spec": {
                    "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox",
                                                                  "command": ["sleep", "3600"],
                                                                  "resources": {"requests": {"cpu": cpu}}}]}}}]}}


def bound(cp: KubeControlPlane, job: str) -> int:
    return sum(1 for p in _items(cp, "pods", "-l", f"volcano.sh/job-name={job}") if p["spec"].get("nodeName"))


def test_the_real_control_plane_reports_its_version_to_kubectl(cluster: tuple[KubeControlPlane, Pumice]) -> None:
    cp, _ = cluster
    version = json.loads(cp.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"].startswith("v1.34.")


def test_an_invalid_vcjob_is_refused_by_the_webhook_with_upstreams_message(
        cluster: tuple[KubeControlPlane, Pumice]) -> None:
    cp, _ = cluster
    bad = vcjob("toomany", replicas=2, min_available=2, minAvailable=3)
    out = cp.kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
    assert out.returncode != 0
    assert 'admission webhook "validatejob.volcano.sh" denied the request' in out.stderr
    assert "'minAvailable' is greater than 'replicas' in task: worker, job: toomany" in out.stderr


def test_two_gangs_of_three_on_room_for_four_never_hold_a_partial_gang(
        cluster: tuple[KubeControlPlane, Pumice]) -> None:
    cp, _ = cluster
    cp.kubectl("create", "-f", "-", input=json.dumps(vcjob("j1")))
    cp.kubectl("create", "-f", "-", input=json.dumps(vcjob("j2")))
    wait_for("one gang of three bound", lambda: {bound(cp, "j1"), bound(cp, "j2")} == {0, 3})
    time.sleep(3)  # the scheduler runs more sessions: still no partial gang
    assert {bound(cp, "j1"), bound(cp, "j2")} == {0, 3}
    running = "j1" if bound(cp, "j1") == 3 else "j2"
    cp.kubectl("delete", "vcjob", running, "-n", "default", "--wait=false")
    other = "j2" if running == "j1" else "j1"
    wait_for(f"{other} bound once {running} is gone", lambda: bound(cp, other) == 3, timeout=180)
    cp.kubectl("delete", "vcjob", other, "-n", "default", "--wait=false")


def test_a_queue_capability_holds_a_job_back(cluster: tuple[KubeControlPlane, Pumice]) -> None:
    cp, _ = cluster
    cp.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "small"},
        "spec": {"weight": 1, "capability": {"cpu": "1"}}}))
    wait_for("queue small Open", lambda: _get(cp, "queue", "small", ns=None).get("status", {}).get("state") == "Open")
    cp.kubectl("create", "-f", "-", input=json.dumps(vcjob("big", replicas=2, min_available=2, queue="small")))
    wait_for("the PodGroup of big", lambda: _items(cp, "podgroups", "-l", "volcano.sh/job-name=big")
             or _items(cp, "podgroups"))
    time.sleep(5)
    assert bound(cp, "big") == 0
    pgs = [pg for pg in _items(cp, "podgroups") if pg["metadata"]["name"].startswith("big-")]
    assert pgs and pgs[0].get("status", {}).get("phase", "Pending") == "Pending"
    cp.kubectl("patch", "queue", "small", "--type", "merge", "-p", '{"spec":{"capability":{"cpu":"4"}}}')
    wait_for("big runs once the capability allows it", lambda: bound(cp, "big") == 2, timeout=180)
    cp.kubectl("delete", "vcjob", "big", "-n", "default", "--wait=false")


def test_the_raycluster_sample_with_a_volcano_queue_becomes_ready(cluster: tuple[KubeControlPlane, Pumice]) -> None:
    cp, _ = cluster
    sample = yaml.safe_load((shared_dir() / "samples" / "kuberay" / "ray-cluster.sample.yaml").read_text())
    sample["metadata"].setdefault("labels", {})["volcano.sh/queue-name"] = "default"
    name = sample["metadata"]["name"]
    cp.kubectl("apply", "-f", "-", input=json.dumps(sample))
    wait_for("the RayCluster's PodGroup", lambda: _get(cp, "podgroup", f"ray-{name}-pg"), timeout=120)
    wait_for("RayCluster ready", lambda: _get(cp, "raycluster", name).get("status", {}).get("state") == "ready",
             timeout=300)
    pods = _items(cp, "pods", "-l", f"ray.io/cluster={name}")
    assert pods and all(p["spec"]["schedulerName"] == "volcano" and p["spec"].get("nodeName") for p in pods)
    cp.kubectl("delete", "raycluster", name, "-n", "default", "--wait=false")


def test_scheduler_and_controller_manager_restarted_mid_work_lose_nothing(
        cluster: tuple[KubeControlPlane, Pumice]) -> None:
    cp, pm = cluster
    wait_for("room again", lambda: sum(bound(cp, j) for j in ("j1", "j2", "big")) == 0, timeout=180)
    pm.stop("scheduler", "kill")
    pm.stop("controller-manager", "kill")
    cp.kubectl("create", "-f", "-", input=json.dumps(vcjob("during", replicas=2, min_available=2)))
    pm.start("controller-manager", "controller-manager", "--controllers", "ray,volcano", "--batch-scheduler",
             "volcano", "--leader-elect", "--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1")
    pm.start("scheduler", "scheduler", "--name", "volcano")
    wait_for("the job made during the outage runs", lambda: bound(cp, "during") == 2, timeout=240)
    pods = _items(cp, "pods", "-l", "volcano.sh/job-name=during")
    assert len([p for p in pods if not p["metadata"].get("deletionTimestamp")]) == 2
    assert "Forbidden" not in pm.log("scheduler") and "Forbidden" not in pm.log("controller-manager"), \
        "a component was refused by RBAC"
