"""Test helpers for the node agent.

:class:`MemoryClient` is a small, fast in-memory :class:`~pumice.client.base.KubeClient` with the
API-server behaviours the node agent relies on: Pod graceful deletion (a bound, non-terminal Pod
gets ``deletionTimestamp`` + ``deletionGracePeriodSeconds`` and stays until deleted with grace 0),
uid preconditions, merge patches with the status subresource, field selectors
(``spec.nodeName``, ``metadata.name``, ``metadata.namespace``), and watches fed through per-watcher
queues (O(1) per event, so 50,000 Pods stay cheap). It does no validation and no admission; use
``pumice.testing.cluster.local_cluster()`` for the real server.

Builders: :func:`pod` makes a bound Pod with one or more shell containers.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any

import msgspec

from pumice._util.clock import Clock, default_clock, rfc3339
from pumice.api import Obj
from pumice.api.patch import merge_patch
from pumice.api.scheme import ResourceKind, Scheme
from pumice.api.selectors import parse_field_selector, parse_label_selector
from pumice.client.base import ApiError, ObjectList, PatchType, WatchEvent
from pumice.testing.fake_client import resolve_in

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def _copy(o: Obj) -> Obj:
    out: Obj = _dec.decode(_enc.encode(o))
    return out


def _err(code: int, reason: str, message: str) -> ApiError:
    return ApiError(code, reason, message, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                            "reason": reason, "message": message, "code": code})


def _matches(obj: Obj, label_selector: str | None, field_selector: str | None) -> bool:
    """The API server's selector semantics (:mod:`pumice.api.selectors`)."""
    return (parse_label_selector(label_selector).matches((obj.get("metadata") or {}).get("labels"))
            and parse_field_selector(field_selector).matches(obj))


