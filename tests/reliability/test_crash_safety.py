"""Crash safety: SIGKILL the API server at random moments during a mixed write load (creates,
updates, status writes, deletes held by finalizers), restart it on the same data dir, and check
that every acknowledged write is there, none is half-applied, resourceVersions keep increasing
and a watch from before the kill resumes or answers 410 Expired.

Short: 4 kills (``make test``); full: 100 kills (``make reliability``). The server runs with its
default durability mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pumice.api import Obj
from pumice.client.base import ApiError
from pumice.client.kubeconfig import connect

from ._procs import kill9, start_apiserver, stop
from .conftest import size

NS = "default"
FINALIZER = "reliability.pumice.dev/hold"

#: states: ("absent",), ("present", v), ("deleting", v); a Deployment's is ("status", generation)
State = tuple[Any, ...]


@dataclass
class Tracked:
    acked: State = ("absent",)
    maybe: State | None = None  # the effect of the one request in flight at the kill, if any


@dataclass
class Model:
    objects: dict[str, Tracked] = field(default_factory=dict)
    max_rv: int = 0
    writes_acked: int = 0


def _deployment(name: str) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


async def _worker(client: Any, model: Model, w: int, rng: random.Random, cycle: int) -> None:
    cms = client.scheme.by_api_version_kind("v1", "ConfigMap")
    deps = client.scheme.by_api_version_kind("apps/v1", "Deployment")
    dep = f"dep-{w}"
    names = [f"cm-{w}-{i}" for i in range(6)]
    step = 0
    while True:
        step += 1
        v = f"{cycle}.{step}"
        if rng.random() < 0.15:
            t = model.objects.setdefault(dep, Tracked())
            if t.acked == ("absent",):
                t.maybe = ("status", 0)
                obj = await client.create(_deployment(dep))
                t.acked, t.maybe = ("status", 0), None
            else:
                gen = int(t.acked[1]) + 1
                t.maybe = ("status", gen)
                obj = await client.patch(deps, dep, {"status": {"observedGeneration": gen, "replicas": 0}}, NS,
                                         subresource="status")
                t.acked, t.maybe = ("status", gen), None
            _acked(model, obj)
            continue
        name = rng.choice(names)
        t = model.objects.setdefault(name, Tracked())
        kind = t.acked[0]
        if kind == "absent":
            fin = rng.random() < 0.5
            t.maybe = ("present", v)
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": NS, **({"finalizers": [FINALIZER]} if fin else {})},
                    "data": {"a": v, "b": v}}
            obj = await client.create(body)
            t.acked, t.maybe = ("present", v), None
        elif kind == "present" and rng.random() < 0.7:
            t.maybe = ("present", v)
            obj = await client.patch(cms, name, {"data": {"a": v, "b": v}}, NS)
            t.acked, t.maybe = ("present", v), None
        elif kind == "present":
            cur_v = t.acked[1]
            has_fin = bool(((await client.get(cms, name, NS)).get("metadata") or {}).get("finalizers"))
            t.maybe = ("deleting", cur_v) if has_fin else ("absent",)
            obj = await client.delete(cms, name, NS)
            t.acked, t.maybe = t.maybe, None
        else:  # deleting: drop the finalizer, the object goes
            t.maybe = ("absent",)
            obj = await client.patch(cms, name, {"metadata": {"finalizers": None}}, NS)
            t.acked, t.maybe = ("absent",), None
        _acked(model, obj)


def _acked(model: Model, obj: Any) -> None:
    model.writes_acked += 1
    rv = ((obj or {}).get("metadata") or {}).get("resourceVersion") if isinstance(obj, dict) else None
    if rv:
        model.max_rv = max(model.max_rv, int(rv))


def _state_of(obj: Obj | None, kind: str) -> State:
    if obj is None:
        return ("absent",)
    if kind == "Deployment":
        return ("status", int((obj.get("status") or {}).get("observedGeneration") or 0))
    data = obj.get("data") or {}
    if data.get("a") != data.get("b"):
        return ("half-applied", data.get("a"), data.get("b"))
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return ("deleting", data.get("a"))
    return ("present", data.get("a"))


async def _check(client: Any, model: Model) -> tuple[int, list[str]]:
    """Compare the restarted server with the model; returns (objects checked, problems)."""
    cms = client.scheme.by_api_version_kind("v1", "ConfigMap")
    deps = client.scheme.by_api_version_kind("apps/v1", "Deployment")
    lst = await client.list(cms, NS)
    dlst = await client.list(deps, NS)
    stored = {o["metadata"]["name"]: o for o in [*lst.items, *dlst.items]}
    problems = []
    if int(lst.resource_version) < model.max_rv:
        problems.append(f"list resourceVersion {lst.resource_version} < highest acknowledged {model.max_rv}")
    for name, t in sorted(model.objects.items()):
        actual = _state_of(stored.get(name), "Deployment" if name.startswith("dep-") else "ConfigMap")
        allowed = [t.acked] + ([t.maybe] if t.maybe is not None else [])
        if actual not in allowed:
            problems.append(f"{name}: stored {actual}, acknowledged {t.acked}, in flight {t.maybe}")
        t.acked, t.maybe = actual, None  # what the next cycle starts from
    for name in stored:
        if name not in model.objects:
            problems.append(f"{name}: stored but never written")
    return len(model.objects), problems


async def _watch_until_killed(client: Any, start_rv: str, seen: list[int]) -> None:
    cms = client.scheme.by_api_version_kind("v1", "ConfigMap")
    with contextlib.suppress(Exception):
        async for ev in client.watch(cms, NS, resource_version=start_rv):
            rv = int((ev.object.get("metadata") or {}).get("resourceVersion") or 0)
            if ev.type != "BOOKMARK":
                seen.append(rv)


async def _resume_watch(client: Any, from_rv: int) -> str:
    """Open a watch from a resourceVersion seen before the kill: ``resumed`` (events in order, or
    none yet) or ``expired`` (410); anything else fails the test."""
    cms = client.scheme.by_api_version_kind("v1", "ConfigMap")
    rvs: list[int] = []
    try:
        async with asyncio.timeout(1.5):
            async for ev in client.watch(cms, NS, resource_version=str(from_rv)):
                if ev.type == "ERROR":
                    code = int(ev.object.get("code") or 0)
                    assert code == 410, ev.object
                    return "expired"
                rvs.append(int(ev.object["metadata"]["resourceVersion"]))
    except TimeoutError:
        pass
    except ApiError as e:
        assert e.code == 410, e
        return "expired"
    assert rvs == sorted(rvs) and all(r > from_rv for r in rvs), rvs
    return "resumed"


async def test_acknowledged_writes_survive_repeated_sigkill(tmp_path: Path, report: Any) -> None:
    kills = size(4, 100)
    rng = random.Random(14)
    model = Model()
    checked = lost = 0
    watch = {"resumed": 0, "expired": 0}
    last_seen: list[int] = []
    proc, _ = start_apiserver(tmp_path, extra=("--no-crds",))
    try:
        for cycle in range(kills + 1):
            client = connect(tmp_path / "kubeconfig")
            try:
                if cycle:
                    n, problems = await _check(client, model)
                    checked += n
                    lost += len(problems)
                    assert not problems, problems
                    if last_seen:
                        watch[await _resume_watch(client, last_seen[-1])] += 1
                if cycle == kills:
                    break
                start_rv = (await client.list(client.scheme.by_api_version_kind("v1", "ConfigMap"), NS)).resource_version
                assert int(start_rv) >= model.max_rv  # resourceVersions never go back after a restart
                seen: list[int] = []
                watcher = asyncio.create_task(_watch_until_killed(client, start_rv, seen))
                workers = [asyncio.create_task(_worker(client, model, w, random.Random(rng.random()), cycle))
                           for w in range(4)]
                await asyncio.sleep(rng.uniform(0.1, 0.8))
                kill9(proc)
                await asyncio.wait(workers, timeout=30)
                for t in workers:
                    assert t.done(), "a worker hung on a killed server"
                    if not t.cancelled():
                        t.exception()  # connection errors end the workers; retrieve them
                watcher.cancel()
                with contextlib.suppress(BaseException):
                    await watcher
                assert seen == sorted(seen), "watch events out of order"
                last_seen = seen
            finally:
                with contextlib.suppress(Exception):
                    await client.close()
            proc, _ = start_apiserver(tmp_path, extra=("--no-crds",))
    finally:
        stop(proc)
    report(kills=kills, writes_acknowledged=model.writes_acked, objects_checked=checked, writes_lost=lost,
           watch_resumed=watch["resumed"], watch_expired=watch["expired"])
    assert model.writes_acked > kills * 5
