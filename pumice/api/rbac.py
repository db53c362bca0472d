"""RBAC helpers shared by the API server's authorizer and the ClusterRole aggregation controller.

Mirrors: kubernetes pkg/controller/clusterroleaggregation (the rule union).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pumice.api import Obj

__all__ = ["aggregate_rules"]



def aggregate_rules(role: Obj, cluster_roles: Iterable[Obj],
                    matches: Callable[[Mapping[str, Any], Mapping[str, str] | None], bool]) -> list[Obj]:
    """The rules of an aggregated ClusterRole: the rules of every other ClusterRole whose labels
    match one of ``aggregationRule.clusterRoleSelectors``, by role name, without repeats.

    ``matches(selector, labels)`` evaluates a metav1.LabelSelector.

    Mirrors: kubernetes pkg/controller/clusterroleaggregation (syncClusterRole).
    """
    selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
    name = (role.get("metadata") or {}).get("name")
    out: list[Obj] = []
    for other in sorted(cluster_roles, key=lambda r: (r.get("metadata") or {}).get("name", "")):
        md = other.get("metadata") or {}
        if md.get("name") == name:
            continue
        if not any(matches(sel, md.get("labels")) for sel in selectors):
            continue
        for rule in other.get("rules") or []:
            if rule not in out:
                out.append(rule)
    return out
