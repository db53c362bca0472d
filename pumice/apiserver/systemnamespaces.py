"""The system namespaces (``kube-system``, ``kube-public``, ``kube-node-lease``), made again by the
API server whenever they are missing.

:meth:`SystemNamespacesController.sync` is one pass: each system namespace that does not exist is
created (one that exists, Terminating included, is left alone; an ``AlreadyExists`` answer counts
as success); a failure is logged with the namespace and its reason, and the other namespaces are
still tried. :meth:`~SystemNamespacesController.run` repeats the pass every ``interval`` seconds
(kube-apiserver's one minute), so ``kubectl delete ns --all`` or ``kubectl delete ns
kube-node-lease`` is undone within a minute of the namespace being gone, and the node agents'
Leases (``kube-node-lease``) can be written again.

Where it runs: :meth:`pumice.apiserver.server.APIServer.serve` runs the loop while the server
listens (``pumice up``, ``pumice apiserver``); :meth:`~pumice.apiserver.server.APIServer.start`
creates the namespaces once for every server. ``default`` is kept by
:mod:`pumice.apiserver.kubernetesservice`, as in kube-apiserver.

Mirrors: kubernetes pkg/controlplane/controller/systemnamespaces/system_namespaces_controller.go
(sync, createNamespaceIfNeeded) and the SystemNamespaces list of pkg/controlplane/apiserver.

Deviates: the pass reads the registry (no informer, so no wait for a cache sync).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from pumice._util.clock import Clock, run_every
from pumice._util.errors import FATAL_TYPES
from pumice.api.scheme import NAMESPACE
from pumice.apiserver.errors import StatusError

__all__ = ["SERVER_MANAGER", "SYSTEM_NAMESPACES", "SYSTEM_NAMESPACES_INTERVAL", "SystemNamespacesController",
           "ensure_namespace"]

log = logging.getLogger(__name__)

#: the namespaces kube-apiserver keeps (metav1.NamespaceSystem, NamespacePublic, NamespaceNodeLease)
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
#: seconds between passes (kube-apiserver's one minute)
SYSTEM_NAMESPACES_INTERVAL = 60.0
#: the field manager of what the API server writes itself (the namespaces it keeps, the
#: ``default/kubernetes`` Service and its endpoints, the system PriorityClasses, bootstrap RBAC,
#: the default StorageClass), as kube-apiserver's own loopback client names itself
SERVER_MANAGER = "kube-apiserver"


async def ensure_namespace(registry: Any, name: str) -> bool:
    """Create Namespace ``name`` through ``registry`` (admission included) unless it exists (one
    that is Terminating counts as existing); True when this call created it. An ``AlreadyExists``
    answer (made meanwhile) is success.

    Raises:
        StatusError: the read or the create was refused otherwise.

    Mirrors: kubernetes system_namespaces_controller.go createNamespaceIfNeeded."""
    try:
        registry.get(NAMESPACE, None, name)
        return False
    except StatusError as e:
        if e.code != 404:
            raise
    try:
        await registry.create(NAMESPACE, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                              field_manager=SERVER_MANAGER)
    except StatusError as e:
        if e.reason == "AlreadyExists":
            return False
        raise
    return True


class SystemNamespacesController:
    """Creates the system namespaces that are missing.

    Args:
        registry: the API server's :class:`~pumice.apiserver.registry.Registry` (creates go
            through it, admission included, as kube-apiserver's loopback client's do).
        clock: the project clock (:meth:`run` sleeps on it).
        namespaces: the names to keep (default :data:`SYSTEM_NAMESPACES`).
        interval: seconds between the passes of :meth:`run`.
    """

    def __init__(self, registry: Any, clock: Clock, namespaces: Iterable[str] = SYSTEM_NAMESPACES, *,
                 interval: float = SYSTEM_NAMESPACES_INTERVAL) -> None:
        self.registry = registry
        self.clock = clock
        self.namespaces = tuple(namespaces)
        self.interval = interval

    async def sync(self) -> list[str]:
        """One pass over the namespaces; returns the names it created. A refused create is logged
        (``Unable to create required kubernetes system namespace``, with the namespace and the
        reason) and the pass goes on with the next name.

        Raises:
            MemoryError: (any of FATAL_TYPES) from a get or create; not logged and carried on.
        """
        created = []
        for ns in self.namespaces:
            try:
                if await ensure_namespace(self.registry, ns):
                    log.info("created system namespace %s", ns)
                    created.append(ns)
            except FATAL_TYPES:
                raise  # not logged and carried on: run() ends with it, and the server with run()
            except Exception as e:  # logged with the namespace and reason; the next pass tries again
                log.error("Unable to create required kubernetes system namespace %s: %s: %s", ns,
                          type(e).__name__, e)
        return created

    async def run(self, *, wait_first: bool = False) -> None:
        """Run :meth:`sync` every ``interval`` seconds (the first pass at once, or after one
        interval with ``wait_first``) until cancelled."""
        await run_every(self.clock, self.interval, self.sync, wait_first=wait_first)
