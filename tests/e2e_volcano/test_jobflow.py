"""JobFlow + JobTemplate end to end on the in-process stack: the second Job starts only after the
first Completed, the flow goes Pending -> Running -> Succeed, and jobRetainPolicy delete cleans up."""

from __future__ import annotations

import asyncio
from typing import Any

from pumice.api import scheme
from pumice.scheduler.volcano import default_conf
from pumice.testing.volcano_controllers import add_nodes, eventually, ready_node, schedule_once


def template(name: str) -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "tasks": [
                {"name": "t", "replicas": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


async def _get(c: Any, kind: Any, name: str) -> dict | None:
    try:
        return await c.get(kind, name, "default")
    except Exception:
        return None


async def _flow_phase(c: Any) -> str:
    jf = await _get(c, scheme.JOB_FLOW, "flow")
    return str((((jf or {}).get("status") or {}).get("state") or {}).get("phase") or "")


async def _finish_job(cluster: Any, job: str, *, wait: bool = True) -> None:
    conf = default_conf()

    async def pod() -> dict | None:
        await schedule_once(cluster.client, conf)
        await asyncio.sleep(0.02)
        items = (await cluster.client.list(scheme.POD, "default", label_selector=f"volcano.sh/job-name={job}")).items
        return items[0] if items and items[0]["spec"].get("nodeName") and (items[0].get("status") or {}).get("phase") == "Running" else None

    p = await eventually(pod, timeout=10)
    await cluster.kubelet.finish(p["metadata"]["name"])
    if not wait:
        return

    async def completed() -> bool:
        j = await _get(cluster.client, scheme.VCJOB, job)
        return ((j or {}).get("status") or {}).get("state", {}).get("phase") == "Completed"

    await eventually(completed, timeout=10)


async def test_a_jobflow_runs_its_jobs_in_dependency_order_and_succeeds(cluster: Any) -> None:
    c = cluster.client
    await add_nodes(c, [ready_node("n1", cpu="2")])
    for t in ("prepare", "train"):
        await c.create(template(t))
    await c.create({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "flow", "namespace": "default"},
                    "spec": {"jobRetainPolicy": "delete", "flows": [{"name": "prepare"},
                                                                    {"name": "train", "dependsOn": {"targets": ["prepare"]}}]}})
    await eventually(lambda: _get(c, scheme.VCJOB, "flow-prepare"), timeout=10)
    first = await _get(c, scheme.VCJOB, "flow-prepare")
    assert first is not None
    assert first["metadata"]["labels"] == {"volcano.sh/createdByJobTemplate": "default.prepare",
                                           "volcano.sh/createdByJobFlow": "default.flow"}
    assert await _get(c, scheme.VCJOB, "flow-train") is None
    await _finish_job(cluster, "flow-prepare")
    await eventually(lambda: _get(c, scheme.VCJOB, "flow-train"), timeout=10)
    assert await _flow_phase(c) == "Running"
    await _finish_job(cluster, "flow-train", wait=False)  # the flow deletes it once it Succeeded

    async def succeeded_and_cleaned() -> bool:
        return await _flow_phase(c) == "Succeed" and await _get(c, scheme.VCJOB, "flow-train") is None
    await eventually(succeeded_and_cleaned, timeout=10)
