"""List and watch: selectors, pagination, resume, 410, bookmarks, selector transitions."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from pumice.client.base import ApiError, WatchEvent, is_gone
from pumice.testing.cluster import LocalCluster, local_cluster

from .builders import configmap, pod


async def collect(it, n: int) -> list[WatchEvent]:
    out = []
    async for ev in it:
        if ev.type == "BOOKMARK":
            continue
        out.append(ev)
        if len(out) == n:
            break
    return out


async def test_label_selectors(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("a", labels={"app": "x", "tier": "1"}))
    await cluster.client.create(pod("b", labels={"app": "y"}))
    await cluster.client.create(pod("c"))

    async def names(sel: str) -> list[str]:
        return [p["metadata"]["name"] for p in (await cluster.client.list(pods, "default", label_selector=sel)).items]

    assert await names("app=x") == ["a"]
    assert await names("app!=x") == ["b", "c"]
    assert await names("app in (x,y)") == ["a", "b"]
    assert await names("app notin (x)") == ["b", "c"]
    assert await names("app") == ["a", "b"]
    assert await names("!app") == ["c"]
    assert await names("app=x,tier==1") == ["a"]


async def test_pagination_with_limit_and_continue(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    for i in range(5):
        await cluster.client.create(configmap(f"c{i}"))
    first = await cluster.client.list(cms, "default", limit=2)
    assert [c["metadata"]["name"] for c in first.items] == ["c0", "c1"] and first.continue_
    second = await cluster.client.list(cms, "default", limit=2, continue_=first.continue_)
    third = await cluster.client.list(cms, "default", limit=2, continue_=second.continue_)
    assert [c["metadata"]["name"] for c in second.items + third.items] == ["c2", "c3", "c4"]
    assert third.continue_ == ""


async def test_watch_resumes_from_resource_version(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    a = await cluster.client.create(configmap("a"))
    await cluster.client.create(configmap("b"))
    await cluster.client.delete(cms, "a", "default")
    evs = await collect(cluster.client.watch(cms, "default", resource_version=a["metadata"]["resourceVersion"]), 2)
    assert [(e.type, e.object["metadata"]["name"]) for e in evs] == [("ADDED", "b"), ("DELETED", "a")]


async def test_watch_without_resource_version_starts_with_current_objects(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    await cluster.client.create(configmap("a"))
    it = cluster.client.watch(cms, "default")
    task = asyncio.create_task(collect(it, 2))
    await asyncio.sleep(0.01)
    await cluster.client.create(configmap("b"))
    evs = await asyncio.wait_for(task, 5)
    assert [(e.type, e.object["metadata"]["name"]) for e in evs] == [("ADDED", "a"), ("ADDED", "b")]


async def test_watch_from_compacted_version_is_gone() -> None:
    async with local_cluster(history=3, install_crds=False) as c:
        cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
        first = await c.client.create(configmap("a"))
        for i in range(5):
            await c.client.create(configmap(f"b{i}"))
        with pytest.raises(ApiError) as e:
            await collect(c.client.watch(cms, "default", resource_version=first["metadata"]["resourceVersion"]), 1)
        assert is_gone(e.value) and e.value.reason == "Expired"


async def test_watch_label_selector_turns_unmatching_update_into_deleted(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    p = await cluster.client.create(pod("a", labels={"app": "x"}))
    it = cluster.client.watch(pods, "default", resource_version=p["metadata"]["resourceVersion"],
                              label_selector="app=x")
    task = asyncio.create_task(collect(it, 2))
    await asyncio.sleep(0.01)
    await cluster.client.patch(pods, "a", {"metadata": {"labels": {"app": "y"}}}, "default")
    await cluster.client.patch(pods, "a", {"metadata": {"labels": {"app": "x"}}}, "default")
    evs = await asyncio.wait_for(task, 5)
    assert [e.type for e in evs] == ["DELETED", "ADDED"]


async def test_watch_timeout_seconds_ends_the_stream() -> None:
    async with local_cluster(install_crds=False) as c:
        cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
        lst = await c.client.list(cms, "default")
        evs = [ev async for ev in c.client.watch(cms, "default", resource_version=lst.resource_version,
                                                 timeout_seconds=0, allow_bookmarks=False)]
        assert evs == []


async def test_bookmarks_carry_the_current_revision() -> None:
    async with local_cluster(install_crds=False, bookmark_interval=0.01) as c:
        cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
        lst = await c.client.list(cms, "default")
        async for ev in c.client.watch(cms, "default", resource_version=lst.resource_version):
            assert ev.type == "BOOKMARK"
            assert int(ev.object["metadata"]["resourceVersion"]) >= int(lst.resource_version)
            break


@pytest.mark.looptime
async def test_without_a_bookmark_interval_a_watch_sends_events_and_never_a_bookmark() -> None:
    # pumice simulate's server: bookmarks off, watches without timeoutSeconds (they last until
    # closed); a long idle stretch of virtual time sends nothing, then the next event comes
    async with local_cluster(install_crds=False, bookmark_interval=None) as c:
        cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
        start = (await c.client.list(cms, "default")).resource_version
        seen: list[str] = []

        async def consume() -> None:
            async for ev in c.client.watch(cms, "default", resource_version=start):
                seen.append(f"{ev.type} {ev.object['metadata'].get('name', '')}")

        task = asyncio.create_task(consume())
        await asyncio.sleep(10**7)
        assert seen == []
        await c.client.create(configmap("after"))
        for _ in range(20):
            await asyncio.sleep(0)
        assert seen == ["ADDED after"]
        assert not task.done()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_many_watchers_each_see_every_event_in_order(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    lst = await cluster.client.list(cms, "default")
    tasks = [asyncio.create_task(collect(cluster.client.watch(cms, "default", resource_version=lst.resource_version),
                                         20)) for _ in range(10)]
    await asyncio.sleep(0.01)
    for i in range(20):
        await cluster.client.create(configmap(f"c{i:02d}"))
    results = await asyncio.wait_for(asyncio.gather(*tasks), 10)
    for evs in results:
        assert [e.object["metadata"]["name"] for e in evs] == [f"c{i:02d}" for i in range(20)]


async def test_a_closed_watch_unregisters_its_watcher(cluster: LocalCluster) -> None:
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    await cluster.client.create(configmap("a"))
    before = cluster.server.store.watcher_count()
    evs = await collect(cluster.client.watch(cms, "default"), 1)
    assert evs[0].object["metadata"]["name"] == "a"
    for _ in range(10):
        await asyncio.sleep(0)
    assert cluster.server.store.watcher_count() == before


async def test_watch_by_node_name_gets_only_that_nodes_pods(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    lst = await cluster.client.list(pods, None)
    task = asyncio.create_task(collect(cluster.client.watch(pods, None, resource_version=lst.resource_version,
                                                            field_selector="spec.nodeName=n2"), 3))
    await asyncio.sleep(0.01)
    await cluster.client.create(pod("a"))
    await cluster.client.create(pod("b"))
    await cluster.client.bind("default", "a", "n1")
    await cluster.client.bind("default", "b", "n2")
    await cluster.client.delete(pods, "b", "default", grace_period_seconds=0)
    evs = await asyncio.wait_for(task, 5)
    # a Pod's delete stores its deletionTimestamp before it removes it, even with grace 0
    assert [(e.type, e.object["metadata"]["name"]) for e in evs] == [("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "b")]


@pytest.mark.looptime
async def test_a_bookmark_never_carries_a_revision_whose_event_is_still_to_come() -> None:
    # a write published in the loop iteration in which the bookmark wait times out (its item is
    # queued, the stream's wait ends with TimeoutError anyway): the BOOKMARK sent then must not
    # carry that write's revision before its event, or a client resuming from the bookmark loses it
    async with local_cluster(install_crds=False, bookmark_interval=1.0) as c:
        cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
        start = int((await c.client.list(cms, "default")).resource_version)
        seen: list[tuple[str, int]] = []

        async def consume() -> None:
            async for ev in c.client.watch(cms, "default", resource_version=str(start)):
                seen.append((ev.type, int(ev.object["metadata"]["resourceVersion"])))

        task = asyncio.create_task(consume())
        for _ in range(20):  # the stream reaches its bookmark wait; no virtual time passes
            await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        # due at the same instant as the wait's timeout, scheduled after it: runs right after it
        loop.call_at(loop.time() + 1.0, lambda: c.server.store.put("/configmaps", configmap("late")))
        await asyncio.sleep(3.5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        events = [rv for t, rv in seen if t != "BOOKMARK"]
        assert events == [start + 1], seen
        for i, (t, rv) in enumerate(seen):
            if t == "BOOKMARK":
                later = [e for tt, e in seen[i + 1:] if tt != "BOOKMARK"]
                assert all(e > rv for e in later), seen


async def test_a_write_that_changes_nothing_keeps_the_resource_version_and_notifies_no_watcher(
        cluster: LocalCluster) -> None:
    """As kube-apiserver's GuaranteedUpdate: an update, a status patch or a patch whose result
    equals the stored object is answered with the stored object; nothing is written."""
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    cms = cluster.scheme.by_api_version_kind("v1", "ConfigMap")
    p = await cluster.client.create(pod("a", labels={"app": "x"}))
    p = await cluster.client.patch(pods, "a", {"status": {"phase": "Running"}}, "default", subresource="status")
    rv = p["metadata"]["resourceVersion"]
    events = cluster.client.watch(pods, "default", resource_version=rv)
    same = [
        await cluster.client.update(p),
        await cluster.client.update_status(p),
        await cluster.client.patch(pods, "a", {"status": {"phase": "Running"}}, "default", subresource="status"),
        await cluster.client.patch(pods, "a", {"metadata": {"labels": {"app": "x"}}}, "default"),
    ]
    assert [s["metadata"]["resourceVersion"] for s in same] == [rv] * 4
    await cluster.client.create(configmap("after"))  # a later write, to see the store's revision moved by one
    cm = await cluster.client.get(cms, "after", "default")
    assert int(cm["metadata"]["resourceVersion"]) == int(rv) + 1
    changed = await cluster.client.patch(pods, "a", {"metadata": {"labels": {"app": "y"}}}, "default")
    got = await asyncio.wait_for(collect(events, 1), 10)
    assert [(e.type, e.object["metadata"]["resourceVersion"]) for e in got] == [
        ("MODIFIED", changed["metadata"]["resourceVersion"])]
