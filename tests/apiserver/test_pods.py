"""Pod strategy: binding, graceful deletion, eviction."""

from __future__ import annotations

import pytest

from pumice.client.base import ApiError, is_not_found
from pumice.testing.cluster import LocalCluster

from .builders import pod


async def test_binding_sets_node_and_pod_scheduled(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("p"))
    await cluster.client.bind("default", "p", "n1")
    p = await cluster.client.get(pods, "p", "default")
    assert p["spec"]["nodeName"] == "n1"
    cond = [c for c in p["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond and cond[0]["status"] == "True"


async def test_binding_a_bound_pod_is_conflict(cluster: LocalCluster) -> None:
    await cluster.client.create(pod("p"))
    await cluster.client.bind("default", "p", "n1")
    with pytest.raises(ApiError) as e:
        await cluster.client.bind("default", "p", "n2")
    assert e.value.code == 409
    assert e.value.message == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'


async def test_unbound_pod_is_deleted_at_once(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("p"))
    await cluster.client.delete(pods, "p", "default")
    with pytest.raises(ApiError) as e:
        await cluster.client.get(pods, "p", "default")
    assert is_not_found(e.value)


async def test_bound_pod_deletion_is_graceful_until_node_agent_confirms(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("p", terminationGracePeriodSeconds=10))
    await cluster.client.bind("default", "p", "n1")
    held = await cluster.client.delete(pods, "p", "default")
    assert held is not None
    assert held["metadata"]["deletionGracePeriodSeconds"] == 10 and held["metadata"]["deletionTimestamp"]
    assert (await cluster.client.get(pods, "p", "default"))["metadata"]["deletionGracePeriodSeconds"] == 10
    await cluster.client.delete(pods, "p", "default", grace_period_seconds=0)
    with pytest.raises(ApiError) as e:
        await cluster.client.get(pods, "p", "default")
    assert is_not_found(e.value)


async def test_eviction_deletes_the_pod(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("p"))
    await cluster.client.evict("default", "p")
    with pytest.raises(ApiError):
        await cluster.client.get(pods, "p", "default")


async def test_an_evicted_pod_gets_the_disruption_target_condition_before_it_goes(cluster: LocalCluster) -> None:
    """Trial 8 F-9: kube-apiserver 1.31+ (PodDisruptionConditions) marks a Pod the Eviction API
    deletes; Job podFailurePolicy rules and pumice simulate's eviction count read it."""
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create({**pod("p"), "metadata": {"name": "p", "namespace": "default",
                                                          "finalizers": ["example.com/hold"]}})
    before = (await cluster.client.get(pods, "p", "default"))["metadata"]["managedFields"]
    await cluster.client.evict("default", "p")
    p = await cluster.client.get(pods, "p", "default")
    assert p["metadata"]["deletionTimestamp"]
    # No managedFields entry for the condition: upstream writes it through the registry's
    # Store.Update, below the HTTP handlers where the field manager runs (review8 thought otherwise).
    assert p["metadata"]["managedFields"] == before
    cond = [c for c in p["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert len(cond) == 1 and cond[0]["lastTransitionTime"]
    assert {k: cond[0][k] for k in ("status", "reason", "message")} == {
        "status": "True", "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}



async def test_an_eviction_checks_its_preconditions_before_marking_the_pod(cluster: LocalCluster) -> None:
    """eviction.go addConditionAndDeletePod: the deleteOptions' preconditions are checked on the
    latest Pod before the DisruptionTarget condition is written, and a resourceVersion
    precondition then follows the Pod's new version (was: a wrong uid left the condition on a Pod
    that was not evicted, and a right resourceVersion failed the delete with 409)."""
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    c = cluster.client
    await c.create({**pod("p"), "metadata": {"name": "p", "namespace": "default", "finalizers": ["example.com/hold"]}})
    url = "/api/v1/namespaces/default/pods/p/eviction"

    def eviction(**pre: str) -> dict:
        return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "default"},
                "deleteOptions": {"preconditions": pre}}

    with pytest.raises(ApiError) as e:
        await c.request("POST", url, body=eviction(uid="not-its-uid"))
    assert e.value.code == 409
    got = await c.get(pods, "p", "default")
    assert not (got.get("status") or {}).get("conditions") and not got["metadata"].get("deletionTimestamp")
    await c.request("POST", url, body=eviction(resourceVersion=got["metadata"]["resourceVersion"]))
    got = await c.get(pods, "p", "default")
    assert got["metadata"]["deletionTimestamp"]
    assert [x["type"] for x in got["status"]["conditions"]] == ["DisruptionTarget"]

async def test_field_selector_on_node_name(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("a", node="n1"))
    await cluster.client.create(pod("b", node="n2"))
    got = await cluster.client.list(pods, None, field_selector="spec.nodeName=n1")
    assert [p["metadata"]["name"] for p in got.items] == ["a"]
    with pytest.raises(ApiError) as e:
        await cluster.client.list(pods, None, field_selector="spec.bogus=1")
    assert e.value.code == 400


async def test_list_by_node_name_follows_binding_and_deletion(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")

    async def on(node: str) -> list[str]:
        got = await cluster.client.list(pods, None, field_selector=f"spec.nodeName={node}")
        return [p["metadata"]["name"] for p in got.items]

    await cluster.client.create(pod("a"))
    await cluster.client.create(pod("b", node="n1"))
    assert await on("n1") == ["b"]
    assert await on("") == ["a"]
    await cluster.client.bind("default", "a", "n1")
    assert await on("n1") == ["a", "b"]
    await cluster.client.delete(pods, "b", "default", grace_period_seconds=0)
    assert await on("n1") == ["a"]
    assert await on("n2") == []


@pytest.mark.parametrize(("body", "message"), [
    ({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}},
     "name in URL does not match name in Eviction object"),
    ({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {}},
     "name in URL does not match name in Eviction object"),
    ({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "kube-system"}},
     "the namespace of the provided object does not match the namespace sent on the request"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}},
     "the API version in the data (v1) does not match the expected API version (policy/v1)"),
    ({"apiVersion": "policy/v1", "kind": "ConfigMap", "metadata": {"name": "p"}},
     "not a Eviction object: ConfigMap (policy/v1)"),
])
async def test_eviction_body_must_name_the_pod_of_the_url(cluster: LocalCluster, body: dict[str, object],
                                                          message: str) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("p"))
    await cluster.client.create(pod("other"))
    with pytest.raises(ApiError) as e:
        await cluster.client.request("POST", "/api/v1/namespaces/default/pods/p/eviction", body=body)
    assert (e.value.code, e.value.reason, e.value.message) == (400, "BadRequest", message)
    assert await cluster.client.get(pods, "p", "default") and await cluster.client.get(pods, "other", "default")


