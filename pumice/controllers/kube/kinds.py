"""The kinds the built-in controllers read and write (exact upstream group/version/plural)."""

from __future__ import annotations

from pumice.api.scheme import ResourceKind

POD = ResourceKind("", "v1", "Pod", "pods", subresources=("status", "binding", "eviction", "log"))
NODE = ResourceKind("", "v1", "Node", "nodes", namespaced=False, subresources=("status",))
NAMESPACE = ResourceKind("", "v1", "Namespace", "namespaces", namespaced=False, subresources=("status", "finalize"))
SERVICE = ResourceKind("", "v1", "Service", "services", subresources=("status",))
ENDPOINTS = ResourceKind("", "v1", "Endpoints", "endpoints", singular="endpoints")
ENDPOINT_SLICE = ResourceKind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")
REPLICA_SET = ResourceKind("apps", "v1", "ReplicaSet", "replicasets", subresources=("status", "scale"))
DEPLOYMENT = ResourceKind("apps", "v1", "Deployment", "deployments", subresources=("status", "scale"))
JOB = ResourceKind("batch", "v1", "Job", "jobs", subresources=("status",))
LEASE = ResourceKind("coordination.k8s.io", "v1", "Lease", "leases")
EVENT = ResourceKind("", "v1", "Event", "events")
