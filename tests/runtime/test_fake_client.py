"""FakeClient behaves like the API server where controllers depend on it: optimistic
concurrency, generation, status subresource, finalizers, patch types, list paging."""

from __future__ import annotations

import pytest

from pumice._util.clock import LoopClock
from pumice.api.scheme import ResourceKind
from pumice.client.base import ApiError, is_already_exists, is_conflict, is_gone, is_not_found
from pumice.testing.fake_client import FakeClient

from .conftest import CONFIGMAP, DEPLOYMENT, POD, configmap, deployment


@pytest.fixture
def fake() -> FakeClient:
    return FakeClient(clock=LoopClock())


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}}


async def test_create_assigns_identity_and_refuses_duplicates(fake: FakeClient) -> None:
    a = await fake.create(configmap("a"))
    assert a["metadata"]["uid"] and a["metadata"]["resourceVersion"] and a["metadata"]["creationTimestamp"]
    with pytest.raises(ApiError) as e:
        await fake.create(configmap("a"))
    assert is_already_exists(e.value)
    with pytest.raises(ApiError) as e:
        await fake.get(CONFIGMAP, "missing", "default")
    assert is_not_found(e.value)


async def test_stale_updates_conflict_and_generation_follows_spec(fake: FakeClient) -> None:
    d = await fake.create(deployment("web"))
    assert d["metadata"]["generation"] == 1
    d2 = {**d, "spec": {**d["spec"], "replicas": 3}}
    d2 = await fake.update(d2)
    assert d2["metadata"]["generation"] == 2
    with pytest.raises(ApiError) as e:
        await fake.update({**d, "spec": {**d["spec"], "replicas": 5}})
    assert is_conflict(e.value)
    with_status = await fake.update_status({**d2, "status": {"replicas": 3}})
    assert with_status["metadata"]["generation"] == 2
    ignored = await fake.update({**with_status, "status": {"replicas": 99}})
    assert ignored["status"] == {"replicas": 3}, "update ignores status when the kind has the subresource"
    same = await fake.update(ignored)
    assert same["metadata"]["resourceVersion"] == ignored["metadata"]["resourceVersion"], "no-op write"


async def test_finalizers_hold_deletion_until_removed(fake: FakeClient) -> None:
    cm = configmap("held")
    cm["metadata"]["finalizers"] = ["example.com/cleanup"]
    await fake.create(cm)
    held = await fake.delete(CONFIGMAP, "held", "default")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    live = await fake.get(CONFIGMAP, "held", "default")
    live["metadata"]["finalizers"] = []
    await fake.update(live)
    with pytest.raises(ApiError) as e:
        await fake.get(CONFIGMAP, "held", "default")
    assert is_not_found(e.value)


async def test_strategic_patch_merges_conditions_by_type(fake: FakeClient) -> None:
    await fake.create(pod("p"))
    await fake.patch(POD, "p", {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}},
                     "default", patch_type="strategic", subresource="status")
    got = await fake.get(POD, "p", "default")
    assert [c["type"] for c in got["status"]["conditions"]] == ["Ready", "PodScheduled"]
    await fake.patch(POD, "p", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                     "default", patch_type="merge", subresource="status")
    got = await fake.get(POD, "p", "default")
    assert got["status"]["conditions"] == [{"type": "Ready", "status": "True"}], "merge patch replaces lists"


async def test_json_patch_and_strategic_on_custom_kinds(fake: FakeClient) -> None:
    await fake.create(configmap("a", data={"x": "1"}))
    got = await fake.patch(CONFIGMAP, "a", [{"op": "replace", "path": "/data/x", "value": "2"}], "default",
                           patch_type="json")
    assert got["data"] == {"x": "2"}
    with pytest.raises(ApiError) as e:
        await fake.patch(CONFIGMAP, "a", [{"op": "test", "path": "/data/x", "value": "9"}], "default",
                         patch_type="json")
    assert e.value.code == 422
    rc = ResourceKind("ray.io", "v1", "RayCluster", "rayclusters")
    fake.scheme.add(rc)
    await fake.create({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                       "metadata": {"name": "r", "namespace": "default"}, "spec": {}})
    with pytest.raises(ApiError) as e:
        await fake.patch(rc, "r", {"spec": {"x": 1}}, "default", patch_type="strategic")
    assert e.value.code == 415


