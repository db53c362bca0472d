"""The five conditions the namespace controller writes on a Terminating Namespace (trial-10 F-13).

Texts after kubernetes pkg/controller/namespace/deletion/status_condition_utils.go.
"""

from __future__ import annotations

from pumice.api import Obj
from pumice.api.scheme import CONFIG_MAP, NAMESPACE
from pumice.controllers.kube.namespace import ContentTotals, deletion_conditions

from .conftest import Env, eventually


def conditions(ns: Obj) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in (ns.get("status") or {}).get("conditions") or []}


async def test_a_namespace_held_by_a_finalizer_says_which_finalizer_then_all_is_removed(env: Env) -> None:
    await env.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fin1"},
                             "spec": {"finalizers": ["kubernetes", "example.com/ns-hold"]}})
    await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "f1", "namespace": "fin1", "finalizers": ["example.com/hold"]}})
    await env.client.delete(NAMESPACE, "fin1")

    async def finalizers_reported() -> bool:
        return "NamespaceFinalizersRemaining" in conditions(await env.client.get(NAMESPACE, "fin1"))

    await eventually(finalizers_reported, timeout=30, what="NamespaceFinalizersRemaining")
    ns = await env.client.get(NAMESPACE, "fin1")
    assert [c["type"] for c in ns["status"]["conditions"]] == [
        "NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
        "NamespaceDeletionContentFailure", "NamespaceContentRemaining", "NamespaceFinalizersRemaining"]
    assert conditions(ns) == {
        "NamespaceDeletionDiscoveryFailure": ("False", "ResourcesDiscovered", "All resources successfully discovered"),
        "NamespaceDeletionGroupVersionParsingFailure": ("False", "ParsedGroupVersions",
                                                        "All legacy kube types successfully parsed"),
        "NamespaceDeletionContentFailure": ("False", "ContentDeleted",
                                            "All content successfully deleted, may be waiting on finalization"),
        "NamespaceContentRemaining": ("True", "SomeResourcesRemain",
                                      "Some resources are remaining: configmaps. has 1 resource instances"),
        "NamespaceFinalizersRemaining": ("True", "SomeFinalizerRemain",
                                         "Some finalizers are remaining: example.com/hold in 1 resource instances"),
    }
    cm = await env.client.get(CONFIG_MAP, "f1", "fin1")
    cm["metadata"]["finalizers"] = []
    await env.client.update(cm)

    async def all_clear() -> bool:
        got = conditions(await env.client.get(NAMESPACE, "fin1"))
        return got.get("NamespaceContentRemaining", ("",))[0] == "False"

    # the other finalizer of the Namespace keeps it, so the last pass's conditions can be read
    await eventually(all_clear, timeout=30, what="conditions back to False")
    ns = await env.client.get(NAMESPACE, "fin1")
    assert conditions(ns)["NamespaceContentRemaining"] == ("False", "ContentRemoved", "All content successfully removed")
    assert conditions(ns)["NamespaceFinalizersRemaining"] == ("False", "ContentRemoved", "All content successfully removed")
    assert ns["spec"]["finalizers"] == ["example.com/ns-hold"]


def test_content_failures_are_counted_and_sorted_into_one_condition() -> None:
    conds = deletion_conditions(ContentTotals(remaining={"pods.": 2}, errors=[
        "unexpected items still remain in namespace: a for gvr: /v1, Resource=pods", "500 boom"]))
    failure = next(c for c in conds if c["type"] == "NamespaceDeletionContentFailure")
    assert (failure["status"], failure["reason"], failure["message"]) == (
        "True", "ContentDeletionFailed", "Failed to delete all resource types, 2 remaining: 500 boom, unexpected items "
        "still remain in namespace: a for gvr: /v1, Resource=pods")
    finalizers = next(c for c in conds if c["type"] == "NamespaceFinalizersRemaining")
    assert finalizers["status"] == "False"


async def test_a_namespace_created_with_its_own_finalizer_keeps_it_next_to_kubernetes(env: Env) -> None:
    """kube-apiserver's namespace strategy (PrepareForCreate) appends ``kubernetes``; it dropped
    the others here."""
    ns = await env.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "own"},
                                  "spec": {"finalizers": ["example.com/ns-hold"]}})
    assert ns["spec"]["finalizers"] == ["example.com/ns-hold", "kubernetes"]
    plain = await env.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}})
    assert plain["spec"]["finalizers"] == ["kubernetes"]