class MemoryClient:
    """See the module docstring. ``history`` bounds how many events a watch can resume from."""

    def __init__(self, scheme: Scheme | None = None, *, clock: Clock | None = None, history: int = 20000) -> None:
        self.scheme = scheme or Scheme.builtin()
        self.clock = clock or default_clock()
        self._store: dict[tuple[str, str], dict[str, Obj]] = {}
        self._rv = 0
        self._uids = itertools.count(1)
        self._history: dict[tuple[str, str], deque[tuple[int, str, Obj]]] = {}
        self._history_len = history
        self._watchers: dict[tuple[str, str], list[tuple[asyncio.Queue[tuple[str, Obj] | None], str | None, str | None, str | None]]] = {}
        self.writes = 0
        self.closed = False

    # -- helpers ---------------------------------------------------------------------------------

    async def resolve(self, api_version: str, kind: str) -> ResourceKind:
        return resolve_in(self.scheme, api_version, kind)

    def _kind(self, obj: Obj) -> ResourceKind:
        rk = self.scheme.by_api_version_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        if rk is None:
            raise _err(404, "NotFound", f"no kind {obj.get('apiVersion')} {obj.get('kind')}")
        return rk

    @staticmethod
    def _gk(rk: ResourceKind) -> tuple[str, str]:
        return (rk.group, rk.plural)

    @staticmethod
    def _key(rk: ResourceKind, namespace: str | None, name: str) -> str:
        return f"{namespace or ''}/{name}" if rk.namespaced else name

    def _bucket(self, rk: ResourceKind) -> dict[str, Obj]:
        return self._store.setdefault(self._gk(rk), {})

    def _emit(self, rk: ResourceKind, etype: str, obj: Obj) -> None:
        self.writes += 1
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        gk = self._gk(rk)
        hist = self._history.setdefault(gk, deque(maxlen=self._history_len))
        hist.append((self._rv, etype, obj))
        for q, ns, ls, fs in self._watchers.get(gk, []):
            if ns and rk.namespaced and obj["metadata"].get("namespace") != ns:
                continue
            if _matches(obj, ls, fs):
                q.put_nowait((etype, obj))

    def _get(self, rk: ResourceKind, namespace: str | None, name: str) -> Obj:
        obj = self._bucket(rk).get(self._key(rk, namespace, name))
        if obj is None:
            group = f".{rk.group}" if rk.group else ""
            raise _err(404, "NotFound", f'{rk.plural}{group} "{name}" not found')
        return obj

    # -- reads -----------------------------------------------------------------------------------

    async def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Obj:
        return _copy(self._get(kind, namespace, name))

    async def list(self, kind: ResourceKind, namespace: str | None = None, *, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None, continue_: str | None = None,
                   resource_version: str | None = None) -> ObjectList:
        items = [_copy(o) for k, o in sorted(self._bucket(kind).items())
                 if (not namespace or not kind.namespaced or o["metadata"].get("namespace") == namespace)
                 and _matches(o, label_selector, field_selector)]
        return ObjectList(items, str(self._rv))

    async def watch(self, kind: ResourceKind, namespace: str | None = None, *, resource_version: str | None = None,
                    label_selector: str | None = None, field_selector: str | None = None,
                    timeout_seconds: int | None = None, allow_bookmarks: bool = True) -> AsyncIterator[WatchEvent]:
        gk = self._gk(kind)
        q: asyncio.Queue[tuple[str, Obj] | None] = asyncio.Queue()
        since = int(resource_version) if resource_version else self._rv
        hist = self._history.get(gk, deque())
        if hist and since < hist[0][0] - 1 and len(hist) == hist.maxlen:
            raise _err(410, "Expired", f"too old resource version: {since}")
        for rv, etype, obj in hist:
            if rv > since and (not namespace or obj["metadata"].get("namespace") == namespace) \
                    and _matches(obj, label_selector, field_selector):
                q.put_nowait((etype, obj))
        entry = (q, namespace, label_selector, field_selector)
        self._watchers.setdefault(gk, []).append(entry)
        try:
            while True:
                item = await q.get()
                if item is None:
                    return
                yield WatchEvent(item[0], _copy(item[1]))  # type: ignore[arg-type]
        finally:
            self._watchers[gk].remove(entry)

    # -- writes ----------------------------------------------------------------------------------

    async def create(self, obj: Obj, *, dry_run: bool = False) -> Obj:
        rk = self._kind(obj)
        new = _copy(obj)
        md = new.setdefault("metadata", {})
        if not md.get("name") and md.get("generateName"):
            md["name"] = f"{md['generateName']}{next(self._uids):05x}"
        if not md.get("name"):
            raise _err(422, "Invalid", "metadata.name: Required value")
        if rk.namespaced:
            md.setdefault("namespace", "default")
        else:
            md.pop("namespace", None)
        key = self._key(rk, md.get("namespace"), md["name"])
        bucket = self._bucket(rk)
        if key in bucket:
            raise _err(409, "AlreadyExists", f'{rk.plural} "{md["name"]}" already exists')
        md["uid"] = md.get("uid") or f"00000000-0000-4000-8000-{next(self._uids):012d}"
        md["creationTimestamp"] = rfc3339(self.clock.now())
        md.setdefault("generation", 1)
        if dry_run:
            return new
        bucket[key] = new
        self._emit(rk, "ADDED", new)
        await asyncio.sleep(0)
        return _copy(new)

    def _store_update(self, rk: ResourceKind, old: Obj, new: Obj) -> Obj:
        key = self._key(rk, old["metadata"].get("namespace"), old["metadata"]["name"])
        if new == old:
            return _copy(old)
        self._bucket(rk)[key] = new
        self._emit(rk, "MODIFIED", new)
        return _copy(new)

    async def update(self, obj: Obj) -> Obj:
        rk = self._kind(obj)
        old = self._get(rk, obj["metadata"].get("namespace"), obj["metadata"]["name"])
        rv = obj["metadata"].get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise _err(409, "Conflict", "the object has been modified")
        new = _copy(obj)
        for f in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            if f in old["metadata"]:
                new["metadata"][f] = old["metadata"][f]
        if "status" in rk.subresources:
            new["status"] = old.get("status")
            if new["status"] is None:
                new.pop("status")
        return self._store_update(rk, old, new)

    async def update_status(self, obj: Obj) -> Obj:
        rk = self._kind(obj)
        old = self._get(rk, obj["metadata"].get("namespace"), obj["metadata"]["name"])
        new = _copy(old)
        new["status"] = _copy(obj.get("status") or {})
        return self._store_update(rk, old, new)

    async def patch(self, kind: ResourceKind, name: str, patch: Any, namespace: str | None = None, *,
                    patch_type: PatchType = "merge", subresource: str | None = None,
                    field_manager: str | None = None, force: bool = False) -> Obj:
        old = self._get(kind, namespace, name)
        if "status" in kind.subresources:
            part = {"status": patch.get("status")} if subresource == "status" else \
                {k: v for k, v in patch.items() if k != "status"}
        else:
            part = patch
        new = merge_patch(_copy(old), part)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        await asyncio.sleep(0)
        return self._store_update(kind, old, new)

    async def delete(self, kind: ResourceKind, name: str, namespace: str | None = None, *,
                     propagation_policy: str | None = None, grace_period_seconds: int | None = None,
                     preconditions: Mapping[str, str] | None = None) -> Obj | None:
        old = self._get(kind, namespace, name)
        if preconditions and preconditions.get("uid") and preconditions["uid"] != old["metadata"]["uid"]:
            raise _err(409, "Conflict", "Precondition failed: UID in precondition does not match")
        md = old["metadata"]
        if kind.plural == "pods" and not kind.group:
            bound = bool((old.get("spec") or {}).get("nodeName"))
            terminal = (old.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            grace = grace_period_seconds
            if grace is None:
                grace = int((old.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
            if bound and not terminal and grace > 0:
                cur = md.get("deletionGracePeriodSeconds")
                if cur is not None and grace >= int(cur):
                    return _copy(old)
                new = _copy(old)
                new["metadata"]["deletionTimestamp"] = rfc3339(self.clock.now() + grace)
                new["metadata"]["deletionGracePeriodSeconds"] = grace
                return self._store_update(kind, old, new)
        if md.get("finalizers"):
            new = _copy(old)
            new["metadata"].setdefault("deletionTimestamp", rfc3339(self.clock.now()))
            return self._store_update(kind, old, new)
        del self._bucket(kind)[self._key(kind, namespace, name)]
        gone = _copy(old)
        self._emit(kind, "DELETED", gone)
        await asyncio.sleep(0)
        return _copy(gone)

    async def bind(self, namespace: str, pod_name: str, node_name: str, *, pod_uid: str | None = None) -> None:
        pods = self.scheme.by_api_version_kind("v1", "Pod")
        assert pods is not None
        old = self._get(pods, namespace, pod_name)
        new = _copy(old)
        new.setdefault("spec", {})["nodeName"] = node_name
        self._store_update(pods, old, new)

    async def evict(self, namespace: str, pod_name: str, *, grace_period_seconds: int | None = None) -> None:
        pods = self.scheme.by_api_version_kind("v1", "Pod")
        assert pods is not None
        await self.delete(pods, pod_name, namespace, grace_period_seconds=grace_period_seconds)

    async def close(self) -> None:
        self.closed = True
        for watchers in self._watchers.values():
            for q, *_ in watchers:
                q.put_nowait(None)


def pod(name: str, *commands: str | list[str], node: str = "node-0", namespace: str = "default",
        image: str = "busybox", restart_policy: str = "Never", annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None, requests: str | None = None, grace: int | None = None,
        **container_fields: Any) -> Obj:
    """A bound Pod. Each command is a shell string (run with ``/bin/sh -c``) or an argv list; one
    container ``c0``, ``c1``... per command. ``requests``: ``"cpu,memory"`` (e.g. ``"500m,64Mi"``).
    Extra keyword fields go into every container (``readinessProbe=...``, ``env=[...]``)."""
    containers = []
    for i, cmd in enumerate(commands or ("sleep 3600",)):
        c: Obj = {"name": f"c{i}", "image": image,
                  "command": ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)}
        if requests:
            cpu, _, mem = requests.partition(",")
            c["resources"] = {"requests": {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v}}
        c.update(container_fields)
        containers.append(c)
    spec: Obj = {"nodeName": node, "restartPolicy": restart_policy, "containers": containers}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {}),
                     "annotations": dict(annotations or {})},
        "spec": spec,
    }