async def test_eviction_accepts_v1beta1_and_a_body_without_kind(cluster: LocalCluster) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("a"))
    await cluster.client.create(pod("b"))
    await cluster.client.request("POST", "/api/v1/namespaces/default/pods/a/eviction",
                                 body={"apiVersion": "policy/v1beta1", "kind": "Eviction",
                                       "metadata": {"name": "a", "namespace": "default"}})
    await cluster.client.request("POST", "/api/v1/namespaces/default/pods/b/eviction", body={"metadata": {"name": "b"}})
    for name in ("a", "b"):
        with pytest.raises(ApiError) as e:
            await cluster.client.get(pods, name, "default")
        assert is_not_found(e.value)


@pytest.mark.parametrize(("body", "message"), [
    ({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "other"}},
     "name in URL does not match name in Binding object"),
    ({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "namespace": "kube-system"}},
     "the namespace of the provided object does not match the namespace sent on the request"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}}, "not a Binding object: ConfigMap (v1)"),
])
async def test_binding_body_must_name_the_pod_of_the_url(cluster: LocalCluster, body: dict[str, object],
                                                         message: str) -> None:
    pods = cluster.scheme.by_api_version_kind("v1", "Pod")
    await cluster.client.create(pod("p"))
    await cluster.client.create(pod("other"))
    with pytest.raises(ApiError) as e:
        await cluster.client.request("POST", "/api/v1/namespaces/default/pods/p/binding",
                                     body={**body, "target": {"kind": "Node", "name": "n1"}})
    assert (e.value.code, e.value.reason, e.value.message) == (400, "BadRequest", message)
    for name in ("p", "other"):
        assert not (await cluster.client.get(pods, name, "default"))["spec"].get("nodeName")
