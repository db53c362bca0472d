"""``pumice up --runtime simulated --agent-scheduler``: a Pod with schedulerName agent-scheduler is
bound by the Agent Scheduler and runs, beside a vcjob the batch scheduler places."""

from __future__ import annotations

from pathlib import Path

from pumice.api import scheme
from pumice.client.kubeconfig import connect
from pumice.testing.node import wait_for
from pumice.testing.up import start_up, stop_up


async def test_agent_pod_runs_under_pumice_up_simulated(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    proc, up = start_up(data, "--runtime", "simulated", "--nodes", "2", "--node-cpu", "2", "--node-memory", "4Gi",
                        "--agent-scheduler")
    try:
        client = connect(up.kubeconfig)

        async def nodes_ready() -> bool:
            return len((await client.list(scheme.NODE)).items) == 2

        await wait_for(nodes_ready, timeout=120)
        await client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "agent-0", "namespace": "default"},
                             "spec": {"schedulerName": "agent-scheduler", "containers": [
                                 {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}})

        async def running() -> bool:
            p = await client.get(scheme.POD, "agent-0", "default")
            return bool(p["spec"].get("nodeName")) and (p.get("status") or {}).get("phase") == "Running"

        await wait_for(running, timeout=60)
        await client.close()
    finally:
        stop_up(proc)