async def test_list_pages_with_continue_and_expires_after_compaction(fake: FakeClient) -> None:
    for i in range(5):
        await fake.create(configmap(f"c{i}"))
    page = await fake.list(CONFIGMAP, "default", limit=2)
    assert [o["metadata"]["name"] for o in page.items] == ["c0", "c1"] and page.continue_
    rest = await fake.list(CONFIGMAP, "default", continue_=page.continue_)
    assert [o["metadata"]["name"] for o in rest.items] == ["c2", "c3", "c4"]
    await fake.create(configmap("c5"))
    fake.compact()
    with pytest.raises(ApiError) as e:
        await fake.list(CONFIGMAP, "default", limit=2, continue_=page.continue_)
    assert is_gone(e.value)
    assert len((await fake.list(DEPLOYMENT)).items) == 0


def bound_pod(name: str, *, grace: int | None = None) -> dict:
    p = pod(name)
    p["spec"]["nodeName"] = "n1"
    if grace is not None:
        p["spec"]["terminationGracePeriodSeconds"] = grace
    return p


async def test_a_bound_pod_is_deleted_at_once_without_graceful_pod_deletion(fake: FakeClient) -> None:
    await fake.create(bound_pod("p"))
    await fake.delete(POD, "p", "default")
    with pytest.raises(ApiError) as e:
        await fake.get(POD, "p", "default")
    assert is_not_found(e.value)


async def test_graceful_pod_deletion_keeps_a_bound_pod_until_deleted_with_grace_zero() -> None:
    clock = LoopClock()
    fake = FakeClient(clock=clock, graceful_pod_deletion=True)
    await fake.create(bound_pod("p", grace=30))
    held = await fake.delete(POD, "p", "default")
    assert held is not None and held["metadata"]["deletionGracePeriodSeconds"] == 30
    assert held["metadata"]["deletionTimestamp"]
    shorter = await fake.delete(POD, "p", "default", grace_period_seconds=5)
    assert shorter is not None and shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    # a status write by the kubelet keeps it (a grace period is pending)
    await fake.patch(POD, "p", {"status": {"phase": "Running"}}, "default", subresource="status")
    assert (await fake.get(POD, "p", "default"))["metadata"]["deletionGracePeriodSeconds"] == 5
    await fake.delete(POD, "p", "default", grace_period_seconds=0)
    with pytest.raises(ApiError) as e:
        await fake.get(POD, "p", "default")
    assert is_not_found(e.value)
    await fake.create(pod("unbound"))
    await fake.delete(POD, "unbound", "default")
    with pytest.raises(ApiError) as e:
        await fake.get(POD, "unbound", "default")
    assert is_not_found(e.value), "an unbound Pod has no kubelet to wait for"


async def test_a_pod_held_by_a_finalizer_goes_when_the_kubelet_deleted_it_and_the_finalizer_is_removed() -> None:
    fake = FakeClient(clock=LoopClock(), graceful_pod_deletion=True)
    p = bound_pod("p", grace=30)
    p["metadata"]["finalizers"] = ["example.com/keep"]
    await fake.create(p)
    await fake.delete(POD, "p", "default")
    held = await fake.delete(POD, "p", "default", grace_period_seconds=0)
    assert held is not None and held["metadata"]["deletionGracePeriodSeconds"] == 0
    await fake.patch(POD, "p", {"metadata": {"finalizers": None}}, "default")
    with pytest.raises(ApiError) as e:
        await fake.get(POD, "p", "default")
    assert is_not_found(e.value)


async def test_a_watch_older_than_the_kept_history_is_gone() -> None:
    fake = FakeClient(clock=LoopClock(), history=3)
    first = await fake.create(configmap("c0"))
    for i in range(1, 5):
        await fake.create(configmap(f"c{i}"))
    with pytest.raises(ApiError) as e:
        async for _ in fake.watch(CONFIGMAP, "default", resource_version=first["metadata"]["resourceVersion"]):
            break
    assert is_gone(e.value)
    third = (await fake.get(CONFIGMAP, "c2", "default"))["metadata"]["resourceVersion"]
    stream = fake.watch(CONFIGMAP, "default", resource_version=third)
    got = [(await stream.__anext__()).object["metadata"]["name"] for _ in range(2)]
    assert got == ["c3", "c4"]
    await stream.aclose()


async def test_a_namespaced_object_without_a_namespace_goes_to_default(fake: FakeClient) -> None:
    cm = configmap("nons")
    del cm["metadata"]["namespace"]
    created = await fake.create(cm)
    assert created["metadata"]["namespace"] == "default"
    assert (await fake.get(CONFIGMAP, "nons", "default"))["metadata"]["name"] == "nons"
