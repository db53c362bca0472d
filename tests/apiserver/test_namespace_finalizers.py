"""A Namespace's spec.finalizers names are checked as kube-apiserver checks them: on create at
``spec.finalizers``, through the ``finalize`` subresource at ``spec.finalizers[i]`` (trial 11
F-7: ``PUT .../finalize`` stored ``bad finalizer!``); nothing is stored on a refusal."""

from __future__ import annotations

import httpx2
import pytest

QUALIFIED = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
NOT_STANDARD = "name is neither a standard finalizer name nor is it fully qualified"


async def test_finalize_with_a_bad_finalizer_name_is_422_and_keeps_the_stored_spec(http: httpx2.AsyncClient) -> None:
    assert (await http.post("/api/v1/namespaces", json={"metadata": {"name": "t11f"}})).status_code == 201
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t11f"},
            "spec": {"finalizers": ["kubernetes", "bad finalizer!"]}}
    r = await http.put("/api/v1/namespaces/t11f/finalize", json=body)
    assert r.status_code == 422, r.text
    causes = r.json()["details"]["causes"]
    assert [(c["field"], c["message"]) for c in causes] == [
        ("spec.finalizers[1]", f'Invalid value: "bad finalizer!": {QUALIFIED}'),
        ("spec.finalizers[1]", f'Invalid value: "bad finalizer!": {NOT_STANDARD}'),
    ]
    assert (await http.get("/api/v1/namespaces/t11f")).json()["spec"] == {"finalizers": ["kubernetes"]}


@pytest.mark.parametrize(("finalizers", "code"), [
    (["kubernetes", "example.com/hold"], 200), (["orphan"], 200), ([], 200), (["hold"], 422),
])
async def test_finalize_takes_standard_and_qualified_names(
        http: httpx2.AsyncClient, finalizers: list[str], code: int) -> None:
    assert (await http.post("/api/v1/namespaces", json={"metadata": {"name": "t11g"}})).status_code == 201
    r = await http.put("/api/v1/namespaces/t11g/finalize",
                       json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t11g"},
                             "spec": {"finalizers": finalizers}})
    assert r.status_code == code, r.text
    stored = (await http.get("/api/v1/namespaces/t11g")).json()["spec"].get("finalizers", [])
    assert stored == (finalizers if code == 200 else ["kubernetes"])


async def test_create_with_a_bad_finalizer_name_is_422_at_the_unindexed_path(http: httpx2.AsyncClient) -> None:
    r = await http.post("/api/v1/namespaces", json={"metadata": {"name": "t11h"}, "spec": {"finalizers": ["hold"]}})
    assert r.status_code == 422, r.text
    assert [(c["field"], c["message"]) for c in r.json()["details"]["causes"]] == [
        ("spec.finalizers", f'Invalid value: "hold": {NOT_STANDARD}')]
    assert (await http.get("/api/v1/namespaces/t11h")).status_code == 404
