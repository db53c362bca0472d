"""In-process watches of objects (``KubeClient.watch(read_only=True)``, which informers use): the
events are the objects decoding the JSON lines gives, and where the object is served as stored
they are the API server's own stored objects, shared by every informer of the process. Writes
never change a stored object in place, so a shared object stays what it was when delivered; a
component that changes one is caught (``Store.changed_objects``, checked when a
``local_cluster`` ends and after every ``pumice simulate`` run)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any
from urllib.parse import urlencode

import msgspec
import pytest

from pumice.api import scheme
from pumice.client.informer import SharedInformerFactory
from pumice.client.kube import query_fields
from pumice.client.transport import DirectASGI
from pumice.simulate.runner import _check_stored_objects
from pumice.testing.cluster import local_cluster

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

GADGETS = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
             "versions": [{"name": name, "served": True, "storage": name == "v1",
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}
                          for name in ("v1", "v1beta1")]},
}


async def _stream(app: Any, path: str, query: dict[str, Any], *, objects: bool) -> tuple[int, list[Any]]:
    """A watch through the in-process transport, read until the server ends it: ``(status,
    events)``, each event ``(type, object)`` (JSON lines decoded when the answer is bytes), or
    the raw bytes of an answer that is not a stream of events."""
    status, chunks, close = await DirectASGI(app).stream("GET", path, urlencode(query_fields(query)).encode(),
                                                         [(b"accept", b"application/json")], objects=objects)
    got: list[Any] = []
    try:
        async for chunk in chunks:
            got.append(chunk)
    finally:
        await close()
    if any(type(c) is list for c in got):
        assert all(type(c) is list for c in got)
        return status, [pair for c in got for pair in c]
    raw = b"".join(got)
    if status != 200:
        return status, [raw]
    lines = [_decode(line) for line in raw.split(b"\n") if line]
    return status, [(ev["type"], ev["object"]) for ev in lines]


def _pod(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def test_a_watch_of_objects_gives_what_decoding_the_json_lines_gives() -> None:
    async with local_cluster(history=4) as c:
        await c.client.create(copy.deepcopy(GADGETS))
        start = (await c.client.list(scheme.POD, "default")).resource_version
        for i in range(4):
            await c.client.create(_pod(f"p{i}", i=str(i)))
            await c.client.create({"apiVersion": "example.com/v1", "kind": "Gadget",
                                   "metadata": {"name": f"g{i}", "namespace": "default"}, "spec": {"n": i}})
        await c.client.create({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
                               "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
                               "reason": "Pulled", "message": "pulled", "type": "Normal"})
        await c.client.patch(scheme.POD, "p2", {"metadata": {"labels": {"i": "9"}}}, "default")
        await c.client.delete(scheme.POD, "p3", "default", grace_period_seconds=0)
        now = int((await c.client.list(scheme.POD, "default")).resource_version)
        pods, gadgets = "/api/v1/namespaces/default/pods", "/apis/example.com/{}/namespaces/default/gadgets"
        cases: list[tuple[str, dict[str, Any]]] = [
            (pods, {"watch": "true", "resourceVersion": str(now - 3), "timeoutSeconds": 1}),
            # p2 leaves the selection: a DELETED event of its new state
            (pods, {"watch": "true", "resourceVersion": str(now - 3), "labelSelector": "i in (1,2)",
                    "timeoutSeconds": 1}),
            (pods, {"watch": "true", "timeoutSeconds": 1}),  # the current objects, as ADDED
            (pods, {"watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
                    "allowWatchBookmarks": "true", "timeoutSeconds": 1}),  # the end-of-initial-events BOOKMARK
            (gadgets.format("v1"), {"watch": "true", "timeoutSeconds": 1}),
            (gadgets.format("v1beta1"), {"watch": "true", "timeoutSeconds": 1}),  # served at another version
            ("/apis/events.k8s.io/v1/namespaces/default/events", {"watch": "true", "timeoutSeconds": 1}),  # converted
            ("/api/v1/namespaces/default/events", {"watch": "true", "timeoutSeconds": 1}),
            (pods, {"watch": "true", "resourceVersion": start, "timeoutSeconds": 1}),  # compacted: an ERROR event
            (pods, {"watch": "true", "resourceVersion": "x"}),  # 400
        ]
        stored = {id(s.obj) for res in c.server.store.resources() for s in c.server.store.list(res)}
        shared = 0
        got = await asyncio.gather(*(_stream(c.server.app, path, q, objects=o) for path, q in cases
                                     for o in (False, True)))
        for i, (path, q) in enumerate(cases):
            lines, objects = got[2 * i], got[2 * i + 1]
            assert objects == lines, (path, q)
            assert lines[0] != 200 or lines[1], (path, q)
            for etype, obj in objects[1] if objects[0] == 200 and isinstance(objects[1][0], tuple) else ():
                served_as_stored = "/v1beta1/" not in path and "events.k8s.io" not in path and etype != "BOOKMARK"
                if id(obj) in stored:
                    assert served_as_stored, (path, q, obj)  # never a stored object in another form
                    shared += 1
                elif q.get("resourceVersion") is None and etype == "ADDED" and served_as_stored:
                    pytest.fail(f"{path}: a current object served as stored was not shared")
        assert shared > 0
        v1beta1 = [o for _, o in (await _stream(c.server.app, gadgets.format("v1beta1"),
                                                {"watch": "true", "timeoutSeconds": 1}, objects=True))[1]]
        assert {o["apiVersion"] for o in v1beta1} == {"example.com/v1beta1"}
        assert c.server.store.watcher_count() == 0


async def test_informers_of_every_client_share_the_stored_object_and_a_write_replaces_it() -> None:
    async with local_cluster() as c:
        factories = [SharedInformerFactory(c.new_client()) for _ in range(2)]
        informers = [f.informer(scheme.POD, "default") for f in factories]
        seen: list[tuple[Any, Any]] = []
        informers[0].add_event_handler(None, lambda old, new: seen.append((old, new)))
        for f in factories:
            await f.start()
        await asyncio.gather(*(f.wait_for_cache_sync() for f in factories))
        await c.client.create(_pod("a", app="x"))
        await _until(lambda: all(i.store.get("default", "a") for i in informers))
        first = [i.store.get("default", "a") for i in informers]
        stored = c.server.store.get("/pods", "default", "a")
        assert stored is not None and first[0] is stored.obj and first[1] is stored.obj
        before = _encode(first[0])
        await c.client.patch(scheme.POD, "a", {"metadata": {"labels": {"app": "y"}}}, "default")
        await _until(lambda: all(i.store.get("default", "a")["metadata"]["labels"]["app"] == "y" for i in informers))
        # the stale value: the object delivered before the patch is unchanged, the new one is new
        assert _encode(first[0]) == before and first[0]["metadata"]["labels"] == {"app": "x"}
        second = informers[0].store.get("default", "a")
        assert second is not first[0] and second is informers[1].store.get("default", "a")
        assert seen[-1] == (first[0], second) and seen[-1][0] is first[0]
        # a watch that did not promise read-only use gets its own objects
        stream = c.client.watch(scheme.POD, "default", resource_version=stored.obj["metadata"]["resourceVersion"],
                                timeout_seconds=1, allow_bookmarks=False)
        own = [ev.object async for ev in stream]
        assert own == [second] and own[0] is not second
        for f in factories:
            await f.stop()


async def test_no_write_changes_a_stored_object_in_place() -> None:
    """Every kind of write to a Pod (create, merge/strategic/JSON patch, apply, update, status
    update, binding, graceful delete, finalizer removal) leaves the objects stored before it as
    they were: the informers' shared objects never change under them."""
    async with local_cluster() as c:
        factory = SharedInformerFactory(c.new_client())
        inf = factory.informer(scheme.POD, "default")
        delivered: list[tuple[Any, bytes]] = []
        deleted: list[Any] = []

        def keep(obj: Any) -> None:
            delivered.append((obj, _encode(obj)))

        inf.add_event_handler(keep, lambda _old, new: keep(new), lambda obj: (keep(obj), deleted.append(obj)))
        await factory.start()
        await factory.wait_for_cache_sync()
        await c.client.create({**_pod("w"), "metadata": {"name": "w", "namespace": "default",
                                                         "finalizers": ["example.com/hold"]}})
        await c.client.patch(scheme.POD, "w", {"metadata": {"labels": {"a": "1"}}}, "default")
        await c.client.patch(scheme.POD, "w", {"metadata": {"annotations": {"b": "2"}}}, "default",
                             patch_type="strategic")
        await c.client.patch(scheme.POD, "w", [{"op": "add", "path": "/metadata/labels/c", "value": "3"}], "default",
                             patch_type="json")
        await c.client.patch(scheme.POD, "w", {"apiVersion": "v1", "kind": "Pod",
                                               "metadata": {"name": "w", "labels": {"d": "4"}}}, "default",
                             patch_type="apply", field_manager="tester")
        live = await c.client.get(scheme.POD, "w", "default")
        live["metadata"]["labels"]["e"] = "5"
        live = await c.client.update(live)
        await c.client.patch(scheme.POD, "w", {"status": {"phase": "Pending", "message": "waiting"}}, "default",
                             subresource="status")
        await c.client.bind("default", "w", "node-1")
        await c.client.delete(scheme.POD, "w", "default", grace_period_seconds=30)
        await c.client.patch(scheme.POD, "w", {"metadata": {"finalizers": None}}, "default")
        await c.client.delete(scheme.POD, "w", "default", grace_period_seconds=0)
        await _until(lambda: bool(deleted))
        assert len(delivered) >= 10
        assert [enc for _, enc in delivered] == [_encode(obj) for obj, _ in delivered]
        assert c.server.store.changed_objects() == []
        await factory.stop()


