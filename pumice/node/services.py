"""Service names for Pod hosts files.

There is no cluster DNS and no kube-proxy in the process runtime, so a Service name resolves,
through each Pod's hosts file, straight to the Pod IPs behind it (for headless and ClusterIP
Services alike): the ready addresses of the Service's Endpoints object (plus the not-ready ones
when ``publishNotReadyAddresses``), or, when no Endpoints object exists (no endpoints controller
running), the IPs of the known Pods its selector matches (Ready ones, or all with
``publishNotReadyAddresses``). Names written: ``<svc>.<ns>.svc.cluster.local``, ``<svc>.<ns>.svc``,
``<svc>.<ns>`` for every Service and the bare ``<svc>`` for Services of the Pod's own namespace;
headless Services also give ``<hostname>.<svc>.<ns>.svc.cluster.local`` (and its shorter forms,
``<hostname>.<svc>`` for Pods of the same namespace, as a resolv.conf search path finds them) for
Pods whose ``spec.subdomain`` names them. The ``kubernetes`` Service of ``default`` resolves to the address
where the agent exposes the API server to Pods (never to the API server's advertised address in
its Endpoints, which Pods may not reach: nothing routes Service addresses here).

Mirrors: the records kube-dns/CoreDNS serve for Services (kubernetes/dns specification).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pumice.api import Obj, meta
from pumice.api.selectors import from_set

CLUSTER_DOMAIN = "cluster.local"


def _selected(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and from_set(selector).matches(labels)


@dataclass
class ServiceDirectory:
    """Services, Endpoints and Pods as last seen; :meth:`entries` answers for one Pod namespace."""

    services: dict[str, Obj] = field(default_factory=dict)
    endpoints: dict[str, Obj] = field(default_factory=dict)
    pods: dict[str, Obj] = field(default_factory=dict)  # uid -> pod
    api_address: str = ""
    version: int = 0

    def set(self, kind: str, obj: Obj, deleted: bool = False) -> bool:
        """Record an object (``kind``: services, endpoints or pods); True when it may change names."""
        table = {"services": self.services, "endpoints": self.endpoints, "pods": self.pods}[kind]
        key = meta.uid(obj) if kind == "pods" else meta.key(obj)
        if deleted:
            changed = table.pop(key, None) is not None
        else:
            if kind == "pods":
                slim = {
                    "metadata": {"namespace": meta.namespace(obj), "labels": meta.labels(obj)},
                    "spec": {k: v for k, v in (obj.get("spec") or {}).items() if k in ("hostname", "subdomain")},
                    "status": {"podIP": (obj.get("status") or {}).get("podIP", ""),
                               "ready": meta.pod_is_ready(obj)},
                }
                obj = slim
            changed = table.get(key) != obj
            table[key] = obj
        if changed:
            self.version += 1
        return changed

    def _service_ips(self, svc: Obj) -> list[str]:
        spec = svc.get("spec") or {}
        publish = bool(spec.get("publishNotReadyAddresses"))
        ep = self.endpoints.get(meta.key(svc))
        ips: list[str] = []
        if ep is not None:
            for subset in ep.get("subsets") or []:
                for a in subset.get("addresses") or []:
                    ips.append(a.get("ip", ""))
                if publish:
                    for a in subset.get("notReadyAddresses") or []:
                        ips.append(a.get("ip", ""))
        else:
            sel = spec.get("selector") or {}
            ns = meta.namespace(svc)
            for p in self.pods.values():
                if p["metadata"]["namespace"] != ns or not _selected(sel, p["metadata"]["labels"]):
                    continue
                if p["status"]["podIP"] and (publish or p["status"]["ready"]):
                    ips.append(p["status"]["podIP"])
        return sorted({ip for ip in ips if ip})

    def entries(self, pod_namespace: str) -> list[tuple[str, list[str]]]:
        """(ip, names) lines for a Pod in ``pod_namespace``, in a stable order."""
        out: list[tuple[str, list[str]]] = []
        if self.api_address:
            names = [f"kubernetes.default.svc.{CLUSTER_DOMAIN}", "kubernetes.default.svc", "kubernetes.default"]
            if pod_namespace == "default":
                names.append("kubernetes")
            out.append((self.api_address, names))
        for key in sorted(self.services):
            svc = self.services[key]
            ns, name = meta.namespace(svc), meta.name(svc)
            if ns == "default" and name == "kubernetes":
                continue  # the API server's own Service: the names above, where Pods reach it
            names = [f"{name}.{ns}.svc.{CLUSTER_DOMAIN}", f"{name}.{ns}.svc", f"{name}.{ns}"]
            if ns == pod_namespace:
                names.append(name)
            for ip in self._service_ips(svc):
                out.append((ip, names))
            if (svc.get("spec") or {}).get("clusterIP") == "None":
                for p in sorted(self.pods.values(), key=lambda p: p["status"]["podIP"]):
                    spec = p["spec"]
                    if (p["metadata"]["namespace"] == ns and spec.get("subdomain") == name and spec.get("hostname")
                            and p["status"]["podIP"]):
                        host = f"{spec['hostname']}.{name}"
                        names = [f"{host}.{ns}.svc.{CLUSTER_DOMAIN}", f"{host}.{ns}.svc", f"{host}.{ns}"]
                        if ns == pod_namespace:
                            names.append(host)
                        out.append((p["status"]["podIP"], names))
        return out

    def resolve(self, host: str, client_ip: str) -> str | None:
        """The Pod IP a cluster name stands for, as the hosts file of the Pod at ``client_ip``
        would resolve it (its namespace decides what a bare Service name means); None when
        ``host`` is not a cluster name."""
        ns = "default"
        for p in self.pods.values():
            if p["status"]["podIP"] == client_ip:
                ns = p["metadata"]["namespace"]
                break
        for ip, names in self.entries(ns):
            if host in names:
                return ip
        return None
