"""RayCluster ``upgradeStrategy`` (upstream raycluster_controller.go shouldRecreatePodsForUpgrade and
utils/validation.go ValidateRayClusterUpgradeOptions): with ``Recreate`` a spec change that changes
the head Pod's ``ray.io/upgrade-strategy-recreate-hash`` deletes every Pod, and the next passes
build them from the new spec; replicas changes, ``None`` and a head Pod of another KubeRay version
recreate nothing."""

from __future__ import annotations

from typing import Any

from pumice._util.clock import FakeClock
from pumice.api import Obj, scheme
from pumice.controllers.ray.common.hashing import hash_without_replicas_and_workers_to_delete
from pumice.controllers.ray.raycluster import RayClusterReconciler
from pumice.runtime.reconcile import Request
from pumice.testing.fake_client import FakeClient

from .conftest import load_sample, ray_scheme
from .test_parity import Events

NAME = "raycluster-kuberay"
REQ = Request("default", NAME)


async def setup(strategy: str | None, **labels: str) -> tuple[FakeClient, RayClusterReconciler, Events]:
    client = FakeClient(ray_scheme(), clock=FakeClock())
    ev = Events()
    rc = RayClusterReconciler(client, recorder=ev, clock=FakeClock())
    cl = load_sample("ray-cluster.sample.yaml", "RayCluster")
    if strategy is not None:
        cl["spec"]["upgradeStrategy"] = {"type": strategy}
    if labels:
        cl["metadata"]["labels"] = labels
    await client.create(cl)
    await rc.reconcile(REQ)
    return client, rc, ev


async def pods(client: FakeClient) -> list[Obj]:
    return [p for p in (await client.list(scheme.POD, "default")).items if not p["metadata"].get("deletionTimestamp")]


async def edit(client: FakeClient, change: Any) -> None:
    cl = await client.get(scheme.RAY_CLUSTER, NAME, "default")
    change(cl["spec"])
    await client.update(cl)


def image(spec: Obj) -> None:
    for t in (spec["headGroupSpec"]["template"], spec["workerGroupSpecs"][0]["template"]):
        t["spec"]["containers"][0]["image"] = "rayproject/ray:2.53.0"


async def test_recreate_deletes_every_pod_when_the_spec_hash_changes_and_rebuilds_from_the_new_spec() -> None:
    client, rc, ev = await setup("Recreate")
    before = {p["metadata"]["name"] for p in await pods(client)}
    assert len(before) == 2
    await edit(client, image)
    await rc.reconcile(REQ)
    assert await pods(client) == []
    assert ("Normal", "DeletedPod", f"Deleted all Pods for RayCluster default/{NAME} due to spec change with "
            "Recreate upgradeStrategy") in ev.items
    for _ in range(3):
        await rc.reconcile(REQ)
    after = await pods(client)
    assert len(after) == 2 and not ({p["metadata"]["name"] for p in after} & before)
    assert {p["spec"]["containers"][0]["image"] for p in after} == {"rayproject/ray:2.53.0"}
    cl = await client.get(scheme.RAY_CLUSTER, NAME, "default")
    [head] = [p for p in after if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    assert head["metadata"]["annotations"]["ray.io/upgrade-strategy-recreate-hash"] == \
        hash_without_replicas_and_workers_to_delete(cl["spec"])


async def test_recreate_ignores_a_replicas_change() -> None:
    client, rc, _ = await setup("Recreate")
    before = {p["metadata"]["name"] for p in await pods(client)}
    await edit(client, lambda s: s["workerGroupSpecs"][0].update(replicas=2))
    await rc.reconcile(REQ)
    assert before <= {p["metadata"]["name"] for p in await pods(client)}


async def test_strategy_none_recreates_nothing() -> None:
    client, rc, _ = await setup("None")
    before = {p["metadata"]["name"] for p in await pods(client)}
    await edit(client, image)
    await rc.reconcile(REQ)
    assert {p["metadata"]["name"] for p in await pods(client)} == before


async def test_a_head_of_another_kuberay_version_gets_the_new_hash_instead_of_a_recreation() -> None:
    client, rc, _ = await setup("Recreate")
    [head] = [p for p in await pods(client) if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    head["metadata"]["annotations"]["ray.io/kuberay-version"] = "v1.4.0"
    await client.update({**head, "apiVersion": "v1", "kind": "Pod"})
    await edit(client, image)
    await rc.reconcile(REQ)
    got = await client.get(scheme.POD, head["metadata"]["name"], "default")
    assert got["metadata"]["annotations"]["ray.io/kuberay-version"] == "nightly"
    cl = await client.get(scheme.RAY_CLUSTER, NAME, "default")
    assert got["metadata"]["annotations"]["ray.io/upgrade-strategy-recreate-hash"] == \
        hash_without_replicas_and_workers_to_delete(cl["spec"])


async def test_an_unknown_strategy_or_one_on_a_rayjob_cluster_is_refused_with_upstreams_text() -> None:
    client, _, ev = await setup("Rolling")
    assert await pods(client) == []
    assert ("Warning", "InvalidRayClusterSpec", f"The RayCluster UpgradeStrategy is invalid default/{NAME}: The "
            "RayCluster spec is invalid: Spec.UpgradeStrategy.Type value Rolling is invalid, valid options are "
            "Recreate or None") in ev.items
    client, _, ev = await setup("Recreate", **{"ray.io/originated-from-crd": "RayJob"})
    assert await pods(client) == []
    assert ("Warning", "InvalidRayClusterSpec", f"The RayCluster UpgradeStrategy is invalid default/{NAME}: "
            "upgradeStrategy cannot be set when RayCluster is created by RayJob") in ev.items
