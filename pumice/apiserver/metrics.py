"""metrics.k8s.io/v1beta1: NodeMetrics and PodMetrics for ``kubectl top``, from the usage each
node agent samples (``GET /stats/usage`` on its kubelet endpoint, see
:mod:`pumice.node.metrics`), as metrics-server serves them from the kubelets.

In-process agents without a kubelet endpoint (the simulated runtime under ``pumice up``) are read
through :meth:`MetricsAPI.add_source`; a Pod's entry may carry its own ``window``.

``/apis/metrics.k8s.io/v1beta1/nodes[/<name>]`` and
``/apis/metrics.k8s.io/v1beta1[/namespaces/<ns>]/pods[/<name>]``; label selectors apply to the Node
or Pod. CPU is reported in nanocores (``"12345678n"``), memory in Ki.

Mirrors: kubernetes-sigs/metrics-server pkg/api (node.go, pod.go: the objects, the 404 texts).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pumice._util.clock import rfc3339
from pumice._util.errors import FATAL_TYPES
from pumice.api import Obj
from pumice.api.selectors import LabelSelector
from pumice.apiserver.errors import StatusError
from pumice.apiserver.registry import Registry

log = logging.getLogger(__name__)

__all__ = ["MetricsAPI"]

GROUP_VERSION = "metrics.k8s.io/v1beta1"


def _cpu(cores: float) -> str:
    return f"{int(cores * 1e9)}n"


def _mem(n: int) -> str:
    return f"{int(n) // 1024}Ki"


class MetricsAPI:
    """Serves the two metrics resources (see the module docstring)."""

    def __init__(self, registry: Registry, client_factory: Any = None) -> None:
        self.registry = registry
        self.client_factory = client_factory
        self._sources: list[Callable[[], Obj | None]] = []

    def add_source(self, source: Callable[[], Obj | None]) -> None:
        """Also read ``source()``, a usage document of the ``/stats/usage`` shape (None: nothing
        yet), from an in-process node agent that publishes no kubelet endpoint: the simulated
        runtime's (:meth:`pumice.node.agent.NodeAgent.simulated_usage`) under ``pumice up``."""
        self._sources.append(source)

    async def _scrape(self) -> list[Obj]:
        import httpx2

        endpoints: set[tuple[str, int]] = set()
        for s in self.registry.store.list("/nodes"):
            st = s.obj.get("status") or {}
            ip = next((a.get("address") for a in st.get("addresses") or [] if a.get("type") == "InternalIP"), None)
            port = ((st.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
            if ip and port:
                endpoints.add((str(ip), int(port)))
        client = self.client_factory() if self.client_factory else httpx2.AsyncClient(timeout=10)

        async def one(ip: str, port: int) -> Obj | None:
            try:
                r = await client.get(f"http://{ip}:{port}/stats/usage")
            except httpx2.HTTPError:
                return None
            if r.status_code != 200:
                return None
            doc: Obj = r.json()
            return doc

        try:
            docs = await asyncio.gather(*(one(ip, port) for ip, port in sorted(endpoints)))
        finally:
            await client.aclose()
        return [d for d in [*docs, *(self._read(source) for source in self._sources)] if d]

    @staticmethod
    def _read(source: Callable[[], Obj | None]) -> Obj | None:
        """``source()``, or None (logged) when it fails: one agent's failure leaves its Nodes and
        Pods out, as an agent that does not answer over HTTP does, instead of failing every read."""
        try:
            return source()
        except FATAL_TYPES:
            raise
        except Exception:
            log.exception("usage source %r failed; its nodes and pods are left out", source)
            return None

    async def serve(self, rest: list[str], labels: LabelSelector) -> Obj:
        """The document for the path after ``/apis/metrics.k8s.io/v1beta1``.

        Raises:
            StatusError: 404 for an unknown path or object, 503 when no node agent reports usage.
        """
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or rest[0] not in ("nodes", "pods") or len(rest) > 2 or (rest[0] == "nodes" and namespace):
            raise StatusError(404, "the server could not find the requested resource", "NotFound", {})
        docs = await self._scrape()
        if not docs:
            raise StatusError(503, "the server is currently unable to handle the request (no node agent reports "
                                   "resource usage: a simulated-runtime agent reports it only in-process, under "
                                   "pumice up, and a process-runtime agent needs a few seconds after start)",
                              "ServiceUnavailable")
        name = rest[1] if len(rest) > 1 else None
        if rest[0] == "nodes":
            items = []
            for d in docs:
                for node, u in sorted(d.get("nodes", {}).items()):
                    stored = self.registry.store.get("/nodes", "", node)
                    if stored is None or not labels.matches((stored.obj.get("metadata") or {}).get("labels")):
                        continue
                    items.append({"metadata": {"name": node, "creationTimestamp": rfc3339(d["timestamp"]),
                                               "labels": dict(stored.obj["metadata"].get("labels") or {})},
                                  "timestamp": rfc3339(d["timestamp"]), "window": f"{round(d['window'])}s",
                                  "usage": {"cpu": _cpu(u["cpu"]), "memory": _mem(u["memory"])}})
            return self._answer("NodeMetrics", items, name, "nodes")
        pod_items: list[Obj] = []
        for d in docs:
            for p in d.get("pods", []):
                if namespace is not None and p["namespace"] != namespace:
                    continue
                stored = self.registry.store.get("/pods", p["namespace"], p["name"])
                if stored is None or not labels.matches((stored.obj.get("metadata") or {}).get("labels")):
                    continue
                containers: list[Obj] = [{"name": c["name"], "usage": {"cpu": _cpu(c["cpu"]), "memory": _mem(c["memory"])}}
                                         for c in p["containers"]]
                pod_items.append({"metadata": {"name": p["name"], "namespace": p["namespace"],
                                           "creationTimestamp": rfc3339(d["timestamp"]),
                                           "labels": dict(stored.obj["metadata"].get("labels") or {})},
                                  "timestamp": rfc3339(d["timestamp"]),
                                  "window": f"{round(p.get('window', d['window']))}s", "containers": containers})
        return self._answer("PodMetrics", pod_items, name, "pods")

    @staticmethod
    def _answer(kind: str, items: list[Obj], name: str | None, plural: str) -> Obj:
        if name is None:
            return {"kind": f"{kind}List", "apiVersion": GROUP_VERSION, "metadata": {},
                    "items": [{"kind": kind, "apiVersion": GROUP_VERSION, **i} for i in items]}
        for i in items:
            if i["metadata"]["name"] == name:
                return {"kind": kind, "apiVersion": GROUP_VERSION, **i}
        raise StatusError(404, f'{plural}.metrics.k8s.io "{name}" not found', "NotFound",
                          {"name": name, "group": "metrics.k8s.io", "kind": plural})
