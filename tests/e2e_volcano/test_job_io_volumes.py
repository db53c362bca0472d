"""vcjob IO volumes through the API server: a ``spec.volumes[].volumeClaim`` gets its claim made,
owned by the Job, its generated name written back and mounted into the Pods; a named claim that
does not exist keeps the Job Pending with upstream's PVCError until it is made; under
``pumice up --runtime simulated`` the claim is provisioned and the Pods run.

Mirrors: volcano pkg/controllers/job/job_controller_actions.go createJobIOIfNotExist and
job_controller_util.go createJobPod (volumes)."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pumice.api import scheme
from pumice.cli.up import UpOptions, run_up
from pumice.client.base import get_or_none
from pumice.client.kubeconfig import connect
from pumice.scheduler.volcano import default_conf
from pumice.testing.kube_control_plane import free_port
from pumice.testing.node import wait_for
from pumice.testing.up import InProcessUp
from pumice.testing.volcano_controllers import add_nodes, eventually, ready_node, schedule_once

CLAIM_SPEC = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def vcjob(name: str, volumes: list[dict], replicas: int = 2) -> dict:
    c = {"name": "c", "image": "busybox", "command": ["sleep", "infinity"], "resources": {"requests": {"cpu": "100m"}}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": replicas, "schedulerName": "volcano", "volumes": volumes,
                     "tasks": [{"name": "w", "replicas": replicas, "template": {"spec": {"containers": [c]}}}]}}


async def get(client: Any, kind: Any, name: str, ns: str | None = "default") -> dict | None:
    return await get_or_none(client, kind, name, ns)


async def queue_open(client: Any) -> bool:
    q = await get(client, scheme.QUEUE, "default", None)
    return bool(q and (q.get("status") or {}).get("state") == "Open")


async def job_pods(client: Any, job: str) -> list[dict]:
    return sorted((await client.list(scheme.POD, "default", label_selector=f"volcano.sh/job-name={job}")).items,
                  key=lambda p: p["metadata"]["name"])


async def test_a_volume_claim_is_created_owned_written_back_and_mounted_in_every_pod(cluster: Any) -> None:
    client = cluster.client
    await eventually(lambda: queue_open(client))
    created = await client.create(vcjob("io", [{"mountPath": "/data", "volumeClaim": CLAIM_SPEC}]))

    async def named() -> dict | None:
        j = await get(client, scheme.VCJOB, "io")
        return j if j and (j["spec"]["volumes"][0].get("volumeClaimName")) else None

    job = await eventually(named)
    claim = job["spec"]["volumes"][0]["volumeClaimName"]
    assert re.fullmatch(r"io-pvc-[0-9a-z]{12}", claim), claim
    pvc = await get(client, scheme.PERSISTENT_VOLUME_CLAIM, claim)
    assert pvc is not None and pvc["spec"]["resources"] == CLAIM_SPEC["resources"]
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    [ref] = pvc["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("Job", "io", created["metadata"]["uid"], True)

    async def recorded() -> dict | None:
        j = await get(client, scheme.VCJOB, "io")
        st = (j or {}).get("status") or {}
        return st if st.get("controlledResources", {}).get(f"volume-pvc-{claim}") == claim else None

    status = await eventually(recorded)
    assert status["state"]["phase"] == "Pending"

    pg = f"io-{created['metadata']['uid']}"
    await eventually(lambda: get(client, scheme.POD_GROUP, pg))
    await add_nodes(client, [ready_node("n1", cpu="2")])
    await schedule_once(client, default_conf())  # enqueues the PodGroup: the Pods follow

    async def two_pods() -> list[dict] | None:
        pods = await job_pods(client, "io")
        return pods if len(pods) == 2 else None

    pods = await eventually(two_pods)
    names = set()
    for p in pods:
        [vol] = [v for v in p["spec"]["volumes"] if "persistentVolumeClaim" in v]
        assert vol["persistentVolumeClaim"] == {"claimName": claim}
        assert re.fullmatch(r"io-[0-9a-z]{12}", vol["name"]), vol["name"]
        assert {"mountPath": "/data", "name": vol["name"]} in p["spec"]["containers"][0]["volumeMounts"]
        names.add(vol["name"])
    assert len(names) == 2  # each Pod draws its own volume name, as upstream's createJobPod
    # the claim exists and is recorded: another pass creates no second claim
    claims = (await client.list(scheme.PERSISTENT_VOLUME_CLAIM, "default")).items
    assert [c["metadata"]["name"] for c in claims] == [claim]


async def test_a_missing_named_claim_keeps_the_job_pending_with_pvc_error_until_it_exists(cluster: Any) -> None:
    client = cluster.client
    await eventually(lambda: queue_open(client))
    created = await client.create(vcjob("named", [{"mountPath": "/data", "volumeClaimName": "shared"}], replicas=1))
    want = "Failed to create PVC, err: pvc shared is not found, the job will be in the Pending state until the PVC is created"

    async def pvc_error() -> dict | None:
        for e in (await client.list(scheme.EVENT, "default")).items:
            if e.get("reason") == "PVCError" and e["involvedObject"]["name"] == "named":
                return e
        return None

    ev = await eventually(pvc_error)
    assert (ev["type"], ev["message"]) == ("Warning", want)
    job = await get(client, scheme.VCJOB, "named")
    assert job is not None and job["status"]["state"]["phase"] == "Pending"
    assert not job["status"].get("controlledResources")
    pg = f"named-{created['metadata']['uid']}"
    # as upstream's initiateJob: no PodGroup (nor Pods) before the claim is there
    assert await get(client, scheme.POD_GROUP, pg) is None
    assert await job_pods(client, "named") == []

    await client.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                         "metadata": {"name": "shared", "namespace": "default"}, "spec": CLAIM_SPEC})
    # the failed pass is retried with the work queue's backoff
    await eventually(lambda: get(client, scheme.POD_GROUP, pg), timeout=30)

    async def recorded() -> bool:
        j = await get(client, scheme.VCJOB, "named")
        return ((j or {}).get("status") or {}).get("controlledResources") == {"volume-pvc-shared": "shared"}

    await eventually(recorded)
    job = await get(client, scheme.VCJOB, "named")
    assert job is not None and job["spec"]["volumes"] == [{"mountPath": "/data", "volumeClaimName": "shared"}]


async def test_a_job_without_volumes_reads_and_writes_no_claims(cluster: Any) -> None:
    client = cluster.client
    await eventually(lambda: queue_open(client))
    created = await client.create(vcjob("plain", []))
    await eventually(lambda: get(client, scheme.POD_GROUP, f"plain-{created['metadata']['uid']}"))
    job = await get(client, scheme.VCJOB, "plain")
    assert job is not None and not job["status"].get("controlledResources")
    assert (await client.list(scheme.PERSISTENT_VOLUME_CLAIM, "default")).items == []


@pytest.mark.timeout(240)
async def test_a_job_s_claim_is_provisioned_and_its_pods_run_on_the_simulated_runtime(tmp_path: Path) -> None:
    opts = UpOptions(data_dir=tmp_path / "data", port=free_port(), runtime="simulated", nodes=2, node_cpu="4",
                     node_memory="8Gi", network="host", pod_egress="none")
    up = await InProcessUp.start(partial(run_up, opts))
    try:
        client = connect(up.kubeconfig)
        await wait_for(lambda: queue_open(client), timeout=60)
        await client.create(vcjob("sim", [{"mountPath": "/data", "volumeClaim": CLAIM_SPEC}]))

        async def running() -> list[dict] | None:
            pods = await job_pods(client, "sim")
            ok = len(pods) == 2 and all((p.get("status") or {}).get("phase") == "Running" for p in pods)
            return pods if ok else None

        pods = await wait_for(running, timeout=120, interval=0.5)
        assert all(p["spec"].get("nodeName") for p in pods)
        job = await client.get(scheme.VCJOB, "sim", "default")
        claim = job["spec"]["volumes"][0]["volumeClaimName"]
        pvc = await client.get(scheme.PERSISTENT_VOLUME_CLAIM, claim, "default")
        assert pvc["status"]["phase"] == "Bound" and pvc["spec"].get("volumeName")
        assert job["status"]["controlledResources"] == {f"volume-pvc-{claim}": claim}
    finally:
        await up.stop()
