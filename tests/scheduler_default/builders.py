"""Keyword builders for scheduler tests: ``node("n1", cpu="4", memory="8Gi")``, ``pod("p1", cpu="1")``."""

from __future__ import annotations

from pumice.api import Obj


def node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: int = 110, ready: str = "True",
         labels: dict[str, str] | None = None, taints: list[Obj] | None = None,
         unschedulable: bool = False, extra: dict[str, str] | None = None) -> Obj:
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"capacity": dict(alloc), "allocatable": alloc,
                   "conditions": [{"type": "Ready", "status": ready}]},
    }


def pod(name: str, *, cpu: str | None = None, memory: str | None = None, namespace: str = "default",
        extra: dict[str, str] | None = None, node_selector: dict[str, str] | None = None,
        affinity_terms: list[list[Obj]] | None = None, tolerations: list[Obj] | None = None,
        host_port: int | None = None, init: list[dict[str, str]] | None = None,
        overhead: dict[str, str] | None = None, scheduler_name: str | None = None,
        node_name: str | None = None, priority: int | None = None) -> Obj:
    req: dict[str, str] = {}
    if cpu:
        req["cpu"] = cpu
    if memory:
        req["memory"] = memory
    req.update(extra or {})
    container: Obj = {"name": "c", "image": "busybox", "resources": {"requests": req} if req else {}}
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: Obj = {"containers": [container]}
    if init:
        spec["initContainers"] = [
            {"name": f"i{i}", "image": "busybox", "resources": {"requests": r}} for i, r in enumerate(init)]
    if overhead:
        spec["overhead"] = overhead
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity_terms is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": t} for t in affinity_terms]}}}
    if tolerations:
        spec["tolerations"] = tolerations
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": spec, "status": {"phase": "Pending"},
    }
