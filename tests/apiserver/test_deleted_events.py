"""What a watch sees when an object goes, as kube-apiserver's store writes it: a graceful delete
stores the deleting object first (a MODIFIED event), and the DELETED event carries the last
stored state at the removal's own resourceVersion (etcd's previous value, stamped with the delete
revision). Before, pumice removed a Pod whose grace period ended without storing the shortened
deletion, so its DELETED event kept the 30 s grace period and deletion time, and a shortened grace
period was counted from the second delete instead of the first.

Mirrors: apiserver pkg/registry/rest/delete.go (BeforeDelete), pkg/registry/generic/registry/
store.go (Delete, updateForGracefulDeletionAndFinalizers, deleteWithoutFinalizers),
pkg/storage/etcd3/watcher.go (a delete event's object: the previous value at the delete revision).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from pumice._util.clock import FakeClock, rfc3339
from pumice.api.scheme import ResourceKind
from pumice.client.base import WatchEvent
from pumice.testing.cluster import LocalCluster, local_cluster

from .builders import configmap, pod


@pytest.fixture
async def env() -> AsyncIterator[tuple[LocalCluster, FakeClock]]:
    clock = FakeClock()
    async with local_cluster(clock=clock) as c:
        yield c, clock


async def _events(c: LocalCluster, rk: ResourceKind, rv: str, n: int) -> list[WatchEvent]:
    """The first ``n`` events after ``rv`` (fewer when no more come within a second)."""
    out: list[WatchEvent] = []

    async def follow() -> None:
        async for ev in c.client.watch(rk, "default", resource_version=rv):
            if ev.type != "BOOKMARK":
                out.append(ev)
            if len(out) == n:
                return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(follow(), 1)
    return out


def _meta(ev: WatchEvent, *keys: str) -> tuple[object, ...]:
    md = ev.object["metadata"]
    return (ev.type, *(md.get(k) for k in keys))


async def test_a_pod_deleted_with_grace_then_confirmed_with_0_goes_in_its_shortened_state(
        env: tuple[LocalCluster, FakeClock]) -> None:
    c, clock = env
    pods = c.scheme.by_api_version_kind("v1", "Pod")
    assert pods is not None
    created = await c.client.create(pod("g", node="n1"))
    start = clock.now()
    await c.client.delete(pods, "g", "default", grace_period_seconds=30)
    clock.advance(5)  # the node agent stops the containers, then confirms with grace 0 (and the uid)
    answer = await c.client.delete(pods, "g", "default", grace_period_seconds=0,
                                   preconditions={"uid": created["metadata"]["uid"]})
    keys = ("deletionTimestamp", "deletionGracePeriodSeconds", "generation")
    evs = await _events(c, pods, created["metadata"]["resourceVersion"], 3)
    assert [_meta(e, *keys) for e in evs] == [
        ("MODIFIED", rfc3339(start + 30), 30, 2),
        ("MODIFIED", rfc3339(start), 0, 2),  # the 0 s period counts from the first delete
        ("DELETED", rfc3339(start), 0, 2)]
    rvs = [int(e.object["metadata"]["resourceVersion"]) for e in evs]
    assert rvs[0] < rvs[1] < rvs[2]
    assert evs[2].object == {**evs[1].object, "metadata": {**evs[1].object["metadata"], "resourceVersion": str(rvs[2])}}
    assert answer == evs[2].object


async def test_a_configmap_deleted_at_once_goes_as_it_was_stored(env: tuple[LocalCluster, FakeClock]) -> None:
    c, _ = env
    cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
    assert cms is not None
    created = await c.client.create(configmap("c", data={"a": "b"}))
    await c.client.delete(cms, "c", "default")
    [ev] = await _events(c, cms, created["metadata"]["resourceVersion"], 1)
    assert ev.type == "DELETED"
    assert int(ev.object["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert ev.object == {**created, "metadata": {**created["metadata"],
                                                 "resourceVersion": ev.object["metadata"]["resourceVersion"]}}


async def test_an_object_whose_finalizers_are_removed_last_goes_with_them_in_its_deleted_event(
        env: tuple[LocalCluster, FakeClock]) -> None:
    # the update that empties the finalizers is never stored: the store removes the object
    # as it was (deleteWithoutFinalizers), so the DELETED event still lists the finalizer
    c, clock = env
    cms = c.scheme.by_api_version_kind("v1", "ConfigMap")
    assert cms is not None
    cm = configmap("f")
    cm["metadata"]["finalizers"] = ["example.com/hold"]
    created = await c.client.create(cm)
    marked = await c.client.delete(cms, "f", "default")
    assert marked is not None
    clock.advance(5)
    await c.client.patch(cms, "f", {"metadata": {"finalizers": None}}, "default")
    keys = ("deletionTimestamp", "deletionGracePeriodSeconds", "finalizers")
    evs = await _events(c, cms, created["metadata"]["resourceVersion"], 2)
    assert [_meta(e, *keys) for e in evs] == [
        ("MODIFIED", marked["metadata"]["deletionTimestamp"], 0, ["example.com/hold"]),
        ("DELETED", marked["metadata"]["deletionTimestamp"], 0, ["example.com/hold"])]
    assert int(evs[1].object["metadata"]["resourceVersion"]) > int(evs[0].object["metadata"]["resourceVersion"])
