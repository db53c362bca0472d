"""A status write stores a version that shares the stored object's unchanged values (copy on
write): the new version takes the old one's own spec (no copy), and no version ever stored
changes, also when a mutating admission plugin changes the object of a status write."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pumice._util.clock import FakeClock
from pumice.api.admission import AdmissionRequest
from pumice.api.scheme import POD, ResourceKind
from pumice.testing.cluster import LocalCluster, local_cluster
from pumice.testing.volcano import pod

JOBS = "batch.volcano.sh/jobs"


@pytest.fixture
async def cluster() -> AsyncIterator[LocalCluster]:
    async with local_cluster(clock=FakeClock()) as c:
        yield c


async def _job(c: LocalCluster) -> ResourceKind:
    jk = c.scheme.by_api_version_kind("batch.volcano.sh/v1alpha1", "Job")
    assert isinstance(jk, ResourceKind)
    await c.server.registry.create(jk, "default", {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "default", "labels": {"a": "b"}},
        "spec": {"minAvailable": 1, "queue": "default", "tasks": [{"name": "w", "replicas": 1, "template": {
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}]}})
    return jk


async def _put_status(c: LocalCluster, jk: ResourceKind, phase: str) -> None:
    s = c.server.store.get(JOBS, "default", "j")
    assert s is not None
    body = s.copy()
    body["status"] = {"state": {"phase": phase}, "minAvailable": 1}
    await c.server.registry.update(jk, "default", "j", body, sub="status")


async def test_a_vcjob_status_put_shares_the_stored_spec(cluster: LocalCluster) -> None:
    jk = await _job(cluster)
    before = cluster.server.store.get(JOBS, "default", "j")
    assert before is not None
    await _put_status(cluster, jk, "Running")
    after = cluster.server.store.get(JOBS, "default", "j")
    assert after is not None and after.rv > before.rv
    assert after.obj["status"]["state"] == {"phase": "Running"}
    assert after.obj["spec"] is before.obj["spec"]
    assert after.obj["metadata"] is not before.obj["metadata"]
    assert after.obj["metadata"]["labels"] is before.obj["metadata"]["labels"]
    assert before.obj["metadata"]["resourceVersion"] == str(before.rv)
    assert cluster.server.store.changed_objects() == []


async def test_a_status_put_a_mutating_plugin_handles_changes_no_stored_version(cluster: LocalCluster) -> None:
    class Labeler:
        name = "Labeler"

        def handles(self, req: AdmissionRequest) -> bool:
            return req.kind.plural == "jobs" and req.subresource == "status"

        async def admit(self, req: AdmissionRequest, reader: Any) -> None:
            assert req.obj is not None
            req.obj["metadata"]["labels"]["a"] = "changed"
            req.obj["spec"]["tasks"][0]["replicas"] = 2

    jk = await _job(cluster)
    cluster.add_admission_plugin(Labeler())
    before = cluster.server.store.get(JOBS, "default", "j")
    assert before is not None
    await _put_status(cluster, jk, "Running")
    after = cluster.server.store.get(JOBS, "default", "j")
    assert after is not None
    assert after.obj["metadata"]["labels"] == {"a": "changed"}
    assert after.obj["spec"]["tasks"][0]["replicas"] == 2
    assert before.obj["metadata"]["labels"] == {"a": "b"}
    assert before.obj["spec"]["tasks"][0]["replicas"] == 1
    assert cluster.server.store.changed_objects() == []


async def test_a_pod_status_patch_shares_the_stored_spec(cluster: LocalCluster) -> None:
    reg = cluster.server.registry
    await reg.create(POD, "default", pod("p", namespace="default", requests="1,1Gi"))
    versions = []
    for phase in ("Pending", "Running", "Succeeded"):  # the first patch checks the whole body, the others its status
        await reg.patch(POD, "default", "p", "merge", {"status": {"phase": phase}}, sub="status")
        s = cluster.server.store.get("/pods", "default", "p")
        assert s is not None and s.obj["status"]["phase"] == phase
        versions.append(s)
    assert versions[2].obj["spec"] is versions[1].obj["spec"] is versions[0].obj["spec"]
    assert versions[2].obj["status"] is not versions[1].obj["status"]
    assert cluster.server.store.changed_objects() == []


async def test_a_pod_status_patch_a_mutating_plugin_handles_changes_no_stored_version(cluster: LocalCluster) -> None:
    class Labeler:
        name = "Labeler"

        def handles(self, req: AdmissionRequest) -> bool:
            return req.kind.plural == "pods" and req.subresource == "status"

        async def admit(self, req: AdmissionRequest, reader: Any) -> None:
            assert req.obj is not None
            req.obj["metadata"].setdefault("labels", {})["seen"] = req.obj["status"]["phase"]
            req.obj["spec"]["containers"][0]["image"] = "changed"

    reg = cluster.server.registry
    await reg.create(POD, "default", pod("p", namespace="default", requests="1,1Gi"))
    cluster.add_admission_plugin(Labeler())
    before = cluster.server.store.get("/pods", "default", "p")
    assert before is not None
    image = before.obj["spec"]["containers"][0]["image"]
    for phase in ("Pending", "Running"):
        await reg.patch(POD, "default", "p", "merge", {"status": {"phase": phase}}, sub="status")
    after = cluster.server.store.get("/pods", "default", "p")
    assert after is not None
    assert after.obj["metadata"]["labels"]["seen"] == "Running"
    assert after.obj["spec"]["containers"][0]["image"] == "changed"
    assert "seen" not in (before.obj["metadata"].get("labels") or {})
    assert before.obj["spec"]["containers"][0]["image"] == image != "changed"
    assert cluster.server.store.changed_objects() == []
