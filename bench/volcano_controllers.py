"""Throughput of the Volcano admission + vcjob controller path on the in-process API server.

Creates N vcjobs of P Pods each (admitted by the Volcano admission plugins), waits for their
PodGroups, marks the PodGroups Inqueue (as the scheduler's enqueue would), and waits for every
Pod. Baseline, measured in the same run: creating the same PodGroups and Pods directly through
the client. Prints jobs/s, Pods/s and the ratio to the baseline.

    .venv/bin/python bench/volcano_controllers.py [--jobs 100] [--pods 4]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from pumice.api import scheme
from pumice.controllers.volcano import admission_plugins
from pumice.testing.cluster import local_cluster
from pumice.testing.volcano_controllers import running_controllers


def vcjob(i: int, pods: int) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": f"j{i}", "namespace": "default"},
            "spec": {"minAvailable": pods, "tasks": [{"name": "w", "replicas": pods, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}}}]}}


async def count(client: object, kind: object) -> int:
    return len((await client.list(kind, "default")).items)  # type: ignore[attr-defined]


async def wait_for(client: object, kind: object, n: int) -> None:
    while await count(client, kind) < n:
        await asyncio.sleep(0.01)


async def controllers_path(jobs: int, pods: int) -> float:
    m, v = admission_plugins()
    async with local_cluster(admission=[*m, *v]) as c, running_controllers(c.client):
        while True:
            try:
                q = await c.client.get(scheme.QUEUE, "default")
                if (q.get("status") or {}).get("state") == "Open":
                    break
            except Exception:
                pass
            await asyncio.sleep(0.01)
        t0 = time.perf_counter()
        for i in range(jobs):
            await c.client.create(vcjob(i, pods))
        await wait_for(c.client, scheme.POD_GROUP, jobs)
        for pg in (await c.client.list(scheme.POD_GROUP, "default")).items:
            await c.client.patch(scheme.POD_GROUP, pg["metadata"]["name"], {"status": {"phase": "Inqueue"}}, "default")
        await wait_for(c.client, scheme.POD, jobs * pods)
        return time.perf_counter() - t0


async def direct_path(jobs: int, pods: int) -> float:
    async with local_cluster() as c:
        t0 = time.perf_counter()
        for i in range(jobs):
            await c.client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                   "metadata": {"name": f"pg{i}", "namespace": "default"},
                                   "spec": {"minMember": pods, "queue": "default"}})
            for k in range(pods):
                await c.client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
                    "name": f"j{i}-w-{k}", "namespace": "default"}, "spec": {"schedulerName": "volcano", "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}})
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--pods", type=int, default=4)
    a = ap.parse_args()
    base = asyncio.run(direct_path(a.jobs, a.pods))
    ctrl = asyncio.run(controllers_path(a.jobs, a.pods))
    n_pods = a.jobs * a.pods
    print(f"direct create of {a.jobs} PodGroups + {n_pods} Pods: {base:.2f}s ({n_pods / base:.0f} Pods/s)")
    print(f"{a.jobs} vcjobs -> PodGroups -> {n_pods} Pods via admission + controllers: {ctrl:.2f}s "
          f"({a.jobs / ctrl:.0f} jobs/s, {n_pods / ctrl:.0f} Pods/s)")
    print(f"ratio controllers/direct: {ctrl / base:.2f}")


if __name__ == "__main__":
    main()