async def test_a_handler_that_changes_an_informer_object_is_caught() -> None:
    with pytest.raises(AssertionError, match=r"changed in place.*/pods/default/bad"):
        async with local_cluster() as c:
            factory = SharedInformerFactory(c.new_client())
            inf = factory.informer(scheme.POD, "default")
            inf.add_event_handler(lambda obj: obj["metadata"].setdefault("labels", {}).update(touched="yes"))
            await factory.start()
            await factory.wait_for_cache_sync()
            await c.client.create(_pod("bad"))
            await _until(lambda: inf.store.get("default", "bad") is not None)
            changed = c.server.store.changed_objects()
            rv = c.server.store.get("/pods", "default", "bad").rv  # type: ignore[union-attr]
            assert changed == ["/pods/default/bad", f"/pods/default/bad (event {rv})"]
            with pytest.raises(RuntimeError, match="stored objects were changed in place by a component"):
                _check_stored_objects(c.server)
            await factory.stop()


async def _until(cond: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.01)


async def test_a_watcher_without_namespace_or_selectors_queues_every_event_as_the_filter_would() -> None:
    """The unfiltered fast path of ``Watcher.offer`` queues what the filter path queues."""
    from pumice.api.selectors import FieldSelector, LabelSelector
    from pumice.apiserver.store import ADDED, DELETED, MODIFIED, Event, Stored, Watcher

    def stored(rv: int, **labels: str) -> Stored:
        obj = {"metadata": {"name": "a", "namespace": "ns", "labels": labels, "resourceVersion": str(rv)}}
        return Stored(obj, _encode(obj), rv)

    s1, s2, s3 = stored(1), stored(2, x="y"), stored(3)
    events = [Event(ADDED, 1, "/pods", s1, None), Event(MODIFIED, 2, "/pods", s2, s1),
              Event(DELETED, 3, "/pods", s3, s2)]
    fast, slow = (Watcher("/pods", None, LabelSelector(), FieldSelector(), start_rv=0) for _ in range(2))
    slow.plain = False
    assert fast.plain and not Watcher("/pods", "ns", LabelSelector(), FieldSelector()).plain
    for ev in events:
        fast.offer(ev, 100)
        slow.offer(ev, 100)
    got = [[w.queue.get_nowait() for _ in range(3)] for w in (fast, slow)]
    assert got[0] == got[1] == [(ADDED, s1), (MODIFIED, s2), (DELETED, s3)]


