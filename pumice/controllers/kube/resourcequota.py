"""The resource quota controller: ``status.hard`` and ``status.used`` of every ResourceQuota,
recounted from the namespace's objects whenever a Pod of the namespace or the quota changes, and
every 10 seconds (for the other counted kinds). Each used amount is written in the format its sum
kept (the first non-zero operand's: ``2G`` for two ``1G`` memory requests, ``"0"`` when none).

Mirrors: kubernetes pkg/controller/resourcequota/resource_quota_controller.go (syncResourceQuota).
"""

from __future__ import annotations

from fractions import Fraction

from pumice.api import Obj
from pumice.api.quota import Formats, object_usage, sum_usage, usage_string
from pumice.api.scheme import (
    CONFIG_MAP,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    REPLICATION_CONTROLLER,
    RESOURCE_QUOTA,
    SECRET,
    SERVICE,
)
from pumice.client.base import ApiError, KubeClient, is_conflict, is_not_found
from pumice.client.informer import Informer
from pumice.controllers.kube.options import KubeOptions
from pumice.runtime import Request, Result
from pumice.runtime.manager import Manager

RESYNC = 10.0
COUNTED = (POD, SERVICE, CONFIG_MAP, SECRET, PERSISTENT_VOLUME_CLAIM, REPLICATION_CONTROLLER)


class ResourceQuotaReconciler:
    """Writes ResourceQuota status (see the module docstring)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> ResourceQuotaReconciler:
        """Build the controller and register it (ResourceQuotas, the Pods of their namespace)."""
        inf = mgr.informers
        rq = cls(mgr.client, quotas=inf.informer(RESOURCE_QUOTA), pods=inf.informer(POD))
        mgr.controller("resourcequota").for_(RESOURCE_QUOTA).watches(POD, rq.quotas_of).complete(rq)
        return rq

    def __init__(self, client: KubeClient, *, quotas: Informer, pods: Informer) -> None:
        self.client = client
        self.quotas = quotas
        self.pods = pods

    def quotas_of(self, obj: Obj) -> list[Request]:
        ns = (obj.get("metadata") or {}).get("namespace") or ""
        return [Request.for_object(q) for q in self.quotas.store.list(ns)]

    async def reconcile(self, req: Request) -> Result:
        quota = self.quotas.store.get(req.namespace, req.name)
        if quota is None:
            return Result()
        hard = dict((quota.get("spec") or {}).get("hard") or {})
        used: dict[str, Fraction] = {k: Fraction(0) for k in hard}
        formats: Formats = {}
        for rk in COUNTED:
            objs = self.pods.store.list(req.namespace) if rk is POD else \
                (await self.client.list(rk, req.namespace)).items
            for obj in objs:
                if (obj.get("metadata") or {}).get("deletionTimestamp") and rk is not POD:
                    continue
                obj_formats: Formats = {}
                sum_usage(used, formats, object_usage(rk.group, rk.plural, obj, obj_formats), obj_formats, hard)
        status = {"hard": hard, "used": {k: usage_string(k, v, formats) for k, v in used.items()}}
        if status != (quota.get("status") or {}):
            try:
                await self.client.update_status({**quota, "status": status})
            except ApiError as e:
                if is_conflict(e):
                    return Result(requeue_after=0.2)
                if not is_not_found(e):
                    raise
        return Result(requeue_after=RESYNC)
