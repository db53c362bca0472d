"""The root CA certificate publisher: a ConfigMap ``kube-root-ca.crt`` holding the API server's CA
(``ca.crt``) in every active Namespace, so Pods can verify the API server (the ServiceAccount
admission plugin projects it into every Pod at /var/run/secrets/kubernetes.io/serviceaccount).

A ConfigMap someone changed is put back; a deleted one is recreated.

Mirrors: kubernetes pkg/controller/certificates/rootcacertpublisher/publisher.go (syncNamespace,
the ConfigMap name, key and description annotation).
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from pumice.api import Obj
from pumice.api.scheme import CONFIG_MAP, NAMESPACE
from pumice.client.base import ApiError, KubeClient, is_already_exists, is_conflict, is_not_found
from pumice.client.informer import Informer
from pumice.runtime import Request, Result
from pumice.runtime.manager import Manager

if TYPE_CHECKING:
    from pumice.controllers.kube.options import KubeOptions


log = logging.getLogger(__name__)

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_KEY = "ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
               "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
               "guaranteed across distributions of Kubernetes clusters.")


def namespace_of_configmap(cm: Obj) -> list[Request]:
    md = cm.get("metadata") or {}
    if md.get("name") != ROOT_CA_CONFIGMAP:
        return []
    return [Request("", str(md.get("namespace") or ""))]


class RootCACertPublisher:
    """Keeps ``kube-root-ca.crt`` in every Namespace equal to ``root_ca`` (PEM text)."""

    @classmethod
    def setup_with_manager(cls, mgr: Manager, opts: KubeOptions) -> RootCACertPublisher | None:
        """Build the publisher and register it (Namespaces, their ConfigMaps); None without
        ``opts.root_ca``."""
        if not opts.root_ca:
            return None
        inf = mgr.informers
        pub = cls(mgr.client, namespaces=inf.informer(NAMESPACE), configmaps=inf.informer(CONFIG_MAP),
                  root_ca=opts.root_ca)
        mgr.controller("root-ca-cert-publisher").for_(NAMESPACE).watches(
            CONFIG_MAP, namespace_of_configmap).complete(pub)
        return pub

    def __init__(self, client: KubeClient, *, namespaces: Informer, configmaps: Informer, root_ca: str) -> None:
        self.client = client
        self.namespaces = namespaces
        self.configmaps = configmaps
        self.root_ca = root_ca

    async def reconcile(self, req: Request) -> Result:
        ns = self.namespaces.store.get(None, req.name)
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return Result()
        data = {ROOT_CA_KEY: self.root_ca}
        cm = self.configmaps.store.get(req.name, ROOT_CA_CONFIGMAP)
        try:
            if cm is None:
                await self.client.create({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": req.name,
                                 "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": data})
                return Result()
            annotations = (cm["metadata"].get("annotations") or {})
            if cm.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION) == DESCRIPTION:
                return Result()
            new = copy.deepcopy(cm)
            new["data"] = data
            new.pop("binaryData", None)
            new["metadata"].setdefault("annotations", {})[DESCRIPTION_ANNOTATION] = DESCRIPTION
            await self.client.update(new)
        except ApiError as e:
            if is_conflict(e):
                return Result(requeue_after=0.5)  # the cache is behind our own write
            if is_already_exists(e) or is_not_found(e) or e.code == 403:
                return Result()
            raise
        return Result()
