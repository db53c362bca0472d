"""The ServiceAccount controller: every active Namespace has a ServiceAccount named ``default``.

Reconciles Namespaces; a deleted ``default`` ServiceAccount enqueues its Namespace, so it comes
back. Terminating Namespaces are left alone (the API server refuses new content there).

Mirrors: kubernetes pkg/controller/serviceaccount/serviceaccounts_controller.go (syncNamespace,
DefaultServiceAccountsControllerOptions).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pumice.api import Obj
from pumice.api.scheme import NAMESPACE, SERVICE_ACCOUNT
from pumice.client.base import ApiError, KubeClient, is_already_exists, is_not_found
from pumice.client.informer import Informer
from pumice.runtime import Request, Result
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

#: the ServiceAccounts every Namespace gets
DEFAULT_SERVICE_ACCOUNTS = ("default",)


def namespace_of_service_account(sa: Obj) -> list[Request]:
    """Map a ServiceAccount event to its Namespace's Request."""
    md = sa.get("metadata") or {}
    if md.get("name") not in DEFAULT_SERVICE_ACCOUNTS:
        return []
    return [Request("", str(md.get("namespace") or ""))]


class ServiceAccountsReconciler:
    """Creates the missing default ServiceAccounts of a Namespace."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> ServiceAccountsReconciler:
        """Build the controller and register it (Namespaces, their ServiceAccounts)."""
        inf = mgr.informers
        sa = cls(mgr.client, namespaces=inf.informer(NAMESPACE), service_accounts=inf.informer(SERVICE_ACCOUNT))
        mgr.controller("serviceaccount").for_(NAMESPACE).watches(
            SERVICE_ACCOUNT, namespace_of_service_account).complete(sa)
        return sa

    def __init__(self, client: KubeClient, *, namespaces: Informer, service_accounts: Informer) -> None:
        self.client = client
        self.namespaces = namespaces
        self.service_accounts = service_accounts

    async def reconcile(self, req: Request) -> Result:
        ns = self.namespaces.store.get(None, req.name)
        if ns is None or ns["metadata"].get("deletionTimestamp") or \
                (ns.get("status") or {}).get("phase") == "Terminating":
            return Result()
        for name in DEFAULT_SERVICE_ACCOUNTS:
            if self.service_accounts.store.get(req.name, name) is not None:
                continue
            try:
                await self.client.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                          "metadata": {"name": name, "namespace": req.name}})
            except ApiError as e:
                # AlreadyExists: the cache is behind; NotFound/Forbidden: the Namespace went away
                if is_already_exists(e) or is_not_found(e) or e.code == 403:
                    continue
                raise
        return Result()
