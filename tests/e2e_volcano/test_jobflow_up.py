"""``pumice up --runtime simulated`` end to end for JobFlow + JobTemplate: simulated Pods run for a
second and exit 0, so ``prepare`` completes, ``train`` starts after it, and the flow Succeeds."""

from __future__ import annotations

from pathlib import Path

from pumice.api import scheme
from pumice.client.kubeconfig import connect
from pumice.testing.node import wait_for
from pumice.testing.up import start_up, stop_up


def template(name: str) -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "tasks": [{"name": "t", "replicas": 1, "template": {
                "metadata": {"annotations": {"pumice.io/sim-duration-seconds": "1"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                                                    "resources": {"requests": {"cpu": "500m"}}}]}}}]}}


async def test_a_jobflow_runs_to_succeed_under_pumice_up_simulated(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    proc, up = start_up(data, "--runtime", "simulated", "--nodes", "1", "--node-cpu", "2", "--node-memory", "4Gi")
    try:
        client = connect(up.kubeconfig)

        async def ready() -> bool:
            try:
                q = await client.get(scheme.QUEUE, "default")
                return (q.get("status") or {}).get("state") == "Open"
            except Exception:
                return False

        await wait_for(ready, timeout=120)
        for t in ("prepare", "train"):
            await client.create(template(t))
        await client.create({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                             "metadata": {"name": "flow", "namespace": "default"},
                             "spec": {"flows": [{"name": "prepare"}, {"name": "train", "dependsOn": {"targets": ["prepare"]}}]}})

        async def succeeded() -> dict | None:
            jf = await client.get(scheme.JOB_FLOW, "flow", "default")
            return jf if ((jf.get("status") or {}).get("state") or {}).get("phase") == "Succeed" else None

        jf = await wait_for(succeeded, timeout=120, interval=0.5)
        assert jf["status"]["completedJobs"] == ["flow-prepare", "flow-train"]
        prepare = await client.get(scheme.VCJOB, "flow-prepare", "default")
        train = await client.get(scheme.VCJOB, "flow-train", "default")
        assert prepare["metadata"]["creationTimestamp"] <= train["metadata"]["creationTimestamp"]
    finally:
        stop_up(proc)
