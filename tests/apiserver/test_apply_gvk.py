"""Server-side apply refuses a patch whose apiVersion or kind is not the endpoint's, a missing one
included, with fieldmanager's version-check text (``invalid object type: <GroupVersionKind>``),
for a new object and for an existing one, and leaves the stored object as it was (trial 11 F-8)."""

from __future__ import annotations

import json

import httpx2
import pytest

CM = "/api/v1/namespaces/default/configmaps/t11-apply"
APPLY = {"Content-Type": "application/apply-patch+yaml"}


@pytest.mark.parametrize(("patch", "gvk"), [
    ({"kind": "ConfigMap"}, "/, Kind=ConfigMap"),
    ({"apiVersion": "v2", "kind": "ConfigMap"}, "/v2, Kind=ConfigMap"),
    ({"apiVersion": "v1"}, "/v1, Kind="),
    ({"apiVersion": "v1", "kind": "Secret"}, "/v1, Kind=Secret"),
    ({"apiVersion": "apps/v1", "kind": "ConfigMap"}, "apps/v1, Kind=ConfigMap"),
    ({"apiVersion": "a/b/c", "kind": "ConfigMap"}, "/, Kind="),
    ({"apiVersion": 1, "kind": "ConfigMap"}, "/, Kind=ConfigMap"),
])
@pytest.mark.parametrize("exists", [False, True])
async def test_apply_with_another_group_version_kind_is_400_and_changes_nothing(
        http: httpx2.AsyncClient, patch: dict[str, object], gvk: str, exists: bool) -> None:
    if exists:
        r = await http.post("/api/v1/namespaces/default/configmaps",
                            json={"metadata": {"name": "t11-apply"}, "data": {"a": "1"}})
        assert r.status_code == 201
    before = await http.get(CM)
    body = {**patch, "metadata": {"name": "t11-apply"}, "data": {"z": "1"}}
    r = await http.patch(CM, params={"fieldManager": "t11"}, content=json.dumps(body), headers=APPLY)
    assert r.status_code == 400, r.text
    assert r.json()["reason"] == "BadRequest" and r.json()["message"] == f"invalid object type: {gvk}"
    after = await http.get(CM)
    assert after.status_code == before.status_code
    if exists:
        assert after.json() == before.json()


async def test_apply_with_the_endpoints_group_version_kind_still_applies(http: httpx2.AsyncClient) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t11-apply"}, "data": {"z": "1"}}
    r = await http.patch(CM, params={"fieldManager": "t11"}, content=json.dumps(body), headers=APPLY)
    assert r.status_code == 201 and r.json()["data"] == {"z": "1"}
