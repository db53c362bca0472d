"""``services/proxy`` against ``pumice up --runtime simulated`` with the real kubectl: the head
Service's ``dashboard`` port reaches the simulated Ray dashboard (``kubectl get --raw`` and
``kubectl proxy``), and KubeRay's controllers in ``pumice controller-manager --use-kubernetes-proxy``
run a RayJob to SUCCEEDED through it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

import httpx2
import pytest

from pumice.cli.up import UpOptions, run_up
from pumice.testing.kube_control_plane import free_port
from pumice.testing.up import InProcessUp, simulated_rayjob

RAYJOB = simulated_rayjob("via-proxy", duration_seconds=2)


@pytest.mark.kubectl
@pytest.mark.timeout(240)
async def test_a_rayjob_runs_through_the_service_proxy_and_kubectl_reaches_the_dashboard(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    opts = UpOptions(data_dir=tmp_path / "data", port=free_port(), runtime="simulated", nodes=1, node_cpu="4",
                     node_memory="8Gi", network="host", pod_egress="none", controllers=["kube", "volcano"])
    up = await InProcessUp.start(partial(run_up, opts))
    manager: subprocess.Popen[str] | None = None
    kproxy: subprocess.Popen[str] | None = None
    try:
        kubeconfig = up.kubeconfig

        def kc(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
            return subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), *args], check=check,
                                  capture_output=True, text=True, timeout=60)

        log = open(tmp_path / "cm.log", "w")  # noqa: SIM115 - the child writes to it
        manager = subprocess.Popen(
            [sys.executable, "-m", "pumice.cli.main", "controller-manager", "--kubeconfig", str(kubeconfig),
             "--controllers", "ray", "--no-leader-elect", "--use-kubernetes-proxy"],
            stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        log.close()
        manifest = tmp_path / "rayjob.yaml"
        manifest.write_text(RAYJOB)
        await asyncio.to_thread(kc, "apply", "-f", str(manifest))

        status: dict = {}
        for _ in range(240):
            status = json.loads((await asyncio.to_thread(kc, "get", "rayjob", "via-proxy", "-o", "json")).stdout
                                ).get("status", {})
            if status.get("jobDeploymentStatus") in ("Complete", "Failed"):
                break
            await asyncio.sleep(0.5)
        assert (status.get("jobStatus"), status.get("jobDeploymentStatus")) == ("SUCCEEDED", "Complete"), (
            status, (tmp_path / "cm.log").read_text()[-3000:])
        cluster = status["rayClusterName"]
        path = f"/api/v1/namespaces/default/services/{cluster}-head-svc:dashboard/proxy/api/jobs/"

        jobs = json.loads((await asyncio.to_thread(kc, "get", "--raw", path)).stdout)
        assert [(j["submission_id"], j["status"]) for j in jobs] == [(status["jobId"], "SUCCEEDED")]

        kproxy = subprocess.Popen([kubectl, "--kubeconfig", str(kubeconfig), "proxy", "--port=0"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
        assert kproxy.stdout is not None
        line = await asyncio.to_thread(kproxy.stdout.readline)
        m = re.search(r"Starting to serve on (\S+)", line)
        assert m, line
        async with httpx2.AsyncClient(base_url=f"http://{m.group(1)}", trust_env=False) as h:
            r = await h.get(path)
            assert r.status_code == 200 and r.json() == jobs
            r = await h.get(f"/api/v1/namespaces/default/services/{cluster}-head-svc:dashboard/proxy/api/jobs/"
                            f"{status['jobId']}")
            assert r.status_code == 200 and r.json()["status"] == "SUCCEEDED"
            # the head's Serve proxy port answers its health check (no Serve on a RayJob's cluster)
            head_name = json.loads((await asyncio.to_thread(
                kc, "get", "pods", "-l", f"ray.io/cluster={cluster},ray.io/node-type=head", "-o", "json")).stdout
                                   )["items"][0]["metadata"]["name"]
            r = await h.get(f"/api/v1/namespaces/default/pods/{head_name}:8000/proxy/-/healthz")
            assert (r.status_code, r.text) == (503, "no Serve proxy")

        missing = await asyncio.to_thread(kc, "get", "--raw",
                                          "/api/v1/namespaces/default/services/nope:dashboard/proxy/", check=False)
        assert missing.returncode == 1
        assert missing.stderr.strip() == 'Error from server (NotFound): endpoints "nope" not found'
        head = json.loads((await asyncio.to_thread(
            kc, "get", "pods", "-l", f"ray.io/cluster={cluster},ray.io/node-type=head", "-o", "json")).stdout)["items"][0]
        closed = await asyncio.to_thread(
            kc, "get", "--raw", f"/api/v1/namespaces/default/pods/{head['metadata']['name']}:9999/proxy/", check=False)
        ip = head["status"]["podIP"]
        assert closed.stderr.strip() == (f"Error from server (ServiceUnavailable): error trying to reach service: "
                                         f"dial tcp {ip}:9999: connect: connection refused")
    finally:
        for p in (kproxy, manager):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
        await up.stop()
