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

from pumice._util.clock import Clock
from pumice._util.errors import FATAL_TYPES
from pumice.api.scheme import NAMESPACE
from pumice.apiserver.errors import StatusError

__all__ = ["SYSTEM_NAMESPACES", "SYSTEM_NAMESPACES_INTERVAL", "SystemNamespacesController"]

log = logging.getLogger(__name__)

#: the namespaces kube-apiserver keeps (metav1.NamespaceSystem, NamespacePublic, NamespaceNodeLease)
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
#: seconds between passes (kube-apiserver's one minute)
SYSTEM_NAMESPACES_INTERVAL = 60.0
#: the field manager of the creates (kube-apiserver's loopback client)
FIELD_MANAGER = "kube-apiserver"


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
                if await self._create_if_needed(ns):
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
        if wait_first:
            await self.clock.sleep(self.interval)
        while True:
            await self.sync()
            await self.clock.sleep(self.interval)

    async def _create_if_needed(self, name: str) -> bool:
        try:
            self.registry.get(NAMESPACE, None, name)
            return False
        except StatusError as e:
            if e.code != 404:
                raise
        try:
            await self.registry.create(NAMESPACE, None, {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": name}},
                                       field_manager=FIELD_MANAGER)
        except StatusError as e:
            if e.reason == "AlreadyExists":  # made meanwhile
                return False
            raise
        log.info("created system namespace %s", name)
        return True
