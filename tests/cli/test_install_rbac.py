"""`pumice install`'s RBAC: the Volcano scheduler may write the ConfigMap it publishes its
configuration in (upstream's volcano-scheduler ClusterRole grants the same verbs)."""

from __future__ import annotations

from pumice.cli.install import cluster_roles


def test_the_scheduler_may_publish_its_configuration_map() -> None:
    rules = cluster_roles()["scheduler"]
    verbs = {v for r in rules if "configmaps" in r["resources"] and r["apiGroups"] == [""] for v in r["verbs"]}
    assert verbs == {"get", "list", "watch", "create", "delete", "update"}
