"""The runtime against the real in-process API server (pumice.testing.cluster.local_cluster):
informer list+watch and 410 relist, a toy controller end to end (owns, create_or_update, events),
"a second reconcile writes nothing", and leader election between two managers.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pumice._util.clock import LoopClock
from pumice.api.scheme import EVENT, LEASE
from pumice.client.base import ApiError
from pumice.client.informer import SharedInformerFactory
from pumice.runtime import (
    EventRecorder,
    LeaderElectionLost,
    Manager,
    Request,
    Result,
    create_or_update,
    set_controller_reference,
)
from pumice.testing import cluster as cluster_mod
from pumice.testing.fake_client import CountingClient

from .conftest import CONFIGMAP, SECRET, configmap, eventually

local_cluster = cluster_mod.local_cluster


@pytest.fixture
async def cluster() -> AsyncIterator[Any]:
    async with local_cluster(install_crds=False) as c:
        yield c


class Gate:
    """A client that can refuse calls (a network partition for one process)."""

    def __init__(self, inner: Any, *, verbs: tuple[str, ...] = ("get", "create", "update", "watch", "list")) -> None:
        self.inner = inner
        self.closed = False
        self.verbs = verbs

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in self.verbs:
            return attr
        if name == "watch":
            def watch(*a: Any, **kw: Any) -> Any:
                if self.closed:
                    raise ApiError(503, "ServiceUnavailable", "partitioned")
                return attr(*a, **kw)
            return watch

        async def call(*a: Any, **kw: Any) -> Any:
            if self.closed:
                raise ApiError(503, "ServiceUnavailable", "partitioned")
            return await attr(*a, **kw)

        return call


async def test_informer_follows_the_real_server(cluster: Any) -> None:
    client = cluster.client
    await client.create(configmap("a"))
    factory = SharedInformerFactory(client)
    inf = factory.informer(CONFIGMAP, "default")
    seen: list[tuple[str, str]] = []
    inf.add_event_handler(lambda o: seen.append(("add", o["metadata"]["name"])),
                          lambda old, new: seen.append(("update", new["metadata"]["name"])),
                          lambda o: seen.append(("delete", o["metadata"]["name"])))
    await factory.start()
    assert await factory.wait_for_cache_sync(timeout=10)
    await client.create(configmap("b", labels={"app": "x"}))
    live = await client.get(CONFIGMAP, "a", "default")
    live["data"] = {"k": "v"}
    await client.update(live)
    await client.delete(CONFIGMAP, "b", "default")
    await eventually(lambda: len(seen) == 4)
    assert seen == [("add", "a"), ("add", "b"), ("update", "a"), ("delete", "b")]
    assert inf.store.get("default", "a")["data"] == {"k": "v"}
    await factory.stop()


async def test_informer_relists_when_the_server_says_410_gone() -> None:
    async with local_cluster(install_crds=False, history=3) as cluster:
        gate = Gate(cluster.client, verbs=("watch",))
        factory = SharedInformerFactory(gate)
        inf = factory.informer(CONFIGMAP, "default")
        await factory.start()
        await factory.wait_for_cache_sync()
        gate.closed = True
        cluster.server.store.close_watchers()
        await asyncio.sleep(0.05)
        writer = cluster.new_client()
        for i in range(8):  # more changes than the history keeps
            await writer.create(configmap(f"cm{i}"))
        gate.closed = False
        await eventually(lambda: inf.relists == 2, timeout=20)
        await eventually(lambda: len(inf.store) == 8)
        await writer.create(configmap("after"))
        await eventually(lambda: inf.store.get("default", "after") is not None)
        await factory.stop()


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


class Mirror:
    """Toy controller: a ConfigMap labelled mirror=yes owns a Secret ``<name>-mirror`` holding its
    data; an Event is recorded whenever the Secret is written."""

    def __init__(self, mgr: Manager, client: Any | None = None) -> None:
        self.client = client or mgr.client
        self.cms = mgr.informers.informer(CONFIGMAP).lister
        self.secrets = mgr.informers.informer(SECRET).lister
        self.recorder = mgr.event_recorder("mirror-controller")

    async def reconcile(self, req: Request) -> Result:
        cm = self.cms.get(req.namespace, req.name)
        if cm is None or (cm["metadata"].get("labels") or {}).get("mirror") != "yes":
            return Result()
        want = {k: b64(v) for k, v in (cm.get("data") or {}).items()}

        def mutate(s: dict[str, Any]) -> None:
            set_controller_reference(cm, s)
            s["data"] = want

        stub = {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": f"{req.name}-mirror", "namespace": req.namespace}}
        _, op = await create_or_update(self.client, stub, mutate)
        if op != "unchanged":
            self.recorder.event(cm, "Normal", "Mirrored", f"secret {req.name}-mirror {op}")
        return Result()


async def test_toy_controller_end_to_end_with_owns_and_events(cluster: Any) -> None:
    client = cluster.client
    mgr = Manager(client, graceful_shutdown_timeout=5)
    mirror = Mirror(mgr)
    mgr.controller("mirror").for_(CONFIGMAP).owns(SECRET).complete(mirror)
    task = asyncio.create_task(mgr.start())
    await mgr.wait_started()
    try:
        cm = await client.create(configmap("cfg", labels={"mirror": "yes"}, data={"a": "1"}))

        async def secret_data() -> dict[str, str] | None:
            try:
                return (await client.get(SECRET, "cfg-mirror", "default")).get("data")
            except ApiError:
                return None

        async def has(data: dict[str, str]) -> bool:
            return await secret_data() == data

        await eventually(lambda: has({"a": b64("1")}))
        s = await client.get(SECRET, "cfg-mirror", "default")
        [ref] = s["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
            "ConfigMap", "cfg", cm["metadata"]["uid"], True)

        live = await client.get(CONFIGMAP, "cfg", "default")
        live["data"] = {"a": "2"}
        await client.update(live)
        await eventually(lambda: has({"a": b64("2")}))

        await client.delete(SECRET, "cfg-mirror", "default")  # owns(): the owner is reconciled
        await eventually(lambda: has({"a": b64("2")}))

        async def mirrored_events() -> list[dict[str, Any]]:
            evs = (await client.list(EVENT, "default")).items
            return [e for e in evs if e["reason"] == "Mirrored"]

        async def three_events() -> bool:
            return sum(e["count"] for e in await mirrored_events()) == 3

        await eventually(three_events)
        evs = await mirrored_events()
        assert {e["message"] for e in evs} == {"secret cfg-mirror created", "secret cfg-mirror updated"}
        assert all(e["source"]["component"] == "mirror-controller" for e in evs)
        created = next(e for e in evs if e["message"].endswith("created"))
        assert created["count"] == 2, "the second 'created' event was aggregated into the first"
    finally:
        mgr.stop()
        await task


async def test_a_second_reconcile_with_no_change_writes_nothing(cluster: Any) -> None:
    counting = CountingClient(cluster.client)
    mgr = Manager(counting)
    mirror = Mirror(mgr)
    await mgr.informers.start()
    await cluster.client.create(configmap("cfg", labels={"mirror": "yes"}, data={"a": "1"}))
    await eventually(lambda: mirror.cms.get("default", "cfg") is not None)
    await mirror.reconcile(Request("default", "cfg"))
    await mirror.recorder.flush()
    assert [w[:2] for w in counting.writes()] == [("create", "secrets"), ("create", "events")]
    await eventually(lambda: mirror.secrets.get("default", "cfg-mirror") is not None)
    counting.reset()
    await mirror.reconcile(Request("default", "cfg"))
    assert counting.writes() == []
    await mgr.informers.stop()
    await mgr.event_recorder("mirror-controller").close()


@pytest.mark.looptime
async def test_event_recorder_aggregates_against_the_real_server(cluster: Any) -> None:
    obj = await cluster.client.create(configmap("cfg"))
    rec = EventRecorder(cluster.client, "c", clock=LoopClock())
    for _ in range(3):
        rec.event(obj, "Warning", "Failed", "boom")
        await asyncio.sleep(2)
    await rec.flush()
    [ev] = (await cluster.client.list(EVENT, "default")).items
    assert ev["count"] == 3
    assert ev["involvedObject"]["uid"] == obj["metadata"]["uid"]


class Toy:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def reconcile(self, req: Request) -> Result:
        self.seen.append(req.name)
        return Result()


@pytest.mark.looptime
async def test_two_managers_on_one_server_only_one_acts_and_the_standby_takes_over(cluster: Any) -> None:
    durations = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 1.0}
    gate = Gate(cluster.new_client())

    def make(client: Any, identity: str) -> tuple[Manager, Toy]:
        mgr = Manager(client, clock=LoopClock(), leader_election=True, identity=identity,
                      graceful_shutdown_timeout=1, **durations)
        toy = Toy()
        mgr.controller("toy").for_(CONFIGMAP).complete(toy)
        return mgr, toy

    a, toy_a = make(gate, "a")
    ta = asyncio.create_task(a.start())
    await a.wait_started()
    b, toy_b = make(cluster.new_client(), "b")
    tb = asyncio.create_task(b.start())
    await b.wait_standby()
    await cluster.client.create(configmap("one"))
    await eventually(lambda: toy_a.seen == ["one"])
    await asyncio.sleep(10)
    assert toy_b.seen == []
    lease = await cluster.client.get(LEASE, "pumice-controller-manager", "kube-system")
    assert lease["spec"]["holderIdentity"] == "a"

    gate.closed = True  # the leader can no longer reach the server
    await asyncio.wait_for(b.wait_started(), 30)
    with pytest.raises(LeaderElectionLost):
        await ta
    lease = await cluster.client.get(LEASE, "pumice-controller-manager", "kube-system")
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("b", 1)
    await cluster.client.create(configmap("two"))
    await eventually(lambda: "two" in toy_b.seen)
    assert "two" not in toy_a.seen
    b.stop()
    await tb


async def test_a_field_selected_informer_follows_binding_on_the_real_server(cluster: Any) -> None:
    from .conftest import POD

    client = cluster.client
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    await client.create(pod)
    factory = SharedInformerFactory(client)
    unassigned = factory.informer(POD, field_selector="spec.nodeName=")
    on_n1 = factory.informer(POD, field_selector="spec.nodeName=n1")
    await factory.start()
    assert await factory.wait_for_cache_sync(timeout=10)
    assert unassigned.store.keys() == ["default/p"]
    assert on_n1.store.keys() == []
    await client.bind("default", "p", "n1")
    await eventually(lambda: on_n1.store.keys() == ["default/p"])
    await eventually(lambda: unassigned.store.keys() == [])
    await factory.stop()
