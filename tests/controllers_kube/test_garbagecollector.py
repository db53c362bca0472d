"""Deleting owners: background, orphan and foreground propagation through the garbage collector."""

from __future__ import annotations

import asyncio

from pumice.api.scheme import DEPLOYMENT, POD, REPLICA_SET
from pumice.controllers.kube.podutil import is_active

from .conftest import Env, deployment, eventually
from .test_deployment import rollout_complete

CONFIGMAP_KIND = ("v1", "ConfigMap")


async def counts(env: Env) -> tuple[int, int]:
    rss = (await env.client.list(REPLICA_SET, "default")).items
    pods = [p for p in (await env.client.list(POD, "default")).items if is_active(p)]
    return len(rss), len(pods)


async def test_deleting_a_deployment_in_the_background_removes_its_replicasets_and_pods(env: Env) -> None:
    await env.client.create(deployment("web", 3))
    await eventually(lambda: rollout_complete(env, "web", 3))
    await env.client.delete(DEPLOYMENT, "web", "default", propagation_policy="Background")

    async def all_gone() -> bool:
        rss = (await env.client.list(REPLICA_SET, "default")).items
        pods = (await env.client.list(POD, "default")).items
        return not rss and not pods

    await eventually(all_gone, what="replica sets and pods collected")


async def test_orphan_deletion_keeps_replicasets_and_pods_without_owner(env: Env) -> None:
    await env.client.create(deployment("web", 2))
    await eventually(lambda: rollout_complete(env, "web", 2))
    await env.client.delete(DEPLOYMENT, "web", "default", propagation_policy="Orphan")

    async def deployment_gone() -> bool:
        return not (await env.client.list(DEPLOYMENT, "default")).items

    await eventually(deployment_gone, what="deployment deleted after orphaning")
    rss = (await env.client.list(REPLICA_SET, "default")).items
    assert len(rss) == 1 and not rss[0]["metadata"].get("ownerReferences")
    assert await counts(env) == (1, 2)
    # The ReplicaSet keeps managing its Pods.
    pods = [p for p in (await env.client.list(POD, "default")).items]
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet" for p in pods)


async def test_foreground_deletion_removes_dependents_before_the_owner(env: Env) -> None:
    await env.client.create(deployment("web", 2))
    await eventually(lambda: rollout_complete(env, "web", 2))
    await env.client.delete(DEPLOYMENT, "web", "default", propagation_policy="Foreground")
    d = await env.client.get(DEPLOYMENT, "web", "default")
    assert "foregroundDeletion" in d["metadata"]["finalizers"]

    async def all_gone() -> bool:
        deps = (await env.client.list(DEPLOYMENT, "default")).items
        rss = (await env.client.list(REPLICA_SET, "default")).items
        return not deps and not rss and not (await env.client.list(POD, "default")).items

    await eventually(all_gone, what="foreground deletion finished")


async def test_garbage_collector_works_for_any_kind(env: Env) -> None:
    owner = await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "owner", "namespace": "default"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    await env.client.create({"apiVersion": "v1", "kind": "Secret",
                             "metadata": {"name": "dep", "namespace": "default", "ownerReferences": [ref]}})
    cm = env.client.scheme.by_api_version_kind(*CONFIGMAP_KIND)
    secret = env.client.scheme.by_api_version_kind("v1", "Secret")
    await env.client.delete(cm, "owner", "default")

    async def gone() -> bool:
        return not [s for s in (await env.client.list(secret, "default")).items if s["metadata"]["name"] == "dep"]

    await eventually(gone, what="secret collected")


async def test_a_dependent_with_another_live_owner_only_loses_the_dangling_reference(env: Env) -> None:
    cm = env.client.scheme.by_api_version_kind(*CONFIGMAP_KIND)
    a = await env.client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
    b = await env.client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "default"}})
    refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"], "uid": o["metadata"]["uid"]}
            for o in (a, b)]
    await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "dep", "namespace": "default", "ownerReferences": refs}})
    await env.client.delete(cm, "a", "default")

    async def one_ref() -> bool:
        dep = await env.client.get(cm, "dep", "default")
        return [r["name"] for r in dep["metadata"].get("ownerReferences") or []] == ["b"]

    await eventually(one_ref, what="dangling reference removed")


CRD_OBJ = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


async def test_custom_resources_created_after_start_are_collected_both_ways(env: Env) -> None:
    await env.client.create(CRD_OBJ)

    async def served() -> bool:
        return env.client.scheme.by_api_version_kind("example.com/v1", "Widget") is not None

    await eventually(served, what="CRD served")
    widget_kind = env.client.scheme.by_api_version_kind("example.com/v1", "Widget")
    cm_kind = env.client.scheme.by_api_version_kind(*CONFIGMAP_KIND)
    assert widget_kind is not None and cm_kind is not None
    for attempt in range(50):
        try:
            w = await env.client.create({"apiVersion": "example.com/v1", "kind": "Widget",
                                         "metadata": {"name": "w1", "namespace": "default"}})
            break
        except Exception:
            if attempt == 49:
                raise
            await asyncio.sleep(0.1)
    ref = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w1", "uid": w["metadata"]["uid"]}
    await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "of-widget", "namespace": "default", "ownerReferences": [ref]}})
    cm_owner = await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "owns-widget", "namespace": "default"}})
    await env.client.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {
        "name": "w2", "namespace": "default", "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owns-widget", "uid": cm_owner["metadata"]["uid"]}]}})
    await env.client.delete(widget_kind, "w1", "default")
    await env.client.delete(cm_kind, "owns-widget", "default")

    async def both_collected() -> bool:
        cms = {c["metadata"]["name"] for c in (await env.client.list(cm_kind, "default")).items}
        widgets = {x["metadata"]["name"] for x in (await env.client.list(widget_kind, "default")).items}
        return "of-widget" not in cms and "w2" not in widgets

    await eventually(both_collected, what="configmap owned by a widget and widget owned by a configmap collected")
