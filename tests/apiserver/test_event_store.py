"""One Event store behind core/v1 and events.k8s.io/v1, with kube-apiserver's field mapping."""

from __future__ import annotations

import asyncio

from pumice.api.selectors import parse_field_selector, parse_label_selector
from pumice.testing.cluster import LocalCluster


def v1_event(name: str, regarding: str) -> dict:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.io/operator",
            "reportingInstance": "operator-0", "action": "Reconcile", "reason": "Created", "type": "Normal",
            "note": "created the head Pod",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": regarding, "namespace": "default"}}


def core_event(name: str, involved: str) -> dict:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": involved, "namespace": "default"},
            "reason": "Pulled", "message": "image pulled", "type": "Normal", "count": 2,
            "source": {"component": "kubelet"}, "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:05Z", "reportingComponent": "kubelet"}


async def test_an_events_v1_event_is_a_core_event_with_mapped_fields(cluster: LocalCluster) -> None:
    await cluster.client.create(v1_event("e1", "head"))
    core = cluster.scheme.by_api_version_kind("v1", "Event")
    got = await cluster.client.get(core, "e1", "default")
    assert got["apiVersion"] == "v1"
    assert got["involvedObject"]["name"] == "head" and got["message"] == "created the head Pod"
    assert got["reportingComponent"] == "example.io/operator" and got["reportingInstance"] == "operator-0"
    assert "regarding" not in got and "note" not in got


async def test_a_core_event_is_served_by_events_k8s_io(cluster: LocalCluster) -> None:
    await cluster.client.create(core_event("e2", "worker"))
    v1 = cluster.scheme.by_api_version_kind("events.k8s.io/v1", "Event")
    got = await cluster.client.get(v1, "e2", "default")
    assert got["apiVersion"] == "events.k8s.io/v1"
    assert got["regarding"]["name"] == "worker" and got["note"] == "image pulled"
    assert got["deprecatedSource"] == {"component": "kubelet"} and got["deprecatedCount"] == 2
    assert got["deprecatedFirstTimestamp"] == "2026-01-01T00:00:00Z"
    assert got["reportingController"] == "kubelet"


async def test_both_apis_list_the_same_events_and_select_by_their_own_field_names(cluster: LocalCluster) -> None:
    await cluster.client.create(v1_event("a", "p1"))
    await cluster.client.create(core_event("b", "p2"))
    core = cluster.scheme.by_api_version_kind("v1", "Event")
    v1 = cluster.scheme.by_api_version_kind("events.k8s.io/v1", "Event")
    assert sorted(e["metadata"]["name"] for e in (await cluster.client.list(core, "default")).items) == ["a", "b"]
    assert sorted(e["metadata"]["name"] for e in (await cluster.client.list(v1, "default")).items) == ["a", "b"]
    reg = cluster.server.registry
    items, *_ = reg.list(v1, "default", labels=parse_label_selector(""),
                         fields=parse_field_selector("regarding.name=p2"))
    assert [s.obj["metadata"]["name"] for s in items] == ["b"]
    items, *_ = reg.list(core, "default", labels=parse_label_selector(""),
                         fields=parse_field_selector("involvedObject.name=p1"))
    assert [s.obj["metadata"]["name"] for s in items] == ["a"]


async def test_an_events_v1_watch_sees_core_events_in_its_own_form(cluster: LocalCluster) -> None:
    v1 = cluster.scheme.by_api_version_kind("events.k8s.io/v1", "Event")
    reg = cluster.server.registry
    w = reg.watch(v1, "default", resource_version=str(reg.store.revision), labels=parse_label_selector(""),
                  fields=parse_field_selector("regarding.name=p9"))
    try:
        await cluster.client.create(core_event("other", "p8"))
        await cluster.client.create(core_event("mine", "p9"))
        kind, s = await asyncio.wait_for(w.queue.get(), 5)
        assert kind == "ADDED" and s is not None
        shown = reg.present(v1, s).obj
        assert shown["metadata"]["name"] == "mine" and shown["regarding"]["name"] == "p9"
    finally:
        reg.store.unwatch(w)


async def test_updating_through_events_v1_keeps_one_object(cluster: LocalCluster) -> None:
    v1 = cluster.scheme.by_api_version_kind("events.k8s.io/v1", "Event")
    core = cluster.scheme.by_api_version_kind("v1", "Event")
    await cluster.client.create(v1_event("u", "p"))
    await cluster.client.patch(v1, "u", {"note": "changed"}, "default")
    assert (await cluster.client.get(core, "u", "default"))["message"] == "changed"
    await cluster.client.delete(core, "u", "default")
    assert (await cluster.client.list(v1, "default")).items == []
