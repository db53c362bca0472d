"""Shared plumbing of the job plugins: Go-style flag parsing, the client seam, owned objects."""

from __future__ import annotations

import logging
from typing import Any

from pumice.api import Obj
from pumice.api.meta import owner_reference
from pumice.api.scheme import ResourceKind
from pumice.client.base import ApiError, KubeClient, create_unless_exists, is_not_found

log = logging.getLogger(__name__)


def parse_flags(args: list[str], defaults: dict[str, Any]) -> dict[str, Any]:
    """Parse Go ``flag`` style arguments (``--k=v``, ``-k=v``, ``--bool``) against ``defaults``
    (the type of each default decides the conversion). Unknown flags stop parsing, as Go's
    ContinueOnError does, and are logged."""
    out = dict(defaults)
    for a in args:
        if not isinstance(a, str) or not a.startswith("-"):
            break
        k, eq, v = a.lstrip("-").partition("=")
        if k not in defaults:
            log.warning("job plugin: unknown flag %r", a)
            break
        d = defaults[k]
        if isinstance(d, bool):
            out[k] = (v.lower() in ("1", "t", "true")) if eq else True
        elif isinstance(d, int):
            try:
                out[k] = int(v)
            except ValueError:
                log.warning("job plugin: bad int flag %r", a)
                break
        else:
            out[k] = v
    return out


def controlled(job: Obj, name: str) -> bool:
    return ((job.get("status") or {}).get("controlledResources") or {}).get(f"plugin-{name}") == name


def set_controlled(job: Obj, name: str, on: bool) -> None:
    cr = job.setdefault("status", {}).setdefault("controlledResources", {})
    if on:
        cr[f"plugin-{name}"] = name
    else:
        cr.pop(f"plugin-{name}", None)


def owned(job: Obj, api_version: str, kind: str, name: str, **body: Any) -> Obj:
    """An object in the job's namespace, controlled by the job."""
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": job["metadata"].get("namespace", "default"),
                         "ownerReferences": [owner_reference(job)]}, **body}


class PluginClient:
    """What plugins may do: create-if-missing, create-or-update data, delete-if-present."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def _served(self, api_version: str, kind: str) -> ResourceKind | None:
        """The kind if the server serves it (discovery decides, not pumice's list of kinds)."""
        try:
            return await self.client.resolve(api_version, kind)
        except ApiError as e:
            if is_not_found(e):
                return None
            raise

    async def _kind(self, obj: Obj) -> ResourceKind | None:
        return await self._served(obj["apiVersion"], obj["kind"])

    async def create_if_missing(self, obj: Obj) -> None:
        rk = await self._kind(obj)
        if rk is None:
            log.warning("job plugin: %s %s is not served; not created", obj["apiVersion"], obj["kind"])
            return
        try:
            await self.client.get(rk, obj["metadata"]["name"], obj["metadata"].get("namespace"))
            return
        except Exception as e:
            if not is_not_found(e):
                raise
        await create_unless_exists(self.client, obj)

    async def apply_data(self, obj: Obj) -> None:
        """Create, or update ``data`` when it differs (ConfigMap, Secret)."""
        rk = await self._kind(obj)
        if rk is None:
            raise ApiError(404, "NotFound", f"{obj['apiVersion']} {obj['kind']} is not served", {})
        try:
            cur = await self.client.get(rk, obj["metadata"]["name"], obj["metadata"].get("namespace"))
        except Exception as e:
            if not is_not_found(e):
                raise
            await self.create_if_missing(obj)
            return
        if cur.get("data") != obj.get("data"):
            cur["data"] = obj.get("data")
            await self.client.update(cur)

    async def delete_if_present(self, api_version: str, kind: str, name: str, namespace: str) -> None:
        rk = await self._served(api_version, kind)
        if rk is None:
            return
        try:
            await self.client.delete(rk, name, namespace)
        except Exception as e:
            if not is_not_found(e):
                raise


class NoopPlugin:
    """An upstream plugin that pumice does not build; it changes nothing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def on_pod_create(self, pod: Obj, job: Obj) -> None:
        return None

    async def on_job_add(self, job: Obj, client: PluginClient) -> None:
        return None

    async def on_job_delete(self, job: Obj, client: PluginClient) -> None:
        return None

    async def on_job_update(self, job: Obj, client: PluginClient) -> None:
        return None
