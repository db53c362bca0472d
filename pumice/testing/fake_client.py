"""FakeClient: an in-memory :class:`~pumice.client.base.KubeClient` for fast controller tests.

It keeps objects per kind with a global resourceVersion counter, assigns uid, generation and
creationTimestamp like the API server, honours optimistic concurrency (409 Conflict on a stale
resourceVersion), finalizers (delete sets deletionTimestamp while finalizers remain), merge
patches, the status subresource (``update`` keeps status, ``update_status`` takes only status),
and streams watch events with resourceVersion resume and bookmarks. Label selectors (``a=b``,
``a!=b``, ``a``, ``!a``) and field selectors over dotted paths (``spec.nodeName=n1``) filter lists
and watches; on a filtered watch an object that starts or stops matching arrives as ADDED or
DELETED, as from the API server's watch cache. Test hooks:

- :attr:`FakeClient.actions`: every call as ``(verb, plural, namespace, name)``;
  :meth:`FakeClient.writes` filters the mutating ones (for "a second reconcile writes nothing");
- :meth:`FakeClient.compact`: forget history so older watch resourceVersions get 410 Gone;
- :meth:`FakeClient.close_watches`: end every open watch stream (as a server restart does);
- :meth:`FakeClient.expire_watches`: send open watches an ERROR 410 event;
- :meth:`FakeClient.bookmark`: send a BOOKMARK to watches of a kind;
- :attr:`FakeClient.interceptor`: ``fn(verb, plural, namespace, name)`` called before each call;
  raise from it to inject failures (controller-runtime ``client/interceptor`` in spirit).

It is not the API server: no admission, no validation, no garbage collection. For that use
``pumice.testing.cluster.local_cluster()``.

Mirrors: controller-runtime pkg/client/fake + pkg/client/interceptor (in spirit).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from pumice._util.clock import Clock, default_clock, rfc3339
from pumice.api import Obj
from pumice.api.patch import PatchError, json_patch, merge_patch
from pumice.api.scheme import BUILTIN_KINDS, ResourceKind, Scheme
from pumice.api.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from pumice.api.strategic import strategic_merge_patch
from pumice.client.base import ApiError, ObjectList, PatchType, WatchEvent

Interceptor = Callable[[str, str, str, str], None]

__all__ = ["CountingClient", "FakeClient"]

_BUILTIN_GROUPS = frozenset(rk.group for rk in BUILTIN_KINDS)

WRITE_VERBS = frozenset({"create", "update", "update_status", "patch", "delete", "bind", "evict"})


def resolve_in(scheme: Scheme, api_version: str, kind: str) -> ResourceKind:
    """``scheme``'s kind for ``(api_version, kind)``, the answer of a fake's discovery.

    Raises:
        ApiError: 404 (as a real server's discovery) when the scheme does not have it.
    """
    rk = scheme.by_api_version_kind(api_version, kind)
    if rk is None:
        raise ApiError(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"', {})
    return rk


def _status(code: int, reason: str, message: str) -> ApiError:
    return ApiError(code, reason, message, {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
        "reason": reason, "code": code,
    })


def _selectors(label_selector: str | None, field_selector: str | None) -> tuple[LabelSelector, FieldSelector]:
    """Both query-string selectors, parsed as the API server parses them (400 on a bad one)."""
    try:
        return parse_label_selector(label_selector), parse_field_selector(field_selector)
    except SelectorError as e:
        raise _status(400, "BadRequest", str(e)) from e


class FakeClient:
    """In-memory KubeClient. See the module doc for the behaviour and the test hooks.

    Args:
        scheme: kinds served (default: the built-in kinds).
        clock: for creationTimestamp / deletionTimestamp.
    """

    def __init__(self, scheme: Scheme | None = None, *, clock: Clock | None = None) -> None:
        self.scheme = scheme or Scheme.builtin()
        self.clock = clock or default_clock()
        self._objects: dict[tuple[str, str], dict[str, Obj]] = {}
        self._rv = 0
        # (rv, (group, plural), type, object, previous state or None)
        self._history: list[tuple[int, tuple[str, str], str, Obj, Obj | None]] = []
        self._compacted = 0
        self._uids = itertools.count(1)
        self._changed: asyncio.Condition | None = None
        self._generation_epoch = 0  # bumped by close_watches
        self._expire_epoch = 0  # bumped by expire_watches
        self.actions: list[tuple[str, str, str, str]] = []
        self.interceptor: Interceptor | None = None
        self.closed = False

    # -- hooks -------------------------------------------------------------------------------

    def writes(self) -> list[tuple[str, str, str, str]]:
        """The mutating calls recorded in :attr:`actions`."""
        return [a for a in self.actions if a[0] in WRITE_VERBS]

    def compact(self) -> None:
        """Drop the event history: watches from any older resourceVersion now get 410 Gone."""
        self._compacted = self._rv
        self._history.clear()

    async def expire_watches(self) -> None:
        """Send every open watch an ERROR event with a 410 Status (then they end), as a server
        does when the watch fell behind the compaction point; also :meth:`compact`."""
        self._expire_epoch += 1
        self.compact()
        await self._notify()

    async def close_watches(self) -> None:
        """End every open watch stream (clients must re-watch)."""
        self._generation_epoch += 1
        await self._notify()

    async def bookmark(self, kind: ResourceKind) -> None:
        """Send a BOOKMARK at the current resourceVersion to watches of ``kind``."""
        self._rv += 1
        self._history.append((self._rv, (kind.group, kind.plural), "BOOKMARK",
                              {"kind": kind.kind, "apiVersion": kind.api_version,
                               "metadata": {"resourceVersion": str(self._rv)}}, None))
        await self._notify()

    @property
    def resource_version(self) -> int:
        return self._rv

    def _record(self, verb: str, rk: ResourceKind, namespace: str | None, name: str) -> None:
        self.actions.append((verb, rk.plural, namespace or "", name))
        if self.interceptor is not None:
            self.interceptor(verb, rk.plural, namespace or "", name)

    def _cond(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def _notify(self) -> None:
        cond = self._cond()
        async with cond:
            cond.notify_all()

    # -- helpers -----------------------------------------------------------------------------

    def _kind_of(self, obj: Obj) -> ResourceKind:
        rk = self.scheme.by_api_version_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rk is None:
            raise _status(404, "NotFound", f"the server could not find the requested resource "
                                           f"({obj.get('apiVersion')} {obj.get('kind')})")
        return rk

    def _bucket(self, rk: ResourceKind) -> dict[str, Obj]:
        return self._objects.setdefault((rk.group, rk.plural), {})

    @staticmethod
    def _key(rk: ResourceKind, namespace: str | None, name: str) -> str:
        return f"{namespace}/{name}" if rk.namespaced and namespace else name

    def _emit(self, rk: ResourceKind, etype: str, obj: Obj, old: Obj | None = None) -> None:
        self._history.append((self._rv, (rk.group, rk.plural), etype, copy.deepcopy(obj),
                              copy.deepcopy(old) if old is not None else None))

    def _bump(self, obj: Obj) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)

    def _not_found(self, rk: ResourceKind, name: str) -> ApiError:
        group = f".{rk.group}" if rk.group else ""
        return _status(404, "NotFound", f'{rk.plural}{group} "{name}" not found')

    # -- reads -------------------------------------------------------------------------------

    async def resolve(self, api_version: str, kind: str) -> ResourceKind:
        """The kind from :attr:`scheme` (the kinds this fake serves).

        Raises:
            ApiError: 404 when the scheme does not have it.
        """
        return resolve_in(self.scheme, api_version, kind)

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj:
        self._record("get", kind, namespace, name)
        obj = self._bucket(kind).get(self._key(kind, namespace, name))
        if obj is None:
            raise self._not_found(kind, name)
        return copy.deepcopy(obj)

    async def list(
        self, kind: ResourceKind, namespace: str | None = None, *, label_selector: str | None = None,
        field_selector: str | None = None, limit: int | None = None, continue_: str | None = None,
        resource_version: str | None = None,
    ) -> ObjectList:
        self._record("list", kind, namespace, "")
        labels, fields = _selectors(label_selector, field_selector)
        items = [
            o for k, o in sorted(self._bucket(kind).items())
            if (not namespace or not kind.namespaced or o["metadata"].get("namespace") == namespace)
            and labels.matches(o["metadata"].get("labels")) and fields.matches(o)
        ]
        start, rv = 0, str(self._rv)
        if continue_:
            rv_s, _, start_s = continue_.partition(":")
            if int(rv_s) < self._compacted:
                raise _status(410, "Expired", "The provided continue parameter is too old")
            start, rv = int(start_s), rv_s
        end = len(items) if not limit else start + limit
        page = [copy.deepcopy(o) for o in items[start:end]]
        for o in page:  # list items carry no apiVersion/kind, as the real server's
            o.pop("apiVersion", None)
            o.pop("kind", None)
        cont = f"{rv}:{end}" if end < len(items) else ""
        return ObjectList(page, rv, cont)

    async def watch(
        self, kind: ResourceKind, namespace: str | None = None, *, resource_version: str | None = None,
        label_selector: str | None = None, field_selector: str | None = None,
        timeout_seconds: int | None = None, allow_bookmarks: bool = True,
    ) -> AsyncIterator[WatchEvent]:
        self._record("watch", kind, namespace, "")
        since = int(resource_version) if resource_version else self._rv
        if since < self._compacted:
            raise _status(410, "Expired", f"too old resource version: {since} ({self._compacted})")
        labels, fields = _selectors(label_selector, field_selector)

        def matches(o: Obj | None) -> bool:
            if o is None:
                return False
            if namespace and kind.namespaced and o["metadata"].get("namespace") != namespace:
                return False
            return labels.matches(o["metadata"].get("labels")) and fields.matches(o)

        epoch = self._generation_epoch
        expire_epoch = self._expire_epoch
        gk = (kind.group, kind.plural)
        cond = self._cond()
        while True:
            if self.closed or epoch != self._generation_epoch:
                return
            if since < self._compacted or expire_epoch != self._expire_epoch:
                yield WatchEvent("ERROR", {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                           "reason": "Expired", "code": 410,
                                           "message": f"too old resource version: {since}"})
                return
            pending = [h for h in self._history if h[0] > since and h[1] == gk]
            for rv, _, etype, obj, old in pending:
                since = rv
                if etype == "BOOKMARK":
                    if allow_bookmarks:
                        yield WatchEvent("BOOKMARK", copy.deepcopy(obj))
                    continue
                now_in = matches(obj)
                if etype == "MODIFIED" and old is not None:
                    was_in = matches(old)
                    if was_in and not now_in:  # left the selection: a delete, as the watch cache
                        yield WatchEvent("DELETED", copy.deepcopy(obj))
                        continue
                    if now_in and not was_in:
                        yield WatchEvent("ADDED", copy.deepcopy(obj))
                        continue
                if now_in:
                    yield WatchEvent(etype, copy.deepcopy(obj))  # type: ignore[arg-type]
            async with cond:
                if not any(h[0] > since and h[1] == gk for h in self._history) \
                        and epoch == self._generation_epoch and not self.closed \
                        and expire_epoch == self._expire_epoch:
                    await cond.wait()

    # -- writes ------------------------------------------------------------------------------

    async def create(self, obj: Obj, *, dry_run: bool = False) -> Obj:
        rk = self._kind_of(obj)
        md = obj.get("metadata") or {}
        name = md.get("name") or ""
        if not name and md.get("generateName"):
            name = f"{md['generateName']}{next(self._uids):05x}"
        self._record("create", rk, md.get("namespace"), name)
        if not name:
            raise _status(422, "Invalid", "metadata.name: Required value: name or generateName is required")
        if rk.namespaced and not md.get("namespace"):
            raise _status(422, "Invalid", "metadata.namespace: Required value")
        key = self._key(rk, md.get("namespace"), name)
        bucket = self._bucket(rk)
        if key in bucket:
            group = f".{rk.group}" if rk.group else ""
            raise _status(409, "AlreadyExists", f'{rk.plural}{group} "{name}" already exists')
        new = copy.deepcopy(obj)
        new["apiVersion"], new["kind"] = rk.api_version, rk.kind
        nmd = new.setdefault("metadata", {})
        nmd["name"] = name
        if not rk.namespaced:
            nmd.pop("namespace", None)
        nmd["uid"] = f"00000000-0000-0000-0000-{next(self._uids):012d}"
        nmd["creationTimestamp"] = rfc3339(self.clock.now())
        nmd["generation"] = 1
        if dry_run:
            return new
        self._bump(new)
        bucket[key] = new
        self._emit(rk, "ADDED", new)
        await self._notify()
        return copy.deepcopy(new)

    async def _replace(self, rk: ResourceKind, old: Obj, new: Obj, *, deleting: bool = False) -> Obj:
        md = new["metadata"]
        key = self._key(rk, md.get("namespace"), md["name"])
        for f in ("uid", "creationTimestamp", "deletionTimestamp", "generation"):
            if f == "deletionTimestamp" and deleting:
                continue
            if f in old["metadata"]:
                md[f] = old["metadata"][f]
            else:
                md.pop(f, None)
        spec_old = {k: v for k, v in old.items() if k not in ("metadata", "status")}
        spec_new = {k: v for k, v in new.items() if k not in ("metadata", "status")}
        if spec_old != spec_new:
            md["generation"] = int(old["metadata"].get("generation", 1)) + 1
        if new == old:
            return copy.deepcopy(old)  # no-op writes keep the resourceVersion, as the server does
        if md.get("deletionTimestamp") and not md.get("finalizers"):
            del self._bucket(rk)[key]
            self._bump(new)
            self._emit(rk, "DELETED", new)
        else:
            self._bump(new)
            self._bucket(rk)[key] = new
            self._emit(rk, "MODIFIED", new, old)
        await self._notify()
        return copy.deepcopy(new)

    def _current(self, rk: ResourceKind, namespace: str | None, name: str) -> Obj:
        old = self._bucket(rk).get(self._key(rk, namespace, name))
        if old is None:
            raise self._not_found(rk, name)
        return old

    async def update(self, obj: Obj) -> Obj:
        rk = self._kind_of(obj)
        md = obj.get("metadata") or {}
        self._record("update", rk, md.get("namespace"), md.get("name", ""))
        old = self._current(rk, md.get("namespace"), md.get("name", ""))
        if md.get("resourceVersion") and md["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise _status(409, "Conflict", f'Operation cannot be fulfilled on {rk.plural} "{md.get("name")}": '
                                           "the object has been modified; please apply your changes to the "
                                           "latest version and try again")
        new = copy.deepcopy(obj)
        new["apiVersion"], new["kind"] = rk.api_version, rk.kind
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if "status" in rk.subresources:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        return await self._replace(rk, old, new)

    async def update_status(self, obj: Obj) -> Obj:
        rk = self._kind_of(obj)
        md = obj.get("metadata") or {}
        self._record("update_status", rk, md.get("namespace"), md.get("name", ""))
        old = self._current(rk, md.get("namespace"), md.get("name", ""))
        if md.get("resourceVersion") and md["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise _status(409, "Conflict", f'Operation cannot be fulfilled on {rk.plural} "{md.get("name")}": '
                                           "the object has been modified")
        new = copy.deepcopy(old)
        if "status" in obj:
            new["status"] = copy.deepcopy(obj["status"])
        else:
            new.pop("status", None)
        return await self._replace(rk, old, new)

    async def patch(
        self, kind: ResourceKind, name: str, patch: Any, namespace: str | None = None, *,
        patch_type: PatchType = "merge", subresource: str | None = None, field_manager: str | None = None,
        force: bool = False,
    ) -> Obj:
        self._record("patch", kind, namespace, name)
        old = self._current(kind, namespace, name)
        try:
            if patch_type == "merge":
                new = merge_patch(copy.deepcopy(old), patch)
            elif patch_type == "json":
                new = json_patch(old, patch)
            elif patch_type == "strategic":
                if kind.group not in _BUILTIN_GROUPS:
                    raise _status(415, "UnsupportedMediaType",
                                  "strategic merge patch is not supported for custom resources")
                new = strategic_merge_patch(old, patch, kind.kind)
            else:
                raise _status(415, "UnsupportedMediaType", f"FakeClient does not support {patch_type} patches")
        except PatchError as e:
            raise _status(422, "Invalid", str(e)) from e
        if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
            raise _status(422, "Invalid", "the patch removed the object's metadata")
        rv = ((patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch, dict) else None)
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise _status(409, "Conflict", f'Operation cannot be fulfilled on {kind.plural} "{name}"')
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if "status" in kind.subresources:
            if subresource == "status":
                new = {**copy.deepcopy(old), "status": new.get("status")}
                if new["status"] is None:
                    new.pop("status")
            elif "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        return await self._replace(kind, old, new)

    async def delete(
        self, kind: ResourceKind, name: str, namespace: str | None = None, *,
        propagation_policy: str | None = None, grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Obj | None:
        self._record("delete", kind, namespace, name)
        old = self._current(kind, namespace, name)
        if preconditions:
            if preconditions.get("uid") and preconditions["uid"] != old["metadata"].get("uid"):
                raise _status(409, "Conflict", "Precondition failed: UID in precondition does not match")
            if preconditions.get("resourceVersion") and \
                    preconditions["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise _status(409, "Conflict", "Precondition failed: ResourceVersion does not match")
        if old["metadata"].get("finalizers"):
            if old["metadata"].get("deletionTimestamp"):
                return copy.deepcopy(old)
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = rfc3339(self.clock.now())
            return await self._replace(kind, old, new, deleting=True)
        key = self._key(kind, namespace, name)
        gone = self._bucket(kind).pop(key)
        self._bump(gone)
        self._emit(kind, "DELETED", gone)
        await self._notify()
        return copy.deepcopy(gone)

    async def bind(self, namespace: str, pod_name: str, node_name: str, *, pod_uid: str | None = None) -> None:
        pods = self.scheme.by_api_version_kind("v1", "Pod")
        assert pods is not None
        self._record("bind", pods, namespace, pod_name)
        old = self._current(pods, namespace, pod_name)
        if old.get("spec", {}).get("nodeName"):
            raise _status(409, "Conflict", f"pod {pod_name} is already assigned to node "
                                           f"{old['spec']['nodeName']!r}")
        new = copy.deepcopy(old)
        new.setdefault("spec", {})["nodeName"] = node_name
        await self._replace(pods, old, new)

    async def evict(self, namespace: str, pod_name: str, *, grace_period_seconds: int | None = None) -> None:
        pods = self.scheme.by_api_version_kind("v1", "Pod")
        assert pods is not None
        await self.delete(pods, pod_name, namespace, grace_period_seconds=grace_period_seconds)

    async def close(self) -> None:
        self.closed = True
        await self._notify()


class CountingClient:
    """Wrap any KubeClient and record every call in :attr:`actions` as
    ``(verb, plural, namespace, name)``; :meth:`writes` lists the mutating ones.

    Use it around the real in-process client for "a second reconcile writes nothing" tests::

        counting = CountingClient(cluster.client)
        await reconciler.reconcile(req)          # converges
        counting.reset()
        await reconciler.reconcile(req)          # no change in the world
        assert counting.writes() == []

    Attribute access not listed here passes through to the wrapped client.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.scheme: Scheme = inner.scheme
        self.actions: list[tuple[str, str, str, str]] = []

    def writes(self) -> list[tuple[str, str, str, str]]:
        return [a for a in self.actions if a[0] in WRITE_VERBS]

    def reset(self) -> None:
        self.actions.clear()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _kind(self, obj: Obj) -> str:
        rk = self.scheme.by_api_version_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        return rk.plural if rk is not None else str(obj.get("kind", ""))

    def _obj(self, verb: str, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        self.actions.append((verb, self._kind(obj), md.get("namespace") or "", md.get("name") or ""))

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj:
        self.actions.append(("get", kind.plural, namespace or "", name))
        result: Obj = await self.inner.get(kind, name, namespace)
        return result

    async def list(self, kind: ResourceKind, namespace: str | None = None, **kw: Any) -> ObjectList:
        self.actions.append(("list", kind.plural, namespace or "", ""))
        result: ObjectList = await self.inner.list(kind, namespace, **kw)
        return result

    def watch(self, kind: ResourceKind, namespace: str | None = None, **kw: Any) -> AsyncIterator[WatchEvent]:
        self.actions.append(("watch", kind.plural, namespace or "", ""))
        result: AsyncIterator[WatchEvent] = self.inner.watch(kind, namespace, **kw)
        return result

    async def create(self, obj: Obj, **kw: Any) -> Obj:
        self._obj("create", obj)
        result: Obj = await self.inner.create(obj, **kw)
        return result

    async def update(self, obj: Obj) -> Obj:
        self._obj("update", obj)
        result: Obj = await self.inner.update(obj)
        return result

    async def update_status(self, obj: Obj) -> Obj:
        self._obj("update_status", obj)
        result: Obj = await self.inner.update_status(obj)
        return result

    async def patch(self, kind: ResourceKind, name: str, patch: Any, namespace: str | None = None,
                    **kw: Any) -> Obj:
        self.actions.append(("patch", kind.plural, namespace or "", name))
        result: Obj = await self.inner.patch(kind, name, patch, namespace, **kw)
        return result

    async def delete(self, kind: ResourceKind, name: str, namespace: str | None = None, **kw: Any) -> Obj | None:
        self.actions.append(("delete", kind.plural, namespace or "", name))
        result: Obj | None = await self.inner.delete(kind, name, namespace, **kw)
        return result

    async def bind(self, namespace: str, pod_name: str, node_name: str, **kw: Any) -> None:
        self.actions.append(("bind", "pods", namespace, pod_name))
        await self.inner.bind(namespace, pod_name, node_name, **kw)

    async def evict(self, namespace: str, pod_name: str, **kw: Any) -> None:
        self.actions.append(("evict", "pods", namespace, pod_name))
        await self.inner.evict(namespace, pod_name, **kw)

    async def close(self) -> None:
        await self.inner.close()
