"""A list's items as kube-apiserver writes them (differential run, session 16): a built-in kind's
items carry no apiVersion and kind (converting the internal list leaves each item's TypeMeta
empty), a custom resource's keep theirs; a Table's included objects and single reads keep them."""

from __future__ import annotations

import httpx2

from pumice.api import scheme
from pumice.apiserver.registry import list_item_tails

NS = "/api/v1/namespaces/default"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _cm(name: str, order: str) -> dict:
    """A ConfigMap body whose apiVersion and kind come first, last, in the middle or not at all."""
    md = {"name": name, "labels": {"list": "yes"}, "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": "u-1"}]}
    if order == "first":
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": {"a": "1"}}
    if order == "kind-first":
        return {"kind": "ConfigMap", "apiVersion": "v1", "metadata": md, "data": {"a": "1"}}
    if order == "middle":
        return {"metadata": md, "apiVersion": "v1", "data": {"a": "1"}, "kind": "ConfigMap"}
    return {"metadata": md, "data": {"a": "1"}}


async def test_built_in_list_items_carry_no_apiversion_or_kind(http: httpx2.AsyncClient) -> None:
    orders = ["first", "kind-first", "middle", "none"]
    for i, order in enumerate(orders):
        assert (await http.post(f"{NS}/configmaps", json=_cm(f"c{i}", order))).status_code == 201
    got = (await http.get(f"{NS}/configmaps", params={"labelSelector": "list=yes"})).json()
    assert (got["apiVersion"], got["kind"]) == ("v1", "ConfigMapList")
    assert [it["metadata"]["name"] for it in got["items"]] == ["c0", "c1", "c2", "c3"]
    for item in got["items"]:
        one = (await http.get(f"{NS}/configmaps/{item['metadata']['name']}")).json()
        assert (one["apiVersion"], one["kind"]) == ("v1", "ConfigMap")  # a single read keeps them
        assert item == {k: v for k, v in one.items() if k not in ("apiVersion", "kind")}
        # nested apiVersion/kind (an owner reference) stay
        assert item["metadata"]["ownerReferences"][0]["kind"] == "Pod"
    # the whole collection, unfiltered and unpaged
    everything = (await http.get(f"{NS}/configmaps")).json()["items"]
    assert everything and all("kind" not in it and "apiVersion" not in it for it in everything)
    # a Table's included objects are converted to the version one by one, with their kind
    table = (await http.get(f"{NS}/configmaps", params={"labelSelector": "list=yes", "includeObject": "Object"},
                            headers={"Accept": TABLE})).json()
    assert {(r["object"]["apiVersion"], r["object"]["kind"]) for r in table["rows"]} == {("v1", "ConfigMap")}
    # a deletecollection answers the list of what it deleted, items alike
    gone = (await http.delete(f"{NS}/configmaps", params={"labelSelector": "list=yes"})).json()
    assert gone["kind"] == "ConfigMapList" and len(gone["items"]) == 4
    assert all("kind" not in it and "apiVersion" not in it for it in gone["items"])


async def test_custom_resource_list_items_keep_apiversion_and_kind(http: httpx2.AsyncClient) -> None:
    resp = await http.post(QUEUES, json={"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                         "metadata": {"name": "q-list"}, "spec": {"weight": 1}})
    assert resp.status_code == 201, resp.text
    items = (await http.get(QUEUES)).json()["items"]
    mine = [it for it in items if it["metadata"]["name"] == "q-list"]
    assert [(it["apiVersion"], it["kind"]) for it in mine] == [("scheduling.volcano.sh/v1beta1", "Queue")]


def test_list_item_tails_cut_only_the_top_level_keys() -> None:
    rk = scheme.CONFIG_MAP
    want = b'{"metadata":{"name":"x","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap"}]},"data":{}}'
    datas = [b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","ownerReferences":'
             b'[{"apiVersion":"v1","kind":"ConfigMap"}]},"data":{}}',
             b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","ownerReferences":'
             b'[{"apiVersion":"v1","kind":"ConfigMap"}]},"data":{}}',
             b'{"metadata":{"name":"x","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap"}]},"data":{},'
             b'"apiVersion":"v1","kind":"ConfigMap"}',
             b'{"metadata":{"name":"x","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap"}]},'
             b'"apiVersion":"v1","data":{},"kind":"ConfigMap"}',
             want]
    tails = list_item_tails(rk, datas)
    assert [b"{" + bytes(t) for t in tails] == [want] * len(datas)
    assert b"[{" + b",{".join(tails) + b"]" == b"[" + b",".join([want] * len(datas)) + b"]"


async def test_built_in_objects_are_stored_with_apiversion_and_kind_first(http: httpx2.AsyncClient) -> None:
    """So a list cuts them off without decoding (list_item_tails), whatever order the body had."""
    for name, order in (("s0", "none"), ("s1", "middle"), ("s2", "kind-first")):
        got = (await http.post(f"{NS}/configmaps", json=_cm(name, order))).json()
        assert list(got)[:2] == ["apiVersion", "kind"]
