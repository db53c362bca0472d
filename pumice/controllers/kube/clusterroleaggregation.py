"""The ClusterRole aggregation controller: a ClusterRole with an ``aggregationRule`` gets, as its
rules, the rules of every ClusterRole whose labels match one of its ``clusterRoleSelectors``
(how ``admin``, ``edit`` and ``view`` grow when a CRD's roles are labelled
``rbac.authorization.k8s.io/aggregate-to-edit: "true"``).

Mirrors: kubernetes pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from pumice.api.rbac import aggregate_rules
from pumice.api.scheme import CLUSTER_ROLE
from pumice.api.selectors import from_label_selector
from pumice.client.base import ApiError, KubeClient, is_conflict, is_not_found
from pumice.client.informer import Informer
from pumice.runtime import Request, Result
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions



def _matches(selector: Any, labels: Any) -> bool:
    try:
        return from_label_selector(selector).matches(labels or {})
    except ValueError:
        return False


class ClusterRoleAggregationReconciler:
    """Writes the aggregated rules of one ClusterRole."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> ClusterRoleAggregationReconciler:
        """Build the controller and register it (ClusterRoles, re-run for every aggregator)."""
        agg = cls(mgr.client, cluster_roles=mgr.informers.informer(CLUSTER_ROLE))
        mgr.controller("clusterrole-aggregation").for_(CLUSTER_ROLE).watches(
            CLUSTER_ROLE, lambda _r: agg.aggregators()).complete(agg)
        return agg

    def __init__(self, client: KubeClient, *, cluster_roles: Informer) -> None:
        self.client = client
        self.cluster_roles = cluster_roles

    def aggregators(self) -> list[Request]:
        """Every ClusterRole with an aggregationRule (any ClusterRole change may change them)."""
        return [Request("", r["metadata"]["name"]) for r in self.cluster_roles.store.list()
                if r.get("aggregationRule")]

    async def reconcile(self, req: Request) -> Result:
        role = self.cluster_roles.store.get(None, req.name)
        if role is None or not role.get("aggregationRule"):
            return Result()
        rules = aggregate_rules(role, self.cluster_roles.store.list(), _matches)
        if rules == (role.get("rules") or []):
            return Result()
        new = copy.deepcopy(role)
        new["rules"] = rules
        try:
            await self.client.update(new)
        except ApiError as e:
            if is_conflict(e):
                return Result(requeue_after=0.5)
            if is_not_found(e):
                return Result()
            raise
        return Result()
