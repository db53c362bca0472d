"""``pumice up --runtime simulated``: a RayJob applied with kubectl reaches SUCCEEDED, and upstream's
RayService sample reaches Ready, through the simulated Ray dashboard (the KubeRay controllers are
the real ones); a StatefulSet's claims are provisioned and bound."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path

import pytest

from pumice.cli.up import UpOptions, run_up
from pumice.testing.kube_control_plane import free_port
from pumice.testing.paths import shared_dir
from pumice.testing.up import InProcessUp, simulated_rayjob

RAYJOB = simulated_rayjob("sim-job", duration_seconds=3, workers=1, shutdown_after_finishes=True)


@pytest.mark.kubectl
@pytest.mark.timeout(300)
async def test_a_rayjob_applied_with_kubectl_reaches_succeeded(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    opts = UpOptions(data_dir=tmp_path / "data", port=free_port(), runtime="simulated", nodes=2, node_cpu="4",
                     node_memory="8Gi", network="host", pod_egress="none")
    up = await InProcessUp.start(partial(run_up, opts))
    try:
        kubeconfig = up.kubeconfig
        manifest = tmp_path / "rayjob.yaml"
        manifest.write_text(RAYJOB)

        def kc(*args: str) -> str:
            return subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), *args], check=True,
                                  capture_output=True, text=True, timeout=60).stdout

        # trial 7 F-2: the same RayJob in SidecarMode (head only: 2 Nodes of 4 cpu hold both); its
        # head Pod's ray-job-submitter container must exit with the Ray job, as on real Ray, or the
        # RayJob stays Running until the 300-s transition grace period
        sidecar = tmp_path / "sidecar.yaml"
        sidecar.write_text(simulated_rayjob("sim-sidecar", duration_seconds=3, shutdown_after_finishes=True,
                                            submission_mode="SidecarMode"))
        await asyncio.to_thread(kc, "apply", "-f", str(manifest))
        await asyncio.to_thread(kc, "apply", "-f", str(sidecar))

        async def finished(name: str) -> dict:
            status: dict = {}
            for _ in range(240):
                status = json.loads(await asyncio.to_thread(kc, "get", "rayjob", name, "-o", "json")).get("status", {})
                if status.get("jobDeploymentStatus") in ("Complete", "Failed"):
                    break
                await asyncio.sleep(0.5)
            return status

        status = await finished("sim-job")
        assert status.get("jobStatus") == "SUCCEEDED", status
        assert status.get("jobDeploymentStatus") == "Complete", status
        side = await finished("sim-sidecar")
        assert (side.get("jobStatus"), side.get("jobDeploymentStatus"), side.get("reason", "")) == (
            "SUCCEEDED", "Complete", ""), side
        # trial 3 finding 10: the Ray job starts once submitted (the submitter Job exists only after
        # the cluster is ready) and lasts its sim-duration-seconds
        from pumice._util.clock import parse_rfc3339

        submitter = json.loads(await asyncio.to_thread(kc, "get", "job", "sim-job", "-o", "json"))
        info = status["rayJobInfo"]
        start, end = parse_rfc3339(info["startTime"]), parse_rfc3339(info["endTime"])
        assert start >= parse_rfc3339(submitter["metadata"]["creationTimestamp"]), (info, submitter["metadata"])
        assert end - start == 3, info
    finally:
        await up.stop()


@contextlib.asynccontextmanager
async def _up_with_kubectl(tmp_path: Path) -> AsyncIterator[Callable[..., str]]:
    """``pumice up --runtime simulated`` (2 Nodes of 4 cpu) and a kubectl bound to it."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    opts = UpOptions(data_dir=tmp_path / "data", port=free_port(), runtime="simulated", nodes=2, node_cpu="4",
                     node_memory="8Gi", network="host", pod_egress="none")
    up = await InProcessUp.start(partial(run_up, opts))
    try:
        kubeconfig = up.kubeconfig

        def kc(*args: str) -> str:
            return subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), *args], check=True,
                                  capture_output=True, text=True, timeout=60).stdout

        yield kc
    finally:
        await up.stop()


@pytest.mark.kubectl
@pytest.mark.timeout(300)
async def test_the_upstream_rayservice_sample_applied_with_kubectl_becomes_ready(tmp_path: Path) -> None:
    sample = shared_dir() / "samples/kuberay/ray-service.sample.yaml"
    async with _up_with_kubectl(tmp_path) as kc:
        await asyncio.to_thread(kc, "apply", "-f", str(sample))
        status: dict = {}
        for _ in range(240):
            status = json.loads(await asyncio.to_thread(kc, "get", "rayservice", "rayservice-sample", "-o", "json")
                                ).get("status", {})
            ready = next((c for c in status.get("conditions", []) if c["type"] == "Ready"), {})
            if ready.get("status") == "True":
                break
            await asyncio.sleep(0.5)
        assert ready.get("reason") == "NonZeroServeEndpoints", status
        assert status["serviceStatus"] == "Running"
        apps = status["activeServiceStatus"]["applicationStatuses"]
        assert {name: app["status"] for name, app in apps.items()} == {"fruit_app": "RUNNING", "math_app": "RUNNING"}
        assert apps["fruit_app"]["serveDeploymentStatuses"]["MangoStand"]["status"] == "HEALTHY"
        # the head Pod's Serve proxy answers the simulated health check, so it serves too: head + worker
        assert status["numServeEndpoints"] == 2, status
        head = json.loads(await asyncio.to_thread(kc, "get", "pods", "-l", "ray.io/node-type=head", "-o", "json"))
        assert [p["metadata"]["labels"]["ray.io/serve"] for p in head["items"]] == ["true"]


