"""`pumice install`'s RBAC: the Volcano scheduler may write the ConfigMap it publishes its
configuration in, and update claims and volumes for VolumeBinding's PreBind (upstream's
volcano-scheduler ClusterRole grants the same verbs)."""

from __future__ import annotations

from pumice.cli.install import cluster_roles


def test_the_scheduler_may_publish_its_configuration_map() -> None:
    rules = cluster_roles()["scheduler"]
    verbs = {v for r in rules if "configmaps" in r["resources"] and r["apiGroups"] == [""] for v in r["verbs"]}
    assert verbs == {"get", "list", "watch", "create", "delete", "update"}


def test_the_scheduler_may_give_a_waiting_claim_its_volume() -> None:
    """VolumeBinding's PreBind updates PersistentVolumes (claimRef) and claims (selected-node)."""
    rules = cluster_roles()["scheduler"]
    for resource in ("persistentvolumeclaims", "persistentvolumes"):
        verbs = {v for r in rules if resource in r["resources"] and r["apiGroups"] == [""] for v in r["verbs"]}
        assert {"list", "watch", "update"} <= verbs, resource
