"""The in-tree autoscaler's ServiceAccount, Role and RoleBinding for one RayCluster.

Mirrors: kuberay ray-operator/controllers/ray/common/rbac.go (BuildServiceAccount, BuildRole,
BuildRoleBinding).
"""

from __future__ import annotations

from pumice.api import Obj, scheme
from pumice.api.meta import owner_reference
from pumice.controllers.ray import association as assoc
from pumice.controllers.ray import constants as c
from pumice.controllers.ray.common.pod import head_service_account_name


def _meta(cluster: Obj, name: str) -> Obj:
    cname = cluster["metadata"]["name"]
    return {"name": name, "namespace": cluster["metadata"].get("namespace", "default"),
            "labels": {c.RAY_CLUSTER_LABEL_KEY: cname, c.KUBERNETES_APPLICATION_NAME_LABEL_KEY: c.APPLICATION_NAME,
                       c.KUBERNETES_CREATED_BY_LABEL_KEY: c.COMPONENT_NAME},
            "ownerReferences": [owner_reference(cluster, default=scheme.RAY_CLUSTER)]}


def build_service_account(cluster: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": _meta(cluster, assoc.check_name(head_service_account_name(cluster)))}


def build_role(cluster: Obj) -> Obj:
    """Role ``<cluster>``: pods get/list/watch/patch, pods/resize patch, rayclusters get/patch."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(cluster, cluster["metadata"]["name"]),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
                      {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
                      {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]}]}


def build_role_binding(cluster: Obj) -> Obj:
    """RoleBinding ``<cluster>``: the head's service account → Role ``<cluster>``."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": _meta(cluster, cluster["metadata"]["name"]),
            "subjects": [{"kind": "ServiceAccount", "name": assoc.check_name(head_service_account_name(cluster)),
                          "namespace": cluster["metadata"].get("namespace", "default")}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": assoc.check_name(cluster["metadata"]["name"])}}