STATEFULSET_AND_MISSING_CLAIMS = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ss}
spec:
  replicas: 3
  serviceName: ss
  selector: {matchLabels: {app: ss}}
  template:
    metadata: {labels: {app: ss}}
    spec:
      containers:
      - {name: c, image: busybox, command: [sleep, infinity], resources: {requests: {cpu: 100m}},
         volumeMounts: [{name: data, mountPath: /data}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: pvcmissing}
spec:
  containers: [{name: c, image: busybox, command: [sleep, infinity], volumeMounts: [{name: d, mountPath: /d}]}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: nosuchclaim}}]
---
apiVersion: v1
kind: Pod
metadata: {name: pvcmissing-vc}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, command: [sleep, infinity], volumeMounts: [{name: d, mountPath: /d}]}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: nosuchclaim}}]
"""


@pytest.mark.kubectl
@pytest.mark.timeout(300)
async def test_a_statefulset_s_claims_bind_and_a_missing_claim_keeps_its_pod_pending(tmp_path: Path) -> None:
    """Trial 12 F-10: on the simulated runtime the local-path provisioner makes the claims'
    volumes (API objects only), so the StatefulSet's Pods run with Bound claims; a Pod whose claim
    does not exist stays Pending with either scheduler, with upstream's message."""
    async with _up_with_kubectl(tmp_path) as kc:
        manifest = tmp_path / "ss.yaml"
        manifest.write_text(STATEFULSET_AND_MISSING_CLAIMS)
        await asyncio.to_thread(kc, "apply", "-f", str(manifest))

        async def state() -> tuple[dict[str, str], dict[str, str]]:
            pods = json.loads(await asyncio.to_thread(kc, "get", "pods", "-o", "json"))["items"]
            pvcs = json.loads(await asyncio.to_thread(kc, "get", "pvc", "-o", "json"))["items"]
            return ({p["metadata"]["name"]: p.get("status", {}).get("phase", "") for p in pods},
                    {c["metadata"]["name"]: c.get("status", {}).get("phase", "") for c in pvcs})

        pods, claims = {}, {}
        for _ in range(240):
            pods, claims = await state()
            if all(pods.get(f"ss-{i}") == "Running" for i in range(3)):
                break
            await asyncio.sleep(0.5)
        assert {f"ss-{i}": "Running" for i in range(3)}.items() <= pods.items(), (pods, claims)
        assert claims == {f"data-ss-{i}": "Bound" for i in range(3)}, claims
        for name, by in (("pvcmissing", "default-scheduler"), ("pvcmissing-vc", "volcano")):
            pod = json.loads(await asyncio.to_thread(kc, "get", "pod", name, "-o", "json"))
            assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName"), (name, pod["status"])
            cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
            assert cond["status"] == "False" and 'persistentvolumeclaim "nosuchclaim" not found' in cond["message"], \
                (by, cond)
        pod = json.loads(await asyncio.to_thread(kc, "get", "pod", "pvcmissing", "-o", "json"))
        cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
        assert cond["message"] == ('0/2 nodes are available: persistentvolumeclaim "nosuchclaim" not found. '
                                   "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


BUSY_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {pumice.io/sim-cpu-usage: 200m, pumice.io/sim-memory-usage: 64Mi}
    spec:
      containers:
      - {name: web, image: nginx:1, resources: {requests: {cpu: 100m}}}
"""


@pytest.mark.kubectl
@pytest.mark.timeout(300)
async def test_kubectl_autoscale_scales_a_deployment_on_its_simulated_cpu_usage(tmp_path: Path) -> None:
    """The simulated Pods' usage annotations reach metrics.k8s.io (``kubectl top``) and the HPA
    controller: 200m of a 100m request against a 50% target scales 1 replica to maxReplicas 3."""
    async with _up_with_kubectl(tmp_path) as kc:
        manifest = tmp_path / "web.yaml"
        manifest.write_text(BUSY_DEPLOYMENT)
        await asyncio.to_thread(kc, "apply", "-f", str(manifest))
        top = ""
        for _ in range(240):  # the Pod runs and reports usage: the HPA's first pass can scale
            top = json.dumps(json.loads(await asyncio.to_thread(kc, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/pods")))
            if '"cpu": "200000000n"' in top:
                break
            await asyncio.sleep(0.5)
        await asyncio.to_thread(kc, "autoscale", "deployment", "web", "--min=1", "--max=3", "--cpu-percent=50")
        replicas = 0
        for _ in range(240):
            replicas = json.loads(await asyncio.to_thread(kc, "get", "deployment", "web", "-o", "json"))["spec"]["replicas"]
            if replicas == 3:
                break
            await asyncio.sleep(0.5)
        assert replicas == 3
        hpa = json.loads(await asyncio.to_thread(kc, "get", "hpa", "web", "-o", "json"))
        assert hpa["status"]["currentMetrics"] == [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageValue": "200m", "averageUtilization": 200}}}], hpa["status"]
        top = await asyncio.to_thread(kc, "top", "pod", "--no-headers")
        assert [line.split()[1:] for line in top.splitlines()][:1] == [["200m", "64Mi"]], top
