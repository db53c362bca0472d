"""The in-tree autoscaler on real Ray (issue 10 acceptance): ``pumice up`` runs KubeRay's
ray-cluster.autoscaler.yaml; the unmodified Ray autoscaler process in the head Pod's ``autoscaler``
container talks to pumice's API server with its ServiceAccount token, scales the worker group up
when a task needs a CPU (the head has ``num-cpus: 0``) and back down through ``workersToDelete``
after ``idleTimeoutSeconds`` (60 in the sample). The scenario is :mod:`pumice.testing.autoscaler`,
which ``bench/kuberay.py --autoscaler`` times.

Runs ``pumice up`` as a subprocess, as a user does; marked ``ray_long``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from pumice.api import scheme
from pumice.client.kubeconfig import connect
from pumice.testing.autoscaler import autoscaler_log, scale_up_and_down, wait_head_ready
from pumice.testing.ray_logs import diagnosis
from pumice.testing.up import start_up, stop_up

from .conftest import load_sample

pytestmark = [
    pytest.mark.ray,
    pytest.mark.ray_long,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(not (Path(sys.executable).parent / "ray").exists(), reason="ray is not installed"),
]

NAME = "raycluster-autoscaler"


async def test_autoscaler_scales_up_on_a_queued_task_and_down_when_idle() -> None:
    data = Path(tempfile.mkdtemp(prefix="pumice-autoscaler-e2e-", dir="/var/tmp"))
    proc, up = start_up(data, "--batch-scheduler", "none", "--node-cpu", "8", "--node-memory", "24Gi")
    client = connect(up.kubeconfig)
    try:
        for kind in ("ConfigMap", "RayCluster"):
            await client.create(load_sample("ray-cluster.autoscaler.yaml", kind))
        try:
            head = await wait_head_ready(client, NAME)
            t = await scale_up_and_down(client, NAME, head["status"]["podIP"])
        except Exception as e:
            # What the autoscaler said is the first thing to read when scaling did not happen.
            raise AssertionError(f"{e!r}\nautoscaler container log (tail):\n{await autoscaler_log(client, NAME)}\n"
                                 f"{await diagnosis(client, data / 'node' / 'pods')}") from e
        print(f"autoscaler: queued -> worker Pod created {t.queued_to_pod_created:.1f} s, Running "
              f"{t.queued_to_pod_running:.1f} s, task started {t.queued_to_task_started:.1f} s; task ended -> "
              f"replicas 0 {t.task_ended_to_scaled_down:.1f} s, Pod gone {t.task_ended_to_pod_gone:.1f} s "
              f"(idleTimeoutSeconds {t.idle_timeout_seconds:.0f})", flush=True)
        assert "answer 7" in t.job_log
        # Down through workersToDelete: the autoscaler named the idle worker, the operator deleted it.
        assert t.worker_pod in t.workers_to_delete
        assert t.task_ended_to_scaled_down >= t.idle_timeout_seconds
        cl = await client.get(scheme.RAY_CLUSTER, NAME, "default")
        assert cl["spec"]["workerGroupSpecs"][0]["replicas"] == 0
    finally:
        await client.close()
        stop_up(proc, timeout=120)
        print((data / "up.log").read_text()[-3000:], flush=True)
        shutil.rmtree(data, ignore_errors=True)
