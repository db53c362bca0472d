"""List + watch loop with relist on 410 Gone and retry on errors (a minimal reflector).

Mirrors: client-go tools/cache/reflector.go (ListAndWatch); handlers get synthetic DELETED
events for objects that vanished between two lists.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pumice._util.clock import Clock
from pumice.api.scheme import ResourceKind
from pumice.client.base import ApiError, KubeClient, is_gone

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Handler = Callable[[str, Obj], None]


def _key(obj: Obj) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


async def list_watch(
    client: KubeClient,
    kind: ResourceKind,
    handler: Handler,
    clock: Clock,
    *,
    field_selector: str | None = None,
    synced: asyncio.Event | None = None,
    retry_delay: float = 1.0,
) -> None:
    """Run until cancelled, calling ``handler(type, obj)`` for every change (``ADDED``,
    ``MODIFIED``, ``DELETED``). ``synced`` is set after the first list was delivered."""
    known: dict[str, Obj] = {}
    while True:
        try:
            lst = await client.list(kind, None, field_selector=field_selector)
            fresh = {_key(o): o for o in lst.items}
            for k in sorted(set(known) - set(fresh)):
                handler("DELETED", known.pop(k))
            for k, o in fresh.items():
                handler("MODIFIED" if k in known else "ADDED", o)
                known[k] = o
            if synced is not None:
                synced.set()
            rv = lst.resource_version
            while True:
                async for ev in client.watch(kind, None, resource_version=rv, field_selector=field_selector,
                                             allow_bookmarks=True):
                    obj = ev.object
                    if ev.type == "ERROR":
                        code = int(obj.get("code", 500) or 500)
                        raise ApiError(code, str(obj.get("reason", "")), str(obj.get("message", "")), obj)
                    rv = str((obj.get("metadata") or {}).get("resourceVersion", rv) or rv)
                    if ev.type == "BOOKMARK":
                        continue
                    k = _key(obj)
                    if ev.type == "DELETED":
                        known.pop(k, None)
                    else:
                        known[k] = obj
                    handler(ev.type, obj)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if not is_gone(e):
                log.warning("watch %s failed (%s); relisting in %gs", kind.plural, e, retry_delay)
                await clock.sleep(retry_delay)
