"""Bool query parameters over HTTP, each read as kube-apiserver's parameter codec reads it: false
only for ``0`` or ``false`` (any case), true for anything else; the first of a repeated name counts.
Before, ``sendInitialEvents`` refused ``abc`` with a 400, and ``allowWatchBookmarks``, ``force``
and ``orphanDependents`` took only ``true`` or ``1``."""

from __future__ import annotations

import httpx2

from pumice.apiserver.authn import UserInfo
from pumice.apiserver.authz import request_attributes

CMS = "/api/v1/namespaces/default/configmaps"
APPLY = {"Content-Type": "application/apply-patch+yaml"}


async def test_send_initial_events_abc_is_set_so_a_list_is_refused_for_it(http: httpx2.AsyncClient) -> None:
    r = await http.get(CMS, params={"sendInitialEvents": "abc"})
    assert r.status_code == 422, r.text
    assert r.json()["message"] == ('ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
                                   "sendInitialEvents is forbidden for list")


async def test_a_watch_list_takes_yes_for_send_initial_events_and_bookmarks(http: httpx2.AsyncClient) -> None:
    assert (await http.post(CMS, json={"metadata": {"name": "one"}})).status_code == 201
    r = await http.get(CMS, params={"watch": "1", "sendInitialEvents": "yes", "allowWatchBookmarks": "Yes",
                                    "resourceVersionMatch": "NotOlderThan", "timeoutSeconds": "1"})
    assert r.status_code == 200, r.text
    assert '"type":"ADDED"' in r.text and "k8s.io/initial-events-end" in r.text, r.text


async def test_the_first_of_a_repeated_watch_counts(http: httpx2.AsyncClient) -> None:
    r = await http.get(f"{CMS}?watch=0&watch=1")
    assert r.status_code == 200 and r.json()["kind"] == "ConfigMapList", r.text


async def test_force_true_in_capitals_forces_an_apply_over_another_managers_field(http: httpx2.AsyncClient) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owned}\ndata: {k: %s}\n"
    r = await http.patch(f"{CMS}/owned", params={"fieldManager": "a"}, content=body % "a", headers=APPLY)
    assert r.status_code == 201, r.text
    r = await http.patch(f"{CMS}/owned", params={"fieldManager": "b"}, content=body % "b", headers=APPLY)
    assert r.status_code == 409, r.text
    r = await http.patch(f"{CMS}/owned", params={"fieldManager": "b", "force": "True"}, content=body % "b",
                         headers=APPLY)
    assert r.status_code == 200, r.text
    assert r.json()["data"] == {"k": "b"}


async def test_orphan_dependents_abc_orphans(http: httpx2.AsyncClient) -> None:
    assert (await http.post(CMS, json={"metadata": {"name": "o"}})).status_code == 201
    r = await http.delete(f"{CMS}/o", params={"orphanDependents": "abc"})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["finalizers"] == ["orphan"]


def test_a_get_of_a_collection_with_watch_true_in_capitals_is_authorized_as_a_watch() -> None:
    a = request_attributes(UserInfo("u"), "GET", CMS, {"watch": "TRUE"})
    assert a.verb == "watch"
    assert request_attributes(UserInfo("u"), "GET", CMS, {"watch": "False"}).verb == "list"
