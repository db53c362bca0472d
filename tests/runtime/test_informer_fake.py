"""Informer behaviour against the in-memory FakeClient: list+watch, handlers, indexers, 410 relist,
bookmarks, error backoff. (The same behaviour against the real API server: test_informer_cluster.py.)
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from pumice._util.clock import LoopClock
from pumice.client.base import ApiError
from pumice.client.informer import SharedInformerFactory, matches_labels
from pumice.testing.fake_client import FakeClient

from .conftest import CONFIGMAP, NAMESPACE, SECRET, configmap, eventually, secret


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        self.events.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(("update", new["metadata"]["name"]))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", obj["metadata"]["name"]))

    def register(self, inf: Any) -> None:
        inf.add_event_handler(self.on_add, self.on_update, self.on_delete)


@pytest.fixture
async def fake() -> FakeClient:
    return FakeClient(clock=LoopClock())


async def test_informer_lists_existing_objects_then_follows_the_watch(fake: FakeClient) -> None:
    await fake.create(configmap("a"))
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP)
    rec = Recorder()
    rec.register(inf)
    await factory.start()
    assert await factory.wait_for_cache_sync(timeout=5)
    assert rec.events == [("add", "a")]
    got = inf.lister.get("default", "a")
    assert got is not None
    assert got["kind"] == "ConfigMap" and got["apiVersion"] == "v1", "list items get apiVersion/kind"

    await fake.create(configmap("b"))
    live = await fake.get(CONFIGMAP, "a", "default")
    live["data"] = {"k": "v"}
    await fake.update(live)
    await fake.delete(CONFIGMAP, "b", "default")
    await eventually(lambda: len(rec.events) == 4)
    assert rec.events[1:] == [("add", "b"), ("update", "a"), ("delete", "b")]
    assert inf.store.get("default", "a")["data"] == {"k": "v"}
    assert inf.store.get("default", "b") is None
    await factory.stop()


async def test_factory_shares_one_informer_per_kind_and_namespace(fake: FakeClient) -> None:
    factory = SharedInformerFactory(fake)
    assert factory.informer(CONFIGMAP) is factory.informer(CONFIGMAP)
    assert factory.informer("configmaps") is factory.informer(CONFIGMAP)
    assert factory.informer(CONFIGMAP, "ns1") is not factory.informer(CONFIGMAP)
    assert factory.informer(NAMESPACE, "ignored") is factory.informer(NAMESPACE), "cluster-scoped"
    with pytest.raises(ValueError, match="unknown kind"):
        factory.informer("nosuchthings")


async def test_namespaced_informer_sees_only_its_namespace(fake: FakeClient) -> None:
    await fake.create(configmap("a", "ns1"))
    await fake.create(configmap("b", "ns2"))
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP, "ns1")
    await factory.start()
    await factory.wait_for_cache_sync()
    await fake.create(configmap("c", "ns2"))
    await fake.create(configmap("d", "ns1"))
    await eventually(lambda: inf.store.get("ns1", "d") is not None)
    assert [o["metadata"]["name"] for o in inf.store.list()] == ["a", "d"]
    await factory.stop()


async def test_store_indexes_by_namespace_owner_label_and_custom_functions(fake: FakeClient) -> None:
    owner = await fake.create(configmap("owner", "ns1"))
    await fake.create(configmap("x", "ns1", labels={"app": "web"}))
    await fake.create(configmap("y", "ns2", labels={"app": "web", "tier": "db"}))
    await fake.create(configmap("z", "ns1", labels={"app": "api"}, owner=owner))
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP)
    inf.add_indexer("data-keys", lambda o: sorted(o.get("data") or {}))
    await factory.start()
    await factory.wait_for_cache_sync()
    store = inf.store

    def names(objs: list[dict[str, Any]]) -> list[str]:
        return [o["metadata"]["name"] for o in objs]

    assert names(store.by_index("namespace", "ns1")) == ["owner", "x", "z"]
    assert names(store.by_index("owner-uid", owner["metadata"]["uid"])) == ["z"]
    assert names(store.by_index("label:app", "web")) == ["x", "y"]
    assert names(store.list(namespace="ns1", label_selector={"app": "web"})) == ["x"]
    assert names(store.list(label_selector={"matchExpressions": [
        {"key": "tier", "operator": "DoesNotExist"}], "matchLabels": {"app": "web"}})) == ["x"]
    with pytest.raises(KeyError, match="no index"):
        store.by_index("nope", "x")

    live = await fake.get(CONFIGMAP, "x", "ns1")
    live["metadata"]["labels"] = {"app": "api"}
    live["data"] = {"k": "v"}
    await fake.update(live)
    await eventually(lambda: names(store.by_index("label:app", "api")) == ["x", "z"])
    assert names(store.by_index("label:app", "web")) == ["y"], "old index values are removed on update"
    assert names(store.by_index("data-keys", "k")) == ["x"]
    await factory.stop()


def test_label_selector_operators() -> None:
    labels = {"a": "1", "b": "2"}
    assert matches_labels(labels, None)
    assert matches_labels(labels, {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "3"]}]})
    assert not matches_labels(labels, {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]})
    assert matches_labels(labels, {"matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["1"]}]})
    assert matches_labels(labels, {"matchExpressions": [{"key": "b", "operator": "Exists"}]})
    with pytest.raises(ValueError, match="unknown label selector operator"):
        matches_labels(labels, {"matchExpressions": [{"key": "b", "operator": "Gt"}]})


async def test_a_handler_added_after_sync_receives_the_cached_objects_as_adds(fake: FakeClient) -> None:
    await fake.create(configmap("b"))
    await fake.create(configmap("a"))
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP)
    await factory.start()
    await factory.wait_for_cache_sync()
    rec = Recorder()
    rec.register(inf)
    assert rec.events == [("add", "a"), ("add", "b")]
    await factory.stop()


async def test_a_failing_handler_does_not_stop_the_informer(
    fake: FakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP)

    def boom(obj: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    inf.add_event_handler(on_add=boom)
    rec = Recorder()
    rec.register(inf)
    await factory.start()
    await factory.wait_for_cache_sync()
    await fake.create(configmap("a"))
    await fake.create(configmap("b"))
    await eventually(lambda: rec.events == [("add", "a"), ("add", "b")])
    await factory.stop()
    failed = [r for r in caplog.records if "event handler" in r.getMessage()]
    assert [r.getMessage() for r in failed] == [
        f"informer configmaps: event handler {boom.__qualname__} failed on default/{n}" for n in ("a", "b")
    ]
    assert all(r.exc_info and "handler bug" in str(r.exc_info[1]) for r in failed)


@pytest.mark.looptime
async def test_watch_expired_410_on_rewatch_relists_and_emits_the_differences(fake: FakeClient) -> None:
    await fake.create(configmap("keep"))
    await fake.create(configmap("gone"))
    await fake.create(configmap("changed"))
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP)
    rec = Recorder()
    rec.register(inf)
    await factory.start()
    await factory.wait_for_cache_sync()
    assert inf.relists == 1

    def refuse_watch(verb: str, plural: str, ns: str, name: str) -> None:
        if verb == "watch":
            raise ApiError(500, "InternalError", "watch unavailable")

    fake.interceptor = refuse_watch
    await fake.close_watches()
    await asyncio.sleep(0.1)  # the informer is now backing off
    fake.interceptor = None
    await fake.delete(CONFIGMAP, "gone", "default")
    live = await fake.get(CONFIGMAP, "changed", "default")
    live["data"] = {"v": "2"}
    await fake.update(live)
    await fake.create(configmap("new"))
    fake.compact()
    rec.events.clear()

    await eventually(lambda: inf.relists == 2, timeout=60)
    assert sorted(rec.events) == [("add", "new"), ("delete", "gone"), ("update", "changed")]
    assert [o["metadata"]["name"] for o in inf.store.list()] == ["changed", "keep", "new"]
    await fake.create(configmap("after"))
    await eventually(lambda: inf.store.get("default", "after") is not None)
    await factory.stop()


async def test_watch_error_event_410_relists(fake: FakeClient) -> None:
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP)
    await factory.start()
    await factory.wait_for_cache_sync()
    await fake.expire_watches()
    await fake.create(configmap("a"))
    await eventually(lambda: inf.relists == 2)
    await eventually(lambda: inf.store.get("default", "a") is not None)
    await factory.stop()


@pytest.mark.looptime
async def test_watch_errors_back_off_and_resume_without_relisting(fake: FakeClient) -> None:
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP)
    await factory.start()
    await factory.wait_for_cache_sync()
    failures = []

    def flaky(verb: str, plural: str, ns: str, name: str) -> None:
        if verb == "watch" and len(failures) < 3:
            failures.append(asyncio.get_running_loop().time())
            raise ApiError(503, "ServiceUnavailable", "try later")

    fake.interceptor = flaky
    await fake.close_watches()
    await fake.create(configmap("a"))
    await eventually(lambda: inf.store.get("default", "a") is not None, timeout=60)
    assert len(failures) == 3
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(failures)]
    assert gaps == [0.8, 1.6], "exponential backoff between attempts"
    assert inf.relists == 1, "a resumable error keeps the resourceVersion"
    await factory.stop()


async def test_bookmarks_advance_the_resource_version(fake: FakeClient) -> None:
    factory = SharedInformerFactory(fake)
    inf = factory.informer(SECRET)
    await factory.start()
    await factory.wait_for_cache_sync()
    await fake.create(configmap("other-kind"))
    await fake.bookmark(SECRET)
    await eventually(lambda: inf.resource_version == str(fake.resource_version))
    assert len(inf.store) == 0
    await factory.stop()


async def test_informer_created_after_start_is_started(fake: FakeClient) -> None:
    factory = SharedInformerFactory(fake)
    await factory.start()
    await fake.create(secret("s"))
    inf = factory.informer(SECRET)
    assert await factory.wait_for_cache_sync([inf], timeout=5)
    assert inf.store.get("default", "s") is not None
    await factory.stop()


@pytest.mark.looptime
async def test_resync_calls_update_with_the_same_object(fake: FakeClient) -> None:
    await fake.create(configmap("a"))
    factory = SharedInformerFactory(fake, resync_period=30)
    inf = factory.informer(CONFIGMAP)
    updates: list[bool] = []
    inf.add_event_handler(on_update=lambda old, new: updates.append(old is new))
    await factory.start()
    await factory.wait_for_cache_sync()
    await asyncio.sleep(65)
    assert updates == [True, True]
    await factory.stop()


def a_pod(name: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


async def test_a_field_selected_informer_sees_objects_enter_and_leave_its_selection(fake: FakeClient) -> None:
    from .conftest import POD

    await fake.create(a_pod("on-n1", "n1"))
    await fake.create(a_pod("pending"))
    factory = SharedInformerFactory(fake)
    on_n1 = factory.informer(POD, field_selector="spec.nodeName=n1")
    unassigned = factory.informer(POD, field_selector="spec.nodeName=")
    assert on_n1 is factory.informer(POD, field_selector="spec.nodeName=n1")
    assert on_n1 is not factory.informer(POD)
    await factory.start()
    await factory.wait_for_cache_sync()
    assert on_n1.store.keys() == ["default/on-n1"]
    assert unassigned.store.keys() == ["default/pending"]
    await fake.bind("default", "pending", "n1")
    await eventually(lambda: on_n1.store.keys() == ["default/on-n1", "default/pending"])
    await eventually(lambda: unassigned.store.keys() == [])
    await factory.stop()


@pytest.mark.looptime
async def test_watches_that_end_at_once_are_reopened_at_a_bounded_rate(fake: FakeClient) -> None:
    opened: list[float] = []

    class ClosingAtOnce:
        scheme = fake.scheme

        async def list(self, *a: Any, **kw: Any) -> Any:
            return await fake.list(*a, **kw)

        async def watch(self, *a: Any, **kw: Any) -> Any:
            opened.append(asyncio.get_running_loop().time())
            return
            yield

    factory = SharedInformerFactory(ClosingAtOnce())  # type: ignore[arg-type]
    factory.informer(CONFIGMAP)
    await factory.start()
    await factory.wait_for_cache_sync()
    await asyncio.sleep(10)
    await factory.stop()
    assert 10 <= len(opened) <= 14, len(opened)


async def test_a_memory_error_in_a_handler_is_not_carried_on_it_ends_the_informer(fake: FakeClient) -> None:
    """A handler that runs out of memory was logged like any failing handler and the informer went
    on; a MemoryError is fatal (pumice._util.errors.FATAL_TYPES): the informer's task ends with it
    and its owner hears of it (SharedInformerFactory.on_failure; the Manager stops)."""
    factory = SharedInformerFactory(fake)
    failures: list[tuple[str, BaseException]] = []
    factory.on_failure = lambda inf, e: failures.append((inf.kind.plural, e))
    inf = factory.informer(CONFIGMAP)

    def out_of_memory(obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "b":
            raise MemoryError("injected")

    inf.add_event_handler(on_add=out_of_memory)
    await factory.start()
    await factory.wait_for_cache_sync()
    await fake.create(configmap("a"))
    await fake.create(configmap("b"))
    await eventually(lambda: bool(failures))
    assert [(plural, str(e)) for plural, e in failures] == [("configmaps", "injected")]
    task = inf.task
    assert task is not None and task.done() and isinstance(task.exception(), MemoryError)
    await factory.stop()


async def test_a_memory_error_while_listing_is_not_retried(fake: FakeClient) -> None:
    """The reflector retried every list/watch failure with backoff, a MemoryError too (for ever)."""
    calls: list[str] = []

    async def list_out_of_memory(*args: Any, **kwargs: Any) -> Any:
        calls.append("list")
        raise MemoryError("injected")

    fake.list = list_out_of_memory  # type: ignore[method-assign]
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP)
    await factory.start()
    task = inf.task
    assert task is not None
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(task, 5)
    assert calls == ["list"]
    await factory.stop()


async def test_wait_synced_raises_what_ended_the_informer_before_its_first_list(fake: FakeClient) -> None:
    """A handler that ran out of memory on the first list ended the informer before it synced:
    wait_for_cache_sync waited for ever (a scheduler never started, nor failed)."""
    await fake.create(configmap("a"))
    factory = SharedInformerFactory(fake)
    inf = factory.informer(CONFIGMAP)

    def out_of_memory(obj: dict[str, Any]) -> None:
        raise MemoryError("injected")

    inf.add_event_handler(on_add=out_of_memory)
    await factory.start()
    with pytest.raises(MemoryError, match="injected"):
        await asyncio.wait_for(factory.wait_for_cache_sync(), 5)
    await factory.stop()
