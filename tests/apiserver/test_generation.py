"""``metadata.generation`` only for the kinds whose upstream strategy sets it (trial 10 F-1: every
ConfigMap got generation 1, bumped on each data change; kube-apiserver 1.32 sets none)."""

from __future__ import annotations

import httpx2
import pytest

NS = "/api/v1/namespaces/default"


MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.mark.parametrize(("path", "body", "patch"), [
    (f"{NS}/configmaps", {"metadata": {"name": "c1"}, "data": {"a": "1"}}, {"data": {"a": "2"}}),
    (f"{NS}/secrets", {"metadata": {"name": "s1"}, "stringData": {"a": "1"}}, {"data": {"a": "Mg=="}}),
    (f"{NS}/services", {"metadata": {"name": "svc1"}, "spec": {"ports": [{"port": 80}]}},
     {"spec": {"ports": [{"port": 81}]}}),
])
async def test_kinds_whose_strategy_sets_no_generation_have_none(
        http: httpx2.AsyncClient, path: str, body: dict, patch: dict) -> None:
    r = await http.post(path, json=body)
    assert r.status_code == 201, r.text
    assert "generation" not in r.json()["metadata"]
    r = await http.patch(f"{path}/{body['metadata']['name']}", json=patch, headers=MERGE)
    assert r.status_code == 200, r.text
    assert "generation" not in r.json()["metadata"]


async def test_workloads_and_custom_resources_count_their_spec_changes(http: httpx2.AsyncClient) -> None:
    dep = {"metadata": {"name": "d1"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    r = await http.post("/apis/apps/v1/namespaces/default/deployments", json=dep)
    assert r.status_code == 201 and r.json()["metadata"]["generation"] == 1, r.text
    r = await http.patch("/apis/apps/v1/namespaces/default/deployments/d1", json={"spec": {"replicas": 3}},
                         headers=MERGE)
    assert r.json()["metadata"]["generation"] == 2
    r = await http.patch("/apis/apps/v1/namespaces/default/deployments/d1",
                         json={"metadata": {"labels": {"x": "y"}}}, headers=MERGE)
    assert r.json()["metadata"]["generation"] == 2
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"},
         "spec": {"weight": 1}}
    r = await http.post("/apis/scheduling.volcano.sh/v1beta1/queues", json=q)
    assert r.status_code == 201 and r.json()["metadata"]["generation"] == 1, r.text
