"""The Overview's Scheduling issues Details for a waiting row without a reason of its own (trial 6
F-4): ``pumice explain``'s verdict, and past the explained rows the object's latest Event. Runs the
dashboard's cache on a real API server in-process (no scheduler: the objects are written as the
scheduler and the job controller leave a job held at enqueue)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pumice.dashboard import views as v
from pumice.dashboard.app import Dashboard
from pumice.dashboard.cache import ClusterCache
from pumice.scheduler.volcano import default_conf
from pumice.scheduler.volcano.explain import explain
from pumice.testing.cluster import serve_http

QUOTA_EVENT = "queue resource quota insufficient: insufficient cpu"


@pytest.fixture
async def dash(tmp_path: Path) -> AsyncIterator[Dashboard]:
    async with serve_http(tmp_path / "api") as srv:
        client = srv.client()
        try:
            await client.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                                 "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                                            "conditions": [{"type": "Ready", "status": "True"}]}})
            q = await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                     "metadata": {"name": "capped"},
                                     "spec": {"weight": 1, "capability": {"cpu": "2", "memory": "8Gi"}}})
            await client.update_status({**q, "status": {"state": "Open"}})
            job = await client.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                       "metadata": {"name": "held", "namespace": "default"},
                                       "spec": {"minAvailable": 3, "queue": "capped", "tasks": [
                                           {"name": "t", "replicas": 3, "template": {"spec": {"containers": [
                                               {"name": "c", "image": "busybox"}]}}}]}})
            await client.update_status({**job, "status": {"state": {"phase": "Pending"}}})
            pg = await client.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                      "metadata": {"name": f"held-{job['metadata']['uid']}", "namespace": "default",
                                                   "ownerReferences": [{
                                                       "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                                       "name": "held", "uid": job["metadata"]["uid"],
                                                       "controller": True}]},
                                      "spec": {"minMember": 3, "queue": "capped",
                                               "minResources": {"cpu": "3", "memory": "3Gi"}},
                                      "status": {"phase": "Pending"}})  # no status subresource (upstream's CRD)
            await client.create({"apiVersion": "v1", "kind": "Event",
                                 "metadata": {"name": "held.1", "namespace": "default"},
                                 "involvedObject": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                                    "name": pg["metadata"]["name"], "namespace": "default",
                                                    "uid": pg["metadata"]["uid"]},
                                 "reason": "Unschedulable", "message": QUOTA_EVENT, "type": "Warning",
                                 "lastTimestamp": "2026-12-02T00:00:00Z"})
            cache = ClusterCache(client)
            assert await cache.start(sync_timeout=30)
            try:
                yield Dashboard(cache, None, None)  # type: ignore[arg-type]  # no pages served
            finally:
                await cache.stop()
        finally:
            await client.close()


def issues(d: Dashboard) -> list[v.Issue]:
    c = d.cache
    rows = v.scheduling_issues(c.list("Job"), c.list("PodGroup"), c.list("Queue"), c.list("RayJob"))
    assert [(r.type, r.details) for r in rows] == [("Job", ""), ("PodGroup", "")]  # nothing of their own
    return rows


def details(rows: list[v.Issue]) -> dict[str, str]:
    return {r.type: r.details for r in rows}


async def test_a_row_held_at_enqueue_gets_explains_verdict(dash: Dashboard) -> None:
    rows = issues(dash)
    await dash._issue_reasons(rows)
    objs: list[Any] = [o for k in ("Node", "Queue", "PodGroup", "Job", "Namespace") for o in dash.cache.list(k)]
    ex = explain(objs, "vcjob", "held", "default", default_conf())
    assert ex.gate == "enqueue-quota", ex.render()
    assert details(rows) == {"Job": f"enqueue-quota: {ex.reason}", "PodGroup": f"enqueue-quota: {ex.reason}"}
    assert "capability cpu 2" in ex.reason


async def test_past_the_explained_rows_a_row_gets_its_latest_event(dash: Dashboard, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Dashboard, "EXPLAINED_ISSUES", 0)
    rows = issues(dash)
    await dash._issue_reasons(rows)
    got = details(rows)
    assert got["Job"] == ""  # no Event of its own
    assert got["PodGroup"] == f"Unschedulable: {QUOTA_EVENT}"
