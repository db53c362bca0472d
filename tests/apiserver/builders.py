"""Keyword builders for API server tests."""

from __future__ import annotations

from typing import Any


def pod(name: str, *, ns: str = "default", labels: dict[str, str] | None = None, node: str | None = None,
        finalizers: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        md["labels"] = labels
    if finalizers:
        md["finalizers"] = finalizers
    s: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec}
    if node:
        s["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": s}


def configmap(name: str, *, ns: str = "default", data: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": data or {}}


def deployment(name: str, *, ns: str = "default", replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}}}
