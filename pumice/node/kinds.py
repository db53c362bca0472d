"""The kinds the node agent reads and writes."""

from __future__ import annotations

from pumice.api.scheme import BUILTIN_KINDS, ResourceKind


def _kind(api_version: str, kind: str) -> ResourceKind:
    for rk in BUILTIN_KINDS:
        if rk.api_version == api_version and rk.kind == kind:
            return rk
    raise LookupError(f"{api_version} {kind} is not a built-in kind")


PODS = _kind("v1", "Pod")
NODES = _kind("v1", "Node")
SERVICES = _kind("v1", "Service")
ENDPOINTS = _kind("v1", "Endpoints")
CONFIGMAPS = _kind("v1", "ConfigMap")
SECRETS = _kind("v1", "Secret")
NAMESPACES = _kind("v1", "Namespace")
EVENTS = _kind("v1", "Event")
LEASES = _kind("coordination.k8s.io/v1", "Lease")