async def wait_for(fn: Any, timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Poll ``fn`` (sync or async, no arguments) until it returns a truthy value; raises
    AssertionError with the last value after ``timeout`` seconds of loop time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = fn()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value: {last!r})")


async def get_pod(client: Any, name: str, namespace: str = "default") -> Obj | None:
    """The Pod, or None when it does not exist."""
    pods = client.scheme.by_api_version_kind("v1", "Pod")
    try:
        out: Obj = await client.get(pods, name, namespace)
        return out
    except ApiError:
        return None


async def pod_phase(client: Any, name: str, namespace: str = "default") -> str:
    p = await get_pod(client, name, namespace)
    return "" if p is None else str((p.get("status") or {}).get("phase", ""))


async def phase_is(client: Any, name: str, phase: str, namespace: str = "default") -> bool:
    return await pod_phase(client, name, namespace) == phase


async def simulated_scale(nodes: int, pods: int, *, seed: int = 0, duration: float = 30.0,
                          lease_renew_interval: float | None = 10.0, clock: Clock | None = None) -> dict[str, Any]:
    """Run ``pods`` short Pods over ``nodes`` simulated Nodes in one agent (call under looptime for
    virtual time). Pods are created bound round-robin, each running ``duration`` plus 0-30 s
    (``pumice.io/sim-duration-seconds``); every 10th exits 1 (``pumice.io/sim-exit-code``).

    Returns:
        ``{"succeeded", "failed", "virtual_seconds", "writes", "order"}`` where ``order`` is a
        digest of the sequence of terminal Pods (equal across runs with the same seed).
    """
    import hashlib

    from pumice._util.clock import LoopClock
    from pumice.node.agent import NodeAgent

    clock = clock or LoopClock()
    client = MemoryClient(clock=clock)
    agent = NodeAgent(client, runtime="simulated", data_dir="/nonexistent", nodes=nodes, node_cpu="64",
                      node_memory="256Gi", clock=clock, seed=seed, sim_start_latency=1.0, sim_start_jitter=2.0,
                      lease_renew_interval=lease_renew_interval)
    await agent.start()
    pods_kind = client.scheme.by_api_version_kind("v1", "Pod")
    assert pods_kind is not None
    done: list[str] = []
    failed = 0
    t0 = clock.monotonic()

    async def watch_terminal() -> None:
        nonlocal failed
        async for ev in client.watch(pods_kind, None):
            phase = (ev.object.get("status") or {}).get("phase")
            if ev.type == "MODIFIED" and phase in ("Succeeded", "Failed"):
                name = ev.object["metadata"]["name"]
                if name not in seen:
                    seen.add(name)
                    done.append(f"{name}@{clock.monotonic() - t0:.3f}")
                    failed += phase == "Failed"
                    if len(seen) == pods:
                        return

    seen: set[str] = set()
    watcher = asyncio.get_running_loop().create_task(watch_terminal())
    node_names = list(agent.nodes)
    for i in range(pods):
        p = pod(f"p{i:06d}", node=node_names[i % nodes], requests="100m,64Mi", annotations={
            "pumice.io/sim-duration-seconds": str(duration + (i * 7919 % 31)),
            "pumice.io/sim-exit-code": "1" if i % 10 == 9 else "0"})
        p["spec"]["containers"][0].pop("command")
        await client.create(p)
    await watcher
    virtual = clock.monotonic() - t0
    await agent.stop()
    await client.close()
    digest = hashlib.sha256("\n".join(done).encode()).hexdigest()[:16]
    return {"succeeded": len(done) - failed, "failed": failed, "virtual_seconds": virtual,
            "writes": client.writes, "order": digest}