async def test_a_delete_changes_no_stored_object_in_place() -> None:
    # a deleting object shares every value but its metadata with the stored one: the Namespace's
    # status (Terminating), a held Pod's deletion marks and a ConfigMap's finalizers go to the
    # new object only, and the stored (and shared) old ones keep their JSON
    async with local_cluster() as c:
        store = c.server.store
        await c.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
        await c.client.create(_pod("held"))
        await c.client.patch(scheme.POD, "held", {"spec": {"nodeName": "n1"}}, "default")
        await c.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "kept", "namespace": "default", "finalizers": ["x/y"]}})
        await c.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "final", "namespace": "default"}, "data": {"a": "b"}})
        before = {(r, s.obj["metadata"].get("namespace"), s.obj["metadata"]["name"]): s
                  for r in store.resources() for s in store.list(r)}
        await c.client.delete(scheme.NAMESPACE, "gone")
        await c.client.delete(scheme.POD, "held", "default", grace_period_seconds=30)
        await c.client.delete(scheme.CONFIG_MAP, "kept", "default", propagation_policy="Foreground")
        await c.client.delete(scheme.CONFIG_MAP, "final", "default")
        assert store.changed_objects() == []
        assert _decode(before[("/namespaces", None, "gone")].data)["status"] == {"phase": "Active"}
        ns = store.get("/namespaces", "", "gone")
        assert ns is not None and ns.obj["status"] == {"phase": "Terminating"}
        pod = store.get("/pods", "default", "held")
        assert pod is not None and pod.obj["metadata"]["deletionGracePeriodSeconds"] == 30
        assert "deletionTimestamp" not in before[("/pods", "default", "held")].obj["metadata"]
        kept = store.get("/configmaps", "default", "kept")
        assert kept is not None and kept.obj["metadata"]["finalizers"] == ["x/y", "foregroundDeletion"]
        assert before[("/configmaps", "default", "kept")].obj["metadata"]["finalizers"] == ["x/y"]
        assert store.get("/configmaps", "default", "final") is None
