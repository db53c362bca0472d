"""``pumice up --runtime simulated`` end to end for a batch.volcano.sh CronJob: the controller
creates ``<cronjob>-<minutes>`` for the schedule time that is due, with the scheduled-timestamp
annotation, the Volcano scheduler binds its Pod to a simulated Node, and the CronJob lists it as
active.

The test makes the last minute boundary due at once by writing ``status.lastScheduleTime`` a
minute before it (as a CronJob that last ran then has it), instead of waiting up to a minute for
the next boundary in real time; when the next run is due after a reconcile (``requeue_after``) is
tests/controllers_volcano/test_cronjob.py's, on a fake clock."""

from __future__ import annotations

import time
from pathlib import Path

from pumice.api import scheme
from pumice.client.kubeconfig import connect
from pumice.testing.node import wait_for
from pumice.testing.up import start_up, stop_up


async def test_a_cronjob_runs_its_due_job_under_pumice_up_simulated(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    proc, up = start_up(data, "--runtime", "simulated", "--nodes", "2", "--node-cpu", "2", "--node-memory", "4Gi")
    try:
        client = connect(up.kubeconfig)

        async def ready() -> bool:
            try:
                q = await client.get(scheme.QUEUE, "default")
                return (q.get("status") or {}).get("state") == "Open" and len((await client.list(scheme.NODE)).items) == 2
            except Exception:
                return False

        await wait_for(ready, timeout=120)
        await client.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
                             "metadata": {"name": "tick", "namespace": "default"},
                             "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": {
                                 "minAvailable": 1, "schedulerName": "volcano", "tasks": [{"name": "t", "replicas": 1, "template": {
                                     "spec": {"containers": [{"name": "c", "image": "busybox",
                                                              "resources": {"requests": {"cpu": "500m"}}}]}}}]}}}})
        boundary = int(time.time()) // 60 * 60
        await client.patch(scheme.CRON_JOB, "tick", {"status": {"lastScheduleTime": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(boundary - 60))}}, "default", subresource="status")

        async def job_running() -> dict | None:
            jobs = (await client.list(scheme.VCJOB, "default")).items
            if not jobs:
                return None
            pods = (await client.list(scheme.POD, "default", label_selector=f"volcano.sh/job-name={jobs[0]['metadata']['name']}")).items
            return jobs[0] if pods and pods[0]["spec"].get("nodeName") else None

        job = await wait_for(job_running, timeout=150, interval=0.5)
        name = job["metadata"]["name"]
        minutes = int(name.rsplit("-", 1)[1])
        assert name == f"tick-{minutes}" and minutes * 60 >= boundary
        assert job["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"].endswith("Z")
        assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"

        async def active() -> bool:
            cj = await client.get(scheme.CRON_JOB, "tick", "default")
            return [a["name"] for a in (cj.get("status") or {}).get("active") or []] == [name]

        await wait_for(active, timeout=30)
    finally:
        stop_up(proc)
