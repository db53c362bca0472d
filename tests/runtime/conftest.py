"""Shared fixtures and keyword builders for the controller-runtime tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pumice.api.scheme import Scheme

SCHEME = Scheme.builtin()
CONFIGMAP = SCHEME.by_api_version_kind("v1", "ConfigMap")
SECRET = SCHEME.by_api_version_kind("v1", "Secret")
POD = SCHEME.by_api_version_kind("v1", "Pod")
NAMESPACE = SCHEME.by_api_version_kind("v1", "Namespace")
DEPLOYMENT = SCHEME.by_api_version_kind("apps/v1", "Deployment")
assert CONFIGMAP and SECRET and POD and NAMESPACE and DEPLOYMENT


def configmap(name: str, ns: str = "default", *, labels: dict[str, str] | None = None,
              data: dict[str, str] | None = None, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        md["labels"] = labels
    if owner is not None:
        md["ownerReferences"] = [{
            "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True,
        }]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data or {}}


def secret(name: str, ns: str = "default", *, owner: dict[str, Any] | None = None,
           controller: bool = True) -> dict[str, Any]:
    obj = configmap(name, ns, owner=owner)
    obj["kind"] = "Secret"
    obj.pop("data")
    if owner is not None and not controller:
        obj["metadata"]["ownerReferences"][0]["controller"] = False
    return obj


def deployment(name: str, ns: str = "default", *, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


async def eventually(cond: Callable[[], bool | Awaitable[bool]], *, timeout: float = 10.0,
                     step: float = 0.01) -> None:
    """Wait (on the loop's clock) until ``cond()`` holds; fail after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        res = cond()
        if not isinstance(res, bool):
            res = await res
        if res:
            return
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(step)
