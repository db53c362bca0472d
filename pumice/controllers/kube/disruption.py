"""The disruption controller: the status of every PodDisruptionBudget (how many of its Pods are
healthy, how many must stay, how many may be evicted now). The eviction subresource of the API
server refuses an eviction (429) when ``disruptionsAllowed`` is 0 and otherwise counts the Pod
in ``disruptedPods``; this controller drops a Pod from ``disruptedPods`` once it is gone, or after
two minutes.

Mirrors: kubernetes pkg/controller/disruption/disruption.go (trySync, buildDisruptedPodMap with
its 2 minute DeletionTimeout).
"""

from __future__ import annotations

import copy

from pumice._util.clock import Clock, parse_rfc3339, rfc3339
from pumice.api import Obj, meta
from pumice.api.disruption import budget_status, pdb_matches
from pumice.api.scheme import POD, POD_DISRUPTION_BUDGET
from pumice.client.base import ApiError, KubeClient, is_conflict, is_not_found
from pumice.client.informer import Informer
from pumice.controllers.kube.options import KubeOptions
from pumice.runtime import Request, Result
from pumice.runtime.manager import Manager

DELETION_TIMEOUT = 120.0


class DisruptionReconciler:
    """Writes PodDisruptionBudget status (see the module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> DisruptionReconciler:
        """Build the controller and register it (PodDisruptionBudgets, the Pods they select)."""
        inf = mgr.informers
        dis = cls(mgr.client, budgets=inf.informer(POD_DISRUPTION_BUDGET), pods=inf.informer(POD), clock=mgr.clock)
        mgr.controller("disruption").for_(POD_DISRUPTION_BUDGET).watches(POD, dis.budgets_of).complete(dis)
        return dis

    def __init__(self, client: KubeClient, *, budgets: Informer, pods: Informer, clock: Clock) -> None:
        self.client = client
        self.budgets = budgets
        self.pods = pods
        self.clock = clock

    def budgets_of(self, pod: Obj) -> list[Request]:
        ns = (pod.get("metadata") or {}).get("namespace") or ""
        return [Request.for_object(b) for b in self.budgets.store.list(ns) if pdb_matches(b, pod)]

    async def reconcile(self, req: Request) -> Result:
        pdb = self.budgets.store.get(req.namespace, req.name)
        if pdb is None or pdb["metadata"].get("deletionTimestamp"):
            return Result()
        pods = [p for p in self.pods.store.list(req.namespace) if pdb_matches(pdb, p)]
        now = self.clock.now()
        names = {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}
        disrupted: dict[str, str] = {}
        wait: float | None = None
        for name, when in ((pdb.get("status") or {}).get("disruptedPods") or {}).items():
            left = parse_rfc3339(when) + DELETION_TIMEOUT - now
            if name in names and left > 0:
                disrupted[name] = when
                wait = left if wait is None else min(wait, left)
        computed = budget_status(pdb, pods, disrupted)
        status = copy.deepcopy(pdb.get("status") or {})
        conds = meta.with_condition(status.get("conditions") or [], computed.pop("conditions")[0], rfc3339(now))
        status.update(computed)
        status["conditions"] = conds
        if not disrupted:
            status.pop("disruptedPods", None)
        if status != (pdb.get("status") or {}):
            try:
                await self.client.update_status({**pdb, "status": status})
            except ApiError as e:
                if is_conflict(e):
                    return Result(requeue_after=0.2)
                if not is_not_found(e):
                    raise
        return Result(requeue_after=wait)
